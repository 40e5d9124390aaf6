/*
 * attn_fwd_stream_k.cuh — the stream-K tail of uniform attention grids: the tiles of the
 * persistent grid's last, partial round are split along their key blocks and spread evenly
 * over every CTA, and the pieces of a tile are merged through the workspace.
 *
 * Why: a problem without a mask or varlen has tiles of equal cost, scheduled round robin
 * (attn_fwd_scheduler.cuh, static). tile_count = R · grid + r leaves the last round r / grid
 * full: at FA3's d128 4k and 16k (2048 tiles on 132 SMs, 15.5 rounds) ~3 % of the time with
 * half the SMs idle. Order cannot fix equal tiles; splitting the r tiles' keys can, as the GEMM
 * does with its k-tiles (gemm_hopper_stream_k.cuh).
 *
 * Decomposition (the launcher's plan_stream_k decides; sk_first_tile = tile_count: off): tiles
 * [0, sk_first_tile) — R whole rounds — run whole, round robin. The key blocks of the last r
 * tiles, laid end to end, are units: unit u is key block u % B of tile sk_first_tile + u / B
 * (B = sk_tile_blocks, every tile's key-block count). CTA c runs units [begin(c), begin(c + 1))
 * with begin(c) = c · ⌊U / grid⌋ + ⌊c · (U mod grid) / grid⌋, i.e. at most ⌈U / grid⌉ ≤ B units:
 * at most two pieces, the end of one tile and the start of the next. A piece's keys run through
 * the ordinary key loop (attn_fwd_consume over [first, end) of the tile's blocks; the online
 * softmax is order-free). Then, by the piece's role:
 *   publish  (it ends before its tile's last unit): O unnormalized and the row state (max and
 *            this thread's partial sum of both rows) go to the CTA's slot, and its flag rises;
 *   finish   (it ends the tile and starts after the tile's first unit): every earlier CTA whose
 *            run reaches into the tile published its part; each is merged into O and the rows
 *            like the split-KV combine (rescaled to the larger maximum), then the ordinary
 *            epilogue stores the tile;
 *   whole    (all of the tile): the ordinary epilogue.
 * A CTA runs its later piece first (attn_fwd_produce): that piece publishes or is whole, never
 * a finisher, so a CTA publishes before it waits for anything and waits only for lower-numbered CTAs — no
 * deadlock with every CTA resident (one per SM, grid ≤ SMs), and the publications all happen
 * at the start of the tail, so the finishers rarely wait.
 * Slots and flags: one per (CTA, consumer warpgroup); each consumer publishes and collects on
 * its own (its 64 rows). A slot holds float4 i of thread t at (i · 128 + t) · 16 bytes: the
 * O_ACCUMULATORS / 4 fragment vectors, then (max₀, max₁, sum₀, sum₁). Flags are raised to the
 * launch's tag (fc_launch_tag), so nothing clears them (group_flag_raise / group_flag_wait,
 * ptx_misc.cuh, as the GEMM).
 * Compiled only into the kernels of ATTN_FWD_STREAM_K_INSTANCES (attn_fwd_instances.cuh),
 * beside a plain kernel of the same shape: the code costs 1-2 % where it stays unused.
 * Check: tests/cpu_attn_tile_order.cu (every unit of the tail in exactly one piece, roles,
 * order) and tests/gpu/gpu_attn_fwd.c part 2d (stream-K forced with a few SMs, so tiles split
 * across up to several CTAs, against the oracle).
 */
#ifndef FLASHC_KERNELS_ATTN_FWD_STREAM_K_CUH
#define FLASHC_KERNELS_ATTN_FWD_STREAM_K_CUH

#include <math.h>

#include "kernels/attn/attn_fwd_config.cuh"
#include "kernels/attn/attn_fwd_params.cuh"
#include "kernels/attn/attn_fwd_softmax.cuh"
#include "kernels/common/ptx.cuh"

/* A piece's role, beside its job (attn_fwd_job_piece): whole tile, publish, or (≥ 0) finish the
 * tile whose first unit that is, after collecting the earlier CTAs' pieces. */
constexpr int ATTN_FWD_PIECE_WHOLE = -1;
constexpr int ATTN_FWD_PIECE_PUBLISH = -2;
/* The producer's piece cursor before its first piece (attn_fwd_produce). */
constexpr int ATTN_FWD_STREAM_K_NOT_STARTED = 0x7fffffff;

struct attn_fwd_stream_k_piece {
  int linear;      /* the tile (index in attn_fwd_tile_at's order) */
  int first, end;  /* its key blocks [first, end) */
  int role;        /* ATTN_FWD_PIECE_*, or the tile's first unit: finish */
};

/* float4 vectors per thread in a slot: O's fragment, then the row state. */
static __host__ __device__ constexpr int attn_fwd_stream_k_slot_vectors(int head_dim_v) { return head_dim_v / 8 + 1; }
static __host__ __device__ constexpr int attn_fwd_stream_k_slot_bytes(int head_dim_v) {
  return attn_fwd_stream_k_slot_vectors(head_dim_v) * ATTN_FWD_WARPGROUP_THREADS * 16;
}

/* The first unit of CTA `cta`'s run (cta = grid: the end of the last run). */
static __host__ __device__ __forceinline__ int attn_fwd_stream_k_run_begin(const attn_fwd_params& p, int cta,
                                                                           int grid) {
  return cta * p.sk_run_length + static_cast<int>(static_cast<unsigned>(cta * p.sk_run_rest) / static_cast<unsigned>(grid));
}

/* The piece of tile `tile` (counted from sk_first_tile) in the run [begin, end); the run's
 * tiles are begin / B .. (end − 1) / B, and a CTA runs them from the last (see the top). */
static __host__ __device__ __forceinline__ attn_fwd_stream_k_piece attn_fwd_stream_k_piece_of(const attn_fwd_params& p,
                                                                                             int begin, int end,
                                                                                             int tile) {
  const int blocks = p.sk_tile_blocks, tile_unit0 = tile * blocks;
  const int lo = max(begin, tile_unit0), hi = min(end, tile_unit0 + blocks);
  attn_fwd_stream_k_piece piece;
  piece.linear = p.sk_first_tile + tile;
  piece.first = lo - tile_unit0;
  piece.end = hi - tile_unit0;
  piece.role = hi < tile_unit0 + blocks ? ATTN_FWD_PIECE_PUBLISH : lo > tile_unit0 ? tile_unit0 : ATTN_FWD_PIECE_WHOLE;
  return piece;
}

/* The next piece CTA `cta` runs (its later tile first), advancing `cursor` (initially
 * ATTN_FWD_STREAM_K_NOT_STARTED: then the tile of its run's last unit); false when its run is
 * done or empty, or the grid has no stream-K tail. The producer's loop and the host test walk
 * the runs with it. */
static __host__ __device__ __forceinline__ bool attn_fwd_stream_k_next_piece(const attn_fwd_params& p, int cta,
                                                                            int grid, int& cursor,
                                                                            attn_fwd_stream_k_piece& piece) {
  if (p.sk_first_tile >= p.tile_count) return false;
  const int begin = attn_fwd_stream_k_run_begin(p, cta, grid), end = attn_fwd_stream_k_run_begin(p, cta + 1, grid);
  if (begin >= end) return false;
  if (cursor == ATTN_FWD_STREAM_K_NOT_STARTED) cursor = (end - 1) / p.sk_tile_blocks;
  if (cursor < begin / p.sk_tile_blocks) return false;
  piece = attn_fwd_stream_k_piece_of(p, begin, end, cursor--);
  return true;
}

/* The CTAs a finishing piece collects from, nearest first: the CTA below `cta` whose run is
 * not empty and reaches past the tile's first unit `tile_unit0` (its last piece, which it
 * published), or −1 when there is none. Start with cta = the finisher's own index. */
static __host__ __device__ __forceinline__ int attn_fwd_stream_k_previous_publisher(const attn_fwd_params& p,
                                                                                   int grid, int tile_unit0,
                                                                                   int cta) {
  for (--cta; cta >= 0; --cta) {
    const int end = attn_fwd_stream_k_run_begin(p, cta + 1, grid);
    if (end <= tile_unit0) return -1;
    if (attn_fwd_stream_k_run_begin(p, cta, grid) < end) return cta;
  }
  return -1;
}

template <class T>
static __device__ __forceinline__ float4* attn_fwd_stream_k_slot(const attn_fwd_params& p, int cta, int consumer,
                                                                 int thread) {
  constexpr int VECTORS = attn_fwd_stream_k_slot_vectors(T::HEAD_DIM_V);
  static_assert(T::O_ACCUMULATORS % 4 == 0 && VECTORS == T::O_ACCUMULATORS / 4 + 1, "whole float4 per thread");
  const size_t slot = static_cast<size_t>(cta) * T::CONSUMERS + consumer;
  return reinterpret_cast<float4*>(p.sk_partials) + slot * VECTORS * ATTN_FWD_WARPGROUP_THREADS + thread;
}

/* A piece that does not end its tile: this consumer's O (unnormalized) and row state to the
 * CTA's slot, then its flag. */
template <class T>
static __device__ __forceinline__ void attn_fwd_stream_k_publish(const attn_fwd_params& p, int consumer, int thread,
                                                                 const float (&o)[T::O_ACCUMULATORS],
                                                                 const attn_softmax_rows& rows) {
  const int cta = cta_index_unhoisted();
  float4* slot = attn_fwd_stream_k_slot<T>(p, cta, consumer, thread);
#pragma unroll
  for (int i = 0; i < T::O_ACCUMULATORS / 4; ++i)
    __stcg(slot + i * ATTN_FWD_WARPGROUP_THREADS, make_float4(o[4 * i], o[4 * i + 1], o[4 * i + 2], o[4 * i + 3]));
  __stcg(slot + T::O_ACCUMULATORS / 4 * ATTN_FWD_WARPGROUP_THREADS,
         make_float4(rows.max[0], rows.max[1], rows.sum[0], rows.sum[1]));
  group_flag_raise(&p.sk_flags[cta * T::CONSUMERS + consumer], p.launch_tag, ATTN_FWD_BARRIER_EPILOGUE_0 + consumer,
                   ATTN_FWD_WARPGROUP_THREADS, thread);
}

/* The finishing piece of a tile whose first unit is `tile_unit0`: merges the pieces that every
 * earlier CTA whose run reaches into the tile published into O and the rows. Each merge
 * rescales both sides to the larger row maximum (a side that saw no key has −inf and weight 0). */
template <class T>
static __device__ __forceinline__ void attn_fwd_stream_k_collect(const attn_fwd_params& p, int tile_unit0,
                                                                 int consumer, int thread,
                                                                 float (&o)[T::O_ACCUMULATORS],
                                                                 attn_softmax_rows& rows) {
  const int grid = static_cast<int>(gridDim.x);
  for (int cta = attn_fwd_stream_k_previous_publisher(p, grid, tile_unit0, cta_index_unhoisted()); cta >= 0;
       cta = attn_fwd_stream_k_previous_publisher(p, grid, tile_unit0, cta)) {
    group_flag_wait(&p.sk_flags[cta * T::CONSUMERS + consumer], p.launch_tag, ATTN_FWD_BARRIER_EPILOGUE_0 + consumer,
                    ATTN_FWD_WARPGROUP_THREADS, thread);
    const float4* slot = attn_fwd_stream_k_slot<T>(p, cta, consumer, thread);
    const float4 state = __ldcg(slot + T::O_ACCUMULATORS / 4 * ATTN_FWD_WARPGROUP_THREADS);
    const float their_max[2] = {state.x, state.y}, their_sum[2] = {state.z, state.w};
    float mine_scale[2], their_scale[2];
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const float max = fmaxf(rows.max[half], their_max[half]);
      const float max_scaled = max == -INFINITY ? 0.0f : max * p.softmax_scale_log2;
      mine_scale[half] =
          rows.max[half] == -INFINITY ? 0.0f : attn_exp2(fmaf(rows.max[half], p.softmax_scale_log2, -max_scaled));
      their_scale[half] =
          their_max[half] == -INFINITY ? 0.0f : attn_exp2(fmaf(their_max[half], p.softmax_scale_log2, -max_scaled));
      rows.max[half] = max;
      rows.sum[half] = rows.sum[half] * mine_scale[half] + their_sum[half] * their_scale[half];
    }
#pragma unroll
    for (int i = 0; i < T::O_ACCUMULATORS / 4; ++i) {
      const float4 v = __ldcg(slot + i * ATTN_FWD_WARPGROUP_THREADS);
      o[4 * i] = fmaf(o[4 * i], mine_scale[0], v.x * their_scale[0]);
      o[4 * i + 1] = fmaf(o[4 * i + 1], mine_scale[0], v.y * their_scale[0]);
      o[4 * i + 2] = fmaf(o[4 * i + 2], mine_scale[1], v.z * their_scale[1]);
      o[4 * i + 3] = fmaf(o[4 * i + 3], mine_scale[1], v.w * their_scale[1]);
    }
  }
}

#endif
