/*
 * gemm_portable_mainloop.cuh — the portable GEMM's main loop: acc[BLOCK_M × BLOCK_N] (fp32,
 * in registers, spread over the warps) = A[m0.., 0..K) · B[0..K), n0..) for one block tile.
 *
 * How:
 *   - global → shared: each thread issues 16-byte `cp.async.cg` copies for its share of one
 *     BLOCK_K slice of A and of B; every slice is one commit group; STAGES slices are in
 *     flight (a ring of STAGES buffers, STAGES − 1 slices ahead of the one multiplied).
 *     Copies past M, N or K read fewer bytes (src-size) and the rest of the 16 bytes is
 *     zero-filled, so tails of every dimension need no other code: zeros add nothing. Slices
 *     wholly inside both matrices (interior tiles, before K's end) skip those bounds: they
 *     run in a first loop of their own with plain 16-byte copies (WHOLE_SLICE_LOOP).
 *   - shared layouts: each operand is kept in its global orientation. A K-major tile (A
 *     row-major, B column-major) is [MN][BLOCK_K] (rows of 64 bytes for BLOCK_K = 32, else
 *     whole 128-byte lines); an MN-major tile (A column-major, B row-major) is [BLOCK_K][MN]
 *     with rows of 256 or 512 bytes. Both are XOR-swizzled in 16-byte chunks so that the 8
 *     row addresses of one ldmatrix phase (and the 8 chunks of a cp.async phase) land in 8
 *     different bank groups (no padding, no wasted shared memory):
 *        64-byte rows:          chunk' = chunk ^ ((row >> 1) & 3)   (two rows per 128-byte line)
 *        rows of 128·j bytes:   chunk' = chunk ^ (row & 7)
 *   - shared → registers: ldmatrix.x4 for a K-major operand, ldmatrix.x4.trans for an
 *     MN-major one (the transpose produces the same mma fragment); fragments are double
 *     buffered over the k16 steps so the next step's ldmatrix overlaps this step's MMAs.
 *   - mma.sync.m16n8k16 (fp16 or bf16 in, fp32 accumulate), 4 × 8 per warp per k16 step.
 *
 * Checked by tests/gpu/gpu_gemm_portable.c (all four layouts, tails in m, n, k, batches)
 * against the fp64 oracle; `nvcc -Xptxas -v` shows no spills and no stack frame.
 */
#ifndef FLASHC_KERNELS_GEMM_PORTABLE_MAINLOOP_CUH
#define FLASHC_KERNELS_GEMM_PORTABLE_MAINLOOP_CUH

#include <stdint.h>

#include <type_traits>

#include "kernels/common/ptx_misc.cuh"
#include "kernels/gemm/gemm_portable_config.cuh"

/* Byte offset of element (row, col) in a shared tile whose rows hold RowElements elements,
 * with the XOR swizzle of the header comment (col is a multiple of 8 at every call site). */
template <int RowElements>
static __device__ __forceinline__ uint32_t swizzled_offset(int row, int col) {
  constexpr int ROW_CHUNKS = RowElements / CHUNK_ELEMENTS;
  static_assert(ROW_CHUNKS == 4 || ROW_CHUNKS % 8 == 0, "64-byte rows or rows of whole 128-byte lines");
  const int chunk = col / CHUNK_ELEMENTS;
  const int swizzled = ROW_CHUNKS == 4 ? chunk ^ ((row >> 1) & 3) : chunk ^ (row & 7);
  return static_cast<uint32_t>((row * ROW_CHUNKS + swizzled) * CHUNK_BYTES);
}

/* One operand's shared tile: Extent (BLOCK_M for A, BLOCK_N for B) × BLOCK_K, K-major or not. */
template <int Extent, int BlockK, bool KMajor>
struct operand_tile {
  static constexpr int ROW_ELEMENTS = KMajor ? BlockK : Extent;
  static constexpr int ROW_CHUNKS = ROW_ELEMENTS / CHUNK_ELEMENTS;
  /* Byte offset of (mn, k) inside the tile. */
  static __device__ __forceinline__ uint32_t offset(int mn, int k) {
    return KMajor ? swizzled_offset<ROW_ELEMENTS>(mn, k) : swizzled_offset<ROW_ELEMENTS>(k, mn);
  }
};

/* One thread's share of copying an operand's BLOCK_K slices: CHUNKS_PER_THREAD 16-byte chunks
 * per slice. Consecutive threads take consecutive chunks of one shared row (coalesced global
 * reads); a thread's chunks j = 0, 1, ... lie ROW_STEP rows apart, a multiple of 8 rows, so
 * they share one swizzle pattern and one column: only a base pointer, a base shared offset
 * and two bounds are kept per operand, and each slice moves the pointer by one slice.
 * Element (mn, k) of the operand is at matrix[mn * ld + k] (K-major) or [k * ld + mn]. */
template <int Extent, int BlockK, bool KMajor, int Threads>
struct operand_copy {
  using tile = operand_tile<Extent, BlockK, KMajor>;
  static constexpr int CHUNKS_PER_THREAD = Extent * BlockK / CHUNK_ELEMENTS / Threads;
  static constexpr int ROW_STEP = Threads / tile::ROW_CHUNKS; /* shared rows between a thread's chunks */
  static_assert(Threads % tile::ROW_CHUNKS == 0 && ROW_STEP % 8 == 0, "one swizzle pattern per thread");
  static_assert(CHUNKS_PER_THREAD * Threads * CHUNK_ELEMENTS == Extent * BlockK, "whole chunks per thread");
  static_assert(KMajor || BlockK % ROW_STEP == 0, "an MN-major slice is a whole number of chunk steps");

  const uint16_t* source; /* the thread's first chunk in the current slice (may be past the end) */
  int64_t chunk_step;     /* elements between the thread's chunks: ROW_STEP rows of the matrix */
  int first_row_left;     /* rows of the outer dimension from the thread's first chunk to the end */
  int contiguous_left;    /* elements of the contiguous dimension from the thread's chunk on */
  uint32_t shared_offset; /* byte offset of the thread's first chunk in the tile */

  __device__ __forceinline__ void init(const uint16_t* matrix, int64_t ld, int mn0, int mn_count, int k_count) {
    const int row = static_cast<int>(threadIdx.x) / tile::ROW_CHUNKS;
    const int col = (static_cast<int>(threadIdx.x) % tile::ROW_CHUNKS) * CHUNK_ELEMENTS;
    /* K-major: rows are mn, columns k. MN-major: rows are k, columns mn. */
    const int outer = KMajor ? mn0 + row : row;
    const int inner = KMajor ? col : mn0 + col;
    source = matrix + static_cast<int64_t>(outer) * ld + inner;
    chunk_step = static_cast<int64_t>(ROW_STEP) * ld;
    first_row_left = (KMajor ? mn_count : k_count) - outer;
    contiguous_left = (KMajor ? k_count : mn_count) - inner;
    shared_offset = KMajor ? tile::offset(row, col) : tile::offset(col, row);
  }

  /* Steps to the next slice: BLOCK_K columns (K-major) or BLOCK_K rows = a whole number of
   * chunk steps (derived, not stored: one 64-bit register pair less in the main loop). */
  __device__ __forceinline__ void advance() {
    source += KMajor ? static_cast<int64_t>(BlockK) : chunk_step * (BlockK / ROW_STEP);
    if (KMajor)
      contiguous_left -= BlockK;
    else
      first_row_left -= BlockK;
  }

  /* The copies of the current slice when all of it lies inside the matrix (an interior tile,
   * a slice before K's end): no bounds, no zero fill — a third of the main loop's
   * instructions were the general form's bounds and byte counts (ncu, H200). */
  __device__ __forceinline__ void copy_whole_and_advance(uint32_t smem_tile) {
#pragma unroll
    for (int j = 0; j < CHUNKS_PER_THREAD; ++j)
      cp_async_16_whole(smem_tile + shared_offset + static_cast<uint32_t>(j * ROW_STEP * tile::ROW_CHUNKS * CHUNK_BYTES),
                        source + j * chunk_step);
    advance();
  }

  /* Issues the copies of the current slice into the tile at smem_tile, then steps to the next. */
  __device__ __forceinline__ void copy_and_advance(uint32_t smem_tile, const uint16_t* matrix) {
    int bytes_in_row = contiguous_left < 0 ? 0 : (contiguous_left > CHUNK_ELEMENTS ? CHUNK_ELEMENTS : contiguous_left);
    bytes_in_row *= ELEMENT_BYTES;
#pragma unroll
    for (int j = 0; j < CHUNKS_PER_THREAD; ++j) {
      const bool row_inside = j * ROW_STEP < first_row_left;
      const int bytes = row_inside ? bytes_in_row : 0;
      const uint16_t* chunk_source = bytes > 0 ? source + j * chunk_step : matrix;
      cp_async_16_partial(smem_tile + shared_offset + static_cast<uint32_t>(j * ROW_STEP * tile::ROW_CHUNKS * CHUNK_BYTES),
                          chunk_source, bytes);
    }
    advance();
  }
};

/* A fragments of k16 step `kk` for the warp's MMA_TILES_M m16 tiles (ptx_misc.cuh has the
 * register roles). K-major: lanes 0..15 address rows 0..15 at k 0, lanes 16..31 at k 8.
 * M-major (.trans): lane group i = lane/8 addresses k rows (i/2)*8 + lane%8 at m (i%2)*8. */
template <class Tile, bool AKMajor>
static __device__ __forceinline__ void load_a_fragments(uint32_t (&a)[Tile::MMA_TILES_M][4], uint32_t a_tile,
                                                        int warp_m0, int kk, int lane) {
  using tile = operand_tile<Tile::BLOCK_M, Tile::BLOCK_K, AKMajor>;
#pragma unroll
  for (int mi = 0; mi < Tile::MMA_TILES_M; ++mi) {
    if constexpr (AKMajor) {
      const int m = warp_m0 + mi * MMA_M + (lane % 16);
      const int k = kk * MMA_K + (lane / 16) * 8;
      ldmatrix_x4_shared(a[mi], a_tile + tile::offset(m, k), false);
    } else {
      const int group = lane / 8;
      const int k = kk * MMA_K + (group / 2) * 8 + (lane % 8);
      const int m = warp_m0 + mi * MMA_M + (group % 2) * 8;
      ldmatrix_x4_shared(a[mi], a_tile + tile::offset(m, k), true);
    }
  }
}

/* B fragments of k16 step `kk`: one ldmatrix.x4 gives two n8 tiles (registers 0,1 and 2,3).
 * K-major: lane group i addresses n rows (i/2)*8 + lane%8 at k (i%2)*8.
 * N-major (.trans): lane group i addresses k rows (i%2)*8 + lane%8 at n (i/2)*8. */
template <class Tile, bool BKMajor>
static __device__ __forceinline__ void load_b_fragments(uint32_t (&b)[Tile::MMA_TILES_N][2], uint32_t b_tile,
                                                        int warp_n0, int kk, int lane) {
  using tile = operand_tile<Tile::BLOCK_N, Tile::BLOCK_K, BKMajor>;
  const int group = lane / 8;
#pragma unroll
  for (int nj = 0; nj < Tile::MMA_TILES_N / 2; ++nj) {
    uint32_t r[4];
    if constexpr (BKMajor) {
      const int n = warp_n0 + nj * 2 * MMA_N + (group / 2) * 8 + (lane % 8);
      const int k = kk * MMA_K + (group % 2) * 8;
      ldmatrix_x4_shared(r, b_tile + tile::offset(n, k), false);
    } else {
      const int k = kk * MMA_K + (group % 2) * 8 + (lane % 8);
      const int n = warp_n0 + nj * 2 * MMA_N + (group / 2) * 8;
      ldmatrix_x4_shared(r, b_tile + tile::offset(n, k), true);
    }
    b[2 * nj][0] = r[0];
    b[2 * nj][1] = r[1];
    b[2 * nj + 1][0] = r[2];
    b[2 * nj + 1][1] = r[3];
  }
}

template <bool IsBf16>
static __device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  if constexpr (IsBf16)
    mma_m16n8k16_bf16(d, a, b);
  else
    mma_m16n8k16_f16(d, a, b);
}

/* The whole K loop for one block tile. a, b: this batch's operands (raw 16-bit elements);
 * m0, n0: the tile's origin in D. acc is zeroed here. */
template <class Tile, bool IsBf16, bool AKMajor, bool BKMajor>
static __device__ __forceinline__ void gemm_portable_mainloop(float (&acc)[Tile::MMA_TILES_M][Tile::MMA_TILES_N][4],
                                                              unsigned char* shared, const uint16_t* a, int64_t lda,
                                                              const uint16_t* b, int64_t ldb, int m0, int n0, int m,
                                                              int n, int k) {
  constexpr int STAGES = Tile::STAGES;
  constexpr int A_TILE_BYTES = Tile::A_STAGE_ELEMENTS * ELEMENT_BYTES;
  const uint32_t shared_base = smem_u32(shared);
  /* Stage s: A tile at shared_base + s * STAGE_BYTES, B tile right after it. */
  auto a_stage = [&](int stage) { return shared_base + static_cast<uint32_t>(stage * Tile::STAGE_BYTES); };
  auto b_stage = [&](int stage) { return a_stage(stage) + static_cast<uint32_t>(A_TILE_BYTES); };

  const int lane = static_cast<int>(threadIdx.x % WARP_SIZE);
  const int warp = warp_index_uniform();
  const int warp_m0 = (warp / Tile::WARPS_N) * Tile::WARP_TILE_M;
  const int warp_n0 = (warp % Tile::WARPS_N) * Tile::WARP_TILE_N;
  const int k_tiles = (k + Tile::BLOCK_K - 1) / Tile::BLOCK_K;

  /* Slices are copied in order, so each operand's copy state only moves forward. */
  operand_copy<Tile::BLOCK_M, Tile::BLOCK_K, AKMajor, Tile::THREADS> a_copy;
  operand_copy<Tile::BLOCK_N, Tile::BLOCK_K, BKMajor, Tile::THREADS> b_copy;
  a_copy.init(a, lda, m0, m, k);
  b_copy.init(b, ldb, n0, n, k);
  /* The second loop costs registers: ptxas (CUDA 13.0) spills with it when A is MN-major
   * (sm_80 and sm_90, up to 128 bytes, partly inside the loops) and, for the 128×128 tile,
   * when B is MN-major (8 bytes). Those layouts keep the single bounds-checked loop. */
  constexpr bool WHOLE_SLICE_LOOP = AKMajor && (BKMajor || Tile::BLOCK_N == 256);
  /* Slices 0 .. whole_k_tiles-1 lie wholly inside both matrices (the tile is inside M and N,
   * and the slice ends at or before K): their copies need no bounds (copy_whole_and_advance). */
  const bool interior_tile = m0 + Tile::BLOCK_M <= m && n0 + Tile::BLOCK_N <= n;
  const int whole_k_tiles = WHOLE_SLICE_LOOP && interior_tile ? k / Tile::BLOCK_K : 0;
  auto copy_slice = [&](int stage) {
    a_copy.copy_and_advance(a_stage(stage), a);
    b_copy.copy_and_advance(b_stage(stage), b);
  };
  auto copy_whole_slice = [&](int stage) {
    a_copy.copy_whole_and_advance(a_stage(stage));
    b_copy.copy_whole_and_advance(b_stage(stage));
  };

#pragma unroll
  for (int mi = 0; mi < Tile::MMA_TILES_M; ++mi)
#pragma unroll
    for (int ni = 0; ni < Tile::MMA_TILES_N; ++ni)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mi][ni][e] = 0.0f;

  /* Prologue: slices 0 .. STAGES-2 in flight, one commit group each (empty past the end, so
   * the group count, and with it wait_group's meaning, does not depend on K). */
#pragma unroll
  for (int stage = 0; stage < STAGES - 1; ++stage) {
    if (stage < k_tiles) copy_slice(stage);
    cp_async_commit_group();
  }

  uint32_t a_fragments[2][Tile::MMA_TILES_M][4];
  uint32_t b_fragments[2][Tile::MMA_TILES_N][2];

  /* Slice 0 landed (at most STAGES-2 younger groups pending) and is visible to every warp. */
  cp_async_wait_group<STAGES - 2>();
  __syncthreads();
  int read_stage = 0;
  int write_stage = STAGES - 1;
  load_a_fragments<Tile, AKMajor>(a_fragments[0], a_stage(0), warp_m0, 0, lane);
  load_b_fragments<Tile, BKMajor>(b_fragments[0], b_stage(0), warp_n0, 0, lane);

  /* One slice of the main loop: Tile::K_STEPS k16 steps; at the first, the copy of slice
   * k_tile + STAGES - 1 into the buffer the previous slice used (bounds-free when Whole). */
  auto multiply_slice = [&](int k_tile, auto whole) {
#pragma unroll
    for (int kk = 0; kk < Tile::K_STEPS; ++kk) {
      if (kk == Tile::K_STEPS - 1) {
        /* Last k16 step of this slice: wait for the next slice and make it visible. The
         * barrier also tells every warp that this slice's buffer (all of whose ldmatrix
         * reads were issued above) may be overwritten by the copy issued next tile. */
        cp_async_wait_group<STAGES - 2>();
        __syncthreads();
        read_stage = read_stage == STAGES - 1 ? 0 : read_stage + 1;
      }
      /* Next k16 step's fragments (the first of the next slice after the last step). */
      const int next_kk = (kk + 1) % Tile::K_STEPS;
      load_a_fragments<Tile, AKMajor>(a_fragments[(kk + 1) % 2], a_stage(read_stage), warp_m0, next_kk, lane);
      load_b_fragments<Tile, BKMajor>(b_fragments[(kk + 1) % 2], b_stage(read_stage), warp_n0, next_kk, lane);
      if (kk == 0) {
        /* Refill the buffer the previous slice used (freed by last tile's barrier). */
        if constexpr (decltype(whole)::value) {
          copy_whole_slice(write_stage);
        } else {
          if (k_tile + STAGES - 1 < k_tiles) copy_slice(write_stage);
        }
        cp_async_commit_group();
        write_stage = write_stage == STAGES - 1 ? 0 : write_stage + 1;
      }
#pragma unroll
      for (int mi = 0; mi < Tile::MMA_TILES_M; ++mi)
#pragma unroll
        for (int ni = 0; ni < Tile::MMA_TILES_N; ++ni)
          mma_16816<IsBf16>(acc[mi][ni], a_fragments[kk % 2][mi], b_fragments[kk % 2][ni]);
    }
  };
  /* Two loops, not one with a branch per slice: with the branch, the compiler predicated
   * both copy forms and computed the general form's bounds anyway. The first loop runs while
   * the slice it copies is whole; the second finishes (tails, edge tiles: all of them). */
  int k_tile = 0;
  if constexpr (WHOLE_SLICE_LOOP)
    for (; k_tile + STAGES - 1 < whole_k_tiles; ++k_tile) multiply_slice(k_tile, std::true_type{});
  for (; k_tile < k_tiles; ++k_tile) multiply_slice(k_tile, std::false_type{});
  /* No copy may still target shared memory when the block exits or reuses it. */
  cp_async_wait_group<0>();
}

#endif
