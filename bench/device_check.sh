#!/usr/bin/env bash
# device_check.sh — the one call to make on a GPU machine (repo root): build, test and benchmark
# in one go, every log packed into $OUT/logs.tar.gz (the device tool returns few files), the
# benchmark records and charts beside it, and a short summary table last — also written row by
# row to $OUT/summary.txt as the steps end, so a call cut off by its time limit still reports
# what finished (don't pipe this script into `tail` under `timeout`: a killed pipe prints nothing).
#
#   bash bench/device_check.sh [BUILD_DIR] [--steps LIST] [--full] [--portable-off] [--cases N]
#                              [--prebuilt ARCHIVE]
#
# BUILD_DIR  a CMake build directory (default build-dev); configured and built here if its
#            programs are missing (16 cores: 2–4 minutes; --portable-off skips the portable
#            GEMM's 48 instantiations and roughly halves that).
# --steps    comma-separated, in this order (default tests,demo,attn-bench,gemm-bench):
#              tests       every test program: cpu_*, gpu_* (attention, GEMM, PTX layer); each
#                          prints its seed (FLASHC_TEST_SEED=... reproduces a run)
#              sanitize    compute-sanitizer memcheck + racecheck on gpu_attn_fwd --quick and
#                          on gpu_attn_bwd
#              demo        flashc info and flashc demo
#              attn-bench  bench/bench_attn.py (flashc vs SDPA cuDNN / FA2, same process), forward
#                          and backward
#              gemm-bench  bench_gemm (flashc vs cuBLASLt, same process)
#              python      the pytest suite with torch on the GPU
#              py-gemm     bench/bench_gemm.py (flashc vs torch.matmul)
#              charts      bench/plot.py on the records of this run, into $OUT/docs
# --full     the full benchmark grids instead of --quick (minutes each: run few steps with it)
# --cases N  random cases of gpu_attn_fwd and gpu_gemm (their defaults otherwise)
# --prebuilt ARCHIVE  unpack programs built elsewhere (bench/pack_build.sh) and build nothing:
#            a call then spends its device minutes running (carry=[".carry"])
# Environment: OUT (default /tmp/flashc-out), JOBS (16), STEP_TIMEOUT (seconds per program, 420),
#   ATTN_BENCH_ARGS (added to bench_attn.py's, e.g. "--dtype bf16 --dtype fp16").
set -u
BUILD=build-dev
STEPS="tests,demo,attn-bench,gemm-bench"
QUICK="--quick"
PORTABLE=ON
CASES=""
PREBUILT=""
while [ $# -gt 0 ]; do
  case $1 in
    --steps) STEPS=$2; shift ;;
    --full) QUICK="" ;;
    --portable-off) PORTABLE=OFF ;;
    --cases) CASES=$2; shift ;;
    --prebuilt) PREBUILT=$2; shift ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) BUILD=$1 ;;
  esac
  shift
done
OUT=${OUT:-/tmp/flashc-out}
LOGS=/tmp/flashc-logs
rm -rf "$LOGS"; mkdir -p "$OUT" "$LOGS"
export LD_LIBRARY_PATH="$PWD/$BUILD:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export PATH="/usr/local/cuda/bin:$PATH" PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
export FLASHC_LIBRARY="$PWD/$BUILD/libflashc.so" PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
start=$(date +%s)
has_step() { case ",$STEPS," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }

nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader > "$LOGS/gpu.txt" 2>&1
results=()
# Each summary row also goes to $OUT/summary.txt as its step ends: files under $OUT come back
# from a call cut off by the device tool's time limit, the table printed at the end does not.
: > "$OUT/summary.txt"
add_row() { results+=("$1"); printf '%s\n' "$1" >> "$OUT/summary.txt"; }
run_one() { # name, command... : runs it with a timeout, logs it, adds a summary row
  local name=$1; shift
  local t0=$(date +%s.%N)
  timeout "${STEP_TIMEOUT:-420}" "$@" > "$LOGS/$name.log" 2>&1
  local rc=$?
  local seconds=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{print b - a}')
  local verdict=PASS; [ $rc -eq 77 ] && verdict=SKIP; [ $rc -eq 124 ] && verdict=TIMEOUT
  [ $rc -ne 0 ] && [ $rc -ne 77 ] && [ $rc -ne 124 ] && verdict="FAIL($rc)"
  local summary=$(grep -aE "cases|passed|failed|geometric|geomean" "$LOGS/$name.log" | tail -1 | cut -c1-80)
  add_row "$(printf '%-26s %-9s %6.1fs  %s' "$name" "$verdict" "$seconds" "$summary")"
}

# ---- build ---------------------------------------------------------------------------------
targets="flashc"
has_step tests && targets="$targets all"
has_step sanitize && targets="$targets gpu_attn_fwd gpu_attn_bwd"
has_step demo && targets="$targets flashc_tool"
has_step gemm-bench && targets="$targets bench_gemm"
t0=$(date +%s)
if [ -n "$PREBUILT" ]; then
  tar xJf "$PREBUILT" || { echo "cannot unpack $PREBUILT" >&2; exit 1; }
  add_row "$(printf '%-26s %-9s %6.1fs  %s' unpack done "$(( $(date +%s) - t0 ))" "$PREBUILT (nothing built)")"
elif [ ! -f "$BUILD/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DFLASHC_PORTABLE_GEMM=$PORTABLE > "$LOGS/configure.log" 2>&1 \
    || { tail -30 "$LOGS/configure.log"; exit 1; }
fi
if [ -z "$PREBUILT" ]; then
  if ! cmake --build "$BUILD" -j"${JOBS:-16}" --target $targets > "$LOGS/build.log" 2>&1; then
    grep -aB2 -A10 "error" "$LOGS/build.log" | head -60
    tar czf "$OUT/logs.tar.gz" -C "$LOGS" .
    echo "build failed (log in logs.tar.gz)"; exit 1
  fi
  add_row "$(printf '%-26s %-9s %6.1fs  %s' build done "$(( $(date +%s) - t0 ))" "targets: $targets")"
fi

# ---- steps ---------------------------------------------------------------------------------
if has_step tests; then
  for test in "$BUILD"/tests/cpu_* "$BUILD"/tests/gpu_* "$BUILD"/tests/gpu/gpu_* "$BUILD"/tests/ptx/gpu_*; do
    [ -x "$test" ] && [ -f "$test" ] || continue
    name=$(basename "$test")
    # a -DFLASHC_PORTABLE_GEMM=OFF build has no portable GEMM to test
    [ "$name" = gpu_gemm_portable ] && grep -q "FLASHC_PORTABLE_GEMM:BOOL=OFF" "$BUILD/CMakeCache.txt" && continue
    case $name in
      gpu_attn_fwd | gpu_gemm) run_one "$name" "$test" $CASES ;;
      *) run_one "$name" "$test" ;;
    esac
  done
fi
if has_step sanitize; then
  run_one sanitize_attn env OUT="$LOGS" bash tests/gpu/sanitize_attn.sh "$BUILD"
  [ -x "$BUILD/tests/gpu/gpu_attn_bwd" ] && run_one sanitize_attn_bwd env OUT="$LOGS/bwd" \
    PROGRAM="$BUILD/tests/gpu/gpu_attn_bwd" bash tests/gpu/sanitize_attn.sh "$BUILD"
fi
if has_step demo; then
  run_one flashc_info "$BUILD/tools/flashc" info
  run_one flashc_demo "$BUILD/tools/flashc" demo
fi
has_step attn-bench && run_one bench_attn.py python3 bench/bench_attn.py $QUICK ${ATTN_BENCH_ARGS:-} --json "$OUT/bench_attn.json"
has_step gemm-bench && run_one bench_gemm "$BUILD/bench/bench_gemm" $QUICK --json "$OUT/bench_gemm_c.json"
has_step python && run_one pytest python3 -m pytest -q python/tests
has_step py-gemm && run_one bench_gemm.py python3 bench/bench_gemm.py $QUICK --json "$OUT/bench_gemm.json"
if has_step charts; then
  records=$(ls "$OUT"/bench_attn.json "$OUT"/bench_gemm.json 2>/dev/null)
  [ -n "$records" ] && run_one charts python3 bench/plot.py $records --out-dir "$OUT/docs"
fi

# ---- report --------------------------------------------------------------------------------
tar czf "$OUT/logs.tar.gz" -C "$LOGS" .
for name in bench_attn.py bench_gemm bench_gemm.py; do
  [ -f "$LOGS/$name.log" ] && { echo; echo "== $name"; grep -av "^\[" "$LOGS/$name.log" | tr '\r' '\n' | grep -av "^\[" | tail -45; }
done
[ -f "$LOGS/flashc_demo.log" ] && { echo; tail -25 "$LOGS/flashc_demo.log"; }
echo; echo "== failures and seeds"
grep -ahE "^FAIL|seed" "$LOGS"/gpu_*.log "$LOGS"/cpu_*.log 2>/dev/null | head -30
echo; echo "== summary ($(cat "$LOGS/gpu.txt" 2>/dev/null | head -1); $(( $(date +%s) - start )) s; logs in logs.tar.gz)"
printf '%s\n' "${results[@]}"
