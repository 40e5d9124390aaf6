#!/usr/bin/env bash
# sass_loops.sh — the key loops of attention (or GEMM) kernels as ptxas built them, without a GPU:
# compiles each .cu for sm_90a as the build does and prints, per kernel file, every loop (a
# backward branch) that holds at least MIN_HGMMA wgmmas, with its instruction count and the
# instructions that tell how ptxas fed the wgmmas (R2UR: a register copied into a uniform one
# before use; UMOV / ULDC / UIADD3: uniform moves, constant loads and adds), and the sequence
# around each S = Q·Kᵀ issue (from the HGMMA with RZ, !UPT that starts a block's S to the one
# with gsb0 that ends its group).
#
#   bash bench/sass_loops.sh [--min-hgmma N] FILE.cu ...      (default 16: d128's 8 S + 10 P·V)
#
# Why: the 25th session's mixed-width loop lost 4 % in the stream-K kernel, and the visible
# change in its SASS was this: main's loop computes the eight Q descriptors of the S issue into
# uniform registers first ("H UIADD3 ×8 H NOP H NOP …" in the S sequence); the slow build
# computes or copies one before each HGMMA ("H UIADD3 UIADD3 H UIADD3 UIADD3 …"). The plain
# kernel of that build had the same pattern and did not lose, so this is a symptom to compare,
# not a proven cause (ncu put the loss in the softmax's waits). Run it in both trees (main and a
# variant) before spending device time on the variant.
set -eu
MIN_HGMMA=16
[ "${1:-}" = "--min-hgmma" ] && { MIN_HGMMA=$2; shift 2; }
[ $# -gt 0 ] || { echo "usage: sass_loops.sh [--min-hgmma N] FILE.cu ..." >&2; exit 2; }
cd "$(dirname "$0")/.."
. bench/kernel_tools.sh
NVDISASM=$(find_nvdisasm)
[ -x "$NVDISASM" ] || { echo "sass_loops: no nvdisasm (set NVDISASM, or run bench/get_nvdisasm.sh)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for file in "$@"; do
  name=$(basename "$file" .cu)
  nvcc "${KERNEL_NVCC_FLAGS[@]}" -Xptxas -v -cubin "$file" -o "$work/$name.cubin" 2> "$work/$name.ptxas" ||
    { cat "$work/$name.ptxas" >&2; exit 1; }
  grep -E "C75[0-9][0-9]|[1-9][0-9]* bytes spill stores" "$work/$name.ptxas" | sed 's/^/  ptxas: /' || true
  "$NVDISASM" "$work/$name.cubin" > "$work/$name.sass"
  python3 - "$work/$name.sass" "$name" "$MIN_HGMMA" <<'PY'
import re, sys
path, name, min_hgmma = sys.argv[1], sys.argv[2], int(sys.argv[3])
instructions, labels, pending = [], {}, []
for line in open(path):
    label = re.match(r'^\s*(\.L_x_\d+):', line)
    if label:
        pending.append(label.group(1))
        continue
    m = re.search(r'/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;', line)
    if m:
        address = int(m.group(1), 16)
        for p in pending:
            labels[p] = address
        pending = []
        instructions.append((address, m.group(2)))
print(f'{name}: {len(instructions)} instructions')
def opcode(text):
    return text.split()[1] if text.startswith('@') else text.split()[0]
# The waits' retry branches live in stubs after the last EXIT and jump back into the code: not loops.
last_exit = max((a for a, t in instructions if opcode(t) == 'EXIT'), default=0)
loops = []
for address, text in instructions:
    target = re.search(r'BRA.*`\((\.L_x_\d+)\)', text)
    if target and address < last_exit and labels.get(target.group(1), address) < address:
        start = labels[target.group(1)]
        body = [t for a, t in instructions if start <= a <= address]
        if sum('HGMMA' in t for t in body) >= min_hgmma and (start, address) not in [l[:2] for l in loops]:
            loops.append((start, address, body))
innermost = [l for l in loops if not any(o is not l and l[0] <= o[0] and o[1] <= l[1] for o in loops)]
for start, end, body in innermost:
    count = lambda prefix: sum(opcode(t).startswith(prefix) for t in body)
    print(f'  loop at {start:#x}: {len(body)} instructions, HGMMA {sum("HGMMA" in t for t in body)}, '
          f'R2UR {count("R2UR")}, UMOV {count("UMOV")}, ULDC {count("ULDC")}, UIADD3 {count("UIADD3")}, '
          f'MUFU {count("MUFU")}')
    for i, t in enumerate(body):
        if 'HGMMA' in t and 'RZ, !UPT' in t:
            sequence = []
            for u in body[i:]:  # to the S group's last HGMMA (the one that commits it: gsb0)
                sequence.append('H' if 'HGMMA' in u else opcode(u).split('.')[0])
                if ('HGMMA' in u and 'gsb0' in u) or len(sequence) == 48:
                    break
            print('    S issue: ' + ' '.join(sequence))
PY
done
