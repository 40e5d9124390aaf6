#!/usr/bin/env bash
# sass_diff.sh — does a change move the device code? Compiles kernel translation units at a git
# revision and in the working tree (sm_90a, as the build does) and compares their SASS with
# register names and constant-bank offsets masked (a params struct that grew shifts every
# c[0x0][...] offset; ptxas renames registers freely), so "0 lines" means the same instructions
# in the same order. Runs without a GPU; needs nvdisasm ($NVDISASM, the toolkit's, or
# bench/get_nvdisasm.sh's copy from PyPI).
#
#   bash bench/sass_diff.sh REV [FILE.cu ...]     (default: every src/kernels/inst/attn_fwd_*.cu)
#
# Prints per file: instructions at REV, in the tree, and the differing lines after masking;
# files only in one of the two are reported as such. SASS_DIFF_KEEP=DIR keeps the two masked
# listings of each file there (NAME.rev, NAME.now) to diff by hand. The 16th session used it to keep the plain
# attention kernels identical while the stream-K kernels changed (docs/NOTES-attn-fwd.md).
set -eu
REV=${1:?usage: sass_diff.sh REV [FILE.cu ...]}
shift
cd "$(dirname "$0")/.."
. bench/kernel_tools.sh
NVDISASM=$(find_nvdisasm)
[ -x "$NVDISASM" ] || { echo "sass_diff: no nvdisasm (set NVDISASM, or run bench/get_nvdisasm.sh)" >&2; exit 1; }
files=("$@")
[ ${#files[@]} -eq 0 ] && files=(src/kernels/inst/attn_fwd_*.cu)
work=$(mktemp -d)
trap 'git worktree remove --force "$work/rev" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git worktree add -q --detach "$work/rev" "$REV"
# One normalized listing: instructions only, register names and constant offsets masked.
sass_of() { # TREE FILE OUT
  (cd "$1" && nvcc "${KERNEL_NVCC_FLAGS[@]}" -cubin "$2" -o "$3.cubin")
  "$NVDISASM" "$3.cubin" | sed 's@/\*[0-9a-f]*\*/@@g; s/;.*//; s/ \+/ /g' | grep -E '^ *@?!?[A-Z]' \
    | sed -E 's/c\[0x0\]\[0x[0-9a-f]+\]/c[PARAM]/g; s/\bU?R[0-9]+\b/R/g; s/\bU?P[0-6]\b/P/g' > "$3"
}
for file in "${files[@]}"; do
  name=$(basename "$file" .cu)
  if [ ! -f "$work/rev/$file" ]; then echo "$name: new (not at $REV)"; continue; fi
  if [ ! -f "$file" ]; then echo "$name: only at $REV"; continue; fi
  sass_of "$work/rev" "$file" "$work/$name.rev"
  sass_of "$PWD" "$file" "$work/$name.now"
  printf '%-34s %6d %6d instructions, %d lines differ\n' "$name" "$(wc -l < "$work/$name.rev")" \
    "$(wc -l < "$work/$name.now")" "$(diff "$work/$name.rev" "$work/$name.now" | grep -c '^[<>]' || true)"
done
[ -n "${SASS_DIFF_KEEP:-}" ] && cp "$work"/*.rev "$work"/*.now "$SASS_DIFF_KEEP"/ 2>/dev/null; true
