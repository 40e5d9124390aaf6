/*
 * gemm_portable_f16_128x128_sm80.cu — instantiates the portable GEMM kernel
 * (gemm_portable_kernel.cuh) for f16 inputs and the 128x128 block tile, in its four A/B
 * orientations. One small translation unit per (dtype, tile) so builds run in parallel.
 * Checked by tests/gpu/gpu_gemm_portable.c.
 */
#include "kernels/gemm/gemm_portable_kernel.cuh"

cudaError_t gemm_portable_launch_f16_128x128(const fc_cuda_context* context, bool a_k_major, bool b_k_major,
                                             const gemm_portable_args& args, cudaStream_t stream) {
  return gemm_portable_launch_layouts<gemm_portable_tile_128x128, false>(context, a_k_major, b_k_major, args, stream);
}
