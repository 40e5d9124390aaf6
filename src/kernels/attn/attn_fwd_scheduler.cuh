/*
 * attn_fwd_scheduler.cuh — which (query block, head, batch) tile a CTA works on next.
 *
 * Persistent grid (one CTA per SM): CTA c takes tiles c, c + grid, c + 2·grid, ... The query
 * block index varies fastest, so the CTAs in flight at any time share one (batch, head) and
 * its K/V stays in L2 (at 16k keys a head's K and V are 8 MB; reading them once per tile from
 * HBM would cost as much bandwidth as the whole chip has). With a causal mask the blocks of a
 * head are handed out last-first: the longest tiles start first and the short ones fill the
 * tail of the wave.
 */
#ifndef FLASHC_KERNELS_ATTN_FWD_SCHEDULER_CUH
#define FLASHC_KERNELS_ATTN_FWD_SCHEDULER_CUH

#include "kernels/attn/attn_fwd_params.cuh"

struct attn_fwd_tile_coord {
  int m_block, head, batch;
};

static __device__ __forceinline__ attn_fwd_tile_coord attn_fwd_tile_at(const attn_fwd_params& p, int linear) {
  attn_fwd_tile_coord t;
  const int m = linear % p.m_blocks;
  const int head_batch = linear / p.m_blocks;
  t.m_block = p.reverse_m_order ? p.m_blocks - 1 - m : m;
  t.head = head_batch % p.heads_q;
  t.batch = head_batch / p.heads_q;
  return t;
}

#endif
