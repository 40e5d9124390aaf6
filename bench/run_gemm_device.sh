#!/bin/bash
# run_gemm_device.sh — one device call for the Hopper GEMM (docs/PERF.md method): a smoke test,
# the correctness test, optionally compute-sanitizer on a few small cases, the benchmark; logs
# under $OUT, a short table last.
#   bash bench/run_gemm_device.sh [BIN_DIR] [bench args...]      (repo root, device machine)
# BIN_DIR holds prebuilt gpu_gemm and bench_gemm, or is a CMake build directory
# (BIN_DIR/tests/gpu/gpu_gemm, BIN_DIR/bench/bench_gemm); default build-gemm.
# Environment: GEMM_TEST_CASES=N (random cases; unset = skip), GEMM_SANITIZE=1, GEMM_BENCH=1.
set -u
BIN=${1:-build-gemm}
shift || true
TEST_BIN=$BIN/gpu_gemm; BENCH_BIN=$BIN/bench_gemm
[ -x "$TEST_BIN" ] || TEST_BIN=$BIN/tests/gpu/gpu_gemm
[ -x "$BENCH_BIN" ] || BENCH_BIN=$BIN/bench/bench_gemm
OUT=${OUT:-/tmp/gemm-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader 2>&1 | tee "$OUT/gpu.txt"
timeout 90 "$TEST_BIN" 0 > "$OUT/smoke.log" 2>&1
rc=$?
echo "smoke (fixed cases) rc=$rc"; grep -E "FAIL|fail|error" "$OUT/smoke.log" | head -20; tail -1 "$OUT/smoke.log"
if [ $rc -ne 0 ] && [ $rc -ne 1 ]; then echo "smoke hung or crashed: stopping"; exit 1; fi
if [ -n "${GEMM_TEST_CASES:-}" ]; then
  timeout 240 "$TEST_BIN" "$GEMM_TEST_CASES" --no-fixed > "$OUT/gpu_gemm.log" 2>&1
  echo "gpu_gemm rc=$?"
  grep -E "FAIL|fail|error" "$OUT/gpu_gemm.log" | head -30
  tail -1 "$OUT/gpu_gemm.log"
fi
if [ -n "${GEMM_SANITIZE:-}" ]; then
  FLASHC_TEST_SEED=7 timeout 120 compute-sanitizer --tool memcheck "$TEST_BIN" 6 --no-fixed > "$OUT/sanitizer.log" 2>&1
  echo "sanitizer rc=$?"; grep -E "ERROR SUMMARY|cases" "$OUT/sanitizer.log" | tail -3
fi
if [ -n "${GEMM_BENCH:-}" ]; then
  timeout ${GEMM_BENCH_TIMEOUT:-240} "$BENCH_BIN" "$@" --json "$OUT/bench.json" > "$OUT/bench.txt" 2> "$OUT/bench.err"
  echo "bench rc=$?"
  tail -2 "$OUT/bench.err"
  cat "$OUT/bench.txt"
fi
if [ -n "${GEMM_BENCH_NOEPILOGUE:-}" ] && [ -x "$BIN/bench_gemm_noepilogue" ]; then
  # profiling build (-DGEMM_HOPPER_PROFILE_SKIP_EPILOGUE): the main loop alone
  timeout 200 "$BIN/bench_gemm_noepilogue" "$@" > "$OUT/bench_noepilogue.txt" 2> "$OUT/bench_noepilogue.err"
  echo "bench (no epilogue) rc=$?"
  grep -v "^llm\|^square" "$OUT/bench_noepilogue.txt"; awk '/^(square|llm)/ {printf "%s %s %s %s %s flashc-noepi %s\n",$1,$2,$3,$4,$5,$6}' "$OUT/bench_noepilogue.txt"
fi
