/*
 * gemm_hopper_e4m3.cu — the FP8 (e4m3) instantiation of the Hopper GEMM kernel: both operands
 * K-major (A row-major, B column-major — FP8 WGMMA has no transpose), per-k-tile promotion of
 * the partial accumulators into fp32 (gemm_hopper_mainloop.cuh). Built for sm_90a.
 * Check: tests/gpu/gpu_gemm.c (e4m3 cases); nvcc -Xptxas -v (no spills, no stack frame).
 */
#include "kernels/gemm/gemm_hopper_kernel.cuh"

cudaError_t gemm_hopper_launch_e4m3(const gemm_hopper_params& params, int grid, cudaStream_t stream) {
  return gemm_hopper_launch_one<GEMM_INPUT_E4M3, 0, 0>(params, grid, stream);
}
