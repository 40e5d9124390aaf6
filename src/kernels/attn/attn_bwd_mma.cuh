/*
 * attn_bwd_mma.cuh — the tensor-core pieces of the attention backward (attn_bwd_kernel.cuh):
 * 16-bit operand tiles in shared memory, their cp.async loads, and the two warp-level block
 * products every backward product reduces to, on mma.sync.aligned.m16n8k16 (fp16 or bf16 in,
 * fp32 accumulate):
 *   attn_bwd_warp_mma_abt   acc[16 × 8·N] += A[16 × K] · B[8·N × K]ᵀ   (both tiles row-major
 *                           with K along the row: S = Q·Kᵀ, Sᵀ = K·Qᵀ, dP = dO·Vᵀ, dPᵀ = V·dOᵀ);
 *   attn_bwd_warp_mma_ab    acc[16 × 8·N] += A[16 × K] · B[K × 8·N]    (B row-major with N along
 *                           the row, read through ldmatrix .trans: dV += Pᵀ·dO, dK += dSᵀ·Q,
 *                           dQ += dS·K);
 *   both are attn_bwd_warp_mma, one loop whose B addressing follows B's storage order.
 *
 * Shared tiles: Rows × Columns elements (Columns, the padded head dim or the key count, a
 * multiple of 16), each row padded by 8 elements (16 bytes). A row pitch that is an odd
 * multiple of 16 bytes modulo 128 puts the 8 row addresses of one ldmatrix phase in 8 different
 * 16-byte bank groups, so ldmatrix, the 16-byte cp.async stores and the 4-byte P/dS stores are
 * conflict-free without a swizzle (Columns is a multiple of 16: pitch = 32·j + 16 bytes).
 *
 * Fragment roles (PTX ISA, mma.m16n8k16 with .row.col, and ldmatrix; ptx_misc.cuh says the
 * same; g = lane / 4, q = lane % 4):
 *   A (16 × 16, row-major): a0 (row g, k 2q..2q+1)  a1 (row g+8, k 2q..)  a2 (row g, k 8+2q..)
 *                           a3 (row g+8, k 8+2q..)
 *   B (16 × 8):             b0 (k 2q..2q+1, col g)  b1 (k 8+2q.., col g)
 *   C (16 × 8, fp32):       c0, c1 (row g, cols 2q, 2q+1)   c2, c3 (row g+8, cols 2q, 2q+1)
 *   ldmatrix .x4: lanes 8i..8i+7 give the row addresses of 8×8 matrix i; register i of lane l
 *     receives row l/4, columns 2(l%4), 2(l%4)+1 of matrix i (.trans: column l/4, rows 2(l%4)..).
 * The lane → address helpers below are __host__ so a host emulation can check them.
 *
 * Check: tests/gpu/gpu_attn_bwd (every product feeds dq, dk or dv; a wrong fragment role shows
 * as a large error there, see attn_bwd_kernel.cuh).
 */
#ifndef FLASHC_KERNELS_ATTN_BWD_MMA_CUH
#define FLASHC_KERNELS_ATTN_BWD_MMA_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "kernels/common/ptx_misc.cuh"

constexpr int ATTN_BWD_MMA_M = 16;
constexpr int ATTN_BWD_MMA_N = 8;
constexpr int ATTN_BWD_MMA_K = 16;
constexpr int ATTN_BWD_ELEMENT_BYTES = 2; /* fp16 / bf16 operands */
constexpr int ATTN_BWD_CHUNK_ELEMENTS = 16 / ATTN_BWD_ELEMENT_BYTES; /* one 16-byte cp.async / ldmatrix row */
constexpr int ATTN_BWD_ROW_PAD_ELEMENTS = ATTN_BWD_CHUNK_ELEMENTS;  /* 16 bytes against bank conflicts */

/* A shared tile of Rows × Columns 16-bit elements with padded rows; offsets in bytes. */
template <int Rows, int Columns>
struct attn_bwd_tile {
  static_assert(Columns % ATTN_BWD_MMA_K == 0, "whole k16 steps / n16 pairs per row");
  static constexpr int ROWS = Rows;
  static constexpr int COLUMNS = Columns;
  static constexpr int STRIDE = Columns + ATTN_BWD_ROW_PAD_ELEMENTS; /* elements */
  static constexpr int BYTES = Rows * STRIDE * ATTN_BWD_ELEMENT_BYTES;
  static_assert((STRIDE * ATTN_BWD_ELEMENT_BYTES) % 32 == 16, "pitch an odd multiple of 16 bytes");
  static __host__ __device__ __forceinline__ constexpr uint32_t offset(int row, int col) {
    return static_cast<uint32_t>((row * STRIDE + col) * ATTN_BWD_ELEMENT_BYTES);
  }
};

/* ---- lane → (row, column) of the 16-byte row a lane addresses in one ldmatrix.x4 ---------- */

/* A operand, 16 rows × k16, K along the row: matrices (rows 0-7, k 0-7), (rows 8-15, k 0-7),
 * (rows 0-7, k 8-15), (rows 8-15, k 8-15) = registers a0..a3. */
static __host__ __device__ __forceinline__ int attn_bwd_a_lane_row(int lane) { return lane % 16; }
static __host__ __device__ __forceinline__ int attn_bwd_a_lane_col(int lane) { return (lane / 16) * 8; }

/* B operand stored [n][k] (K along the row), two n8 tiles: matrices (n 0-7, k 0-7),
 * (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15) = b0, b1 of tile 0, b0, b1 of tile 1. */
static __host__ __device__ __forceinline__ int attn_bwd_bt_lane_row(int lane) { return (lane / 16) * 8 + lane % 8; }
static __host__ __device__ __forceinline__ int attn_bwd_bt_lane_col(int lane) { return ((lane / 8) % 2) * 8; }

/* B operand stored [k][n] (N along the row), read with .trans, two n8 tiles: matrices
 * (k 0-7, n 0-7), (k 8-15, n 0-7), (k 0-7, n 8-15), (k 8-15, n 8-15) = the same b0, b1, b0, b1. */
static __host__ __device__ __forceinline__ int attn_bwd_b_lane_row(int lane) { return ((lane / 8) % 2) * 8 + lane % 8; }
static __host__ __device__ __forceinline__ int attn_bwd_b_lane_col(int lane) { return (lane / 16) * 8; }

/* Where accumulator element e (0..3) of n8 tile `tile` of a lane sits in the warp's
 * 16 × 8·N block. */
static __host__ __device__ __forceinline__ int attn_bwd_acc_row(int lane, int e) { return lane / 4 + (e / 2) * 8; }
static __host__ __device__ __forceinline__ int attn_bwd_acc_col(int lane, int tile, int e) {
  return tile * ATTN_BWD_MMA_N + 2 * (lane % 4) + e % 2;
}

/* ---- instructions -------------------------------------------------------------------------- */

template <bool IsBf16>
static __device__ __forceinline__ void attn_bwd_mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                                          uint32_t b1) {
  const uint32_t b[2] = {b0, b1};
  if constexpr (IsBf16)
    mma_m16n8k16_bf16(d, a, b);
  else
    mma_m16n8k16_f16(d, a, b);
}

/* Two floats as the operand dtype's pair, `low` in bits 0..15 (the lower column). */
template <bool IsBf16>
static __device__ __forceinline__ uint32_t attn_bwd_pack(float low, float high) {
  if constexpr (IsBf16)
    return pack_bf16x2(low, high);
  else
    return pack_f16x2(low, high);
}

/* acc[16 × 8·NTiles] += A[a_row0.., 0..16·KSteps) · B over k 0..16·KSteps and n from b_n0:
 * B stored [n][k] (BStoredNK, read as is) or [k][n] (read with .trans); the two forms differ
 * only in where a lane's 16-byte row of B sits. */
template <bool IsBf16, bool BStoredNK, int NTiles, int KSteps, class ATile, class BTile>
static __device__ __forceinline__ void attn_bwd_warp_mma(float (&acc)[NTiles][4], uint32_t a_tile, int a_row0,
                                                         uint32_t b_tile, int b_n0, int lane) {
  static_assert(NTiles % 2 == 0, "one ldmatrix.x4 gives two n8 tiles");
  static_assert(KSteps * ATTN_BWD_MMA_K <= ATile::COLUMNS &&
                    KSteps * ATTN_BWD_MMA_K <= (BStoredNK ? BTile::COLUMNS : BTile::ROWS),
                "k range");
  /* B's tile offset of (k, n) in its storage order */
  auto b_offset = [](int k, int n) { return BStoredNK ? BTile::offset(n, k) : BTile::offset(k, n); };
  const uint32_t a_lane = a_tile + ATile::offset(a_row0 + attn_bwd_a_lane_row(lane), attn_bwd_a_lane_col(lane));
  const uint32_t b_lane = b_tile + (BStoredNK ? b_offset(attn_bwd_bt_lane_col(lane), b_n0 + attn_bwd_bt_lane_row(lane))
                                              : b_offset(attn_bwd_b_lane_row(lane), b_n0 + attn_bwd_b_lane_col(lane)));
#pragma unroll
  for (int kk = 0; kk < KSteps; ++kk) {
    uint32_t a[4];
    ldmatrix_x4_shared(a, a_lane + ATile::offset(0, kk * ATTN_BWD_MMA_K), false);
#pragma unroll
    for (int pair = 0; pair < NTiles / 2; ++pair) {
      uint32_t b[4];
      ldmatrix_x4_shared(b, b_lane + b_offset(kk * ATTN_BWD_MMA_K, pair * 2 * ATTN_BWD_MMA_N), !BStoredNK);
      attn_bwd_mma_16816<IsBf16>(acc[2 * pair], a, b[0], b[1]);
      attn_bwd_mma_16816<IsBf16>(acc[2 * pair + 1], a, b[2], b[3]);
    }
  }
}

/* acc[16 × 8·NTiles] += A[a_row0.., 0..16·KSteps) · B[b_row0.., 0..16·KSteps)ᵀ. */
template <bool IsBf16, int NTiles, int KSteps, class ATile, class BTile>
static __device__ __forceinline__ void attn_bwd_warp_mma_abt(float (&acc)[NTiles][4], uint32_t a_tile, int a_row0,
                                                             uint32_t b_tile, int b_row0, int lane) {
  attn_bwd_warp_mma<IsBf16, true, NTiles, KSteps, ATile, BTile>(acc, a_tile, a_row0, b_tile, b_row0, lane);
}

/* acc[16 × 8·NTiles] += A[a_row0.., 0..16·KSteps) · B[0..16·KSteps, b_col0..). */
template <bool IsBf16, int NTiles, int KSteps, class ATile, class BTile>
static __device__ __forceinline__ void attn_bwd_warp_mma_ab(float (&acc)[NTiles][4], uint32_t a_tile, int a_row0,
                                                            uint32_t b_tile, int b_col0, int lane) {
  attn_bwd_warp_mma<IsBf16, false, NTiles, KSteps, ATile, BTile>(acc, a_tile, a_row0, b_tile, b_col0, lane);
}

/* Rows [0, Tile::ROWS) of a tensor into a tile with cp.async: row r (r < valid_rows) starts at
 * source + row_offset(r), `columns` elements; the rest of the tile's columns (the head-dim
 * padding) and rows past valid_rows are zero-filled, so the padding adds nothing to any
 * product. Each row start must be 16-byte aligned: the host validation makes base pointers and
 * strides multiples of 16 bytes on CUDA handles (host/layout.c, fc_check_gpu_alignment). The
 * caller commits and waits. */
template <class Tile, int Threads, class RowOffset>
static __device__ __forceinline__ void attn_bwd_copy_tile(uint32_t tile, const uint16_t* source, int valid_rows,
                                                          int columns, RowOffset row_offset) {
  constexpr int ROW_CHUNKS = Tile::COLUMNS / ATTN_BWD_CHUNK_ELEMENTS;
  constexpr int CHUNKS = Tile::ROWS * ROW_CHUNKS;
#pragma unroll 4
  for (int chunk = static_cast<int>(threadIdx.x); chunk < CHUNKS; chunk += Threads) {
    const int row = chunk / ROW_CHUNKS, col = (chunk % ROW_CHUNKS) * ATTN_BWD_CHUNK_ELEMENTS;
    int elements = row < valid_rows ? columns - col : 0;
    elements = elements < 0 ? 0 : (elements > ATTN_BWD_CHUNK_ELEMENTS ? ATTN_BWD_CHUNK_ELEMENTS : elements);
    /* nothing is read when elements == 0; the base pointer stands in as a valid address */
    const uint16_t* chunk_source = elements > 0 ? source + row_offset(row) + col : source;
    cp_async_16_partial(tile + Tile::offset(row, col), chunk_source, elements * ATTN_BWD_ELEMENT_BYTES);
  }
}

#endif
