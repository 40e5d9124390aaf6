#!/usr/bin/env bash
# ptxas_report.sh — registers, spills and stack of every attention-forward instance (or the
# .cu files given), compiled for sm_90a exactly as the build does plus -Xptxas -v. Runs on a
# machine without a GPU; two cores take ~25 s for the 12 instances.
#
#   bash bench/ptxas_report.sh [FILE.cu ...]
#
# Prints one line per kernel: registers, spill stores/loads, stack frame, and any C75xx note
# (wgmmas serialized); exit status 1 when any kernel spills, has a stack frame or has such a
# note (the attention kernels must do none of these).
set -u
cd "$(dirname "$0")/.."
. bench/kernel_tools.sh
files=("$@")
[ ${#files[@]} -eq 0 ] && files=(src/kernels/inst/attn_fwd_*.cu)
status=0
for file in "${files[@]}"; do
  report=$(nvcc "${KERNEL_NVCC_FLAGS[@]}" -Xptxas -v -c "$file" -o /dev/null 2>&1)
  line=$(echo "$report" | grep -E "Used [0-9]+ registers" | head -1 | sed 's/.*Used/Used/')
  stack=$(echo "$report" | grep -E "bytes stack frame" | head -1 | sed 's/ptxas info *: *//')
  printf '%-34s %s | %s\n' "$(basename "$file" .cu)" "$line" "$stack"
  echo "$stack" | grep -qE "^ *0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" || status=1
  # ptxas reports serialized wgmmas (C7510–C7520) as "info: Potential Performance Loss" or as
  # injected warpgroup.arrive (C7519), not as warnings: flag them too.
  echo "$report" | grep -iE "warning|C75[0-9][0-9]" | sed 's/ in the function.*//' | sort -u | head -3
  echo "$report" | grep -qE "C75[0-9][0-9]" && status=1
done
exit $status
