/*
 * gemm_portable_kernel.cuh — the portable GEMM kernel (sm_80 and newer) and its per-variant
 * launch: one block computes one BLOCK_M × BLOCK_N tile of D for one batch,
 *   D = act(alpha · scale_a · scale_b · A·B + beta · C + bias),
 * with the main loop of gemm_portable_mainloop.cuh (cp.async ring, ldmatrix, mma.sync) and the
 * epilogue of gemm_portable_epilogue.cuh. blockIdx.x walks the tiles in L2-friendly groups of
 * GEMM_PORTABLE_GROUP_M tile rows; blockIdx.y is the batch (stride 0 broadcasts an operand).
 * The 128 × 256 tile (one block per SM) can end its grid in a stream-K tail instead of a
 * partial wave: its first blocks then split the last tiles by k-slices and hand the pieces
 * over through a workspace (gemm_portable_stream_k.cuh).
 * Included only by the gemm_portable_*_sm80.cu instantiation units.
 *
 * Checked by tests/gpu/gpu_gemm_portable.c against the fp64 oracle (stream-K forced on some
 * cases); timed against cuBLASLt by bench/bench_gemm.c (--algo portable; --ab-stream-k off
 * times the tail against the partial wave in one process).
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
#include "kernels/gemm/gemm_portable_stream_k.cuh"

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

/* This batch's C and D (D's element size follows its dtype; C has D's). */
static __device__ __forceinline__ void batch_outputs(const gemm_portable_args& args, int64_t batch, const void*& c,
                                                     void*& d) {
  const size_t d_bytes = args.d_dtype == FLASHC_DTYPE_FP32 ? 4 : 2;
  d = static_cast<unsigned char*>(args.d) + batch * args.stride_d * d_bytes;
  c = args.c ? static_cast<const unsigned char*>(args.c) + batch * args.stride_c * d_bytes : nullptr;
}

/* An operand advanced to slice k_slice: K-major operands step along their rows, MN-major
 * ones down their leading dimension. */
template <int BlockK, bool KMajor>
static __device__ __forceinline__ const uint16_t* operand_at_slice(const uint16_t* matrix, int64_t ld, int k_slice) {
  const int64_t k0 = static_cast<int64_t>(k_slice) * BlockK;
  return matrix + (KMajor ? k0 : k0 * ld);
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

  float acc[Tile::MMA_TILES_M][Tile::MMA_TILES_N][4];
  int m0, n0;
  const void* c;
  void* d;

  /* The stream-K tail exists for the one-block-per-SM tile with B K-major (column-major B):
   * with B MN-major the unit loop below costs the main loop registers and ptxas spills
   * (CUDA 13.0: 8–48 bytes at 255 registers), so those layouts keep one whole tile per block. */
  constexpr bool STREAM_K = gemm_portable_has_stream_k<Tile>(BKMajor);
  if constexpr (!STREAM_K) {
    const int64_t batch = blockIdx.y;
    const uint16_t* a = static_cast<const uint16_t*>(args.a) + batch * args.stride_a;
    const uint16_t* b = static_cast<const uint16_t*>(args.b) + batch * args.stride_b;
    block_tile_origin<Tile>(args, static_cast<int>(blockIdx.x), m0, n0);
    gemm_portable_mainloop<Tile, IsBf16, AKMajor, BKMajor>(acc, shared, a, args.lda, b, args.ldb, m0, n0, args.m,
                                                           args.n, args.k);
    /* The tile origin again and this batch's C and D, computed after the main loop from a fresh
     * read of the block index (cta_index_unhoisted): nothing extra is kept (or spilled) through
     * the loop, which holds ~250 registers. */
    block_tile_origin<Tile>(args, cta_index_unhoisted(), m0, n0);
    batch_outputs(args, batch, c, d);
    __syncthreads(); /* every warp's last ldmatrix is done: the epilogue reuses the ring */
    gemm_portable_epilogue<Tile>(acc, shared, args, c, d, m0, n0);
  } else {
    /* Units of work (gemm_portable_stream_k.cuh): a whole tile, or up to two pieces of the
     * stream-K tail, each slices [k_begin, k_end) of one tile. Only `unit` is live through a
     * main loop (~250 registers): the unit, the batch's operands and the slice count are
     * derived again from fresh reads of the block index. */
    const int k_tiles = (args.k + Tile::BLOCK_K - 1) / Tile::BLOCK_K;
    if (gemm_portable_unit_count(args, static_cast<int>(blockIdx.x), k_tiles) == 0) return;
    for (int unit = 0;; ++unit) {
      {
        const int cta = cta_index_unhoisted();
        const int64_t unit_batch = cta_index_y_unhoisted();
        const gemm_portable_work work = gemm_portable_unit(args, cta, unit, k_tiles);
        block_tile_origin<Tile>(args, work.tile, m0, n0);
        const int k_count = min(args.k, work.k_end * Tile::BLOCK_K) - work.k_begin * Tile::BLOCK_K;
        const uint16_t* unit_a = static_cast<const uint16_t*>(args.a) + unit_batch * args.stride_a;
        const uint16_t* unit_b = static_cast<const uint16_t*>(args.b) + unit_batch * args.stride_b;
        gemm_portable_mainloop<Tile, IsBf16, AKMajor, BKMajor>(
            acc, shared, operand_at_slice<Tile::BLOCK_K, AKMajor>(unit_a, args.lda, work.k_begin), args.lda,
            operand_at_slice<Tile::BLOCK_K, BKMajor>(unit_b, args.ldb, work.k_begin), args.ldb, m0, n0, args.m,
            args.n, k_count);
      }
      const int cta = cta_index_unhoisted();
      const int unit_k_tiles = (args.k + Tile::BLOCK_K - 1) / Tile::BLOCK_K;
      const gemm_portable_work work = gemm_portable_unit(args, cta, unit, unit_k_tiles);
      if (work.k_end < unit_k_tiles) {
        gemm_portable_publish<Tile>(args, cta, acc);
      } else {
        if (work.k_begin > 0) gemm_portable_collect<Tile>(args, cta, work, unit_k_tiles, acc);
        block_tile_origin<Tile>(args, work.tile, m0, n0);
        batch_outputs(args, cta_index_y_unhoisted(), c, d);
        __syncthreads(); /* every warp's last ldmatrix is done: the epilogue reuses the ring */
        gemm_portable_epilogue<Tile>(acc, shared, args, c, d, m0, n0);
      }
      if (unit + 1 >= gemm_portable_unit_count(args, cta, unit_k_tiles)) break;
      /* The last ldmatrix reads (and the epilogue's staging reads) are done before the next
       * unit's copies refill the ring. */
      __syncthreads();
    }
  }
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
  /* Stream-K blocks first, then one block per whole tile (sk_ctas = 0, dp_tiles = every tile
   * without stream-K). */
  const dim3 grid(static_cast<unsigned>(args.sk_ctas + args.dp_tiles), static_cast<unsigned>(args.batch_count));
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
