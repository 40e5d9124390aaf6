#!/usr/bin/env bash
# profile_attn.sh — on the GPU machine: Nsight Compute on one attention-forward launch, for
# seeing where the consumers stall (warp-state sampling per SASS instruction) before changing
# the kernel. Writes $OUT/prof.ncu-rep, $OUT/details.txt (speed of light, warp states,
# scheduler, instruction mix) and $OUT/sass.txt.xz (the SASS with per-instruction samples),
# and prints the headline lines.
#
#   bash bench/profile_attn.sh BUILD_DIR [flashc attn arguments]
#   default arguments: --hdim 128 --heads 16 --seqlen 16384 --batch 1 (bf16, FA3's 16k grid)
# With a packed build: tar xJf .carry/BUILD_DIR.tar.xz first (bench/pack_build.sh).
set -u
BUILD=${1:-build-attn}
shift || true
[ $# -gt 0 ] || set -- --hdim 128 --heads 16 --seqlen 16384 --batch 1
OUT=${OUT:-/tmp/flashc-out}
mkdir -p "$OUT"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
[ -n "$NCU" ] || { echo "profile_attn: ncu not found" >&2; exit 1; }
timeout 120 "$NCU" -k regex:attn_fwd_kernel -c 1 --section SpeedOfLight --section WarpStateStats \
  --section SchedulerStats --section ComputeWorkloadAnalysis --section InstructionStats --section SourceCounters \
  --import-source no -f --export "$OUT/prof" "$BUILD/tools/flashc" attn "$@" --bench --iters 1 --warmup 0 --quiet \
  > "$OUT/ncu_run.log" 2>&1
echo "ncu rc=$?"
"$NCU" --import "$OUT/prof.ncu-rep" --page details > "$OUT/details.txt" 2>&1
"$NCU" --import "$OUT/prof.ncu-rep" --page source --print-source sass > "$OUT/sass.txt" 2>&1 && xz -f -T0 "$OUT/sass.txt"
grep -E "Duration|Compute \(SM\) Throughput|Issue Slots Busy|Issued Warp Per Scheduler|No Eligible|Warp Cycles Per Issued|Stall" \
  "$OUT/details.txt" | head -30
