/*
 * attn_combine_launch_sm80.cu — flashc_attn_combine on a CUDA handle: copies the validated problem
 * into the kernel's parameters and launches attn_combine_kernel.cuh for the output dtype on
 * the caller's stream. Built with the portable targets (sm_80, sm_90, compute_80 PTX: the
 * _sm80.cu suffix): it uses no Hopper feature.
 * Check: tests/gpu/gpu_attn_combine.c.
 */
#include <cuda_runtime.h>

#include "flashc.h"
#include "host/error.h"
#include "host/problem.h"
#include "kernels/attn/attn_combine_kernel.cuh"
#include "kernels/common/launch_programmatic.cuh"
#include "kernels/launch.h"

namespace {

/* Enough warps in flight to saturate memory; the kernel strides over the rest. */
constexpr int ATTN_COMBINE_BLOCKS_PER_SM = 16;

template <typename Out>
cudaError_t launch(const fc_combine_problem& problem, int grid, cudaStream_t stream) {
  /* After the split-KV forward: a programmatic dependent launch (the kernel waits for the
   * forward inside, grid_dependency_wait), so its launch overlaps the forward's tail. */
  return launch_programmatic(attn_combine_kernel<Out>, dim3(static_cast<unsigned>(grid)), dim3(ATTN_COMBINE_THREADS), 0,
                             stream, problem.after_forward != 0, problem);
}

}  // namespace

extern "C" flashc_status fc_attn_combine_cuda_run(const fc_combine_problem* p, const fc_cuda_context* context,
                                                  void* stream) {
  /* Built for sm_80, sm_90 and compute_80 PTX: an older GPU has no image to run. */
  if (context->cc_major < 8)
    return fc_fail(FLASHC_STATUS_NOT_SUPPORTED_ARCH,
                   "attention combine needs compute capability 8.0 or newer; this device is %d.%d", context->cc_major,
                   context->cc_minor);

  const int64_t rows = static_cast<int64_t>(p->batch) * p->seqlen * p->heads;
  const int64_t blocks_needed = (rows + ATTN_COMBINE_WARPS_PER_BLOCK - 1) / ATTN_COMBINE_WARPS_PER_BLOCK;
  const int64_t blocks_max = fc_sm_count(context) * ATTN_COMBINE_BLOCKS_PER_SM;
  const int grid = static_cast<int>(blocks_needed < blocks_max ? blocks_needed : blocks_max);
  const cudaStream_t cuda_stream = static_cast<cudaStream_t>(stream);
  cudaError_t error = cudaSuccess;
  switch (p->out_dtype) {
    case FLASHC_DTYPE_FP32: error = launch<float>(*p, grid, cuda_stream); break;
    case FLASHC_DTYPE_FP16: error = launch<__half>(*p, grid, cuda_stream); break;
    case FLASHC_DTYPE_BF16: error = launch<__nv_bfloat16>(*p, grid, cuda_stream); break;
    default:
      return fc_fail(FLASHC_STATUS_NOT_SUPPORTED_DTYPE, "attention combine: out_dtype %s (fp16, bf16 or fp32)",
                     flashc_dtype_name(p->out_dtype));
  }
  if (error != cudaSuccess)
    return fc_fail(FLASHC_STATUS_CUDA_ERROR, "attention combine launch failed: %s", cudaGetErrorString(error));
  return FLASHC_STATUS_SUCCESS;
}
