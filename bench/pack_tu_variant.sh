#!/usr/bin/env bash
# pack_tu_variant.sh — a variant library for bench/ab_attn.sh (or ab_gemm's --epilogues) built by
# recompiling only the translation units the edit can change, for edits to a header that every
# kernel includes (attn_fwd_config.cuh): pack_variant.sh rebuilds all 36 attention TUs twice
# (~12 minutes on 2 cores), this one the TUs you name (~15 s each for an attention instance).
#
#   bash bench/pack_tu_variant.sh NAME 'TU...' [FILE 'SED-EXPRESSION']...
#   e.g. bash bench/pack_tu_variant.sh lse 'src/kernels/inst/attn_fwd_*_d128_n128.cu' \
#          src/kernels/attn/attn_fwd_config.cuh 's/EARLY_LSE = !(HeadDim == 128 \&\& BlockN == 128)/EARLY_LSE = true/'
#
# The sources are copied to /tmp/tu-variant/NAME/src and edited there (the checkout is never
# touched); each named TU is compiled from the copy with the exact command CMake uses in $BUILD
# (default build, which must be built), and libflashc.so.0.1.0 is linked from $BUILD's objects
# with the named ones replaced. Writes .carry/ab-NAME-lib.tar.xz (no test archive: an edit that
# wins must then be built and tested properly). It is the caller's job to name every TU the
# edit can change — the others keep HEAD's code. ptxas's spills, stack frames and C75xx
# warnings of the recompiled TUs are printed.
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
NAME=${1:?usage: pack_tu_variant.sh NAME 'TU...' [FILE 'SED']...}
TUS=${2:?usage: pack_tu_variant.sh NAME 'TU...' [FILE 'SED']...}
shift 2
[ $(($# % 2)) -eq 0 ] || { echo "pack_tu_variant: FILE and SED-EXPRESSION come in pairs" >&2; exit 2; }
[ -f "$BUILD/CMakeFiles/flashc.dir/link.txt" ] || { echo "pack_tu_variant: $BUILD is not a configured build" >&2; exit 2; }
ROOT=$PWD
WORK=/tmp/tu-variant/$NAME
rm -rf "$WORK"; mkdir -p "$WORK/obj" "$WORK/lib"
cp -r src "$WORK/src"
while [ $# -gt 0 ]; do
  file=$1 expression=$2
  shift 2
  before=$(md5sum < "$WORK/$file")
  sed -i "$expression" "$WORK/$file"
  [ "$before" != "$(md5sum < "$WORK/$file")" ] || { echo "pack_tu_variant: '$expression' changed nothing in $file" >&2; exit 2; }
  diff -u "$file" "$WORK/$file" | tail -n +3 | grep '^[-+]' || true
done

link=$(cat "$BUILD/CMakeFiles/flashc.dir/link.txt")
for tu in $TUS; do
  object="CMakeFiles/flashc_objects.dir/$tu.o"
  [ -f "$BUILD/$object" ] || { echo "pack_tu_variant: no object $BUILD/$object" >&2; exit 2; }
  # CMake's own command for this object, pointed at the copy (its -I of src comes first).
  command=$(cd "$BUILD" && make -f CMakeFiles/flashc_objects.dir/build.make "$object" -n -B 2>/dev/null | grep nvcc | tail -1)
  [ -n "$command" ] || { echo "pack_tu_variant: no compile command for $tu" >&2; exit 2; }
  out="$WORK/obj/$(echo "$tu" | tr / _).o"
  command=${command//"$ROOT/$tu"/"$WORK/$tu"}
  command=${command/" -o $object"/" -o $out"}
  command=${command/"--options-file"/"-I$WORK/src --options-file"}
  command=$(echo "$command" | sed 's/ -MD -MT [^ ]* -MF [^ ]*//')
  echo "pack_tu_variant: compiling $tu"
  # ptxas -v: report spills, stack frames and serialized wgmmas (C75xx) of the variant's kernels.
  (cd "$BUILD" && eval "$command -Xptxas -v") > "$out.log" 2>&1 || { cat "$out.log" >&2; exit 1; }
  grep -E "C75|[1-9][0-9]* bytes spill|[1-9][0-9]* bytes stack" "$out.log" || echo "  ptxas: no spill, stack frame or C75xx"
  replaced=${link//" $object"/" $out"}
  [ "$replaced" != "$link" ] || { echo "pack_tu_variant: $object is not in the library's link line" >&2; exit 2; }
  link=$replaced
done
(cd "$BUILD" && eval "${link/-o libflashc.so.0.1.0/-o $WORK/lib/libflashc.so.0.1.0}")
mkdir -p .carry
tar cf - -C "$WORK" lib/libflashc.so.0.1.0 | xz -T2 -6 > ".carry/ab-$NAME-lib.tar.xz"
ls -la ".carry/ab-$NAME-lib.tar.xz"
