#!/usr/bin/env bash
# ab_gemm_epilogue.sh — A/B of libflashc builds on the GEMM's fused epilogues (beta·C, bias +
# GELU; plain for scale): bench/probe_gemm_k.py per build, each a process of its own timing
# flashc against torch (addmm, or matmul + bias + gelu) in the same process, the builds taking
# turns for ROUNDS rounds; one table of every build's ratio to torch per round. bench_gemm.c
# (ab_gemm.sh) times plain GEMMs only.
#
# On the build machine, once per build (the shared library, ~5 MB compressed):
#   bash bench/ab_gemm_epilogue.sh --pack NAME BUILD_DIR     → .carry/lib-NAME.so.xz
# On the device (carry [".carry"]; needs torch):
#   bash bench/ab_gemm_epilogue.sh [--rounds N] [--epilogues "c bias_gelu"] [--dtypes "bf16 fp16"]
#                                  [--mn 8192] [--k 1024,4096] [--algo hopper] NAME...
# Writes $OUT/ab_gemm_epilogue.tar.xz (every log) and prints the table last.
set -u
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--pack" ]; then
  name=${2:?usage: ab_gemm_epilogue.sh --pack NAME BUILD_DIR}
  build=${3:?usage: ab_gemm_epilogue.sh --pack NAME BUILD_DIR}
  mkdir -p .carry
  xz -T2 -6 -c "$(readlink -f "$build/libflashc.so")" > ".carry/lib-$name.so.xz"
  ls -la ".carry/lib-$name.so.xz"
  exit 0
fi

ROUNDS=2 EPILOGUES="c bias_gelu" DTYPES="bf16" MN=8192 KS=1024,4096 ALGO=hopper
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) ROUNDS=$2; shift 2 ;;
    --epilogues) EPILOGUES=$2; shift 2 ;;
    --dtypes) DTYPES=$2; shift 2 ;;
    --mn) MN=$2; shift 2 ;;
    --k) KS=$2; shift 2 ;;
    --algo) ALGO=$2; shift 2 ;;
    -*) echo "ab_gemm_epilogue: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || { echo "usage: ab_gemm_epilogue.sh [options] NAME... (see the header)" >&2; exit 2; }
OUT=${OUT:-/tmp/flashc-out}
mkdir -p "$OUT"
LOGS=$(mktemp -d)
WORK=$(mktemp -d)
for v in "$@"; do
  xz -dc ".carry/lib-$v.so.xz" > "$WORK/libflashc-$v.so" || { echo "ab_gemm_epilogue: no .carry/lib-$v.so.xz" >&2; exit 1; }
done
for r in $(seq 1 "$ROUNDS"); do
  for v in "$@"; do
    for e in $EPILOGUES; do
      for d in $DTYPES; do
        FLASHC_LIBRARY="$WORK/libflashc-$v.so" timeout 300 python3 bench/probe_gemm_k.py --algo "$ALGO" --mn "$MN" \
          --k "$KS" --dtype "$d" --epilogue "$e" > "$LOGS/$v-$e-$d-$r.log" 2>&1 || echo "ab_gemm_epilogue: $v $e $d round $r failed" >&2
      done
    done
  done
done
tar cJf "$OUT/ab_gemm_epilogue.tar.xz" -C "$LOGS" .

python3 - "$LOGS" "$ROUNDS" "$EPILOGUES" "$DTYPES" "$@" <<'PY'
import os, sys
logs, rounds, epilogues, dtypes, variants = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split(), sys.argv[5:]
table = {}
for v in variants:
    for e in epilogues:
        for d in dtypes:
            for r in range(1, rounds + 1):
                path = f'{logs}/{v}-{e}-{d}-{r}.log'
                if not os.path.exists(path):
                    continue
                for line in open(path):
                    f = line.split()
                    if len(f) == 5 and f[0].isdigit():  # K flashc torch ratio us/wave
                        table.setdefault((e, d, int(f[0])), {}).setdefault(v, []).append(f'{float(f[1]):.0f}/{float(f[3]):.3f}')
print('epilogue dtype K | ' + ' | '.join(f'{v} (flashc TFLOP/s / ratio to torch, per round)' for v in variants))
for (e, d, k), row in sorted(table.items()):
    print(f'{e} {d} {k} | ' + ' | '.join(' '.join(row.get(v, ['-'])) for v in variants))
PY
