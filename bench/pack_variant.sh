#!/usr/bin/env bash
# pack_variant.sh — build a one-line variant of the library here and pack it for bench/ab_attn.sh
# on the GPU machine, then put the source and the build back as they were:
#
#   bash bench/pack_variant.sh [--ptxas] NAME [FILE 'SED-EXPRESSION']...
#
# Applies each sed expression to its file (sed -i; each must change its file), builds the
# library and gpu_attn_fwd in $BUILD (default build), packs .carry/ab-NAME-lib.tar.xz and
# .carry/ab-NAME-test.tar.xz (what ab_attn.sh --test unpacks), restores the files from git and
# rebuilds, so the build directory is HEAD's again. Without edits it packs HEAD's build as NAME
# (e.g. `main`, the A of an A/B). Files with uncommitted changes are refused: their changes
# would be lost. --ptxas runs bench/ptxas_report.sh on every attention instance of the variant
# first and stops on a spill, a stack frame or a serialized wgmma.
# Example (the 23rd session's first win, a switch in attn_fwd_config.cuh):
#   bash bench/pack_variant.sh main
#   bash bench/pack_variant.sh --ptxas cr src/kernels/attn/attn_fwd_config.cuh \
#     's/Consumers >= 3 || BlockN >= 192;/Consumers >= 3 || Consumers == 1 || BlockN >= 192;/'
#   device: bash bench/ab_attn.sh --test --case 64,2048,8,32,1 main cr   (carry [".carry"])
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
PTXAS=0
[ "${1:-}" = "--ptxas" ] && { PTXAS=1; shift; }
NAME=${1:?usage: pack_variant.sh [--ptxas] NAME [FILE 'SED-EXPRESSION']...}
shift
[ $(($# % 2)) -eq 0 ] || { echo "pack_variant: FILE and SED-EXPRESSION come in pairs" >&2; exit 2; }
[ -d "$BUILD" ] || { echo "pack_variant: no build directory $BUILD (set BUILD)" >&2; exit 2; }

files=()
restore() { [ ${#files[@]} -eq 0 ] || git checkout -q -- "${files[@]}"; }
trap restore EXIT
while [ $# -gt 0 ]; do
  file=$1 expression=$2
  shift 2
  git diff --quiet -- "$file" || { echo "pack_variant: $file has uncommitted changes" >&2; exit 2; }
  files+=("$file")
  sed -i "$expression" "$file"
  if git diff --quiet -- "$file"; then echo "pack_variant: '$expression' changed nothing in $file" >&2; exit 2; fi
done
[ ${#files[@]} -eq 0 ] || git diff --stat -- "${files[@]}"
if [ $PTXAS -eq 1 ] && ! bash bench/ptxas_report.sh; then echo "pack_variant: ptxas found a problem" >&2; exit 1; fi
cmake --build "$BUILD" -j"$(nproc)" --target flashc gpu_attn_fwd ab_attn > /dev/null
mkdir -p .carry
tar cf - "$BUILD/libflashc.so.0.1.0" | xz -T0 > ".carry/ab-$NAME-lib.tar.xz"
tar cf - "$BUILD/tests/gpu/gpu_attn_fwd" | xz -T0 > ".carry/ab-$NAME-test.tar.xz"
cp "$BUILD/bench/ab_attn" .carry/ab_attn
echo "packed .carry/ab-$NAME-lib.tar.xz and .carry/ab-$NAME-test.tar.xz ($(du -sh .carry | cut -f1) in .carry)"
if [ ${#files[@]} -gt 0 ]; then
  restore
  files=()
  cmake --build "$BUILD" -j"$(nproc)" --target flashc gpu_attn_fwd > /dev/null
fi
