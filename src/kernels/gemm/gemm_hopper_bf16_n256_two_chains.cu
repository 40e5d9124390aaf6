/*
 * gemm_hopper_bf16_n256_two_chains.cu — the bf16 instantiations of the Hopper GEMM kernel with the
 * 128 × 256 tile on two WGMMA chains per k-step (gemm_hopper_config.cuh), one per operand layout,
 * which the host picks when every CTA has one whole plain tile into a TMA-stored 16-bit D
 * (gemm_hopper_launch.cu): the tile's last k-tile then runs in two halves, the first half
 * stored while the second computes. Built for sm_90a.
 * Check: tests/gpu/gpu_gemm.c (the "chains" cases and the small fixed cases take it);
 * nvcc -Xptxas -v (no spills, no stack frame, no C7511).
 */
#include "kernels/gemm/gemm_hopper_kernel.cuh"

cudaError_t gemm_hopper_launch_bf16_n256_two_chains(GEMM_HOPPER_LAUNCH_ARGS) {
  return gemm_hopper_launch_layouts<GEMM_INPUT_BF16, 256, GEMM_HOPPER_TWO_CHAINS>(params, context, a_mn_major, b_mn_major,
                                                                               grid, stream);
}
