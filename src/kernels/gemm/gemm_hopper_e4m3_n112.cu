/*
 * gemm_hopper_e4m3_n112.cu — the FP8 (e4m3) Hopper GEMM with 128 × 112 tiles (wgmma n112), for
 * problems whose 128-wide tiles leave the persistent grid's last round partly idle: at 4096³
 * 1024 tiles of 128 × 128 are 7.76 rounds on 132 SMs (run as 8 rounds on 128), 1184 of 128 × 112
 * are 8.97 rounds on all 132 — 1.6 % less time at an equal rate per FLOP. choose_tile
 * (gemm_hopper_launch.cu) picks it by the same rounds × columns model as the 144-wide tile, for
 * 16-bit D. D leaves unswizzled: 16-bit outputs as one whole 224-byte row chunk per tile, fp32 in
 * 64-byte pieces, two per store round (gemm_hopper_config.cuh). Registers: 56 accumulators and two
 * partials of 56 per consumer thread.
 * Built for sm_90a. Check: tests/gpu/gpu_gemm.c (e4m3 cases, widths rotated; a 112-wide tail
 * column into bf16 and fp32 D); nvcc -Xptxas -v.
 */
#include "kernels/gemm/gemm_hopper_kernel.cuh"

cudaError_t gemm_hopper_launch_e4m3_n112(GEMM_HOPPER_LAUNCH_ARGS) {
  (void)a_mn_major; /* the check admits K-major operands only */
  (void)b_mn_major;
  return gemm_hopper_launch_one<GEMM_INPUT_E4M3, 112, 0, 0>(params, context, grid, stream);
}
