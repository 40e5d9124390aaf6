#!/usr/bin/env bash
# profile_attn_peer.sh — on the GPU machine: Nsight Compute on flashc's attention-forward kernel
# and on torch SDPA cuDNN's for the same problem (bench/profile_attn_peer.py: the third call of
# each), same sections, so that cycles at the locked clock, instructions by opcode and pipe, and
# shared-memory / L2 / DRAM traffic can be compared per FLOP — where the energy per FLOP differs
# (under the 700 W limit the clock follows it: docs/PERF.md, 18th session).
#
#   FLASHC_LIBRARY=/path/libflashc.so bash bench/profile_attn_peer.sh [d,seqlen,batch,heads[,causal]]
#
# Writes $OUT/peer-{flashc,cudnn}.ncu-rep and .txt (details page) and prints the headline lines.
set -u
CASE=${1:-128,4096,4,16}
OUT=${OUT:-/tmp/flashc-out}
mkdir -p "$OUT"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
[ -n "$NCU" ] || { echo "profile_attn_peer: ncu not found" >&2; exit 1; }
for who in flashc cudnn; do
  regex=attn_fwd_kernel
  [ $who = cudnn ] && regex=sdpa
  timeout 200 "$NCU" -k "regex:$regex" --launch-skip 2 -c 1 --section SpeedOfLight --section ComputeWorkloadAnalysis \
    --section InstructionStats --section MemoryWorkloadAnalysis --section LaunchStats --section WarpStateStats \
    --metrics smsp__inst_executed.sum,sm__inst_executed_pipe_xu.sum,smsp__inst_executed_pipe_fma.sum,smsp__inst_executed_pipe_alu.sum,smsp__inst_executed_pipe_uniform.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,lts__t_sectors.sum,dram__bytes.sum,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active \
    -f --export "$OUT/peer-$who" python3 bench/profile_attn_peer.py "$CASE" > "$OUT/peer-$who.run.log" 2>&1
  echo "$who ncu rc=$?"
  "$NCU" --import "$OUT/peer-$who.ncu-rep" --page details > "$OUT/peer-$who.txt" 2>&1
  grep -E "^  [a-z_]+.*(attn|sdpa)|Duration|Elapsed Cycles|SM Frequency|Grid Size|Block Size|Cluster Size|Registers Per|Executed Instructions  |smsp__inst_executed.sum|pipe_xu|pipe_fma|pipe_alu|pipe_uniform|wavefronts_mem_shared|lts__t_sectors.sum|dram__bytes.sum|gmma_cycles_active|Issue Slots Busy|No Eligible" \
    "$OUT/peer-$who.txt" | head -30
done
