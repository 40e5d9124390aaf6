/*
 * gemm_hopper_kernel.cuh — the Hopper GEMM kernel (sm_90a): D = act(alpha·scale_a·scale_b·A·B
 * + beta·C + bias) for row-major D (the host normalizes a column-major D), one persistent CTA
 * per SM, 3 warpgroups:
 *   warpgroup 0      producer: setmaxnreg down to 40; one elected thread issues every TMA load
 *                    into the STAGES-slot mbarrier ring (gemm_hopper_mainloop.cuh);
 *   warpgroups 1, 2  consumers: setmaxnreg up to 232; each owns 64 rows of the BLOCK_M × BLOCK_N
 *                    tile, runs WGMMA over the ring, then the epilogue (gemm_hopper_epilogue.cuh:
 *                    staging buffers + TMA store, named barrier 1 + consumer per warpgroup)
 *                    while the producer already fills the ring for the CTA's next tile.
 * Tiles come from gemm_hopper_scheduler.cuh; shapes from gemm_hopper_config.cuh.
 * Instantiated per (input kind, tile width, A MN-major, B MN-major) in gemm_hopper_{f16,bf16}*.cu
 * and gemm_hopper_e4m3.cu.
 * Check: tests/gpu/gpu_gemm.c; `nvcc -Xptxas -v`: no spills, no stack frame, no C7510/C7519.
 */
#ifndef FLASHC_KERNELS_GEMM_HOPPER_KERNEL_CUH
#define FLASHC_KERNELS_GEMM_HOPPER_KERNEL_CUH

#include <cuda.h>
#include <cuda_runtime.h>

#include "kernels/common/ptx.cuh"
#include "kernels/common/ring.cuh"
#include "kernels/common/kernel_attributes.cuh"
#include "kernels/gemm/gemm_hopper_config.cuh"
#include "kernels/gemm/gemm_hopper_epilogue.cuh"
#include "kernels/gemm/gemm_hopper_mainloop.cuh"
#include "kernels/gemm/gemm_hopper_scheduler.cuh"

/* The kernel's one parameter (passed as __grid_constant__ so the tensor maps stay in
 * parameter space, where TMA reads them). */
struct gemm_hopper_params {
  CUtensorMap map_a; /* 3-D: (contiguous, strided, batch) — see gemm_hopper_launch.cu */
  CUtensorMap map_b;
  CUtensorMap map_d; /* 3-D (n, m, batch), box (128 bytes of columns, 64 rows); valid when epilogue.d_tma */
  gemm_hopper_scheduler scheduler;
  int k_tiles;
  int a_batched, b_batched; /* 0: one matrix broadcast to every batch (batch coordinate 0) */
  gemm_hopper_epilogue_args epilogue;
};

template <int Input, int BlockN, int AMnMajor, int BMnMajor>
__global__ void __launch_bounds__(GEMM_HOPPER_THREADS, 1)
    gemm_hopper_kernel(const __grid_constant__ gemm_hopper_params params) {
  using T = gemm_hopper_tile<Input, BlockN>;
  extern __shared__ uint8_t gemm_smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>(
      (reinterpret_cast<uintptr_t>(gemm_smem_raw) + GEMM_HOPPER_SMEM_ALIGNMENT - 1) &
      ~static_cast<uintptr_t>(GEMM_HOPPER_SMEM_ALIGNMENT - 1));
  gemm_hopper_ring ring;
  ring.slots = smem;
  uint8_t* epilogue_staging = smem + T::STAGES * T::STAGE_BYTES; /* 1024-aligned (static_assert in the config) */
  ring.full = reinterpret_cast<uint64_t*>(epilogue_staging + GEMM_HOPPER_EPILOGUE_BYTES);
  ring.empty = ring.full + T::STAGES;

  if (threadIdx.x == 0) {
#pragma unroll
    for (int stage = 0; stage < T::STAGES; ++stage) {
      mbarrier_init(&ring.full[stage], 1);
      mbarrier_init(&ring.empty[stage], GEMM_HOPPER_CONSUMER_WARPGROUPS * 4);
    }
    fence_mbarrier_init();
  }
  __syncthreads();

  const int warpgroup = warpgroup_index_uniform();
  if (warpgroup == 0) {
    setmaxnreg_dec<GEMM_HOPPER_PRODUCER_REGISTERS>();
    if (warp_index_uniform() == 0 && elect_one_sync()) {
      gemm_hopper_produce<Input, BlockN, AMnMajor, BMnMajor>(&params.map_a, &params.map_b, params.scheduler,
                                                     params.a_batched, params.b_batched, params.k_tiles, ring);
    }
  } else {
    setmaxnreg_inc<GEMM_HOPPER_CONSUMER_REGISTERS>();
    const int consumer = warpgroup - 1;
    const int thread = threadIdx.x % GEMM_HOPPER_WARPGROUP_THREADS;
    const gemm_hopper_epilogue_args& e = params.epilogue;
    const float acc_scale =
        e.alpha * (e.scale_a ? __ldg(e.scale_a) : 1.0f) * (e.scale_b ? __ldg(e.scale_b) : 1.0f);
    ring_position position = {0, 0};
    uint8_t* staging = epilogue_staging + consumer * GEMM_HOPPER_EPILOGUE_BUFFERS * GEMM_HOPPER_EPILOGUE_BUFFER_BYTES;
    const uint32_t staging_barrier = 1u + static_cast<uint32_t>(consumer); /* named barrier: this warpgroup's staging */
    uint32_t chunk_counter = 0;
    float acc[T::ACCUMULATORS];
    for (int linear = blockIdx.x; linear < params.scheduler.tile_count; linear += gridDim.x) {
      const gemm_hopper_tile_coord tile = gemm_hopper_tile_at<T::GROUP_M>(params.scheduler, linear);
      gemm_hopper_consume<Input, BlockN, AMnMajor, BMnMajor>(acc, consumer, params.k_tiles, ring, position);
#ifdef GEMM_HOPPER_PROFILE_SKIP_EPILOGUE /* profiling builds only: the main loop's share of the time */
      if (acc[0] == 12345.0f)
#endif
      gemm_hopper_epilogue<T::BLOCK_N>(e, &params.map_d, acc, acc_scale, tile.batch,
                                       tile.tile_m * T::BLOCK_M + consumer * T::ROWS_PER_CONSUMER,
                                       tile.tile_n * T::BLOCK_N, thread, staging, staging_barrier, chunk_counter);
    }
    gemm_hopper_epilogue_finish(e, thread);
  }
}

/* Host side of one (input kind, tile width) (gemm_hopper_{f16,bf16}[_n128|_n64].cu,
 * gemm_hopper_e4m3.cu): picks the layout instantiation, sets its shared-memory attribute once
 * per handle (kernels/common/kernel_attributes.cuh) and launches. */
#define GEMM_HOPPER_LAUNCH_ARGS                                                                     \
  const gemm_hopper_params& params, const fc_cuda_context* context, int a_mn_major, int b_mn_major, \
      int grid, cudaStream_t stream
cudaError_t gemm_hopper_launch_f16_n256(GEMM_HOPPER_LAUNCH_ARGS);
cudaError_t gemm_hopper_launch_f16_n128(GEMM_HOPPER_LAUNCH_ARGS);
cudaError_t gemm_hopper_launch_f16_n64(GEMM_HOPPER_LAUNCH_ARGS);
cudaError_t gemm_hopper_launch_bf16_n256(GEMM_HOPPER_LAUNCH_ARGS);
cudaError_t gemm_hopper_launch_bf16_n128(GEMM_HOPPER_LAUNCH_ARGS);
cudaError_t gemm_hopper_launch_bf16_n64(GEMM_HOPPER_LAUNCH_ARGS);
cudaError_t gemm_hopper_launch_e4m3(GEMM_HOPPER_LAUNCH_ARGS); /* K-major operands only */

/* Kernel ids for the attribute cache: 16 per input kind, 4 layouts per tile width. */
constexpr int gemm_hopper_block_n_index(int block_n) { return block_n == 256 ? 0 : block_n == 128 ? 1 : 2; }

template <int Input, int BlockN, int AMnMajor, int BMnMajor>
static cudaError_t gemm_hopper_launch_one(const gemm_hopper_params& params, const fc_cuda_context* context, int grid,
                                          cudaStream_t stream) {
  auto kernel = gemm_hopper_kernel<Input, BlockN, AMnMajor, BMnMajor>;
  constexpr int SMEM_BYTES = static_cast<int>(gemm_hopper_tile<Input, BlockN>::SMEM_BYTES);
  constexpr int KERNEL_ID =
      KERNEL_ATTRIBUTE_ID_GEMM_HOPPER_FIRST + Input * 16 + gemm_hopper_block_n_index(BlockN) * 4 + AMnMajor * 2 + BMnMajor;
  static_assert(KERNEL_ID < KERNEL_ATTRIBUTE_ID_GEMM_PORTABLE_FIRST, "Hopper kernel ids");
  cudaError_t error = set_shared_memory_once(context, KERNEL_ID, kernel, SMEM_BYTES);
  if (error != cudaSuccess) return error;
  kernel<<<grid, GEMM_HOPPER_THREADS, SMEM_BYTES, stream>>>(params);
  return cudaGetLastError();
}

/* The four layouts of one (input kind, tile width). */
template <int Input, int BlockN>
static cudaError_t gemm_hopper_launch_layouts(GEMM_HOPPER_LAUNCH_ARGS) {
  if (!a_mn_major && !b_mn_major) return gemm_hopper_launch_one<Input, BlockN, 0, 0>(params, context, grid, stream);
  if (!a_mn_major && b_mn_major) return gemm_hopper_launch_one<Input, BlockN, 0, 1>(params, context, grid, stream);
  if (a_mn_major && !b_mn_major) return gemm_hopper_launch_one<Input, BlockN, 1, 0>(params, context, grid, stream);
  return gemm_hopper_launch_one<Input, BlockN, 1, 1>(params, context, grid, stream);
}

#endif
