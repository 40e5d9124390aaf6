#!/usr/bin/env bash
# sass_attn.sh — the order of the consumer's key-block loop in the SASS of an attention
# instance, without a GPU: runs of HGMMA (wgmma issues), WARPGROUP.DEPBAR (wgmma waits),
# MUFU.EX2 (exponentials), SHFL.BFLY (row reductions) and named barriers, in program order.
# The intended overlapped loop reads: HGMMA S, HGMMA P·V, DEPBAR (S), SHFL + EX2 (softmax),
# DEPBAR (P·V); a DEPBAR before the SHFL/EX2 run means ptxas hoisted the P·V wait and the
# exponentials no longer run under P·V (docs/NOTES-attn-fwd.md).
#
#   bash bench/sass_attn.sh [INSTANCE.cu] [extra nvcc flags]   (default: the bf16 d128 160-key one)
# Needs nvdisasm: $NVDISASM, the CUDA toolkit's, bench/get_nvdisasm.sh's copy from PyPI, or the
# copy bundled with triton.
set -eu
cd "$(dirname "$0")/.."
. bench/kernel_tools.sh
file=${1:-src/kernels/inst/attn_fwd_bf16_d128_n160.cu}
shift || true
NVDISASM=$(find_nvdisasm)
[ -x "$NVDISASM" ] || { echo "sass_attn: no nvdisasm (set NVDISASM)" >&2; exit 1; }
cubin=$(mktemp --suffix=.cubin)
trap 'rm -f "$cubin"' EXIT
nvcc "${KERNEL_NVCC_FLAGS[@]}" "$@" -cubin "$file" -o "$cubin"
"$NVDISASM" "$cubin" | sed 's@/\*[0-9a-f]*\*/@@g; s/ \+/ /g; s/;.*//' \
  | grep -E "HGMMA|WARPGROUP.DEPBAR|MUFU.EX2|SHFL.BFLY|BAR.ARV|BAR.SYNC" \
  | awk '{op = ($1 ~ /^@/) ? $2 : $1; sub(/\..*/, "", op); if (op == "WARPGROUP") op = "DEPBAR";
          if (op == prev) n++; else { if (prev != "") printf "%s x%d\n", prev, n; prev = op; n = 1 } }
         END { if (prev != "") printf "%s x%d\n", prev, n }' | paste -sd' ' | fold -w 100 -s
