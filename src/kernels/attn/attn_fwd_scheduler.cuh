/*
 * attn_fwd_scheduler.cuh — which (query block, head, batch) tile a CTA works on next, and how
 * the producer hands that choice to the consumers.
 *
 * Order: the query block index varies fastest, so the CTAs in flight at any time share one
 * (batch, head) and its K/V stays in L2 (at 16k keys a head's K and V are 8 MB; reading them
 * from HBM once per tile would need more bandwidth than the chip has). With a causal or local
 * mask the blocks of a head are handed out last-first: the longest tiles start first and the
 * short ones fill the tail.
 * The tail order (causal/local, unsplit): longest-first per head leaves the grid's last
 * assignments a mix of every length whenever a head has fewer query blocks than there are
 * SMs — the last heads' longest tiles start late and the other SMs idle (ncu, d256 causal 1k:
 * SMs active 88 % of the elapsed cycles, as a greedy-schedule simulation of the order
 * predicts). So the last tail_heads head slots are interleaved: all their last query blocks,
 * then all their second-to-last, ..., and the grid ends on the shortest tiles. The launcher
 * sizes the tail to ~3 tiles per SM, capped so that its heads' K/V fit in a part of L2.
 *
 * Split-KV (num_splits = S > 1, FlashAttention-3's decoding path): every (query block, split)
 * pair is a tile, S times as many as unsplit, so a decode step with few query tiles still
 * fills the SMs. The split index sits between the query block and the head in the order
 * (linear = ((batch · tile_heads + head) · S + split) · m_blocks + m_block): the query block
 * still varies fastest and the CTAs in flight still share one head's K/V in L2. Split s of a
 * tile takes the s-th of S equal runs of ceil(blocks / S) key blocks of the tile's visible
 * range [first, end) (attn_fwd_key_blocks); a split past the end is empty and writes O = 0,
 * LSE = −inf, which the combine skips. The split's range is computed once per tile: the key
 * loop itself is the unsplit one over a shorter range.
 *
 * Static (uniform tiles): CTA c takes tiles c, c + grid, c + 2·grid, ... — up to
 * sk_first_tile when the stream-K tail splits the last partial round (attn_fwd_stream_k.cuh).
 * Dynamic (causal, local, varlen: tiles of unequal cost): after its first tile (blockIdx.x) a
 * CTA takes grid + atomicAdd(counter, 1), a counter in the workspace that CTA 0 zeroes at the
 * start of the launch (attn_fwd_reset_tile_counter, attn_fwd_next_tile). CTAs then stay on
 * neighbouring tiles — unequal tiles no longer let them drift across heads until their K/V
 * overflow L2 (measured: bf16 d128 causal 16k fell from 570 to 422 TFLOP/s with the static
 * order) — and the load is balanced. Uniform tiles take it too where their last round is
 * partial and no stream-K tail splits it (d ≤ 128; tile_plan::dynamic in attn_fwd_launch.cu):
 * the CTAs whose SMs run ahead then take that round's tiles.
 *
 * Hand-off: the producer thread picks each tile (skipping varlen query blocks past their
 * sequence), decodes it into a job in shared memory (attn_fwd_job, attn_fwd_mainloop.cuh)
 * before it arrives on q_full for that tile's Q; consumers read the job after their q_full
 * wait (the arrive releases, the wait acquires). A job slot is rewritten only after q_empty,
 * i.e. after every consumer has finished with it (attn_fwd_tile::JOB_SLOTS). After the last
 * tile the producer writes first = −1 and arrives on q_full without a load, which ends the
 * consumers' loop.
 */
#ifndef FLASHC_KERNELS_ATTN_FWD_SCHEDULER_CUH
#define FLASHC_KERNELS_ATTN_FWD_SCHEDULER_CUH

#include "kernels/attn/attn_fwd_config.cuh"
#include "kernels/attn/attn_fwd_params.cuh"
#include "kernels/common/ptx.cuh"

/* A tile: query block m_block (in packed rows: row << pack_shift | head in pack) of the query
 * heads q_head0 .. q_head0 + 2^pack_shift − 1, which read KV head kv_head, in batch `batch`;
 * with split-KV, the split-th part of its keys (0 unsplit). out_batch is the batch index of
 * what the epilogue writes: `batch` unsplit, split · batch count + batch (the partials'
 * (split, batch) dimensions flattened) with split-KV. The epilogue reads only out_batch, so
 * the key loop carries one register for both (d256 has none to spare: carrying the split as
 * well spilled). */
struct attn_fwd_tile_coord {
  int m_block, q_head0, kv_head, batch, split, out_batch;
};

static __host__ __device__ __forceinline__ attn_fwd_tile_coord attn_fwd_tile_at(const attn_fwd_params& p, int linear) {
  attn_fwd_tile_coord t;
  int m, head_batch;
  if (linear < p.tail_first_tile) {
    m = linear % p.m_blocks;
    head_batch = linear / p.m_blocks;
  } else { /* the tail (unsplit only): head slots interleaved, query block by query block */
    const int in_tail = linear - p.tail_first_tile;
    m = in_tail / p.tail_heads;
    head_batch = p.tail_first_head + in_tail % p.tail_heads;
  }
  t.split = 0;
  if (p.num_splits > 1) { /* unsplit: no division by 1 */
    t.split = head_batch % p.num_splits;
    head_batch /= p.num_splits;
  }
  t.m_block = p.reverse_m_order ? p.m_blocks - 1 - m : m;
  t.q_head0 = (head_batch % p.tile_heads) << p.pack_shift;
  t.kv_head = t.q_head0 / p.heads_per_kv;
  t.batch = head_batch / p.tile_heads;
  t.out_batch = t.split * p.batch + t.batch;
  return t;
}

/* Narrows the tile's visible key blocks [*first, *end) to its split's run (see the top of this
 * file); leaves them alone unsplit. The run may be empty (*end <= *first). Producer and
 * consumers call it with the same arguments, so they agree on the blocks. */
static __device__ __forceinline__ void attn_fwd_split_key_blocks(const attn_fwd_params& p, int split, int* first,
                                                                 int* end) {
  if (p.num_splits <= 1) return;
  const int blocks = max(*end - *first, 0);
  const int blocks_per_split = (blocks + p.num_splits - 1) / p.num_splits;
  const int split_first = *first + split * blocks_per_split;
  *end = min(*end, split_first + blocks_per_split);
  *first = split_first;
}

/* The dynamic scheduler's counter is zeroed by the kernel, not by a memset before the launch:
 * a memset is a stream operation between two kernels, so with it the attention kernel could
 * neither start while the previous kernel finishes (a programmatic launch,
 * launch_programmatic.cuh) nor skip the memset's own launch. CTA 0's producer zeroes it first
 * thing (after the grid dependency wait: the previous launch is over) and announces that by
 * raising the ready flag to this launch's tag, unique up to a 2^-64 chance (fc_launch_tag), so
 * what an earlier launch left there never reads as ready. The other CTAs wait for the tag
 * before their first ticket, which they take only after issuing a whole tile's loads: by then
 * it is up. (A counter claimed through its tag with a 128-bit compare-and-swap instead ran
 * 3-5x slower at causal 512: the producers' CAS retries serialized, docs/PERF.md.) */
static __device__ __forceinline__ void attn_fwd_reset_tile_counter(const attn_fwd_params& p) {
  if (p.tile_counter && blockIdx.x == 0) {
    *p.tile_counter = 0;
    store_release_gpu(p.tile_counter_ready, p.launch_tag);
  }
}

/* The tile after `linear` for this CTA (producer thread only). counter_seen: whether this CTA
 * already saw the counter's ready tag (false at the start). */
static __device__ __forceinline__ int attn_fwd_next_tile(const attn_fwd_params& p, int linear, bool& counter_seen) {
  if (!p.tile_counter) return linear + static_cast<int>(gridDim.x);
  if (!counter_seen) {
    flag_wait(p.tile_counter_ready, p.launch_tag);
    counter_seen = true;
  }
  return static_cast<int>(gridDim.x) + atomicAdd(p.tile_counter, 1);
}

#endif
