#!/usr/bin/env bash
# pack_build.sh — pack the programs of a local build into one compressed archive that the
# device tool can carry (its limit is 64 MiB; the library and the static tool are ~42 MB each,
# ~7× smaller compressed), so a device call spends its minutes running, not compiling:
#
#   bash bench/pack_build.sh BUILD_DIR [PROGRAM...]    → .carry/BUILD_DIR.tar.xz (git-ignored)
#   device: run(command="bash bench/device_check.sh BUILD_DIR --prebuilt .carry/BUILD_DIR.tar.xz ...",
#               carry=[".carry"])
# Several builds (e.g. main and a branch, for an A/B in one call) each get their own archive.
#
# PROGRAM paths are relative to BUILD_DIR; the default is the library and every program the
# device steps run (tools/flashc, tests/cpu_*, tests/gpu_*, tests/gpu/gpu_*, tests/ptx/gpu_*,
# bench/bench_gemm) that exists. The device runs in the same absolute repository path as here,
# so the programs' run paths to the library resolve there unchanged.
set -eu
BUILD=${1:?usage: pack_build.sh BUILD_DIR [PROGRAM...]}
shift
cd "$(dirname "$0")/.."
files=()
if [ $# -gt 0 ]; then
  for f in "$@"; do files+=("$BUILD/$f"); done
else
  for f in "$BUILD"/libflashc.so* "$BUILD"/tools/flashc "$BUILD"/tests/cpu_* "$BUILD"/tests/gpu_* \
           "$BUILD"/tests/gpu/gpu_* "$BUILD"/tests/ptx/gpu_* "$BUILD"/bench/bench_gemm "$BUILD"/CMakeCache.txt; do
    [ -e "$f" ] && [ ! -d "$f" ] && files+=("$f")
  done
fi
# The library's symlinks travel inside the archive; its real file once.
mkdir -p .carry
archive=.carry/$(basename "$BUILD").tar.xz
tar cf - "${files[@]}" | xz -T0 -6 > "$archive"
size=$(du -m "$archive" | cut -f1)
total=$(du -cm .carry/*.tar.xz | tail -1 | cut -f1)
echo "packed ${#files[@]} files of $BUILD into $archive (${size} MB; .carry holds ${total} MB of the 64 MiB a call carries)"
[ "$size" -lt 60 ] || { echo "too large to carry: pack fewer programs" >&2; exit 1; }
