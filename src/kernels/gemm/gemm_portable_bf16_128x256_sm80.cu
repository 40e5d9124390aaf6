/*
 * gemm_portable_bf16_128x256_sm80.cu — instantiates the portable GEMM kernel
 * (gemm_portable_kernel.cuh) for bf16 inputs and the 128x256 block tile, in its four A/B
 * orientations. One small translation unit per (dtype, tile) so builds run in parallel.
 * Checked by tests/gpu/gpu_gemm_portable.c.
 */
#include "kernels/gemm/gemm_portable_kernel.cuh"

cudaError_t gemm_portable_launch_bf16_128x256(const fc_cuda_context* context, bool a_k_major, bool b_k_major,
                                              const gemm_portable_args& args, cudaStream_t stream) {
  return gemm_portable_launch_layouts<gemm_portable_tile_128x256, true>(context, a_k_major, b_k_major, args, stream);
}
