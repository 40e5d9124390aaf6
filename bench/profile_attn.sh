#!/usr/bin/env bash
# profile_attn.sh — on the GPU machine: Nsight Compute on one attention-forward launch, for
# seeing where the consumers stall (warp-state sampling per SASS instruction) before changing
# the kernel. Drives bench/ab_attn (one library, one case), so a packed library is enough:
#
#   bash bench/profile_attn.sh LIBRARY [d,seqlen,batch,heads[,causal]]   (default 128,16384,1,16)
#   e.g. tar xJf .carry/ab-main-lib.tar.xz -C /tmp/p && bash bench/profile_attn.sh /tmp/p/build-attn/libflashc.so.0.1.0
#
# Writes $OUT/prof.ncu-rep, $OUT/details.txt (speed of light, warp states, scheduler,
# instruction mix) and $OUT/sass.txt.xz (the SASS with per-instruction samples), and prints
# the headline lines. The ab_attn program: .carry/ab_attn, else a build's bench/ab_attn.
set -u
LIBRARY=${1:?usage: profile_attn.sh LIBRARY [d,seqlen,batch,heads[,causal]]}
CASE=${2:-128,16384,1,16}
OUT=${OUT:-/tmp/flashc-out}
mkdir -p "$OUT"
program=.carry/ab_attn
[ -x "$program" ] || program=$(ls build*/bench/ab_attn 2>/dev/null | head -1)
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
[ -n "$NCU" ] || { echo "profile_attn: ncu not found" >&2; exit 1; }
timeout 150 "$NCU" -k regex:attn_fwd_kernel -c 1 --section SpeedOfLight --section WarpStateStats \
  --section SchedulerStats --section ComputeWorkloadAnalysis --section InstructionStats --section SourceCounters \
  --import-source no -f --export "$OUT/prof" "$program" --rounds 1 --iters 1 --case "$CASE" "profiled=$LIBRARY" \
  > "$OUT/ncu_run.log" 2>&1
echo "ncu rc=$?"
"$NCU" --import "$OUT/prof.ncu-rep" --page details > "$OUT/details.txt" 2>&1
"$NCU" --import "$OUT/prof.ncu-rep" --page source --print-source sass > "$OUT/sass.txt" 2>&1 && xz -f -T0 "$OUT/sass.txt"
grep -E "Duration|Compute \(SM\) Throughput|Issue Slots Busy|Issued Warp Per Scheduler|No Eligible|Warp Cycles Per Issued|Stall" \
  "$OUT/details.txt" | head -30
