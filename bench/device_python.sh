#!/usr/bin/env bash
# device_python.sh — the Python package on a GPU machine, in one call: the pytest suite (CPU
# backend with numpy, torch on CPU and CUDA), bench_attn.py and bench_gemm.py (--quick unless
# --full), and the charts; logs and records under $OUT (or /tmp/flashc-py-out), a summary last.
#
#   bash bench/device_python.sh [BUILD_DIR]           tests + quick benchmarks + charts
#   bash bench/device_python.sh [BUILD_DIR] --full    full benchmark grids + charts (no tests)
#
# Uses BUILD_DIR/libflashc.so (default build-dev); if it is missing, configures BUILD_DIR with
# CMake (CUDA on) and builds the library target only (minutes: with a 10-minute command limit,
# build in an earlier call if the tree has grown). The steps have timeouts that add up to under
# 10 minutes (about 4 in practice). Installs nothing: it needs python3 with
# torch, numpy and pytest (the GPU image has them) and imports flashc from python/ of this tree.
# FLASHC_GPU_STRICT=1 turns "not supported on the GPU yet" xfails into failures.
set -u
BUILD=${1:-build-dev}
MODE="--quick"
[ "${2:-}" = "--full" ] && MODE=""
OUT=${OUT:-/tmp/flashc-py-out}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
export PATH="/usr/local/cuda/bin:$PATH"

if [ ! -f "$BUILD/libflashc.so" ]; then
  echo "== building $BUILD (library only)"
  { cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release && cmake --build "$BUILD" --target flashc -j "$(nproc)"; } \
    > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; echo "build failed (log: $OUT/build.log)"; exit 1; }
fi
export FLASHC_LIBRARY="$ROOT/$BUILD/libflashc.so"
[ -f "$FLASHC_LIBRARY" ] || FLASHC_LIBRARY="$BUILD/libflashc.so"
export PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}"

results=()
step() { # name, timeout seconds, command...
  local name=$1 limit=$2; shift 2
  local start=$(date +%s)
  echo "== $name: $*"
  timeout "$limit" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  local verdict=PASS; [ $rc -ne 0 ] && verdict="FAIL($rc)"; [ $rc -eq 124 ] && verdict="TIMEOUT"
  results+=("$(printf '%-12s %-9s %4ss  %s' "$name" "$verdict" "$(( $(date +%s) - start ))" "$(grep -E "passed|failed|geometric|wrote" "$OUT/$name.log" | tail -1 | cut -c1-90)")")
}

nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader > "$OUT/gpu.txt" 2>&1
step info 30 python3 -c "import torch, flashc; print('flashc', flashc.__version__, flashc.library_path); print(flashc.build_info()); print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), 'cudnn', torch.backends.cudnn.version()); print(flashc.kernels(0) if flashc.device_count() else 'no CUDA device for flashc')"
if [ -n "$MODE" ]; then  # --quick benchmarks after the tests
  step pytest 240 python3 -m pytest python/tests -q -rxfs -p no:cacheprovider --junitxml="$OUT/pytest.xml"
  step bench_attn 150 python3 bench/bench_attn.py --quick --json "$OUT/bench_attn.json"
  step bench_gemm 120 python3 bench/bench_gemm.py --quick --json "$OUT/bench_gemm.json"
else                     # --full: the whole grids, no tests (to stay inside one 10-minute call)
  step bench_attn 330 python3 bench/bench_attn.py --json "$OUT/bench_attn.json"
  step bench_gemm 210 python3 bench/bench_gemm.py --json "$OUT/bench_gemm.json"
fi
records=(); for f in "$OUT/bench_attn.json" "$OUT/bench_gemm.json"; do [ -f "$f" ] && records+=("$f"); done
[ ${#records[@]} -gt 0 ] && step plot 30 python3 bench/plot.py "${records[@]}" --out-dir "$OUT/docs"

echo; cat "$OUT/info.log"
[ -f "$OUT/pytest.log" ] && { echo; grep -E "^(XFAIL|FAILED|ERROR)" "$OUT/pytest.log" | cut -c1-220 | head -40; tail -1 "$OUT/pytest.log"; }
for name in bench_attn bench_gemm; do [ -f "$OUT/$name.log" ] && { echo; grep -v "^\[" "$OUT/$name.log" | tail -60; }; done
echo; echo "== summary ($OUT; copy $OUT/docs/*.png to docs/ to publish the charts)"
printf '%s\n' "${results[@]}"
