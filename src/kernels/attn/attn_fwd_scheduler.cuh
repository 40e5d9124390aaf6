/*
 * attn_fwd_scheduler.cuh — which (query block, head, batch) tile a CTA works on next, and how
 * the producer hands that choice to the consumers.
 *
 * Order: the query block index varies fastest, so the CTAs in flight at any time share one
 * (batch, head) and its K/V stays in L2 (at 16k keys a head's K and V are 8 MB; reading them
 * from HBM once per tile would need more bandwidth than the chip has). With a causal or local
 * mask the blocks of a head are handed out last-first: the longest tiles start first and the
 * short ones fill the tail.
 *
 * Static (uniform tiles): CTA c takes tiles c, c + grid, c + 2·grid, ...
 * Dynamic (causal, local, varlen: tiles of unequal cost): after its first tile (blockIdx.x) a
 * CTA takes grid + atomicAdd(counter, 1), a counter in the workspace that the launcher zeroes
 * on the stream. CTAs then stay on neighbouring tiles — unequal tiles no longer let them
 * drift across heads until their K/V overflow L2 (measured: bf16 d128 causal 16k fell from
 * 570 to 422 TFLOP/s with the static order) — and the load is balanced.
 *
 * Hand-off: the producer thread picks each tile (skipping varlen query blocks past their
 * sequence) and writes its index into one shared-memory word before it arrives on q_full
 * for that tile's Q; consumers read the word after their q_full wait (the arrive releases,
 * the wait acquires). The word is rewritten only after q_empty, i.e. after every consumer has
 * finished the previous tile. After the last tile the producer writes an index ≥ tile_count
 * and arrives on q_full without a load, which ends the consumers' loop.
 */
#ifndef FLASHC_KERNELS_ATTN_FWD_SCHEDULER_CUH
#define FLASHC_KERNELS_ATTN_FWD_SCHEDULER_CUH

#include "kernels/attn/attn_fwd_config.cuh"
#include "kernels/attn/attn_fwd_params.cuh"
#include "kernels/common/ptx.cuh"

/* A tile: query block m_block (in packed rows: row << pack_shift | head in pack) of the query
 * heads q_head0 .. q_head0 + 2^pack_shift − 1, which read KV head kv_head, in batch `batch`. */
struct attn_fwd_tile_coord {
  int m_block, q_head0, kv_head, batch;
};

static __device__ __forceinline__ attn_fwd_tile_coord attn_fwd_tile_at(const attn_fwd_params& p, int linear) {
  attn_fwd_tile_coord t;
  const int m = linear % p.m_blocks;
  const int head_batch = linear / p.m_blocks;
  t.m_block = p.reverse_m_order ? p.m_blocks - 1 - m : m;
  t.q_head0 = (head_batch % p.tile_heads) << p.pack_shift;
  t.kv_head = t.q_head0 / p.heads_per_kv;
  t.batch = head_batch / p.tile_heads;
  return t;
}

/* The tile after `linear` for this CTA (producer thread only). */
static __device__ __forceinline__ int attn_fwd_next_tile(const attn_fwd_params& p, int linear) {
  if (p.tile_counter) return static_cast<int>(gridDim.x) + atomicAdd(p.tile_counter, 1);
  return linear + static_cast<int>(gridDim.x);
}

#endif
