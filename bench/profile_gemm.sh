#!/usr/bin/env bash
# profile_gemm.sh — on the GPU machine: Nsight Compute on the first flashc GEMM launch of a
# bench_gemm run (speed of light, memory workload, warp states, launch/cluster shape), for
# comparing two builds of the Hopper kernel before changing it:
#
#   bash bench/profile_gemm.sh BUILD_DIR NAME [bench_gemm arguments...]
#   e.g. bash bench/profile_gemm.sh build-final main --only e4m3 --max-m 4096
#
# KERNEL=REGEX picks another kernel (e.g. KERNEL=nvjet: cuBLASLt's 16-bit kernel, timed after
# flashc's; for cuBLASLt's FP8 kernel use bench/profile_scaled_mm.py). Elapsed cycles at ncu's
# locked clock compare two kernels' efficiency apart from the clock each gets under the power
# limit (docs/PERF.md, 9th session).
# Writes $OUT/NAME.ncu-rep and $OUT/NAME.txt (the details page) and prints the headline lines.
# bench_gemm times flashc first, so -c 1 on gemm_* catches flashc's kernel, not cuBLASLt's.
set -u
BUILD=${1:?usage: profile_gemm.sh BUILD_DIR NAME [bench_gemm args]}
NAME=${2:?name}
shift 2
OUT=${OUT:-/tmp/flashc-out}
mkdir -p "$OUT"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
[ -n "$NCU" ] || { echo "profile_gemm: ncu not found" >&2; exit 1; }
timeout 200 "$NCU" -k "regex:${KERNEL:-gemm_hopper}" -c 1 --section SpeedOfLight --section MemoryWorkloadAnalysis \
  --section WarpStateStats --section SchedulerStats --section LaunchStats --section Occupancy \
  --section ComputeWorkloadAnalysis --section SourceCounters --import-source no --metrics lts__t_sectors_srcunit_tex.sum,smsp__cycles_active.avg \
  -f --export "$OUT/$NAME" "$BUILD/bench/bench_gemm" --runs 1 "$@" > "$OUT/$NAME.run.log" 2>&1
echo "$NAME ncu rc=$?"
"$NCU" --import "$OUT/$NAME.ncu-rep" --page details > "$OUT/$NAME.txt" 2>&1
"$NCU" --import "$OUT/$NAME.ncu-rep" --page raw 2>/dev/null | grep -E "smsp__average_warp_latency_issue_stalled|smsp__pcsamp_warps_issue_stalled" \
  | awk '$NF+0 > 0' > "$OUT/$NAME.stalls.txt"
"$NCU" --import "$OUT/$NAME.ncu-rep" --page source --print-source sass > "$OUT/$NAME.sass.txt" 2>&1 && xz -f -T0 "$OUT/$NAME.sass.txt"
grep -E "Elapsed Cycles|Duration|SM Frequency|Compute \(SM\) Throughput|L2 Cache Throughput|DRAM Throughput|Grid Size|Cluster Size|Issue Slots Busy|No Eligible|Stall|lts__t_sectors" \
  "$OUT/$NAME.txt" | head -30
