/*
 * gemm_portable_kernel.cuh — the portable GEMM kernel (sm_80 and newer) and its per-variant
 * launch: one block computes one BLOCK_M × BLOCK_N tile of D for one batch,
 *   D = act(alpha · scale_a · scale_b · A·B + beta · C + bias),
 * with the main loop of gemm_portable_mainloop.cuh (cp.async ring, ldmatrix, mma.sync) and the
 * epilogue of gemm_portable_epilogue.cuh. blockIdx.x walks the tiles in L2-friendly groups of
 * GEMM_PORTABLE_GROUP_M tile rows; blockIdx.y is the batch (stride 0 broadcasts an operand).
 * Included only by the gemm_portable_*_sm80.cu instantiation units.
 *
 * Checked by tests/gpu/gpu_gemm_portable.c against the fp64 oracle; timed against cuBLASLt by
 * bench/bench_gemm.c (--algo portable).
 */
#ifndef FLASHC_KERNELS_GEMM_PORTABLE_KERNEL_CUH
#define FLASHC_KERNELS_GEMM_PORTABLE_KERNEL_CUH

#include <cuda_runtime.h>

#include "kernels/common/kernel_attributes.cuh"
#include "kernels/common/launch_programmatic.cuh"
#include "kernels/common/ptx_misc.cuh"
#include "kernels/gemm/gemm_portable_config.cuh"
#include "kernels/gemm/gemm_portable_epilogue.cuh"
#include "kernels/gemm/gemm_portable_mainloop.cuh"

/* Origin (m0, n0) in D of block tile `tile` under the grid swizzle: tiles in groups of
 * GROUP_M tile rows, down the rows of a group first, so the blocks resident at one time
 * share A row panels and B column panels in L2. */
template <class Tile>
static __device__ __forceinline__ void block_tile_origin(const gemm_portable_args& args, int tile, int& m0, int& n0) {
  const int tiles_per_group = GEMM_PORTABLE_GROUP_M * args.tiles_n;
  const int group = tile / tiles_per_group;
  const int first_tile_m = group * GEMM_PORTABLE_GROUP_M;
  const int group_rows = min(args.tiles_m - first_tile_m, GEMM_PORTABLE_GROUP_M);
  const int in_group = tile - group * tiles_per_group;
  m0 = (first_tile_m + in_group % group_rows) * Tile::BLOCK_M;
  n0 = (in_group / group_rows) * Tile::BLOCK_N;
}

/* %ctaid.x read through volatile asm: the compiler cannot merge it with the read before the
 * main loop, so the epilogue recomputes its tile origin instead of keeping (or spilling)
 * two registers through the loop, which already holds ~250. mov.u32 %0, %ctaid.x; */
static __device__ __forceinline__ int block_index_x_reread() {
  uint32_t x;
  asm volatile("mov.u32 %0, %%ctaid.x;\n" : "=r"(x));
  return static_cast<int>(x);
}

template <class Tile, bool IsBf16, bool AKMajor, bool BKMajor>
__global__ void __launch_bounds__(Tile::THREADS, Tile::MIN_BLOCKS_PER_SM)
    gemm_portable_kernel(const gemm_portable_args args) {
  extern __shared__ __align__(128) unsigned char shared[];
  /* A programmatic dependent on sm_90 (launch_programmatic.cuh; no-ops on older GPUs): the
   * previous kernel on the stream may run until here. The next may become resident once every
   * block of this grid has started (so it never holds an SM that one of ours waits for). */
  grid_dependency_wait();
  grid_dependency_launch_dependents();

  int m0, n0;
  block_tile_origin<Tile>(args, static_cast<int>(blockIdx.x), m0, n0);
  const int64_t batch = blockIdx.y;
  const uint16_t* a = static_cast<const uint16_t*>(args.a) + batch * args.stride_a;
  const uint16_t* b = static_cast<const uint16_t*>(args.b) + batch * args.stride_b;

  float acc[Tile::MMA_TILES_M][Tile::MMA_TILES_N][4];
  gemm_portable_mainloop<Tile, IsBf16, AKMajor, BKMajor>(acc, shared, a, args.lda, b, args.ldb, m0, n0, args.m,
                                                         args.n, args.k);

  /* The tile origin again and this batch's C and D, computed after the main loop (nothing
   * extra live through it). */
  block_tile_origin<Tile>(args, block_index_x_reread(), m0, n0);
  const size_t d_bytes = args.d_dtype == FLASHC_DTYPE_FP32 ? 4 : 2;
  void* d = static_cast<unsigned char*>(args.d) + batch * args.stride_d * d_bytes;
  const void* c = args.c ? static_cast<const unsigned char*>(args.c) + batch * args.stride_c * d_bytes : nullptr;
  __syncthreads(); /* every warp's last ldmatrix is done: the epilogue reuses the ring */
  gemm_portable_epilogue<Tile>(acc, shared, args, c, d, m0, n0);
}

/* Sets the dynamic shared-memory limit (above the default 48 KB) once per handle and launches
 * one variant. Kernel ids for the attribute cache: 8 per tile (2 dtypes × 4 orientations). */
template <class Tile, bool IsBf16, bool AKMajor, bool BKMajor>
static cudaError_t gemm_portable_launch_variant(const fc_cuda_context* context, const gemm_portable_args& args,
                                                cudaStream_t stream) {
  auto kernel = gemm_portable_kernel<Tile, IsBf16, AKMajor, BKMajor>;
  constexpr int TILE_INDEX = Tile::BLOCK_N == 256 ? GEMM_PORTABLE_TILE_128x256 : GEMM_PORTABLE_TILE_128x128;
  constexpr int KERNEL_ID = KERNEL_ATTRIBUTE_ID_GEMM_PORTABLE_FIRST + TILE_INDEX * 8 + (IsBf16 ? 4 : 0) +
                            (AKMajor ? 2 : 0) + (BKMajor ? 1 : 0);
  static_assert(KERNEL_ID < KERNEL_ATTRIBUTE_ID_ATTN_FWD_FIRST, "portable kernel ids");
  cudaError_t error = set_shared_memory_once(context, KERNEL_ID, kernel, Tile::SHARED_BYTES);
  if (error != cudaSuccess) return error;
  const dim3 grid(static_cast<unsigned>(args.tiles_m * args.tiles_n), static_cast<unsigned>(args.batch_count));
  return launch_programmatic(kernel, grid, dim3(Tile::THREADS), Tile::SHARED_BYTES, stream, context->cc_major >= 9,
                             args);
}

/* The four orientations of one (tile, dtype). */
template <class Tile, bool IsBf16>
static cudaError_t gemm_portable_launch_layouts(const fc_cuda_context* context, bool a_k_major, bool b_k_major,
                                                const gemm_portable_args& args, cudaStream_t stream) {
  if (a_k_major)
    return b_k_major ? gemm_portable_launch_variant<Tile, IsBf16, true, true>(context, args, stream)
                     : gemm_portable_launch_variant<Tile, IsBf16, true, false>(context, args, stream);
  return b_k_major ? gemm_portable_launch_variant<Tile, IsBf16, false, true>(context, args, stream)
                   : gemm_portable_launch_variant<Tile, IsBf16, false, false>(context, args, stream);
}

#endif
