/*
 * gemm_hopper_bf16.cu — the bf16 instantiations of the Hopper GEMM kernel (gemm_hopper_kernel.cuh)
 * with the 128 × 256 tile, one per operand layout (A K- or M-major × B K- or N-major), in their
 * own translation unit so the build compiles input kinds and tile widths in parallel (the
 * narrower tiles are in gemm_hopper_bf16_n128.cu and _n64.cu). Built for sm_90a (CMake, by file name).
 * Check: tests/gpu/gpu_gemm.c; nvcc -Xptxas -v (no spills, no stack frame).
 */
#include "kernels/gemm/gemm_hopper_kernel.cuh"

cudaError_t gemm_hopper_launch_bf16_n256(GEMM_HOPPER_LAUNCH_ARGS) {
  return gemm_hopper_launch_layouts<GEMM_INPUT_BF16, 256>(params, context, a_mn_major, b_mn_major, grid, stream);
}
