#!/usr/bin/env bash
# compute-sanitizer memcheck and racecheck on a small representative subset of the attention
# forward test (gpu_attn_fwd --quick: every head dim, mask, GQA/MQA, varlen and layout on short
# sequences, plus the refusal cases).
#
#   tests/gpu/sanitize_attn.sh [build dir] [extra gpu_attn_fwd arguments]
#   TOOLS="memcheck racecheck synccheck initcheck" tests/gpu/sanitize_attn.sh build
#   FLASHC_TEST_SEED=<n> reproduces the subset's data.
#   PROGRAM=build/tests/gpu/gpu_attn_bwd tests/gpu/sanitize_attn.sh build    another attention
#   test under the same tools (the backward's test takes no arguments and ignores --quick).
# Logs: $OUT (if set) or <build dir>/sanitize, one file per tool. Exit status: 0 when every
# tool ran clean and the test passed, 77 when there is no GPU, 1 otherwise.
set -u
BUILD=${1:-build}
shift || true
BIN=${PROGRAM:-$BUILD/tests/gpu/gpu_attn_fwd}
LOGS=${OUT:-$BUILD/sanitize}
TOOLS=${TOOLS:-memcheck racecheck}
SANITIZER=$(command -v compute-sanitizer || echo "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer")

if [ ! -x "$BIN" ]; then echo "sanitize_attn: $BIN not built (cmake --build $BUILD --target $(basename "$BIN"))"; exit 1; fi
if [ ! -x "$SANITIZER" ]; then echo "sanitize_attn: compute-sanitizer not found"; exit 1; fi
mkdir -p "$LOGS"

status=0
for tool in $TOOLS; do
  log="$LOGS/sanitize_attn_$tool.log"
  case $tool in
    memcheck) options=(--tool memcheck --leak-check full) ;;
    *) options=(--tool "$tool") ;;
  esac
  echo "== $tool: $SANITIZER ${options[*]} $BIN --quick $* > $log"
  start=$(date +%s)
  "$SANITIZER" "${options[@]}" --error-exitcode 3 --print-limit 100 "$BIN" --quick "$@" > "$log" 2>&1
  rc=$?
  summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY" "$log" | tr '\n' ' ')
  last=$(grep -E "cases, .* failed" "$log" | tail -1)
  echo "   rc $rc after $(( $(date +%s) - start )) s; $last; $summary"
  if [ $rc -eq 77 ]; then echo "sanitize_attn: no CUDA device, skipped"; exit 77; fi
  if [ $rc -ne 0 ]; then status=1; grep -E "^=+ (Invalid|Race|Error|.*hazard|.*leak)" "$log" | head -20; fi
done
exit $status
