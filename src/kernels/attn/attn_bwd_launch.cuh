/*
 * attn_bwd_launch.cuh — the instances of the tensor-core attention backward
 * (attn_bwd_kernel.cuh) and how one is launched: head dims are padded to a bucket, the pair
 * (head_dim, head_dim_v) picks an instance, and the block (64, or 32 where 64 does not fit
 * the device's shared memory) completes it. The kernels are compiled in one translation unit
 * per dtype (attn_bwd_f16_sm80.cu, attn_bwd_bf16_sm80.cu: the two build in parallel);
 * attn_bwd_launch_sm80.cu picks the shape and calls them.
 * Check: tests/gpu/gpu_attn_bwd covers head dims 32, 40, 64, 96, 128, 256 and (192, 128), (64, 32).
 */
#ifndef FLASHC_KERNELS_ATTN_BWD_LAUNCH_CUH
#define FLASHC_KERNELS_ATTN_BWD_LAUNCH_CUH

#include <stddef.h>

#include <cuda_runtime.h>

#include "kernels/attn/attn_bwd_kernel.cuh"

/* Every instance: X(padded head_dim, padded head_dim_v, block). Head dims of one bucket share
 * an instance (d = 40 runs as 64: the padding is zero-filled and never written back); a pair
 * of different buckets runs as (larger, larger) except the common (192, 128). Blocks of 32
 * exist only for the dims whose 64-block layout exceeds the ~99 KB of sm_86/sm_89/sm_120
 * (A100's 163 KB and Hopper's 227 KB take every 64-block instance). */
#define ATTN_BWD_INSTANCES(X)                                                                          \
  X(32, 32, 64) X(64, 64, 64) X(96, 96, 64) X(128, 128, 64) X(192, 128, 64) X(192, 192, 64) X(256, 256, 64) \
  X(192, 128, 32) X(192, 192, 32) X(256, 256, 32)

constexpr int ATTN_BWD_BLOCK_LARGE = 64;
constexpr int ATTN_BWD_BLOCK_SMALL = 32;

struct attn_bwd_shape {
  int head_dim, head_dim_v, block; /* padded head dims */
};

static inline int attn_bwd_head_dim_bucket(int head_dim) {
  const int buckets[] = {32, 64, 96, 128, 192, ATTN_BWD_MAX_HEAD_DIM};
  for (int bucket : buckets)
    if (head_dim <= bucket) return bucket;
  return 0; /* larger than any instance */
}

static inline attn_bwd_shape attn_bwd_shape_for(int head_dim, int head_dim_v, int block) {
  attn_bwd_shape shape;
  const int d = attn_bwd_head_dim_bucket(head_dim), dv = attn_bwd_head_dim_bucket(head_dim_v);
  const bool pair_instance = d == 192 && dv == 128;
  shape.head_dim = pair_instance ? d : (d > dv ? d : dv);
  shape.head_dim_v = pair_instance ? dv : shape.head_dim;
  shape.block = block;
  return shape;
}

/* Dynamic shared memory of the instance `shape`; 0 if there is no such instance. */
static inline size_t attn_bwd_smem_bytes(attn_bwd_shape shape) {
#define ATTN_BWD_SMEM_OF(D, DV, B) \
  if (shape.head_dim == D && shape.head_dim_v == DV && shape.block == B) return attn_bwd_config<D, DV, B>::SMEM_BYTES;
  ATTN_BWD_INSTANCES(ATTN_BWD_SMEM_OF)
#undef ATTN_BWD_SMEM_OF
  return 0;
}

/* The three launches of one dtype (defined in attn_bwd_{f16,bf16}_sm80.cu). */
cudaError_t attn_bwd_launch_f16(const attn_bwd_params& params, attn_bwd_shape shape, cudaStream_t stream);
cudaError_t attn_bwd_launch_bf16(const attn_bwd_params& params, attn_bwd_shape shape, cudaStream_t stream);

template <typename T, class Cfg>
static cudaError_t attn_bwd_launch_instance(const attn_bwd_params& params, cudaStream_t stream) {
  const int64_t row_dot_tiles = (params.seqlen_q + ATTN_BWD_ROW_DOTS_ROWS - 1) / ATTN_BWD_ROW_DOTS_ROWS;
  const int64_t m_tiles = (params.seqlen_q + Cfg::BLOCK - 1) / Cfg::BLOCK;
  const int64_t n_tiles = (params.seqlen_k + Cfg::BLOCK - 1) / Cfg::BLOCK;
  const int64_t row_dot_ctas = row_dot_tiles * params.heads_q * params.batch;
  const int64_t query_ctas = m_tiles * params.heads_q * params.batch;
  const int64_t key_ctas = n_tiles * params.heads_kv * params.batch;
  /* (validation makes batch, heads, seqlen_q and seqlen_k positive: all grids are non-empty) */
  if (row_dot_ctas > 0x7fffffff || query_ctas > 0x7fffffff || key_ctas > 0x7fffffff)
    return cudaErrorInvalidConfiguration;
  cudaError_t error = cudaFuncSetAttribute(attn_bwd_dkdv_kernel<T, Cfg>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           Cfg::SMEM_BYTES);
  if (error == cudaSuccess)
    error = cudaFuncSetAttribute(attn_bwd_dq_kernel<T, Cfg>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 Cfg::SMEM_BYTES);
  if (error != cudaSuccess) return error;
  attn_bwd_row_dots_kernel<T><<<static_cast<unsigned>(row_dot_ctas), ATTN_BWD_ROW_DOTS_ROWS, 0, stream>>>(params);
  attn_bwd_dq_kernel<T, Cfg><<<static_cast<unsigned>(query_ctas), Cfg::THREADS, Cfg::SMEM_BYTES, stream>>>(params);
  attn_bwd_dkdv_kernel<T, Cfg><<<static_cast<unsigned>(key_ctas), Cfg::THREADS, Cfg::SMEM_BYTES, stream>>>(params);
  return cudaGetLastError();
}

template <typename T>
static cudaError_t attn_bwd_launch_shape(const attn_bwd_params& params, attn_bwd_shape shape, cudaStream_t stream) {
#define ATTN_BWD_LAUNCH_OF(D, DV, B)                                        \
  if (shape.head_dim == D && shape.head_dim_v == DV && shape.block == B) \
    return attn_bwd_launch_instance<T, attn_bwd_config<D, DV, B>>(params, stream);
  ATTN_BWD_INSTANCES(ATTN_BWD_LAUNCH_OF)
#undef ATTN_BWD_LAUNCH_OF
  return cudaErrorInvalidValue; /* the host picks only listed shapes */
}

#endif
