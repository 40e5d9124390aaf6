/*
 * gemm_portable_epilogue.cuh — the portable GEMM's epilogue: for each accumulator of the
 * block tile, D[row, col] = act(acc_scale · acc + beta · C[row, col] + bias) with
 * acc_scale = alpha · scale_a · scale_b (fc_gemm_activation and the formula are shared with
 * every GEMM family, gemm_epilogue.cuh). D (and C) are row-major after host normalization.
 *
 * How: straight from the mma.sync accumulator fragments to global memory. A thread holds
 * column pairs (2q, 2q+1) of rows g and g+8 of each m16×n8 tile, so when D/C rows allow it
 * (args.pair_stores: even leading dimensions and batch strides, pair-aligned pointers) each
 * pair is one 4-byte (fp16/bf16) or 8-byte (fp32) access; otherwise, and in the last column
 * of an odd n, element by element. Rows ≥ m and columns ≥ n are never touched. The output
 * dtype is a runtime switch taken once per block (one copy of the loops per output type).
 *
 * Checked by tests/gpu/gpu_gemm_portable.c: every output dtype, C (also aliasing D), bias
 * per column and per row (column-major D), ReLU/GELU, odd n and odd leading dimensions
 * against the fp64 oracle, with D poisoned and the untouched part checked.
 */
#ifndef FLASHC_KERNELS_GEMM_PORTABLE_EPILOGUE_CUH
#define FLASHC_KERNELS_GEMM_PORTABLE_EPILOGUE_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "flashc.h"
#include "kernels/gemm/gemm_epilogue.cuh"
#include "kernels/gemm/gemm_portable_config.cuh"

/* Element access in the output type (C, D and bias share it). */
template <class Out>
static __device__ __forceinline__ float load_one(const void* base, int64_t index) {
  const Out value = static_cast<const Out*>(base)[index];
  if constexpr (sizeof(Out) == 4)
    return value;
  else if constexpr (std::is_same<Out, __half>::value)
    return __half2float(value);
  else
    return __bfloat162float(value);
}

template <class Out>
static __device__ __forceinline__ void store_one(void* base, int64_t index, float value) {
  if constexpr (sizeof(Out) == 4)
    static_cast<float*>(base)[index] = value;
  else if constexpr (std::is_same<Out, __half>::value)
    static_cast<__half*>(base)[index] = __float2half_rn(value);
  else
    static_cast<__nv_bfloat16*>(base)[index] = __float2bfloat16_rn(value);
}

/* Two consecutive elements of a row (index even, pair-aligned). */
template <class Out>
static __device__ __forceinline__ float2 load_pair(const void* base, int64_t index) {
  if constexpr (sizeof(Out) == 4)
    return *reinterpret_cast<const float2*>(static_cast<const float*>(base) + index);
  else if constexpr (std::is_same<Out, __half>::value)
    return __half22float2(*reinterpret_cast<const __half2*>(static_cast<const __half*>(base) + index));
  else
    return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(static_cast<const __nv_bfloat16*>(base) + index));
}

template <class Out>
static __device__ __forceinline__ void store_pair(void* base, int64_t index, float2 value) {
  if constexpr (sizeof(Out) == 4)
    *reinterpret_cast<float2*>(static_cast<float*>(base) + index) = value;
  else if constexpr (std::is_same<Out, __half>::value)
    *reinterpret_cast<__half2*>(static_cast<__half*>(base) + index) = __floats2half2_rn(value.x, value.y);
  else
    *reinterpret_cast<__nv_bfloat162*>(static_cast<__nv_bfloat16*>(base) + index) = __floats2bfloat162_rn(value.x, value.y);
}

/* The epilogue for one output type. c and d already point at this batch's matrices; m0, n0:
 * the block tile's origin. */
template <class Tile, class Out>
static __device__ __forceinline__ void gemm_portable_epilogue_typed(
    const float (&acc)[Tile::MMA_TILES_M][Tile::MMA_TILES_N][4], const gemm_portable_args& args, const void* c,
    void* d, int m0, int n0) {
  const int lane = static_cast<int>(threadIdx.x % WARP_SIZE);
  const int warp = static_cast<int>(threadIdx.x / WARP_SIZE);
  const int row_in_tile = (warp / Tile::WARPS_N) * Tile::WARP_TILE_M + lane / 4;
  const int col_in_tile = (warp % Tile::WARPS_N) * Tile::WARP_TILE_N + (lane % 4) * 2;
  const float acc_scale =
      args.alpha * (args.scale_a ? *args.scale_a : 1.0f) * (args.scale_b ? *args.scale_b : 1.0f);

#pragma unroll
  for (int mi = 0; mi < Tile::MMA_TILES_M; ++mi)
#pragma unroll
    for (int half = 0; half < 2; ++half) { /* rows g and g + 8 of the m16 tile */
      const int row = m0 + row_in_tile + mi * MMA_M + half * 8;
      if (row >= args.m) continue;
      const int64_t d_row = static_cast<int64_t>(row) * args.ldd;
      const int64_t c_row = static_cast<int64_t>(row) * args.ldc;
      const float row_bias = args.bias && args.bias_per_row ? load_one<Out>(args.bias, row) : 0.0f;
#pragma unroll
      for (int ni = 0; ni < Tile::MMA_TILES_N; ++ni) {
        const int col = n0 + col_in_tile + ni * MMA_N;
        if (col >= args.n) continue;
        float2 x = make_float2(acc_scale * acc[mi][ni][half * 2], acc_scale * acc[mi][ni][half * 2 + 1]);
        if (args.pair_stores && col + 1 < args.n) {
          if (c) {
            const float2 c_pair = load_pair<Out>(c, c_row + col);
            x.x += args.beta * c_pair.x;
            x.y += args.beta * c_pair.y;
          }
          if (args.bias) {
            const float2 bias = args.bias_per_row ? make_float2(row_bias, row_bias) : load_pair<Out>(args.bias, col);
            x.x += bias.x;
            x.y += bias.y;
          }
          x.x = fc_gemm_activation(x.x, args.activation);
          x.y = fc_gemm_activation(x.y, args.activation);
          store_pair<Out>(d, d_row + col, x);
        } else {
          const float values[2] = {x.x, x.y};
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            if (col + e >= args.n) break;
            float value = values[e];
            if (c) value += args.beta * load_one<Out>(c, c_row + col + e);
            if (args.bias) value += args.bias_per_row ? row_bias : load_one<Out>(args.bias, col + e);
            store_one<Out>(d, d_row + col + e, fc_gemm_activation(value, args.activation));
          }
        }
      }
    }
}

/* The output dtype is switched on once per block, outside the element loops. */
template <class Tile>
static __device__ __forceinline__ void gemm_portable_epilogue(const float (&acc)[Tile::MMA_TILES_M][Tile::MMA_TILES_N][4],
                                                              const gemm_portable_args& args, const void* c, void* d,
                                                              int m0, int n0) {
  switch (args.d_dtype) {
    case FLASHC_DTYPE_FP16: gemm_portable_epilogue_typed<Tile, __half>(acc, args, c, d, m0, n0); break;
    case FLASHC_DTYPE_BF16: gemm_portable_epilogue_typed<Tile, __nv_bfloat16>(acc, args, c, d, m0, n0); break;
    default: gemm_portable_epilogue_typed<Tile, float>(acc, args, c, d, m0, n0); break;
  }
}

#endif
