#!/usr/bin/env bash
# ab_attn.sh — on the GPU machine: same-process A/B of attention-forward builds packed here
# (bench/ab_attn.c does the timing), each variant's gpu_attn_fwd first with --test.
#
#   bash bench/ab_attn.sh [--test] [--varlen | --seqused] [--rounds N] [--iters N] [--chain N] [--case d[/d_v],seqlen,batch,heads[,causal[,heads_kv[,seqlen_q[,num_splits[,window]]]]]]... NAME...
#
# Per NAME the device call carries (carry=[".carry"]) .carry/ab-NAME-lib.tar.xz (a build's
# libflashc.so.0.1.0) and, for --test, .carry/ab-NAME-test.tar.xz (its tests/gpu/gpu_attn_fwd,
# which links the library statically; a variant without one is not tested); the ab_attn program is .carry/ab_attn (copied from a
# build's bench/ab_attn). A variant that is a few sed edits: bench/pack_variant.sh packs it
# (and main) and restores the source. Packing a branch here, in ~20 s:
#   cmake --build build-attn --target flashc gpu_attn_fwd ab_attn
#   tar cf - build-attn/libflashc.so.0.1.0 | xz -T0 > .carry/ab-NAME-lib.tar.xz
#   tar cf - build-attn/tests/gpu/gpu_attn_fwd | xz -T0 > .carry/ab-NAME-test.tar.xz
# The default cases are bf16 at FA3's 16k tokens per batch: d128 full and causal at 16k,
# d128 at 4k and 1k, d64 at 16k and 1k, d256 at 16k and causal 4k. Logs: $OUT/ab/.
set -u
TEST=0
args=()
cases=()
names=()
while [ $# -gt 0 ]; do
  case $1 in
    --test) TEST=1 ;;
    --varlen | --seqused) args+=("$1") ;;
    --rounds | --iters | --chain | --dtype) args+=("$1" "$2"); shift ;;
    --case) cases+=(--case "$2"); shift ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) names+=("$1") ;;
  esac
  shift
done
[ ${#names[@]} -gt 0 ] || { echo "usage: $0 [--test] [--varlen] [--rounds N] [--iters N] [--case d[/dv],s,b,h[,causal]]... NAME..." >&2; exit 2; }
[ ${#cases[@]} -gt 0 ] || cases=(--case 128,16384,1,16 --case 128,16384,1,16,1 --case 128,4096,4,16 --case 128,1024,16,16
                                 --case 64,16384,1,32 --case 64,1024,16,32 --case 256,16384,1,8 --case 256,4096,4,8,1)
LOGS=${OUT:-/tmp/flashc-out}/ab
mkdir -p "$LOGS"
variants=()
for name in "${names[@]}"; do
  dir=/tmp/ab/$name
  rm -rf "$dir"; mkdir -p "$dir"
  tar xJf ".carry/ab-$name-lib.tar.xz" -C "$dir" || { echo "no .carry/ab-$name-lib.tar.xz" >&2; exit 1; }
  variants+=("$name=$(ls "$dir"/*/libflashc.so* | head -1)")
  if [ $TEST -eq 1 ]; then
    if [ -f ".carry/ab-$name-test.tar.xz" ]; then
      tar xJf ".carry/ab-$name-test.tar.xz" -C "$dir"
      timeout 180 "$(ls "$dir"/*/tests/gpu/gpu_attn_fwd | head -1)" > "$LOGS/test-$name.log" 2>&1
      echo "$name: gpu_attn_fwd rc=$? $(grep -a "cases," "$LOGS/test-$name.log" | tail -1)"
    else
      echo "$name: no .carry/ab-$name-test.tar.xz, not tested"
    fi
  fi
done
program=.carry/ab_attn
[ -x "$program" ] || program=$(ls build*/bench/ab_attn 2>/dev/null | head -1)
timeout 300 "$program" "${args[@]}" "${cases[@]}" "${variants[@]}" 2>&1 | tee "$LOGS/ab.log"
