/*
 * attn_combine_kernel.cuh — merging split-KV partial attention results on the GPU
 * (flashc_attn_combine on a CUDA handle):
 *   lse = log Σ_s exp(lse_s),   o = Σ_s exp(lse_s − lse) · o_s.
 * One warp per output row (batch, row, head): the lanes reduce the splits' lse — the maximum
 * first, so no exp overflows — then each lane accumulates its columns of o over the splits in
 * ascending order (deterministic). A split with lse = −inf contributes nothing and its o_s is
 * not read; a row whose splits are all −inf gets o = 0, lse = −inf, never NaN. Memory-bound
 * and architecture-neutral (built for every target the library builds).
 * The split-KV attention forward (attn_fwd_launch.cu) runs it on its own partials with the
 * query sequences' description (cu_seqlens, seqused; NULL for flashc_attn_combine, which then
 * takes exactly the path above): rows past a sequence's used length are skipped — the
 * forward leaves them untouched — and a row's output lands at the sequence's packed row.
 * Check: tests/gpu/gpu_attn_combine.c against the CPU backend (src/cpu/attn_combine.c).
 */
#ifndef FLASHC_KERNELS_ATTN_COMBINE_KERNEL_CUH
#define FLASHC_KERNELS_ATTN_COMBINE_KERNEL_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>
#include <stdint.h>

#include "host/problem.h"
#include "kernels/common/ptx.cuh"

/* The kernel takes the validated problem itself (host/problem.h, fc_combine_problem: sizes,
 * strides in elements, and the forward's cu_seqlens / seqused for varlen output — row r of
 * batch b is then packed row cu_seqlens[b] + r of o and lse, whose batch strides are 0, used
 * while r < cu_seqlens[b + 1] − cu_seqlens[b] or, with seqused, r < seqused[b]; lse NULL: not
 * written). */

constexpr int ATTN_COMBINE_WARP = 32;
constexpr int ATTN_COMBINE_WARPS_PER_BLOCK = 8;
constexpr int ATTN_COMBINE_THREADS = ATTN_COMBINE_WARP * ATTN_COMBINE_WARPS_PER_BLOCK;
/* Columns a lane holds per pass over the splits: 8 covers head_dim_v ≤ 256 in one pass; a
 * wider o is merged in several passes. */
constexpr int ATTN_COMBINE_COLUMNS_PER_LANE = 8;
constexpr int ATTN_COMBINE_PASS_COLUMNS = ATTN_COMBINE_WARP * ATTN_COMBINE_COLUMNS_PER_LANE;

static __device__ __forceinline__ void attn_combine_store(float* out, int64_t i, float v) { out[i] = v; }
static __device__ __forceinline__ void attn_combine_store(__half* out, int64_t i, float v) { out[i] = __float2half_rn(v); }
static __device__ __forceinline__ void attn_combine_store(__nv_bfloat16* out, int64_t i, float v) {
  out[i] = __float2bfloat16_rn(v);
}

template <typename Out>
__global__ void __launch_bounds__(ATTN_COMBINE_THREADS) attn_combine_kernel(const fc_combine_problem p) {
  /* The split-KV forward launches this kernel as its programmatic dependent (it may be resident
   * before the forward ends): wait until the forward's partials are complete and visible. A
   * no-op for an ordinary launch. The next call's forward (itself programmatic) may then become
   * resident as blocks of this grid finish. */
  grid_dependency_wait();
  grid_dependency_launch_dependents();
  const int lane = threadIdx.x % ATTN_COMBINE_WARP;
  const int64_t rows = static_cast<int64_t>(p.batch) * p.seqlen * p.heads;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * ATTN_COMBINE_WARPS_PER_BLOCK;
  for (int64_t item = static_cast<int64_t>(blockIdx.x) * ATTN_COMBINE_WARPS_PER_BLOCK + threadIdx.x / ATTN_COMBINE_WARP;
       item < rows; item += warps) {
    const int head = static_cast<int>(item % p.heads);
    const int row = static_cast<int>(item / p.heads % p.seqlen);
    const int batch = static_cast<int>(item / p.heads / p.seqlen);
    int out_row = row; /* the row's index in o and lse */
    if (p.cu_seqlens || p.seqused) { /* the same for the whole warp */
      int used = p.seqlen;
      if (p.cu_seqlens) {
        out_row = __ldg(p.cu_seqlens + batch) + row;
        used = __ldg(p.cu_seqlens + batch + 1) - __ldg(p.cu_seqlens + batch);
      }
      if (p.seqused) used = __ldg(p.seqused + batch);
      if (row >= used) continue;
    }
    const float* lse_partial = p.lse_partial + batch * p.lse_partial_batch_stride + head * p.lse_partial_head_stride +
                               row * p.lse_partial_row_stride;
    const float* o_partial = p.o_partial + batch * p.o_partial_batch_stride + row * p.o_partial_row_stride +
                             head * p.o_partial_head_stride;
    Out* o = static_cast<Out*>(p.o) + batch * p.o_batch_stride + out_row * p.o_row_stride + head * p.o_head_stride;

    float max_lse = -INFINITY;
    for (int s = lane; s < p.num_splits; s += ATTN_COMBINE_WARP)
      max_lse = fmaxf(max_lse, lse_partial[s * p.lse_partial_split_stride]);
#pragma unroll
    for (int mask = ATTN_COMBINE_WARP / 2; mask >= 1; mask /= 2)
      max_lse = fmaxf(max_lse, __shfl_xor_sync(0xffffffffu, max_lse, mask));

    float row_lse = -INFINITY;
    if (max_lse != -INFINITY) { /* else no split saw a key: o = 0 */
      float sum = 0.0f;
      for (int s = lane; s < p.num_splits; s += ATTN_COMBINE_WARP) {
        const float lse = lse_partial[s * p.lse_partial_split_stride];
        if (lse != -INFINITY) sum += expf(lse - max_lse);
      }
#pragma unroll
      for (int mask = ATTN_COMBINE_WARP / 2; mask >= 1; mask /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, mask);
      row_lse = max_lse + logf(sum);
    }

    for (int pass = 0; pass < p.head_dim_v; pass += ATTN_COMBINE_PASS_COLUMNS) {
      float merged[ATTN_COMBINE_COLUMNS_PER_LANE];
#pragma unroll
      for (int c = 0; c < ATTN_COMBINE_COLUMNS_PER_LANE; ++c) merged[c] = 0.0f;
      if (row_lse != -INFINITY) {
        for (int s = 0; s < p.num_splits; ++s) {
          const float lse = lse_partial[s * p.lse_partial_split_stride]; /* the same word in every lane */
          if (lse == -INFINITY) continue;
          const float weight = expf(lse - row_lse);
          const float* o_split = o_partial + s * p.o_partial_split_stride;
#pragma unroll
          for (int c = 0; c < ATTN_COMBINE_COLUMNS_PER_LANE; ++c) {
            const int column = pass + c * ATTN_COMBINE_WARP + lane; /* consecutive lanes, consecutive words */
            if (column < p.head_dim_v) merged[c] = fmaf(weight, o_split[column], merged[c]);
          }
        }
      }
#pragma unroll
      for (int c = 0; c < ATTN_COMBINE_COLUMNS_PER_LANE; ++c) {
        const int column = pass + c * ATTN_COMBINE_WARP + lane;
        if (column < p.head_dim_v) attn_combine_store(o, column, merged[c]);
      }
    }
    if (p.lse && lane == 0) p.lse[batch * p.lse_batch_stride + head * p.lse_head_stride + out_row] = row_lse;
  }
}

#endif
