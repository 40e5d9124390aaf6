#!/usr/bin/env bash
# device_check.sh — the one call to make on a GPU machine: every test program of a build
# (CPU and GPU), `flashc info` and `flashc demo`, and the quick GEMM benchmark against
# cuBLASLt; logs under $OUT (or /tmp/flashc-out), a short table last.
#
#   bash bench/device_check.sh [BUILD_DIR] [--full-bench]
#
# The binaries are run directly rather than through ctest: a build directory carried from
# another machine has that machine's absolute paths in its CTest files.
set -u
BUILD=${1:-build}
BENCH_ARGS="--quick"
[ "${2:-}" = "--full-bench" ] && BENCH_ARGS=""
OUT=${OUT:-/tmp/flashc-out}
LOGS=/tmp/flashc-logs   # one log per program; packed into $OUT/logs.tar.gz at the end
mkdir -p "$OUT" "$LOGS"
export LD_LIBRARY_PATH="$BUILD:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"

nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader 2>&1 | tee "$OUT/gpu.txt"
results=()
run_one() { # name, command...
  local name=$1; shift
  local start=$(date +%s.%N)
  timeout 600 "$@" > "$LOGS/$name.log" 2>&1
  local rc=$?
  local seconds=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN{print b - a}')
  local verdict=PASS; [ $rc -eq 77 ] && verdict=SKIP; [ $rc -ne 0 ] && [ $rc -ne 77 ] && verdict="FAIL($rc)"
  local summary=$(grep -E "cases|passed|failed" "$LOGS/$name.log" | tail -1 | cut -c1-70)
  results+=("$(printf '%-22s %-9s %6.1fs  %s' "$name" "$verdict" "$seconds" "$summary")")
}

for test in "$BUILD"/tests/cpu_* "$BUILD"/tests/gpu_* "$BUILD"/tests/gpu/gpu_* "$BUILD"/tests/ptx/gpu_*; do
  [ -x "$test" ] && [ -f "$test" ] && run_one "$(basename "$test")" "$test"
done
run_one flashc_info "$BUILD/tools/flashc" info
run_one flashc_demo "$BUILD/tools/flashc" demo
[ -x "$BUILD/bench/bench_gemm" ] && run_one bench_gemm "$BUILD/bench/bench_gemm" $BENCH_ARGS --json "$LOGS/bench_gemm.json"

tar czf "$OUT/logs.tar.gz" -C "$LOGS" .
echo; cat "$LOGS/flashc_demo.log"
[ -f "$LOGS/bench_gemm.log" ] && { echo; grep -v "^\[" "$LOGS/bench_gemm.log" | tail -40; }
echo; echo "== summary =="
printf '%s\n' "${results[@]}"
