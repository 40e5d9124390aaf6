/*
 * gemm_hopper_epilogue.cuh — the Hopper GEMM epilogue: one consumer warpgroup's 64 × BLOCK_N
 * fp32 accumulator tile → D = act(acc_scale · acc + beta · C + bias) in the output dtype
 * (fp16/bf16/fp32; C has the output dtype; bias per column, or per row after the host turned a
 * column-major D into a row-major Dᵀ). The accumulator fragment (ptx_wgmma.cuh): a thread holds
 * columns 8j + 2q, +1 of rows g and g + 8 of its warp's 16 rows (g = lane/4, q = lane%4).
 *
 * Three ways out:
 *   general (C, bias or an activation; any D): through the staging buffers as fp32, finished
 *     row by row in a compact loop with vector loads and stores, a chunk's C quads all in
 *     flight at once (gemm_hopper_store_general); C's lines are prefetched into L2 when the
 *     tile's K loop starts (gemm_hopper_prefetch_c); for a 16-bit TMA-stored D with C and bias
 *     in aligned pairs, finished in registers instead (gemm_hopper_finish_pack) and stored
 *     like a plain tile;
 *   plain (none of those) with a TMA store (D 16-byte aligned, ldd and stride_d multiples of
 *     16 bytes, rows of whole 16-byte granules): the tile leaves in
 *     chunks of 64 rows × 128 bytes (64 16-bit or 32 fp32 columns; the 144- and 112-wide e4m3
 *     tiles in unswizzled whole rows, gemm_hopper_d_chunk_bytes). Each chunk is written into
 *     one of the warpgroup's staging buffers (128B-swizzled ones conflict-free: the 8 rows of a
 *     warp store land in 8 different 16-byte bank groups), published with
 *     fence.proxy.async + a warpgroup named barrier, and stored by one thread with a TMA tile
 *     store (rows/columns past M/N dropped by the hardware; start coordinates always >= 0).
 *     The issuing thread waits (bulk wait_group.read) before a buffer is rewritten. The
 *     words come from the accumulators (scaled on the way out) or, for 16-bit D, from a tile
 *     packed by gemm_hopper_pack_d: the kernel packs it, issues the next tile's first k-tile,
 *     and stores while that runs (gemm_hopper_consume_tiles_overlapped).
 *   plain direct (any other D): 2-element vector stores straight from registers when D's
 *     base, ldd and stride_d allow, single elements otherwise, with bounds checks.
 * Check: tests/gpu/gpu_gemm.c (alpha/beta, bias both ways, relu/gelu, every output dtype,
 * odd leading dimensions, tails, several plain tiles per CTA).
 */
#ifndef FLASHC_KERNELS_GEMM_HOPPER_EPILOGUE_CUH
#define FLASHC_KERNELS_GEMM_HOPPER_EPILOGUE_CUH

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "flashc.h"
#include "kernels/common/ptx.cuh"
#include "kernels/gemm/gemm_epilogue.cuh"
#include "kernels/gemm/gemm_hopper_config.cuh"

/* What the epilogue needs of the problem (a part of the kernel's parameter struct). */
struct gemm_hopper_epilogue_args {
  void* d;
  const void* c;    /* NULL when beta == 0 */
  const void* bias; /* NULL = none */
  int64_t ldd, ldc, stride_d, stride_c; /* elements; stride_c 0 = C broadcast */
  int m, n;
  int d_dtype;      /* flashc_dtype: FP16, BF16 or FP32 */
  int bias_per_row;
  int activation;   /* flashc_activation */
  int d_tma;        /* 1: store through shared memory + TMA (map_d valid) */
  int d_pairs;      /* plain direct path: D allows 2-element vector stores */
  int quads;        /* general path: D, C and a per-column bias allow 4-element vector access */
  int fused_pairs;  /* C, bias and the activation can be finished in registers and stored by TMA
                       (gemm_hopper_finish_pack): d_tma, 16-bit D, C pairs and a per-column bias
                       at 4-byte aligned addresses */
  float alpha, beta;
  const float* scale_a; /* NULL = 1 */
  const float* scale_b;
};

template <int Out>
struct gemm_out_traits {
  static constexpr int BYTES = Out == FLASHC_DTYPE_FP32 ? 4 : 2;
};

/* Stores into this CTA's shared memory (st.shared, not generic stores). */
static __device__ __forceinline__ void gemm_st_shared_b32(uint32_t address, uint32_t value) {
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(address), "r"(value) : "memory");
}
static __device__ __forceinline__ void gemm_st_shared_v2_f32(uint32_t address, float x0, float x1) {
  asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n" ::"r"(address), "f"(x0), "f"(x1) : "memory");
}
static __device__ __forceinline__ void gemm_st_shared_v2_b32(uint32_t address, uint32_t x0, uint32_t x1) {
  asm volatile("st.shared.v2.b32 [%0], {%1, %2};\n" ::"r"(address), "r"(x0), "r"(x1) : "memory");
}

/* Plain direct stores (no C, bias or activation; a D the TMA store cannot take): rows row0 ..
 * row0+63, columns col0 .. col0+BlockN-1; `thread` in 0..127. */
template <int Out, int BlockN>
static __device__ __forceinline__ void gemm_hopper_store_direct(const gemm_hopper_epilogue_args& e,
                                                                const float (&acc)[BlockN / 2], float acc_scale,
                                                                int batch, int row0, int col0, int thread) {
  const int warp = thread / 32, lane = thread % 32;
  const int row_base = row0 + 16 * warp + lane / 4;
  const int col_base = col0 + 2 * (lane % 4);
  const int64_t d_batch = static_cast<int64_t>(batch) * e.stride_d;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int row = row_base + 8 * half;
    if (row >= e.m) continue;
    const int64_t d_row = d_batch + static_cast<int64_t>(row) * e.ldd;
#pragma unroll
    for (int j = 0; j < BlockN / 8; ++j) {
      const int col = col_base + 8 * j;
      if (col >= e.n) continue;
      const bool pair = col + 1 < e.n;
      const float x0 = acc_scale * acc[4 * j + 2 * half], x1 = acc_scale * acc[4 * j + 2 * half + 1];
      if (pair && e.d_pairs) {
        gemm_store_pair<Out>(e.d, d_row + col, x0, x1);
      } else {
        gemm_store_one<Out>(e.d, d_row + col, x0);
        if (pair) gemm_store_one<Out>(e.d, d_row + col + 1, x1);
      }
    }
  }
}

/* One scaled accumulator pair of a plain tile in D's dtype, as the 32-bit words stored: 16-bit
 * outputs → .x = the packed pair; fp32 → .x, .y = the two floats. */
template <int Out>
static __device__ __forceinline__ uint2 gemm_hopper_pair_words(float x0, float x1) {
  if constexpr (Out == FLASHC_DTYPE_FP32) return make_uint2(__float_as_uint(x0), __float_as_uint(x1));
  else if constexpr (Out == FLASHC_DTYPE_FP16) return make_uint2(pack_f16x2(x0, x1), 0u);
  else return make_uint2(pack_bf16x2(x0, x1), 0u);
}

/* A 16-bit plain tile packed: word p = accumulator pair p (registers 2p, 2p + 1; p = 2j + half
 * of the fragment). Half the accumulators' registers, so the kernel can hold a finished tile
 * while the next tile's first WGMMAs overwrite the accumulators. The accumulators are scaled
 * in place only when acc_scale ≠ 1 (a warpgroup-uniform branch): with alpha = 1 and no FP8
 * scales the BLOCK_N / 2 multiplies are jumped over — run once per tile, straight-line code
 * like them is fetched cold into the instruction cache on one-wave problems (ncu at 2048³:
 * "no instruction" was 46 % of the epilogue's warp samples). */
template <int Out, int BlockN>
static __device__ __forceinline__ void gemm_hopper_pack_d(float (&acc)[BlockN / 2], float acc_scale,
                                                          uint32_t (&words)[BlockN / 4]) {
  static_assert(Out != FLASHC_DTYPE_FP32, "only 16-bit outputs pack into one word per pair");
  if (acc_scale != 1.0f) {
#pragma unroll
    for (int i = 0; i < BlockN / 2; ++i) acc[i] *= acc_scale;
  }
#pragma unroll
  for (int pair = 0; pair < BlockN / 4; ++pair)
    words[pair] = gemm_hopper_pair_words<Out>(acc[2 * pair], acc[2 * pair + 1]).x;
}

/* The general epilogue in registers, for the overlapped loop (gemm_hopper_consume_tiles_overlapped
 * with Fused): every accumulator pair becomes act(acc_scale·acc + beta·C + bias), packed into
 * D's 16-bit dtype as gemm_hopper_pack_d packs a plain tile — so a tile with C, a bias or an
 * activation leaves through the TMA store while the next tile's first k-tile runs, as a plain
 * one does, instead of idling the tensor core through gemm_hopper_store_general's staging and
 * row loop (~9–11 µs per wave of tiles at 8192² against the plain tile's 1.5, 29th session).
 * C is read in the accumulator fragment's own layout — a 32-bit load of the two elements of
 * columns 8j + 2q, +1 in rows g and g + 8, so no shared memory is needed — a group of
 * BLOCKS_PER_GROUP column blocks at a time, loaded while the group before is finished (16 C
 * words in flight per thread; the whole tile's 64 words at once spilled in the 29th session's
 * sketch); a per-column bias likewise (one word per block), a per-row bias once per tile.
 * Each option is one warpgroup-uniform branch per group. Rows past M and columns past N read
 * nothing (N is a multiple of 8 for a TMA-stored 16-bit D, so a pair is wholly inside or
 * outside); the TMA store drops them. C may alias D: the tile's C is read here, before any of
 * its D is stored. C was prefetched into L2 a few k-tiles earlier (the overlapped loop). */
template <int Out, int BlockN>
static __device__ __forceinline__ void gemm_hopper_finish_pack(const gemm_hopper_epilogue_args& e,
                                                               float (&acc)[BlockN / 2], float acc_scale, int batch,
                                                               int row0, int col0, int thread,
                                                               uint32_t (&words)[BlockN / 4]) {
  static_assert(Out != FLASHC_DTYPE_FP32, "16-bit outputs: one word per accumulator pair");
  constexpr int BLOCKS = BlockN / 8; /* 8-column blocks of the fragment */
  constexpr int BLOCKS_PER_GROUP = 8;
  static_assert(BLOCKS % BLOCKS_PER_GROUP == 0 || BLOCKS < BLOCKS_PER_GROUP, "whole groups");
  constexpr int GROUP = BLOCKS < BLOCKS_PER_GROUP ? BLOCKS : BLOCKS_PER_GROUP;
  if (row0 >= e.m) return; /* warpgroup-uniform: this half of the tile is past M (nothing is stored) */
  const int warp = thread / 32, lane = thread % 32;
  const int row = row0 + 16 * warp + lane / 4; /* of half 0; half 1 is row + 8 */
  const int col_first = col0 + 2 * (lane % 4);
  const bool row_inside[2] = {row < e.m, row + 8 < e.m};
  const uint16_t* c = static_cast<const uint16_t*>(e.c);
  const int64_t c_row = static_cast<int64_t>(batch) * e.stride_c + static_cast<int64_t>(row) * e.ldc + col_first;
  const int64_t c_half_step = 8 * e.ldc;
  const uint16_t* bias = static_cast<const uint16_t*>(e.bias);
  const bool column_bias = e.bias && !e.bias_per_row, row_bias_on = e.bias && e.bias_per_row;
  float row_bias[2];
#pragma unroll
  for (int half = 0; half < 2; ++half)
    row_bias[half] = row_bias_on && row_inside[half] ? gemm_load_one<Out>(e.bias, row + 8 * half) : 0.0f;
  const flashc_activation activation = static_cast<flashc_activation>(e.activation);
  constexpr int GROUPS = BLOCKS / GROUP;
  /* A group's C and bias words, loaded one group ahead of their use: each group's loads are in
   * flight while the group before is finished (loaded in the group's own trip, the unrolled
   * code waited out one round trip per group). */
  struct group_words {
    uint32_t c[GROUP][2], bias[GROUP];
  };
  auto load_group = [&](int group, group_words& w) {
#pragma unroll
    for (int jj = 0; jj < GROUP; ++jj) {
      const int j = group * GROUP + jj;
      const bool column_inside = col_first + 8 * j < e.n;
#pragma unroll
      for (int half = 0; half < 2; ++half)
        w.c[jj][half] = e.c && column_inside && row_inside[half]
                            ? *reinterpret_cast<const uint32_t*>(c + c_row + half * c_half_step + 8 * j)
                            : 0u;
      w.bias[jj] = column_bias && column_inside ? *reinterpret_cast<const uint32_t*>(bias + col_first + 8 * j) : 0u;
    }
  };
  group_words ahead[2];
  load_group(0, ahead[0]);
#pragma unroll
  for (int group = 0; group < GROUPS; ++group) {
    if (group + 1 < GROUPS) load_group(group + 1, ahead[(group + 1) % 2]);
    const uint32_t(&c_words)[GROUP][2] = ahead[group % 2].c;
    const uint32_t(&bias_words)[GROUP] = ahead[group % 2].bias;
    float* x = acc + 4 * group * GROUP; /* this group's accumulators: 4 per block (2 per half) */
    if (acc_scale != 1.0f) { /* uniform; ×1 is exact, so skipping it changes no result */
#pragma unroll
      for (int i = 0; i < 4 * GROUP; ++i) x[i] *= acc_scale;
    }
    if (e.c) {
#pragma unroll
      for (int jj = 0; jj < GROUP; ++jj)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const float2 cv = gemm_pair_of_raw<Out>(c_words[jj][half]);
          x[4 * jj + 2 * half] = fmaf(e.beta, cv.x, x[4 * jj + 2 * half]);
          x[4 * jj + 2 * half + 1] = fmaf(e.beta, cv.y, x[4 * jj + 2 * half + 1]);
        }
    }
    if (column_bias) {
#pragma unroll
      for (int jj = 0; jj < GROUP; ++jj) {
        const float2 b = gemm_pair_of_raw<Out>(bias_words[jj]);
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          x[4 * jj + 2 * half] += b.x;
          x[4 * jj + 2 * half + 1] += b.y;
        }
      }
    } else if (row_bias_on) {
#pragma unroll
      for (int i = 0; i < 4 * GROUP; ++i) x[i] += row_bias[(i / 2) % 2];
    }
    if (activation == FLASHC_ACTIVATION_RELU) {
#pragma unroll
      for (int i = 0; i < 4 * GROUP; ++i) x[i] = fc_gemm_activation_out<Out>(x[i], FLASHC_ACTIVATION_RELU);
    } else if (activation == FLASHC_ACTIVATION_GELU) {
#pragma unroll
      for (int i = 0; i < 4 * GROUP; ++i) x[i] = fc_gemm_activation_out<Out>(x[i], FLASHC_ACTIVATION_GELU);
    }
#pragma unroll
    for (int i = 0; i < 2 * GROUP; ++i)
      words[2 * group * GROUP + i] = gemm_hopper_pair_words<Out>(x[2 * i], x[2 * i + 1]).x;
  }
}

/* pair_words sources for gemm_hopper_store_tma: the accumulators scaled on the way out, or a
 * tile packed by gemm_hopper_pack_d. */
template <int Out, int BlockN>
struct gemm_hopper_scaled_pairs {
  const float (&acc)[BlockN / 2];
  float scale;
  __device__ __forceinline__ uint2 operator()(int pair) const {
    return gemm_hopper_pair_words<Out>(scale * acc[2 * pair], scale * acc[2 * pair + 1]);
  }
};
template <int BlockN>
struct gemm_hopper_packed_pairs {
  const uint32_t (&words)[BlockN / 4];
  __device__ __forceinline__ uint2 operator()(int pair) const { return make_uint2(words[pair], 0u); }
};

/* This thread's part of chunk `chunk` of a plain D tile (pair_words as in gemm_hopper_store_tma),
 * written into the staging buffer at `buffer_address`: the fragment's rows of the chunk, in the
 * buffer's layout (gemm_hopper_config.cuh: 128-byte swizzled spans or unswizzled rows). A
 * function, not a lambda: a by-reference lambda here reschedules the 16-bit kernels' SASS
 * (bench/sass_diff.sh, 41st session). */
template <int Out, int BlockN, typename PairWords>
static __device__ __forceinline__ void gemm_hopper_stage_d_chunk(const PairWords& pair_words, int chunk,
                                                                 uint32_t buffer_address, int warp, int lane) {
  constexpr int BYTES = gemm_out_traits<Out>::BYTES;
  constexpr bool SWIZZLED = gemm_hopper_d_swizzled(BlockN, BYTES);
  constexpr uint32_t CHUNK_BYTES = gemm_hopper_d_chunk_bytes(BlockN, BYTES);
  constexpr int J_PER_CHUNK = static_cast<int>(CHUNK_BYTES) / BYTES / 8;
  if constexpr (Out == FLASHC_DTYPE_FP32) {
    const int g = lane / 4, q = lane % 4;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int local_row = 16 * warp + g + 8 * half;
#pragma unroll
      for (int jj = 0; jj < J_PER_CHUNK; ++jj) {
        const int pair = 2 * (chunk * J_PER_CHUNK + jj) + half;
        const uint32_t offset = local_row * CHUNK_BYTES + (8 * jj + 2 * q) * BYTES;
        const uint32_t address = buffer_address + (SWIZZLED ? smem_swizzle_offset(SMEM_SWIZZLE_128B, offset) : offset);
        const uint2 w = pair_words(pair);
        gemm_st_shared_v2_b32(address, w.x, w.y);
      }
    }
  } else {
    /* 16-bit D: one stmatrix.x4 per two 8-column blocks of the warp's 16 rows (a quarter of
     * the st.shared.b32 count). Matrix i = (half i % 2, block 2·jp + i / 2): its fragment is
     * the accumulator layout (row g, columns 2q, +1), i.e. the packed pair 2·j + half, so
     * the four registers are four consecutive pairs; lane L addresses row L % 8 of matrix
     * L / 8 — one 16-byte granule, which the 128-byte swizzle moves whole. Every chunk holds an
     * even number of blocks (an odd one, the 112-wide tile's 56-column chunks until the
     * 40th session, ended with a stmatrix.x2, removed with them). */
    static_assert(J_PER_CHUNK % 2 == 0, "16-bit chunks of whole stmatrix.x4 pairs of blocks");
    const int matrix = lane / 8;
    const int local_row = 16 * warp + lane % 8 + 8 * (matrix % 2);
#pragma unroll
    for (int jp = 0; jp < J_PER_CHUNK / 2; ++jp) {
      const uint32_t offset = local_row * CHUNK_BYTES + 8 * (2 * jp + matrix / 2) * BYTES;
      const uint32_t address = buffer_address + (SWIZZLED ? smem_swizzle_offset(SMEM_SWIZZLE_128B, offset) : offset);
      const int pair0 = 2 * (chunk * J_PER_CHUNK + 2 * jp);
      const uint32_t words[4] = {pair_words(pair0).x, pair_words(pair0 + 1).x, pair_words(pair0 + 2).x,
                                 pair_words(pair0 + 3).x};
      stmatrix_x4_shared(address, words);
    }
  }
}

/* Plain (no C, bias or activation) through shared-memory staging + TMA store. `pair_words(p)`
 * gives accumulator pair p (p = 2j + half of the fragment) as gemm_hopper_pair_words does —
 * from the accumulators or from a packed tile. `staging`: this warpgroup's buffers
 * (1024-aligned); `chunk_counter`: chunks this warpgroup has stored so far (selects the
 * buffer). The chunks leave in rounds of ChunksPerRound (at most the buffer count): the
 * warpgroup meets, writes the round's chunks into their buffers, meets again, and thread 0
 * issues the round's stores (gemm_hopper_tile::D_CHUNKS_PER_ROUND says which tiles take two). */
template <int Out, int BlockN, typename PairWords, int FirstChunk = 0, int EndChunk = -1, int ChunksPerRound = 1>
static __device__ __forceinline__ void gemm_hopper_store_tma(const gemm_hopper_epilogue_args& e,
                                                             const CUtensorMap* map_d, const PairWords& pair_words,
                                                             int batch, int row0, int col0, int thread,
                                                             uint8_t* staging, uint32_t barrier_id,
                                                             uint32_t& chunk_counter) {
  constexpr int BYTES = gemm_out_traits<Out>::BYTES;
  /* Chunks of one TMA-store box: a 128-byte swizzle span (64 16-bit / 32 fp32 columns), or for
   * widths that are not whole spans (the 144- and 112-wide e4m3 tiles) unswizzled whole rows
   * (16-bit) or pieces of 192 / 64 bytes (fp32; gemm_hopper_config.cuh). */
  constexpr uint32_t CHUNK_BYTES = gemm_hopper_d_chunk_bytes(BlockN, BYTES);
  constexpr uint32_t BUFFERS = gemm_hopper_d_buffers(BlockN, BYTES);
  constexpr uint32_t BUFFER_BYTES = gemm_hopper_d_buffer_bytes(BlockN, BYTES);
  constexpr int CHUNK = static_cast<int>(CHUNK_BYTES) / BYTES;
  constexpr int PER_ROUND = ChunksPerRound < static_cast<int>(BUFFERS) ? ChunksPerRound : static_cast<int>(BUFFERS);
  static_assert(BlockN % CHUNK == 0 && CHUNK % 8 == 0, "whole chunks of whole 8-column blocks");
  static_assert(PER_ROUND >= 1, "at least one chunk per round");
  if (row0 >= e.m) return; /* warpgroup-uniform: this half of the tile is past M */
  const int warp = thread / 32, lane = thread % 32;
  const bool issuer = thread == 0;
  /* [FirstChunk, EndChunk): a part of the tile's columns (gemm_hopper_finish_in_halves). */
  constexpr int END_CHUNK = EndChunk < 0 ? BlockN / CHUNK : EndChunk;
  if constexpr (ChunksPerRound == 1) {
    /* One chunk per round, written out on its own: the 16-bit kernels' loop as it was measured
     * (the general rounds below compile to a differently scheduled 16-bit kernel, +32
     * instructions; bench/sass_diff.sh). */
#pragma unroll
    for (int chunk = FirstChunk; chunk < END_CHUNK; ++chunk) {
      const int chunk_col0 = col0 + chunk * CHUNK;
      if (chunk_col0 >= e.n) break; /* uniform */
      uint8_t* buffer = staging + (chunk_counter % BUFFERS) * BUFFER_BYTES;
      const uint32_t buffer_address = smem_u32(buffer);
      /* The store that last read this buffer (BUFFERS chunks ago) must be done reading it. */
      if (issuer) tma_wait_group_read<BUFFERS - 1>();
      named_barrier_sync(barrier_id, GEMM_HOPPER_WARPGROUP_THREADS);
      gemm_hopper_stage_d_chunk<Out, BlockN>(pair_words, chunk, buffer_address, warp, lane);
      fence_proxy_async_shared_cta();
      named_barrier_sync(barrier_id, GEMM_HOPPER_WARPGROUP_THREADS);
      if (issuer) {
        tma_store_3d(map_d, buffer, chunk_col0, row0, batch);
        tma_commit_group();
      }
      ++chunk_counter;
    }
  } else {
    /* Chunk `in_round` of the round: past the tile's chunks or past N (uniform)? The round's
     * first is checked by the loop. */
    auto beyond = [&](int round, int in_round) {
      return in_round > 0 && (round + in_round >= END_CHUNK || col0 + (round + in_round) * CHUNK >= e.n);
    };
#pragma unroll
    for (int round = FirstChunk; round < END_CHUNK; round += PER_ROUND) {
      if (col0 + round * CHUNK >= e.n) break; /* uniform */
      const uint32_t counter = chunk_counter;
      auto buffer_of = [&](int in_round) { return staging + ((counter + in_round) % BUFFERS) * BUFFER_BYTES; };
      /* The stores that last read this round's buffers (BUFFERS chunks ago) must be done reading them. */
      if (issuer) tma_wait_group_read<BUFFERS - PER_ROUND>();
      named_barrier_sync(barrier_id, GEMM_HOPPER_WARPGROUP_THREADS);
#pragma unroll
      for (int in_round = 0; in_round < PER_ROUND; ++in_round) {
        if (beyond(round, in_round)) break;
        gemm_hopper_stage_d_chunk<Out, BlockN>(pair_words, round + in_round, smem_u32(buffer_of(in_round)), warp, lane);
      }
      fence_proxy_async_shared_cta();
      named_barrier_sync(barrier_id, GEMM_HOPPER_WARPGROUP_THREADS);
      if (issuer) {
#pragma unroll
        for (int in_round = 0; in_round < PER_ROUND; ++in_round) {
          if (beyond(round, in_round)) break;
          tma_store_3d(map_d, buffer_of(in_round), col0 + (round + in_round) * CHUNK, row0, batch);
        }
        tma_commit_group();
      }
      chunk_counter += PER_ROUND;
    }
  }
}

/* The general epilogue (C, bias or an activation; any D), in chunks of 64 fp32 columns: the
 * warpgroup writes its chunk of scaled accumulators into the first 16 KB of its staging (two
 * 128B-swizzled spans of 32 columns — conflict-free fragment writes), then each thread
 * finishes one quad of four consecutive columns in each of its 8 rows (8 apart): one 16-byte
 * shared load, beta·C, bias and the activation, one vector store (D and C quads, see
 * gemm_hopper_epilogue_args.quads) or single elements at row ends and for unaligned matrices.
 * What makes it cheap (28th → 29th session: ~200 instructions per quad and a serial L2 round
 * trip per row before; beta·C ran at 0.76× torch.addmm at K = 4096):
 *  - the thread's C quads of a chunk are all loaded at once (8 of 16-bit C, 2 registers each
 *    as raw words; 4 of fp32, the rest one row ahead in the loop) before the chunk is staged;
 *    the row loop takes them one slot at a time, shifting the rest down so that every
 *    register index stays a constant;
 *  - the options are tested once per row (uniform branches), not per element;
 *  - the row loop is not unrolled: the per-element code (an inlined tanhf for fp32 GELU) once
 *    per chunk, not per row — unrolled over the fragment this path once missed the
 *    instruction cache on every tile, as the portable GEMM's epilogue did.
 * Loading a row's C before this thread's stores to D is safe when C aliases D: an element of C
 * is read only by the thread that writes the same element of D. Rows and quads past M and N
 * are skipped; a quad that is not whole or not aligned reads C element by element in the loop. */
template <int Out, int BlockN>
static __device__ __forceinline__ void gemm_hopper_store_general(const gemm_hopper_epilogue_args& e,
                                                                 const float (&acc)[BlockN / 2], float acc_scale,
                                                                 int batch, int row0, int col0, int thread,
                                                                 uint8_t* staging, uint32_t barrier_id) {
  constexpr int SPAN_COLUMNS = 128 / 4; /* fp32 columns per 128-byte swizzle span */
  constexpr int CHUNK = static_cast<int>(GEMM_HOPPER_MIN_STAGING_BYTES / GEMM_HOPPER_EPILOGUE_SPAN_BYTES) * SPAN_COLUMNS;
  constexpr int QUADS_PER_ROW = CHUNK / 4;
  constexpr int ROWS_PER_PASS = GEMM_HOPPER_WARPGROUP_THREADS / QUADS_PER_ROW;
  constexpr int ROWS_PER_THREAD = GEMM_HOPPER_EPILOGUE_ROWS / ROWS_PER_PASS;
  constexpr uint32_t STAGED_ROW_STEP = ROWS_PER_PASS * 128u;
  /* Rows of C in flight per thread: 16 registers' worth (8 quads of 16-bit C, 4 of fp32). */
  constexpr int RAW_QUAD_REGISTERS = static_cast<int>(sizeof(gemm_raw_quad<Out>) / 4);
  constexpr int C_ROWS_AHEAD = 16 / RAW_QUAD_REGISTERS < ROWS_PER_THREAD ? 16 / RAW_QUAD_REGISTERS : ROWS_PER_THREAD;
  static_assert(BlockN % 16 == 0, "a partial last chunk holds whole quads of both threads' pairs");
  static_assert(GEMM_HOPPER_EPILOGUE_ROWS % ROWS_PER_PASS == 0, "whole passes");
  static_assert(ROWS_PER_PASS % 8 == 0, "a thread's rows share the 128B swizzle's XOR pattern");
  if (row0 >= e.m) return; /* warpgroup-uniform: this half of the tile is past M */
  const int warp = thread / 32, lane = thread % 32;
  const int g = lane / 4, q = lane % 4;
  const uint32_t staging_address = smem_u32(staging);
  /* Staging addresses. The 128B swizzle XORs byte-offset bits 4–6 with the row's bits 0–2, so
   * for a thread's fragment (rows 16·warp + g + 8·half, columns 8·jj + 2q) every address is one
   * base XOR 32·(jj % 4) (bits 5–6) plus constants: written out, ptxas keeps one register
   * instead of sixteen addresses. */
  const uint32_t fragment_base =
      staging_address + (16 * warp + g) * 128u + ((8u * q) ^ (static_cast<uint32_t>(g) << 4));
  auto fragment_address = [&](int half, int jj) {
    return (fragment_base ^ (32u * (jj % 4))) + (jj / 4) * GEMM_HOPPER_EPILOGUE_SPAN_BYTES + half * 8u * 128u;
  };
  const int first_row = thread / QUADS_PER_ROW, quad_col = (thread % QUADS_PER_ROW) * 4;
  /* This thread's rows inside M (the warpgroup has at least one). */
  const int rows = min(ROWS_PER_THREAD, (e.m - row0 - first_row + ROWS_PER_PASS - 1) / ROWS_PER_PASS);
  const uint32_t staged_first =
      staging_address + (quad_col / SPAN_COLUMNS) * GEMM_HOPPER_EPILOGUE_SPAN_BYTES +
      smem_swizzle_offset(SMEM_SWIZZLE_128B, first_row * 128u + (quad_col % SPAN_COLUMNS) * 4u);
  const int64_t d_first = static_cast<int64_t>(batch) * e.stride_d + static_cast<int64_t>(row0 + first_row) * e.ldd +
                          col0 + quad_col;
  const int64_t c_first = static_cast<int64_t>(batch) * e.stride_c + static_cast<int64_t>(row0 + first_row) * e.ldc +
                          col0 + quad_col;
  const int64_t d_step = ROWS_PER_PASS * e.ldd, c_step = ROWS_PER_PASS * e.ldc;
  const flashc_activation activation = static_cast<flashc_activation>(e.activation);
#pragma unroll
  for (int chunk = 0; chunk < (BlockN + CHUNK - 1) / CHUNK; ++chunk) {
    /* Columns of this chunk inside the tile (the last chunk of a 144-wide tile holds 16). */
    constexpr int FULL_CHUNKS = BlockN / CHUNK;
    const int chunk_columns = chunk < FULL_CHUNKS ? CHUNK : BlockN - FULL_CHUNKS * CHUNK;
    const int chunk_col0 = col0 + chunk * CHUNK;
    if (chunk_col0 >= e.n) break; /* uniform */
    const int col = chunk_col0 + quad_col;
    const bool active = quad_col < chunk_columns && col < e.n;
    const int columns = min(4, e.n - col); /* of this quad inside N, when active */
    const bool quad = e.quads && columns == 4;
    /* C's quads and the column bias are asked for before the barrier and the staging. Their
     * first use is still the loop's hottest instruction (ncu, 29th session): the wait is the
     * data's latency, and asking after the staging instead measured the same. */
    gemm_raw_quad<Out> c[C_ROWS_AHEAD]; /* every slot defined: undefined ones spilled in the e4m3 kernels */
    const int64_t c_chunk = c_first + chunk * CHUNK;
#pragma unroll
    for (int r = 0; r < C_ROWS_AHEAD; ++r)
      c[r] = e.c && active && quad && r < rows ? gemm_load_quad_raw<Out>(e.c, c_chunk + r * c_step) : gemm_raw_quad<Out>{};
    float column_bias[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (e.bias && !e.bias_per_row && active) {
      if (quad) {
        const float4 b = gemm_load_quad<Out>(e.bias, col);
        column_bias[0] = b.x, column_bias[1] = b.y, column_bias[2] = b.z, column_bias[3] = b.w;
      } else {
        for (int i = 0; i < columns; ++i) column_bias[i] = gemm_load_one<Out>(e.bias, col + i);
      }
    }
    /* Every thread is done reading the previous chunk (or tile) from the buffers. */
    named_barrier_sync(barrier_id, GEMM_HOPPER_WARPGROUP_THREADS);
#pragma unroll
    for (int half = 0; half < 2; ++half)
#pragma unroll
      for (int jj = 0; jj < CHUNK / 8; ++jj) {
        const int j = chunk * (CHUNK / 8) + jj;
        if (j >= BlockN / 8) break; /* compile-time: past a partial chunk */
        gemm_st_shared_v2_f32(fragment_address(half, jj), acc_scale * acc[4 * j + 2 * half],
                              acc_scale * acc[4 * j + 2 * half + 1]);
      }
    named_barrier_sync(barrier_id, GEMM_HOPPER_WARPGROUP_THREADS);
    if (!active) continue; /* no barrier until the next chunk's first */

    uint32_t staged_row = staged_first;
    int64_t d_row = d_first + chunk * CHUNK;
#pragma unroll 1
    for (int r = 0; r < rows; ++r) {
      float x[4];
      asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                   : "=f"(x[0]), "=f"(x[1]), "=f"(x[2]), "=f"(x[3])
                   : "r"(staged_row));
      if (e.c) {
        float cv[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        if (quad) {
          const float4 v = gemm_quad_of_raw<Out>(c[0]);
          cv[0] = v.x, cv[1] = v.y, cv[2] = v.z, cv[3] = v.w;
#pragma unroll
          for (int slot = 0; slot + 1 < C_ROWS_AHEAD; ++slot) c[slot] = c[slot + 1];
          if (C_ROWS_AHEAD < ROWS_PER_THREAD && r + C_ROWS_AHEAD < rows)
            c[C_ROWS_AHEAD - 1] = gemm_load_quad_raw<Out>(e.c, c_chunk + (r + C_ROWS_AHEAD) * c_step);
        } else {
          for (int i = 0; i < columns; ++i) cv[i] = gemm_load_one<Out>(e.c, c_chunk + r * c_step + i);
        }
#pragma unroll
        for (int i = 0; i < 4; ++i) x[i] = fmaf(e.beta, cv[i], x[i]);
      }
      if (e.bias) {
        /* One of the two terms is the bias, the other 0. */
        const float row_bias = e.bias_per_row ? gemm_load_one<Out>(e.bias, row0 + first_row + r * ROWS_PER_PASS) : 0.0f;
#pragma unroll
        for (int i = 0; i < 4; ++i) x[i] += row_bias + column_bias[i];
      }
      if (activation == FLASHC_ACTIVATION_RELU) {
#pragma unroll
        for (int i = 0; i < 4; ++i) x[i] = fc_gemm_activation_out<Out>(x[i], FLASHC_ACTIVATION_RELU);
      } else if (activation == FLASHC_ACTIVATION_GELU) {
#pragma unroll
        for (int i = 0; i < 4; ++i) x[i] = fc_gemm_activation_out<Out>(x[i], FLASHC_ACTIVATION_GELU);
      }
      if (quad) {
        gemm_store_quad<Out>(e.d, d_row, make_float4(x[0], x[1], x[2], x[3]));
      } else {
        for (int i = 0; i < columns; ++i) gemm_store_one<Out>(e.d, d_row + i, x[i]);
      }
      staged_row += STAGED_ROW_STEP;
      d_row += d_step;
    }
  }
}

/* The epilogues read C at the end of the tile while the tensor core idles: asked for earlier
 * (the general one when the tile's K loop starts, the fused finish of the overlapped loop
 * GEMM_HOPPER_FUSED_C_PREFETCH_K_TILES before its end), C's lines wait in L2 instead. Two
 * threads per row of the warpgroup's 64 (rows row0 .., columns col0 .. col0 + BlockN − 1),
 * alternating over the row's 128-byte lines; every address prefetched lies inside C. */
template <int BlockN>
static __device__ __forceinline__ void gemm_hopper_prefetch_c(const gemm_hopper_epilogue_args& e, int batch,
                                                              int row0, int col0, int thread) {
  static_assert(GEMM_HOPPER_WARPGROUP_THREADS == 2 * GEMM_HOPPER_EPILOGUE_ROWS, "two threads per row");
  constexpr uintptr_t LINE = 128;
  const int row = row0 + thread / 2;
  if (!e.c || row >= e.m || col0 >= e.n) return;
  const int bytes = e.d_dtype == FLASHC_DTYPE_FP32 ? 4 : 2;
  const int cols = min(BlockN, e.n - col0);
  const uintptr_t first = reinterpret_cast<uintptr_t>(e.c) +
                          static_cast<uintptr_t>((static_cast<int64_t>(batch) * e.stride_c +
                                                  static_cast<int64_t>(row) * e.ldc + col0) *
                                                 bytes);
  const uintptr_t last_line = (first + static_cast<uintptr_t>((cols - 1) * bytes)) & ~(LINE - 1);
  for (uintptr_t line = (first & ~(LINE - 1)) + LINE * (thread % 2); line <= last_line; line += 2 * LINE)
    prefetch_global_l2(reinterpret_cast<const void*>(line < first ? first : line));
}

/* Plain: no C, no bias, no activation — D = acc_scale · acc, through its own compact code. */
static __device__ __forceinline__ bool gemm_hopper_plain(const gemm_hopper_epilogue_args& e) {
  return !e.c && !e.bias && e.activation == FLASHC_ACTIVATION_NONE;
}

/* Dispatches on the runtime output dtype, store path and epilogue kind (one branch per tile).
 * "Plain" (no C, no bias, no activation) gets its own compact code, TMA store or direct. */
template <int Out, int BlockN, int ChunksPerRound>
static __device__ __forceinline__ void gemm_hopper_epilogue_out(const gemm_hopper_epilogue_args& e,
                                                                const CUtensorMap* map_d,
                                                                const float (&acc)[BlockN / 2], float acc_scale,
                                                                int batch, int row0, int col0, int thread,
                                                                uint8_t* staging, uint32_t barrier_id,
                                                                uint32_t& chunk_counter) {
  if (!gemm_hopper_plain(e))
    gemm_hopper_store_general<Out, BlockN>(e, acc, acc_scale, batch, row0, col0, thread, staging, barrier_id);
  else if (e.d_tma)
    gemm_hopper_store_tma<Out, BlockN, gemm_hopper_scaled_pairs<Out, BlockN>, 0, -1, ChunksPerRound>(
        e, map_d, gemm_hopper_scaled_pairs<Out, BlockN>{acc, acc_scale}, batch, row0, col0, thread, staging, barrier_id,
        chunk_counter);
  else
    gemm_hopper_store_direct<Out, BlockN>(e, acc, acc_scale, batch, row0, col0, thread);
}

template <int BlockN, int ChunksPerRound>
static __device__ __forceinline__ void gemm_hopper_epilogue(const gemm_hopper_epilogue_args& e,
                                                            const CUtensorMap* map_d,
                                                            const float (&acc)[BlockN / 2], float acc_scale,
                                                            int batch, int row0, int col0, int thread,
                                                            uint8_t* staging, uint32_t barrier_id,
                                                            uint32_t& chunk_counter) {
  if (e.d_dtype == FLASHC_DTYPE_BF16)
    gemm_hopper_epilogue_out<FLASHC_DTYPE_BF16, BlockN, ChunksPerRound>(e, map_d, acc, acc_scale, batch, row0, col0,
                                                                        thread, staging, barrier_id, chunk_counter);
  else if (e.d_dtype == FLASHC_DTYPE_FP16)
    gemm_hopper_epilogue_out<FLASHC_DTYPE_FP16, BlockN, ChunksPerRound>(e, map_d, acc, acc_scale, batch, row0, col0,
                                                                        thread, staging, barrier_id, chunk_counter);
  else
    gemm_hopper_epilogue_out<FLASHC_DTYPE_FP32, BlockN, ChunksPerRound>(e, map_d, acc, acc_scale, batch, row0, col0,
                                                                        thread, staging, barrier_id, chunk_counter);
}

/* Before the CTA exits: the last TMA stores have read their staging buffers (only the reads:
 * the global writes complete with the grid; waiting for them held the CTA ~1k cycles longer). */
static __device__ __forceinline__ void gemm_hopper_epilogue_finish(const gemm_hopper_epilogue_args& e, int thread) {
  if (e.d_tma && thread == 0) tma_wait_group_read<0>();
}

#endif
