#!/usr/bin/env bash
# attn_device.sh — the attention forward's one call on the GPU machine: build (16 cores),
# the GPU test against the CPU reference, optionally compute-sanitizer, and `flashc attn
# --bench` over FA3's grid (DESIGN §7: 16k tokens, hidden 2048, d 64/128/256, causal or not);
# logs under $OUT, a short table last. Ratios against cuDNN come from bench/bench_attn.py
# (same process as torch SDPA); this script gives flashc's own TFLOP/s.
#
#   bash bench/attn_device.sh [BUILD_DIR] [--sanitize] [--no-test] [--quick-bench] [--py ARGS]
# --py: instead of `flashc attn --bench`, bench/bench_attn.py (flashc vs SDPA cuDNN and flash in
# one process, forward) with ARGS (one word, commas for spaces, e.g. --py --quick,--dtype,fp16).
set -u
BUILD=${1:-build-dev}
shift || true
SANITIZE=0 TEST=1 QUICK=0 PY=0 PY_ARGS=""
while [ $# -gt 0 ]; do
  case $1 in
    --sanitize) SANITIZE=1 ;; --no-test) TEST=0 ;; --quick-bench) QUICK=1 ;;
    --py) PY=1; PY_ARGS=$(echo "${2:-}" | tr ',' ' '); shift ;;
  esac
  shift
done
OUT=${OUT:-/tmp/flashc-out}
mkdir -p "$OUT"
start=$(date +%s)
if [ ! -x "$BUILD/tools/flashc" ] || [ ! -x "$BUILD/tests/gpu/gpu_attn_fwd" ]; then
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DFLASHC_PORTABLE_GEMM=OFF -DFLASHC_BUILD_BENCH=OFF > "$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log"; exit 1; }
fi
cmake --build "$BUILD" -j16 --target flashc flashc_tool gpu_attn_fwd > "$OUT/build.log" 2>&1 || { grep -B2 -A8 error "$OUT/build.log" | head -60; exit 1; }
echo "build: $(( $(date +%s) - start )) s"

if [ $TEST = 1 ]; then
  timeout 400 "$BUILD/tests/gpu/gpu_attn_fwd" > "$OUT/gpu_attn_fwd.log" 2>&1
  echo "gpu_attn_fwd rc=$?: $(tail -1 "$OUT/gpu_attn_fwd.log")"
  grep -E "^FAIL" "$OUT/gpu_attn_fwd.log" | head -25
fi
if [ $SANITIZE = 1 ]; then
  OUT="$OUT" timeout 300 bash tests/gpu/sanitize_attn.sh "$BUILD" > "$OUT/sanitize.log" 2>&1
  echo "sanitize rc=$?"; tail -6 "$OUT/sanitize.log"
fi

if [ $PY = 1 ]; then
  FLASHC_LIBRARY="$PWD/$BUILD/libflashc.so" PYTHONPATH="$PWD/python" PYTHONUNBUFFERED=1 timeout 420 \
    python3 bench/bench_attn.py --direction fwd --json "$OUT/bench_attn.json" $PY_ARGS > "$OUT/bench_attn_py.log" 2>&1
  echo "bench_attn.py rc=$?"; grep -v "^\[" "$OUT/bench_attn_py.log" | tail -45
  echo "total: $(( $(date +%s) - start )) s"
  exit 0
fi
BENCH="$OUT/bench_attn_c.txt"
: > "$BENCH"
seqlens="512 1024 2048 4096 8192 16384"
[ $QUICK = 1 ] && seqlens="1024 4096 16384"
for dtype in bf16; do
  for d in 64 128 256; do
    for causal in "" "--causal"; do
      for s in $seqlens; do
        batch=$((16384 / s)) heads=$((2048 / d))
        raw=$("$BUILD/tools/flashc" attn --device 0 --dtype $dtype --batch $batch --heads $heads --seqlen $s \
               --hdim $d $causal --bench --warmup 3 --iters 10 --quiet 2>&1)
        printf '== %s d%s %s s=%s\n%s\n' $dtype $d "${causal:-full}" $s "$raw" >> "$OUT/bench_attn_raw.txt"
        line=$(echo "$raw" | grep -E "^ +[0-9.]+ TFLOP/s|rror|note" | head -2 | sed 's/ by the DESIGN.md .7 convention, causal = half/ conv/' | tr -s ' \n' '  ')
        printf '%-5s d%-4s %-8s s=%-6s %s\n' $dtype $d "${causal:-full}" $s "$line" | tee -a "$BENCH"
      done
    done
  done
done
echo "total: $(( $(date +%s) - start )) s"
