/*
 * gemm_portable_config.cuh — the portable GEMM's tile configurations and the flat argument
 * struct its kernels take (sm_80 and newer: cp.async + ldmatrix + mma.sync m16n8k16).
 *
 * What it computes: nothing; it is the constants table. Every other number of the portable
 * path (threads, shared-memory bytes per stage, copies per thread, fragments per warp) is
 * derived here from five choices per tile: the block tile (BLOCK_M × BLOCK_N), the K depth
 * of one pipeline stage (BLOCK_K), the warp grid (WARPS_M × WARPS_N) and the stage count.
 * The static_asserts below are the check: a configuration that does not divide evenly does
 * not compile.
 *
 * Why these tiles. Each warp owns a 64×64 piece of the block tile: 4 (m16) × 8 (n8) MMA
 * tiles, 128 fp32 accumulators per thread, 8 ldmatrix.x4 per 32 mma.sync per k16 step, the
 * ratio that keeps the tensor cores fed from shared memory. The large tile is 128×256 (8
 * warps); a 256×256 block tile would need 256×256 fp32 accumulators = 256 KB, the whole
 * register file of an SM, so it cannot exist on mma.sync (its accumulators live in
 * registers; WGMMA's do too, which is why the Hopper path stops at 128×256 per warpgroup
 * pair as well). The large tile takes BLOCK_K = 64 and 3 stages (144 KB: A100, H100/H200).
 * Measured on the H200 (2026-11-29, bf16 8192³, TFLOP/s): 128×256×32 with 3/4/5 stages
 * 260/264/267, 128×256×64 with 3/4 stages 330/334, 256×128×64 335, 128×128×64 (two blocks
 * per SM) 323, 128×256×128 with 2 stages 329: BLOCK_K = 64 (one barrier per four k16 steps
 * instead of two) is the step that paid; tile shape and stage count beyond it are within
 * noise, so the 3-stage form that also fits the A100's 164 KB stays. The small tile is
 * 128×128×32 with 4 stages (4 warps, 64 KB of ring, 68 KB with the epilogue's staging tile,
 * two blocks per SM): it fits every sm_80+ part (Ada and consumer Ampere opt in to 99 KB)
 * and doubles the tiles of small problems.
 */
#ifndef FLASHC_KERNELS_GEMM_PORTABLE_CONFIG_CUH
#define FLASHC_KERNELS_GEMM_PORTABLE_CONFIG_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "flashc.h"
#include "kernels/launch.h"

/* The tile shapes the launcher can pick (an index into the instantiation tables). */
enum gemm_portable_tile_id {
  GEMM_PORTABLE_TILE_128x256 = 0,
  GEMM_PORTABLE_TILE_128x128 = 1,
  GEMM_PORTABLE_TILE_COUNT = 2
};

/* mma.sync.m16n8k16 and ldmatrix geometry. */
constexpr int MMA_M = 16;
constexpr int MMA_N = 8;
constexpr int MMA_K = 16;
constexpr int WARP_SIZE = 32;
constexpr int ELEMENT_BYTES = 2;                       /* fp16 / bf16 */
constexpr int CHUNK_BYTES = 16;                        /* one cp.async, one ldmatrix row */
constexpr int CHUNK_ELEMENTS = CHUNK_BYTES / ELEMENT_BYTES; /* 8 */

template <int BlockM, int BlockN, int BlockK, int WarpsM, int WarpsN, int Stages>
struct gemm_portable_tile {
  static constexpr int BLOCK_M = BlockM;
  static constexpr int BLOCK_N = BlockN;
  static constexpr int BLOCK_K = BlockK;
  static constexpr int WARPS_M = WarpsM;
  static constexpr int WARPS_N = WarpsN;
  static constexpr int STAGES = Stages;

  static constexpr int WARPS = WARPS_M * WARPS_N;
  static constexpr int THREADS = WARPS * WARP_SIZE;
  static constexpr int WARP_TILE_M = BLOCK_M / WARPS_M;
  static constexpr int WARP_TILE_N = BLOCK_N / WARPS_N;
  static constexpr int MMA_TILES_M = WARP_TILE_M / MMA_M; /* m16 tiles per warp */
  static constexpr int MMA_TILES_N = WARP_TILE_N / MMA_N; /* n8 tiles per warp */
  static constexpr int K_STEPS = BLOCK_K / MMA_K;         /* k16 steps per stage */

  /* One stage holds an A tile (BLOCK_M × BLOCK_K) and a B tile (BLOCK_K × BLOCK_N). */
  static constexpr int A_STAGE_ELEMENTS = BLOCK_M * BLOCK_K;
  static constexpr int B_STAGE_ELEMENTS = BLOCK_K * BLOCK_N;
  static constexpr int STAGE_BYTES = (A_STAGE_ELEMENTS + B_STAGE_ELEMENTS) * ELEMENT_BYTES;
  static constexpr int RING_BYTES = STAGES * STAGE_BYTES;
  /* The epilogue stages the fp32 tile in the same shared memory (gemm_portable_epilogue.cuh):
   * rows padded by 8 floats, so a half-warp's fragment stores (rows g = 0..3, column pairs
   * 2q) fall in 32 different banks: (8g + 2q) mod 32. */
  static constexpr int STAGING_ROW_PAD = 8;
  static constexpr int STAGING_ROW_FLOATS = BLOCK_N + STAGING_ROW_PAD;
  static constexpr int STAGING_BYTES = BLOCK_M * STAGING_ROW_FLOATS * 4;
  static constexpr int SHARED_BYTES = RING_BYTES > STAGING_BYTES ? RING_BYTES : STAGING_BYTES;
  static constexpr int A_CHUNKS = A_STAGE_ELEMENTS / CHUNK_ELEMENTS; /* cp.async per stage */
  static constexpr int B_CHUNKS = B_STAGE_ELEMENTS / CHUNK_ELEMENTS;
  static constexpr int A_CHUNKS_PER_THREAD = A_CHUNKS / THREADS;
  static constexpr int B_CHUNKS_PER_THREAD = B_CHUNKS / THREADS;

  /* Blocks per SM the launch bounds ask for: registers allow two 128-thread blocks. */
  static constexpr int MIN_BLOCKS_PER_SM = THREADS <= 128 ? 2 : 1;

  static_assert(STAGES >= 2 && STAGES <= 6, "2..6 pipeline stages");
  static_assert(BLOCK_M % WARPS_M == 0 && BLOCK_N % WARPS_N == 0, "warp grid divides the tile");
  static_assert(WARP_TILE_M % MMA_M == 0 && WARP_TILE_N % (2 * MMA_N) == 0,
                "warp tile: whole m16 tiles, n8 tiles in pairs (one ldmatrix.x4 loads two)");
  static_assert(BLOCK_K % MMA_K == 0, "whole k16 steps per stage");
  static_assert(BLOCK_K == 32 || BLOCK_K % 64 == 0,
                "K-major rows of 64 bytes or of whole 128-byte lines (the two swizzles)");
  static_assert(BLOCK_M % 64 == 0 && BLOCK_N % 64 == 0,
                "MN-major rows of >= 128 bytes (the XOR swizzle spans 8 chunks)");
  static_assert(A_CHUNKS % THREADS == 0 && B_CHUNKS % THREADS == 0, "every thread copies whole chunks");
};

using gemm_portable_tile_128x256 = gemm_portable_tile<128, 256, 64, 2, 4, 3>;
using gemm_portable_tile_128x128 = gemm_portable_tile<128, 128, 32, 2, 2, 4>;

/* Whether a kernel has the stream-K tail (gemm_portable_stream_k.cuh): the tile that runs one
 * block per SM (the one the launcher picks when the tiles fill the SMs; the small tile is for
 * problems with fewer tiles, where a partial wave is all there is), with B K-major (B
 * column-major: a linear layer's weight). Host and device ask the same question. */
template <class Tile>
constexpr bool gemm_portable_has_stream_k(bool b_k_major) {
  return Tile::MIN_BLOCKS_PER_SM == 1 && b_k_major;
}

/* Grid swizzle: blocks run in groups of GROUP_M tile rows, column by column inside a group,
 * so the blocks resident at one time share A row panels and B column panels in L2. */
constexpr int GEMM_PORTABLE_GROUP_M = 8;

/* Everything a kernel needs, flat; D row-major (the host normalized it), element strides. */
struct gemm_portable_args {
  const void* a;
  const void* b;
  const void* c; /* NULL when beta == 0 */
  void* d;
  const void* bias; /* NULL = none; d's dtype */
  const float* scale_a; /* device scalars, NULL = 1 */
  const float* scale_b;
  int64_t lda, ldb, ldc, ldd;
  int64_t stride_a, stride_b, stride_c, stride_d; /* 0 = broadcast over batches */
  int m, n, k, batch_count;
  int tiles_m, tiles_n; /* block tiles over D */
  float alpha, beta;
  flashc_dtype d_dtype;          /* fp32, fp16 or bf16; C and bias too (a runtime switch in the
                                    epilogue: it costs nothing in the main loop) */
  flashc_activation activation;
  int bias_per_row;  /* bias indexed by D's row (after a host swap) instead of its column */
  int quad_access;   /* D, C and a per-column bias allow 4-element vector accesses at columns
                        n0 + 4j (gemm_portable_epilogue.cuh) */
  /* The stream-K tail (gemm_portable_stream_k.cuh; all 0 / NULL without it): blocks
   * [0, sk_ctas) split the tiles [dp_tiles, tiles) by k-slices, blocks from sk_ctas on take
   * whole tiles 0 .. dp_tiles − 1. Only for a single batch. */
  int sk_ctas, dp_tiles;
  int run_length, run_rest; /* stream-K slices I = run_length · sk_ctas + run_rest */
  float* partials;          /* sk_ctas slots of BLOCK_M × BLOCK_N fp32 (fragment order) */
  uint64_t* flags;          /* sk_ctas words, raised = tag */
  uint64_t tag;             /* this launch's (fc_launch_tag) */
};

/* One launcher per (input dtype, tile) translation unit; each covers the four operand
 * orientations (K-major = A row-major / B column-major) and sets a kernel's shared-memory
 * attribute once per handle (`context`, kernels/common/kernel_attributes.cuh). Defined in gemm_portable_*_sm80.cu. */
cudaError_t gemm_portable_launch_bf16_128x256(const fc_cuda_context* context, bool a_k_major, bool b_k_major,
                                              const gemm_portable_args& args, cudaStream_t stream);
cudaError_t gemm_portable_launch_bf16_128x128(const fc_cuda_context* context, bool a_k_major, bool b_k_major,
                                              const gemm_portable_args& args, cudaStream_t stream);
cudaError_t gemm_portable_launch_f16_128x256(const fc_cuda_context* context, bool a_k_major, bool b_k_major,
                                             const gemm_portable_args& args, cudaStream_t stream);
cudaError_t gemm_portable_launch_f16_128x128(const fc_cuda_context* context, bool a_k_major, bool b_k_major,
                                             const gemm_portable_args& args, cudaStream_t stream);

#endif
