/*
 * gemm_hopper_f16_n128.cu — the f16 instantiations of the Hopper GEMM kernel with the 128 × 128
 * tile (four operand layouts), which the host picks when a problem has too few 128 × 256 tiles
 * to fill the SMs (gemm_hopper_launch.cu). Built for sm_90a.
 * Check: tests/gpu/gpu_gemm.c (small problems take this tile); nvcc -Xptxas -v.
 */
#include "kernels/gemm/gemm_hopper_kernel.cuh"

cudaError_t gemm_hopper_launch_f16_n128(GEMM_HOPPER_LAUNCH_ARGS) {
  return gemm_hopper_launch_layouts<GEMM_INPUT_F16, 128>(params, context, a_mn_major, b_mn_major, grid, stream);
}
