#!/usr/bin/env bash
# ab_gemm.sh — A/B of GEMM builds on the GPU: each variant's bench_gemm (flashc against cuBLASLt,
# alternating launch by launch) run as separate processes that take turns, ROUNDS rounds, then
# one table of every variant's ratio per round. The ratio to cuBLASLt measured in the same
# process is what compares builds: the H200's call-to-call spread (±5 % at 8192³) moves both
# players, not their ratio.
#
# On the build machine, once per variant (bench_gemm and the GEMM tests link flashc statically,
# so each binary carries its own build):
#   bash bench/ab_gemm.sh --pack NAME BUILD_DIR     → .carry/gemm-NAME.tar.xz (~8 MB)
# On the device (carry [".carry"]):
#   bash bench/ab_gemm.sh [--test] [--sanitize] [--rounds N] [--algo portable|hopper|auto]
#                         [--dtypes "bf16 fp16"] [--min-m M] [--max-m M] NAME...
#   --test runs each variant's GEMM test first (gpu_gemm_portable with --algo portable, else
#   gpu_gemm); --sanitize adds racecheck and synccheck of that test's layout cases.
# Writes $OUT/ab_gemm.tar.xz (every log) and prints the table last: per shape and dtype, each
# variant's "TFLOP/s/ratio" per round, and the geomean rows bench_gemm prints.
# Example (27th session): the portable GEMM's barrier variants, 20–30 s per call beyond the start.
set -u
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--pack" ]; then
  name=${2:?usage: ab_gemm.sh --pack NAME BUILD_DIR}
  build=${3:?usage: ab_gemm.sh --pack NAME BUILD_DIR}
  mkdir -p .carry
  files=("$build/bench/bench_gemm")
  for t in gpu_gemm gpu_gemm_portable; do [ -x "$build/tests/gpu/$t" ] && files+=("$build/tests/gpu/$t"); done
  tar cf - -P --transform 's,.*/,,' "${files[@]}" | xz -T2 -6 > ".carry/gemm-$name.tar.xz"
  ls -la ".carry/gemm-$name.tar.xz"
  exit 0
fi

ROUNDS=3 ALGO=portable DTYPES="bf16 fp16" MIN_M=4096 MAX_M= TEST= SANITIZE=
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) ROUNDS=$2; shift 2 ;;
    --algo) ALGO=$2; shift 2 ;;
    --dtypes) DTYPES=$2; shift 2 ;;
    --min-m) MIN_M=$2; shift 2 ;;
    --max-m) MAX_M=$2; shift 2 ;;
    --test) TEST=1; shift ;;
    --sanitize) SANITIZE=1; shift ;;
    -*) echo "ab_gemm: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || { echo "usage: ab_gemm.sh [options] NAME... (see the header)" >&2; exit 2; }
OUT=${OUT:-/tmp/flashc-out}
mkdir -p "$OUT"
LOGS=$(mktemp -d)
WORK=$(mktemp -d)
for v in "$@"; do
  mkdir -p "$WORK/$v" && xz -dc ".carry/gemm-$v.tar.xz" | tar xf - -C "$WORK/$v" || { echo "ab_gemm: no .carry/gemm-$v.tar.xz" >&2; exit 1; }
done
nvidia-smi 2>/dev/null --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv,noheader

if [ -n "$TEST" ]; then
  test_name=gpu_gemm; [ "$ALGO" = portable ] && test_name=gpu_gemm_portable
  for v in "$@"; do
    t="$WORK/$v/$test_name"
    [ -x "$t" ] || { echo "== $v: no $test_name packed"; continue; }
    timeout 300 "$t" > "$LOGS/test-$v.log" 2>&1
    echo "== $v $test_name rc=$? $(grep -E 'cases, [0-9]+ failed' "$LOGS/test-$v.log" | tail -1)"
    if [ -n "$SANITIZE" ]; then
      for tool in racecheck synccheck; do
        timeout 300 compute-sanitizer --tool $tool "$t" 2 --layouts-only > "$LOGS/$tool-$v.log" 2>&1
        echo "   $tool rc=$? $(grep -E 'SUMMARY' "$LOGS/$tool-$v.log" | tail -1)"
      done
    fi
  done
fi

range=(--min-m "$MIN_M"); [ -n "$MAX_M" ] && range+=(--max-m "$MAX_M")
for r in $(seq 1 "$ROUNDS"); do
  for v in "$@"; do
    for d in $DTYPES; do
      timeout 300 "$WORK/$v/bench_gemm" --quick --algo "$ALGO" --only "$d" "${range[@]}" 2>/dev/null
    done > "$LOGS/bench-$v-$r.log"
  done
done
tar cJf "$OUT/ab_gemm.tar.xz" -C "$LOGS" .

python3 - "$LOGS" "$ROUNDS" "$@" <<'PY'
import collections, sys
logs, rounds, variants = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
table = collections.OrderedDict()
for v in variants:
    for r in range(1, rounds + 1):
        for line in open(f'{logs}/bench-{v}-{r}.log'):
            f = line.split()
            if len(f) >= 8 and f[2].isdigit() and f[3].isdigit():  # kind dtype M N K flashc cuBLASLt ratio
                key = (f'{f[0]} {"x".join(f[2:5])}', f[1])
                table.setdefault(key, {}).setdefault(v, []).append(f'{float(f[5]):.0f}/{float(f[7]):.3f}')
            elif line.startswith('geomean ratio ('):
                key = ('geomean', line.split('(')[1].split(';')[0])
                table.setdefault(key, {}).setdefault(v, []).append(f'{float(line.split()[-1]):.3f}')
print('shape dtype | ' + ' | '.join(f'{v} (TFLOP/s/ratio per round)' for v in variants))
for (shape, dtype), row in table.items():
    print(f'{shape} {dtype} | ' + ' | '.join(' '.join(row.get(v, [])) for v in variants))
PY
