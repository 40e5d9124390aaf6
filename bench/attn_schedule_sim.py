#!/usr/bin/env python3
"""attn_schedule_sim.py — how busy the SMs stay under the attention forward's tile order, by a
greedy-schedule simulation (no GPU): CTA c takes tile c first, then the next index from the
counter (attn_fwd_scheduler.cuh's dynamic scheduler; the static one is the same for uniform
tiles). A tile costs its key blocks plus a fixed per-tile overhead in blocks (~2.5 at d64 1k:
docs/NOTES-attn-fwd.md, the 5th session's tile-boundary measurement).

    python3 bench/attn_schedule_sim.py                       # FA3's causal grid, every d
    python3 bench/attn_schedule_sim.py --d 256 --seqlen 1024 --causal --tail-heads 22,40

Prints, per problem, the busy share (mean SM work / makespan) with longest-first per head and
with the tail order the launcher picks (tail_order_for in attn_fwd_launch.cu: ~3 tiles per SM,
K/V within 24 MB), and for uniform tiles the wave quantization (tiles / (rounds · SMs)).
In the 15th session it predicted the tail order's gains within ~2 points (d256 causal 1k:
0.893 -> 0.958, measured +6.1 %; docs/PERF.md)."""
import argparse
import heapq
import math

TAIL_TILES_PER_SM = 3           # attn_fwd_launch.cu
TAIL_L2_BUDGET_BYTES = 24 << 20


def launcher_tile(d, seqlen, causal):
    """(BLOCK_M, BLOCK_N, CTAs per SM) the launcher picks for FA3's grid point (d, seqlen, causal):
    instance_for_problem in attn_fwd_launch.cu as of the 25th session, for square problems with
    enough tiles (tests/cpu_attn_plan.c asserts the real picks; update both together)."""
    if d == 64:
        if causal:
            if seqlen <= 1024:
                return 64, 64, 3      # one consumer, three CTAs per SM
            return (64, 80, 3) if seqlen <= 8192 else (128, 192, 1)
        return (256, 64, 1) if seqlen < 3072 else (192, 112, 1)  # four / three consumers
    if d == 128:
        narrow = seqlen <= 8192 if causal else seqlen <= 2048
        return 128, 128 if narrow else 160, 1
    if d == 256:
        narrow = seqlen <= 2048 if causal else seqlen <= 512
        return 128, 64 if narrow else 80, 1
    return 128, 112 if d == 192 else 128, 1


def makespan(costs, sms):
    finish = [(0.0, sm) for sm in range(sms)]
    heapq.heapify(finish)
    for cost in costs:
        t, sm = heapq.heappop(finish)
        heapq.heappush(finish, (t + cost, sm))
    return max(t for t, _ in finish)


def order(head_slots, m_blocks, tail_heads):
    """(head slot, order index) in hand-out order; order index 0 = the longest query block."""
    first = head_slots - tail_heads if tail_heads > 1 else head_slots
    tiles = [(h, m) for h in range(first) for m in range(m_blocks)]
    tiles += [(h, m) for m in range(m_blocks) for h in range(first, head_slots)]
    return tiles


def launcher_tail_heads(m_blocks, head_slots, seqlen_k, d, sms, element_bytes=2):
    heads = math.ceil(TAIL_TILES_PER_SM * sms / m_blocks)
    heads = min(heads, TAIL_L2_BUDGET_BYTES // (seqlen_k * 2 * d * element_bytes), head_slots)
    return heads if heads > 1 else 1


def simulate(d, seqlen, batch, heads, causal, sms, overhead, block_m, block_n, extra_tails):
    m_blocks = math.ceil(seqlen / block_m)
    head_slots = batch * heads
    n_blocks = math.ceil(seqlen / block_n)

    def blocks(order_index):
        if not causal:
            return n_blocks
        m = m_blocks - 1 - order_index  # longest first
        return math.ceil(min(seqlen, block_m * (m + 1)) / block_n)

    work = sum(blocks(m) + overhead for m in range(m_blocks)) * head_slots / sms
    line = f"d{d:<3} {'causal' if causal else 'full  '} {seqlen:>6} b{batch:<3} h{heads:<3} tiles {m_blocks * head_slots:>6}:"
    if not causal:
        rounds = math.ceil(m_blocks * head_slots / sms)
        return line + f" uniform, {m_blocks * head_slots / sms:.2f} rounds -> busy {m_blocks * head_slots / (rounds * sms):.3f}"
    tails = [1, launcher_tail_heads(m_blocks, head_slots, seqlen, d, sms)] + extra_tails
    parts = []
    for tail in tails:
        tail = max(1, min(tail, head_slots))
        costs = [blocks(m) + overhead for _, m in order(head_slots, m_blocks, tail)]
        label = "per head" if tail == 1 else f"tail {tail}"
        parts.append(f"{label} {work / makespan(costs, sms):.3f}")
    return line + " busy " + ", ".join(parts)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--d", type=int, action="append")
    parser.add_argument("--seqlen", type=int, action="append")
    parser.add_argument("--tokens", type=int, default=16384, help="batch = tokens / seqlen (FA3's grid)")
    parser.add_argument("--causal", action="store_true", help="only causal (default: both)")
    parser.add_argument("--sms", type=int, default=132)
    parser.add_argument("--overhead", type=float, default=2.5, help="per-tile cost in key blocks")
    parser.add_argument("--block-m", type=int)
    parser.add_argument("--block-n", type=int)
    parser.add_argument("--tail-heads", default="", help="extra tail sizes to compare, comma-separated")
    args = parser.parse_args()
    extra = [int(x) for x in args.tail_heads.split(",") if x]
    for d in args.d or [64, 128, 256]:
        for seqlen in args.seqlen or [512, 1024, 2048, 4096, 8192, 16384]:
            for causal in [True] if args.causal else [False, True]:
                block_m, block_n, ctas_per_sm = launcher_tile(d, seqlen, causal)
                print(simulate(d, seqlen, max(1, args.tokens // seqlen), 2048 // d, causal, args.sms * ctas_per_sm,
                               args.overhead, args.block_m or block_m, args.block_n or block_n, extra))


if __name__ == "__main__":
    main()
