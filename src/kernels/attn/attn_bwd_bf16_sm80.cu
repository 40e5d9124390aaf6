/*
 * attn_bwd_bf16_sm80.cu — the bf16 instances of the tensor-core attention backward
 * (attn_bwd_launch.cuh lists them). Built with the portable targets (the _sm80.cu suffix).
 * Check: tests/gpu/gpu_attn_bwd.
 */
#include <cuda_bf16.h>

#include "kernels/attn/attn_bwd_launch.cuh"

cudaError_t attn_bwd_launch_bf16(const attn_bwd_params& params, attn_bwd_shape shape, cudaStream_t stream) {
  return attn_bwd_launch_shape<__nv_bfloat16>(params, shape, stream);
}
