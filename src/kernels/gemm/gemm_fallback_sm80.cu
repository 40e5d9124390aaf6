/*
 * gemm_fallback_sm80.cu — the GEMM that takes every problem the validation accepts: any
 * alignment, leading dimension, layout, dtype (fp16/bf16/e4m3 in; fp16/bf16/fp32 out),
 * batch stride, bias and activation. It runs when the Hopper and the portable tensor-core
 * paths cannot (e.g. k not a multiple of 8 with row-major A: rows are then not 16-byte
 * aligned for TMA or cp.async). CUDA cores, fp32 FMA: correct, not fast.
 *
 * D (row-major after host normalization, see src/host/problem.h) = epilogue(A·B): each
 * block computes a TILE_M × TILE_N tile of one batch, staging TILE_K-deep slices of A and B
 * in shared memory as fp32; each thread accumulates a THREAD_M × THREAD_N patch.
 * Checked by tests/gpu_gemm.c against the CPU reference (cases with k % 8 != 0).
 */
#include <cuda_runtime.h>

#include "flashc.h"
#include "host/error.h"
#include "host/problem.h"
#include "kernels/common/numeric.cuh"
#include "kernels/gemm/gemm_epilogue.cuh"
#include "kernels/launch.h"

namespace {

constexpr int TILE_M = 64;
constexpr int TILE_N = 64;
constexpr int TILE_K = 16;
constexpr int THREAD_M = 4;
constexpr int THREAD_N = 4;
constexpr int THREADS_PER_ROW_OF_TILE = TILE_N / THREAD_N;
constexpr int THREADS = (TILE_M / THREAD_M) * THREADS_PER_ROW_OF_TILE; /* 256 */

__global__ void __launch_bounds__(THREADS) gemm_fallback_kernel(const fc_gemm_problem p) {
  /* +1 column: threads of a warp reading one k-row at different m hit different banks. */
  __shared__ float a_tile[TILE_K][TILE_M + 1];
  __shared__ float b_tile[TILE_K][TILE_N + 1];

  const int64_t batch = blockIdx.z;
  const int row0 = blockIdx.y * TILE_M, col0 = blockIdx.x * TILE_N;
  const int thread_row = (threadIdx.x / THREADS_PER_ROW_OF_TILE) * THREAD_M;
  const int thread_col = (threadIdx.x % THREADS_PER_ROW_OF_TILE) * THREAD_N;
  const int64_t a_base = batch * p.stride_a, b_base = batch * p.stride_b;

  float acc[THREAD_M][THREAD_N] = {};
  for (int k0 = 0; k0 < p.k; k0 += TILE_K) {
    for (int i = threadIdx.x; i < TILE_K * TILE_M; i += THREADS) {
      int kk = i / TILE_M, mm = i % TILE_M;
      int row = row0 + mm, k = k0 + kk;
      a_tile[kk][mm] = (row < p.m && k < p.k)
                           ? fc_dev_load(p.a, a_base + fc_matrix_index(p.a_layout, p.lda, row, k), p.ab_dtype)
                           : 0.0f;
    }
    for (int i = threadIdx.x; i < TILE_K * TILE_N; i += THREADS) {
      int kk = i / TILE_N, nn = i % TILE_N;
      int col = col0 + nn, k = k0 + kk;
      b_tile[kk][nn] = (col < p.n && k < p.k)
                           ? fc_dev_load(p.b, b_base + fc_matrix_index(p.b_layout, p.ldb, k, col), p.ab_dtype)
                           : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < TILE_K; ++kk) {
      float a_values[THREAD_M], b_values[THREAD_N];
#pragma unroll
      for (int i = 0; i < THREAD_M; ++i) a_values[i] = a_tile[kk][thread_row + i];
#pragma unroll
      for (int j = 0; j < THREAD_N; ++j) b_values[j] = b_tile[kk][thread_col + j];
#pragma unroll
      for (int i = 0; i < THREAD_M; ++i)
#pragma unroll
        for (int j = 0; j < THREAD_N; ++j) acc[i][j] = fmaf(a_values[i], b_values[j], acc[i][j]);
    }
    __syncthreads();
  }

  const float acc_scale = p.alpha * (p.scale_a ? *p.scale_a : 1.0f) * (p.scale_b ? *p.scale_b : 1.0f);
#pragma unroll
  for (int i = 0; i < THREAD_M; ++i) {
    const int row = row0 + thread_row + i;
    if (row >= p.m) continue;
#pragma unroll
    for (int j = 0; j < THREAD_N; ++j) {
      const int col = col0 + thread_col + j;
      if (col >= p.n) continue;
      float x = acc_scale * acc[i][j];
      if (p.c) x += p.beta * fc_dev_load(p.c, batch * p.stride_c + row * p.ldc + col, p.d_dtype);
      if (p.bias) x += fc_dev_load(p.bias, p.bias_per_row ? row : col, p.d_dtype);
      fc_dev_store(p.d, batch * p.stride_d + row * p.ldd + col, p.d_dtype, fc_gemm_activation(x, p.activation));
    }
  }
}

}  // namespace

extern "C" flashc_status fc_gemm_fallback_run(const fc_gemm_problem* problem, const fc_cuda_context* context,
                                              void* stream) {
  (void)context;
  const dim3 grid((problem->n + TILE_N - 1) / TILE_N, (problem->m + TILE_M - 1) / TILE_M, problem->batch_count);
  if (grid.y > 65535 || grid.z > 65535)
    return fc_fail(FLASHC_STATUS_NOT_SUPPORTED, "the fallback GEMM takes m <= %d and batch_count <= 65535 (m = %d, batch_count = %d)",
                   65535 * TILE_M, problem->m, problem->batch_count);
  gemm_fallback_kernel<<<grid, THREADS, 0, static_cast<cudaStream_t>(stream)>>>(*problem);
  cudaError_t error = cudaGetLastError();
  if (error != cudaSuccess)
    return fc_fail(FLASHC_STATUS_CUDA_ERROR, "launching the fallback GEMM: %s", cudaGetErrorString(error));
  return FLASHC_STATUS_SUCCESS;
}
