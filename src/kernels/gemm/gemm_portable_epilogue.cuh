/*
 * gemm_portable_epilogue.cuh — the portable GEMM's epilogue: for each element of the block
 * tile, D[row, col] = act(acc_scale · acc + beta · C[row, col] + bias) with
 * acc_scale = alpha · scale_a · scale_b (the formula and the element access are shared with
 * every GEMM family, gemm_epilogue.cuh). D (and C) are row-major after host normalization.
 *
 * How, in two steps through shared memory (the ring is free once the main loop is done):
 *   1. stage: every thread writes its mma.sync accumulator fragments, fp32, into a
 *      BLOCK_M × BLOCK_N tile (rows padded by STAGING_ROW_PAD floats: the 16 lanes of a
 *      half-warp, rows g = 0..3 × column pairs 2q, then hit 32 different banks);
 *   2. write: the threads walk the tile row by row, four consecutive columns each (one
 *      16-byte shared load, one 8- or 16-byte global store: whole 32-byte sectors, where
 *      storing straight from the fragments filled half of each), in a loop that is not
 *      unrolled, C's quads loaded a few rows ahead (gemm_portable_write_tile).
 * Why: the fragment-order epilogue this replaces was straight-line code — 32 fragments × 2
 * rows × (vector, scalar) paths × 3 output dtypes, tens of thousands of instructions run
 * once per tile — and the H200 spent 26 % of the kernel's warp samples in it, most of them
 * waiting for instruction fetch (ncu, bf16 8192³, 2026-11-30). The loop here is a few
 * hundred instructions per output dtype.
 * A plain tile (no C, bias or activation, wholly inside D, quads allowed, 16-bit D) takes a
 * loop of its own in step 2 (gemm_portable_write_plain_tile): the general loop's per-element
 * options cost ~90 instructions per quad even when unused.
 * Quads (args.quad_access: D and C rows, batch strides and bases, and a per-column bias, all
 * 4-element aligned) are one vector access each; otherwise, and at the last columns of a row,
 * element by element. Rows ≥ m and columns ≥ n are never touched.
 *
 * Checked by tests/gpu/gpu_gemm_portable.c: every output dtype, C (also aliasing D), bias
 * per column and per row (column-major D), ReLU/GELU, odd n and odd leading dimensions
 * against the fp64 oracle, with D poisoned and the untouched part checked.
 */
#ifndef FLASHC_KERNELS_GEMM_PORTABLE_EPILOGUE_CUH
#define FLASHC_KERNELS_GEMM_PORTABLE_EPILOGUE_CUH

#include "flashc.h"
#include "kernels/gemm/gemm_epilogue.cuh"
#include "kernels/gemm/gemm_portable_config.cuh"

/* Step 1: the accumulator fragments into the fp32 staging tile at `staging`. A thread holds
 * columns 2q, 2q+1 of rows g and g+8 of each m16×n8 tile (g = lane/4, q = lane%4). */
template <class Tile>
static __device__ __forceinline__ void gemm_portable_stage_accumulators(
    const float (&acc)[Tile::MMA_TILES_M][Tile::MMA_TILES_N][4], float* staging) {
  const int lane = static_cast<int>(threadIdx.x % WARP_SIZE);
  const int warp = static_cast<int>(threadIdx.x / WARP_SIZE);
  const int row0 = (warp / Tile::WARPS_N) * Tile::WARP_TILE_M + lane / 4;
  const int col0 = (warp % Tile::WARPS_N) * Tile::WARP_TILE_N + (lane % 4) * 2;
#pragma unroll
  for (int mi = 0; mi < Tile::MMA_TILES_M; ++mi)
#pragma unroll
    for (int half = 0; half < 2; ++half) { /* rows g and g + 8 of the m16 tile */
      float* row = staging + (row0 + mi * MMA_M + half * 8) * Tile::STAGING_ROW_FLOATS + col0;
#pragma unroll
      for (int ni = 0; ni < Tile::MMA_TILES_N; ++ni)
        *reinterpret_cast<float2*>(row + ni * MMA_N) = make_float2(acc[mi][ni][half * 2], acc[mi][ni][half * 2 + 1]);
    }
}

/* A per-column bias for the thread's four columns from `col` (zeros without one, or where it is
 * per row; one quad load where quads are allowed, else element by element inside N). */
template <int Out>
static __device__ __forceinline__ float4 gemm_portable_column_bias(const gemm_portable_args& args, int col, bool quad) {
  float4 column_bias = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (args.bias && !args.bias_per_row) {
    if (quad) {
      column_bias = gemm_load_quad<Out>(args.bias, col);
    } else {
      float* b = &column_bias.x;
      for (int e = 0; e < 4 && col + e < args.n; ++e) b[e] = gemm_load_one<Out>(args.bias, col + e);
    }
  }
  return column_bias;
}

/* Step 2 for one output dtype, C's quads read ahead: c and d already point at this batch's
 * matrices; (m0, n0) is the block tile's origin. A loop that asks for a row's C quad in the
 * row's own trip waits out one load round trip per row (on the Hopper path that cost beta·C a
 * quarter of its speed, docs/NOTES-gemm-hopper.md item 6; here the per-row form read 0.47/0.58
 * of torch.addmm at 8192² × K 1024/4096 bf16, this one 0.53/0.61, H200, 31st session). So the
 * thread's next C_AHEAD rows' quads (8 registers of raw words: 4 quads of 16-bit C, 2 of fp32)
 * are in flight while it finishes a row, in a shifting array so that every register index
 * stays a constant in the rolled loop. What the registers did not allow (ptxas, CUDA 13.0:
 * 4 bytes spilled in the sm_90 code of a 128 × 256 kernel, whose main loop runs at 255
 * registers): 16 registers ahead, a per-row bias read ahead too, or the activation as one
 * branch per row. C may alias D: a thread reads ahead only elements it writes itself, in rows
 * it has not stored yet. */
template <class Tile, int Out>
static __device__ __forceinline__ void gemm_portable_write_tile(const float* staging, const gemm_portable_args& args,
                                                                const void* c, void* d, int m0, int n0) {
  constexpr int QUADS_PER_ROW = Tile::BLOCK_N / 4;
  constexpr int ROWS_PER_PASS = Tile::THREADS / QUADS_PER_ROW;
  constexpr int ROWS_PER_THREAD = Tile::BLOCK_M / ROWS_PER_PASS;
  static_assert(Tile::THREADS % QUADS_PER_ROW == 0 && Tile::BLOCK_M % ROWS_PER_PASS == 0, "whole rows per pass");
  constexpr int RAW_QUAD_REGISTERS = static_cast<int>(sizeof(gemm_raw_quad<Out>) / 4);
  constexpr int C_AHEAD = 8 / RAW_QUAD_REGISTERS < ROWS_PER_THREAD ? 8 / RAW_QUAD_REGISTERS : ROWS_PER_THREAD;
  const float acc_scale =
      args.alpha * (args.scale_a ? *args.scale_a : 1.0f) * (args.scale_b ? *args.scale_b : 1.0f);
  const int col_in_tile = static_cast<int>(threadIdx.x % QUADS_PER_ROW) * 4;
  const int col = n0 + col_in_tile;
  if (col >= args.n) return; /* no barrier follows: a thread past the last column may leave */
  const int first_row = static_cast<int>(threadIdx.x / QUADS_PER_ROW);
  if (m0 + first_row >= args.m) return;
  /* This thread's rows inside M: first_row, first_row + ROWS_PER_PASS, ... */
  const int rows = min(ROWS_PER_THREAD, (args.m - m0 - first_row + ROWS_PER_PASS - 1) / ROWS_PER_PASS);
  const bool quad = args.quad_access && col + 3 < args.n;
  const bool c_quads = c && quad, row_bias_on = args.bias && args.bias_per_row;
  const float4 column_bias = gemm_portable_column_bias<Out>(args, col, quad);
  const int64_t c_first = static_cast<int64_t>(m0 + first_row) * args.ldc + col;
  const int64_t c_step = static_cast<int64_t>(ROWS_PER_PASS) * args.ldc;
  /* The rows ahead; every slot defined (an undefined one may be kept as a materialized zero). */
  gemm_raw_quad<Out> c_ahead[C_AHEAD];
#pragma unroll
  for (int r = 0; r < C_AHEAD; ++r)
    c_ahead[r] = c_quads && r < rows ? gemm_load_quad_raw<Out>(c, c_first + r * c_step) : gemm_raw_quad<Out>{};
  const flashc_activation activation = static_cast<flashc_activation>(args.activation);
  const float* source = staging + first_row * Tile::STAGING_ROW_FLOATS + col_in_tile;
  int64_t d_index = static_cast<int64_t>(m0 + first_row) * args.ldd + col;
  const int64_t d_step = static_cast<int64_t>(ROWS_PER_PASS) * args.ldd;
#pragma unroll 1
  for (int r = 0; r < rows; ++r) {
    float4 x = *reinterpret_cast<const float4*>(source + r * ROWS_PER_PASS * Tile::STAGING_ROW_FLOATS);
    float* v = &x.x;
    const float* b = &column_bias.x;
    const gemm_raw_quad<Out> c_raw = c_ahead[0];
    const float row_bias = row_bias_on ? gemm_load_one<Out>(args.bias, m0 + first_row + r * ROWS_PER_PASS) : 0.0f;
#pragma unroll
    for (int slot = 0; slot + 1 < C_AHEAD; ++slot) c_ahead[slot] = c_ahead[slot + 1];
    if (c_quads && r + C_AHEAD < rows) c_ahead[C_AHEAD - 1] = gemm_load_quad_raw<Out>(c, c_first + (r + C_AHEAD) * c_step);
    if (quad) {
      const float4 c_quad = c ? gemm_quad_of_raw<Out>(c_raw) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      const float* cv = &c_quad.x;
#pragma unroll
      for (int e = 0; e < 4; ++e) v[e] = acc_scale * v[e] + args.beta * cv[e] + b[e] + row_bias;
#pragma unroll
      for (int e = 0; e < 4; ++e) v[e] = fc_gemm_activation_out<Out, false>(v[e], activation);
      gemm_store_quad<Out>(d, d_index, x);
    } else {
      const int64_t c_index = c_first + r * c_step;
      for (int e = 0; e < 4 && col + e < args.n; ++e) {
        float value = acc_scale * v[e] + b[e] + row_bias;
        if (c) value += args.beta * gemm_load_one<Out>(c, c_index + e);
        gemm_store_one<Out>(d, d_index + e, fc_gemm_activation_out<Out, false>(value, activation));
      }
    }
    d_index += d_step;
  }
}

/* Step 2 for a plain tile — D = acc_scale · acc, no C, no bias, no activation, every row and
 * column of the tile inside D, quads allowed: a load, four multiplies, a conversion and a
 * store per quad. The general loop spends ~90 instructions per quad on the epilogue's
 * options even when none is set (16 % of the kernel's executed instructions at 4096³, ncu,
 * H200); this one ~15. For 16-bit D only, and not unrolled: with an fp32 copy too, or
 * unrolled by 2 or 4, ptxas (CUDA 13.0) spilled 4 bytes in the sm_80 kernel with A and B
 * MN-major. */
template <class Tile, int Out>
static __device__ __forceinline__ void gemm_portable_write_plain_tile(const float* staging,
                                                                      const gemm_portable_args& args, void* d, int m0,
                                                                      int n0) {
  constexpr int QUADS_PER_ROW = Tile::BLOCK_N / 4;
  constexpr int ROWS_PER_PASS = Tile::THREADS / QUADS_PER_ROW;
  constexpr int PASSES = Tile::BLOCK_M / ROWS_PER_PASS;
  static_assert(Tile::THREADS % QUADS_PER_ROW == 0 && Tile::BLOCK_M % ROWS_PER_PASS == 0, "whole rows per pass");
  const float acc_scale =
      args.alpha * (args.scale_a ? *args.scale_a : 1.0f) * (args.scale_b ? *args.scale_b : 1.0f);
  const int col_in_tile = static_cast<int>(threadIdx.x % QUADS_PER_ROW) * 4;
  const int first_row = static_cast<int>(threadIdx.x / QUADS_PER_ROW);
  const float* source = staging + first_row * Tile::STAGING_ROW_FLOATS + col_in_tile;
  const int64_t d_first = static_cast<int64_t>(m0 + first_row) * args.ldd + n0 + col_in_tile;
  const int64_t d_step = static_cast<int64_t>(ROWS_PER_PASS) * args.ldd;
#pragma unroll 1
  for (int pass = 0; pass < PASSES; ++pass) {
    float4 x = *reinterpret_cast<const float4*>(source + pass * ROWS_PER_PASS * Tile::STAGING_ROW_FLOATS);
    x.x *= acc_scale, x.y *= acc_scale, x.z *= acc_scale, x.w *= acc_scale;
    gemm_store_quad<Out>(d, d_first + pass * d_step, x);
  }
}

/* The whole epilogue. `shared` is the block's dynamic shared memory: the caller has drained
 * every cp.async and passed a barrier after the last ldmatrix, so the ring may be reused. */
template <class Tile>
static __device__ __forceinline__ void gemm_portable_epilogue(const float (&acc)[Tile::MMA_TILES_M][Tile::MMA_TILES_N][4],
                                                              unsigned char* shared, const gemm_portable_args& args,
                                                              const void* c, void* d, int m0, int n0) {
  float* staging = reinterpret_cast<float*>(shared);
  gemm_portable_stage_accumulators<Tile>(acc, staging);
  __syncthreads();
  /* The output dtype and the plain case are switched on once per block, outside the element
   * loops. */
  const bool plain = !c && !args.bias && args.activation == FLASHC_ACTIVATION_NONE && args.quad_access &&
                     m0 + Tile::BLOCK_M <= args.m && n0 + Tile::BLOCK_N <= args.n;
  switch (args.d_dtype) {
    case FLASHC_DTYPE_FP16:
      if (plain) gemm_portable_write_plain_tile<Tile, FLASHC_DTYPE_FP16>(staging, args, d, m0, n0);
      else gemm_portable_write_tile<Tile, FLASHC_DTYPE_FP16>(staging, args, c, d, m0, n0);
      break;
    case FLASHC_DTYPE_BF16:
      if (plain) gemm_portable_write_plain_tile<Tile, FLASHC_DTYPE_BF16>(staging, args, d, m0, n0);
      else gemm_portable_write_tile<Tile, FLASHC_DTYPE_BF16>(staging, args, c, d, m0, n0);
      break;
    default: gemm_portable_write_tile<Tile, FLASHC_DTYPE_FP32>(staging, args, c, d, m0, n0); break;
  }
}

#endif
