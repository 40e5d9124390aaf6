/*
 * gemm_hopper_e4m3_n144.cu — the FP8 (e4m3) Hopper GEMM with 128 × 144 tiles (wgmma n144):
 * 12.5 % more work per k-tile than 128 × 128 for 6 % more shared-memory traffic, the widest
 * tile whose two partial accumulators fit the consumers' registers (3 × 72 per thread).
 * choose_tile (gemm_hopper_launch.cu) picks it where its rounds of tiles do not lose that back
 * (8192³ yes, 4096³ no). D leaves unswizzled: 16-bit outputs as one whole 288-byte row chunk per
 * tile, fp32 in 192-byte pieces, two per store round (gemm_hopper_config.cuh).
 * Built for sm_90a. Check: tests/gpu/gpu_gemm.c (e4m3 cases, widths rotated); nvcc -Xptxas -v.
 */
#include "kernels/gemm/gemm_hopper_kernel.cuh"

cudaError_t gemm_hopper_launch_e4m3_n144(GEMM_HOPPER_LAUNCH_ARGS) {
  (void)a_mn_major; /* the check admits K-major operands only */
  (void)b_mn_major;
  return gemm_hopper_launch_one<GEMM_INPUT_E4M3, 144, 0, 0>(params, context, grid, stream);
}
