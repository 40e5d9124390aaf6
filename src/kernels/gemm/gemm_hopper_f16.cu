/*
 * gemm_hopper_f16.cu — the f16 instantiations of the Hopper GEMM kernel (gemm_hopper_kernel.cuh),
 * one per operand layout (A K- or M-major × B K- or N-major), in their own translation unit so
 * the build compiles input kinds in parallel. Built for sm_90a (CMake, by file name).
 * Check: tests/gpu/gpu_gemm.c; nvcc -Xptxas -v (no spills, no stack frame).
 */
#include "kernels/gemm/gemm_hopper_kernel.cuh"

cudaError_t gemm_hopper_launch_f16(const gemm_hopper_params& params, int a_mn_major, int b_mn_major, int grid,
                                  cudaStream_t stream) {
  constexpr int INPUT = GEMM_INPUT_F16;
  if (!a_mn_major && !b_mn_major) return gemm_hopper_launch_one<INPUT, 0, 0>(params, grid, stream);
  if (!a_mn_major && b_mn_major) return gemm_hopper_launch_one<INPUT, 0, 1>(params, grid, stream);
  if (a_mn_major && !b_mn_major) return gemm_hopper_launch_one<INPUT, 1, 0>(params, grid, stream);
  return gemm_hopper_launch_one<INPUT, 1, 1>(params, grid, stream);
}
