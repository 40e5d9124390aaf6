#!/usr/bin/env bash
# gemm_device_check.sh — one device call for the GEMM (issue 3), made to fit a few minutes of
# device time: a targeted build on the device (static binaries are too big to carry), the GPU
# tests in parallel (each checks against a CPU reference and times nothing, so sharing the
# GPU is harmless), then the benchmark alone on the GPU; logs packed into $OUT/logs.tar.gz
# (the device tool returns only a few files), a summary last with each test's seed.
#   bash bench/gemm_device_check.sh            (repo root, device machine)
# Environment: BUILD (default build-dev), JOBS (16), GEMM_SEED (the seed replayed with the
# 128×256 tile forced, default 585389383772), FRESH_CASES (random cases of the fresh run, 240),
# PORTABLE=OFF (configure -DFLASHC_PORTABLE_GEMM=OFF: a faster build without the portable
# GEMM and its test).
set -u
OUT=${OUT:-/tmp/gemm-check}
FINAL_OUT=$OUT
OUT=/tmp/gemm-check-logs   # every log; packed into $FINAL_OUT/logs.tar.gz at the end
BUILD=${BUILD:-build-dev}
mkdir -p "$OUT" "$FINAL_OUT"
start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader > "$OUT/gpu.txt" 2>&1
PORTABLE=${PORTABLE:-ON}
targets="gpu_gemm gpu_ptx_tma bench_gemm"
[ "$PORTABLE" = ON ] && targets="$targets gpu_gemm_portable"
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DFLASHC_PORTABLE_GEMM="$PORTABLE" > "$OUT/configure.log" 2>&1
if ! cmake --build "$BUILD" -j"${JOBS:-16}" --target $targets \
    > "$OUT/build.log" 2>&1; then
  grep -E "error|Error" "$OUT/build.log" | head -20; echo "build failed after $(elapsed) s"; exit 1
fi
echo "build done at $(elapsed) s"
export LD_LIBRARY_PATH="$BUILD:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"

run_test() { # log name, timeout, command...
  local log=$1 limit=$2; shift 2
  timeout "$limit" "$@" > "$OUT/$log.log" 2>&1
  echo "exit $?" >> "$OUT/$log.log"
}
run_test gpu_ptx_tma 60 "$BUILD/tests/ptx/gpu_ptx_tma" &
FLASHC_TEST_SEED=${GEMM_SEED:-585389383772} FLASHC_TEST_GEMM_TILE_N=256 \
  run_test gpu_gemm_seed 200 "$BUILD/tests/gpu/gpu_gemm" &
run_test gpu_gemm_fresh 200 "$BUILD/tests/gpu/gpu_gemm" "${FRESH_CASES:-240}" &
[ "$PORTABLE" = ON ] && run_test gpu_gemm_portable 200 "$BUILD/tests/gpu/gpu_gemm_portable" &
wait
echo "tests done at $(elapsed) s"

bench="$BUILD/bench/bench_gemm"
timeout 150 "$bench" --json "$OUT/bench.json" > "$OUT/bench.txt" 2> "$OUT/bench.err"
echo "bench rc=$? at $(elapsed) s"
# The tile heuristic against forced widths on the shapes it changes (M <= 1024), bf16.
for width in 256 128 64; do
  timeout 40 "$bench" --only bf16 --max-m 1024 --tile-n $width > "$OUT/bench_n$width.txt" 2> "$OUT/bench_n$width.err"
done
echo "width comparison done at $(elapsed) s"

echo "== PTX TMA tests (partial granule cases) =="
grep -E "granule|cases" "$OUT/gpu_ptx_tma.log" | cut -c1-400
grep -E "^FAIL" "$OUT/gpu_ptx_tma.log" | head -5 | cut -c1-300
echo "== tests =="
for log in gpu_ptx_tma gpu_gemm_seed gpu_gemm_fresh gpu_gemm_portable; do
  [ -f "$OUT/$log.log" ] || continue
  printf '%-18s %s | %s\n' "$log" "$(grep -E 'cases' "$OUT/$log.log" | tail -1)" "$(tail -1 "$OUT/$log.log")"
  grep -E "^seed" "$OUT/$log.log" | head -1
  grep -E "FAIL" "$OUT/$log.log" | head -4 | cut -c1-250
done
echo "== cuBLASLt FP8 =="
grep -E "e4m3" "$OUT/bench.err" | head -12 | cut -c1-200
echo "== bench (heuristic) =="
cat "$OUT/bench.txt"
echo "== bf16 M <= 1024, forced widths 256 / 128 / 64 (ratio columns) =="
paste <(awk '/^(llm|square)/ {print $3, $4, $5, $8}' "$OUT/bench_n256.txt") \
      <(awk '/^(llm|square)/ {print $8}' "$OUT/bench_n128.txt") \
      <(awk '/^(llm|square)/ {print $8}' "$OUT/bench_n64.txt")
tar czf "$FINAL_OUT/logs.tar.gz" -C "$OUT" .
cp "$OUT/bench.json" "$FINAL_OUT/" 2>/dev/null
