/*
 * ptx_desc.cuh — shared-memory matrix descriptors for WGMMA, and the swizzled shared-memory
 * layouts they describe.
 *
 * DESCRIPTOR BITS (64-bit, one register pair; all byte quantities are encoded >> 4):
 *   bits  0..13  start address       shared-state-space byte address of the operand's first
 *                                    element (after the k-step advance, see below)
 *   bits 16..29  leading byte offset (LBO)
 *   bits 32..45  stride byte offset  (SBO)
 *   bits 49..51  base offset         0: the tile starts on its swizzle pattern's repeat
 *                                    boundary (1024 B for 128B, 512 for 64B, 256 for 32B);
 *                                    every helper here assumes such tiles
 *   bits 62..63  layout type         0 no swizzle ("interleave"), 1 128B, 2 64B, 3 32B
 *
 * TILE LAYOUTS THE HELPERS DESCRIBE. Let row_bytes = the swizzle span (32, 64 or 128), or 16
 * without swizzle. A tile is stored as consecutive BLOCKS; a block holds every line of the
 * tile's strided dimension, `row_bytes` per line, each line's 16-byte chunks permuted by the
 * swizzle (chunk ^= (byte_offset >> 7) & (row_bytes/16 - 1), on the offset from the
 * 1024/512/256-aligned tile start). This is exactly what TMA writes when a tile is loaded as
 * several boxes of inner extent row_bytes (64 bf16 / 128 e4m3 for 128B), box i placed at
 * block i — so each block is one TMA box.
 *
 *   K-major (the contiguous global dimension is K; imm-trans = 0; the only form for fp8):
 *     lines = M (or N) rows; block b holds K elements [b·row_bytes/elt, (b+1)·row_bytes/elt).
 *     element (r, k) at  swizzle(b·rows·row_bytes + r·row_bytes + (k·elt mod row_bytes))
 *     SBO = 8·row_bytes (next group of 8 rows: 1024 for 128B)
 *     LBO = rows·row_bytes (next block along K) without swizzle; with a swizzle it is unused
 *           (a k16 step, 32 bytes, never leaves a row) and set to 16 (encoded 1)
 *   MN-major (the contiguous global dimension is M or N; imm-trans = 1; 16-bit types only):
 *     lines = K rows; block b holds MN elements [b·row_bytes/elt, (b+1)·row_bytes/elt).
 *     element (mn, k) at  swizzle(b·k_rows·row_bytes + k·row_bytes + (mn·elt mod row_bytes))
 *     with a swizzle:  LBO = k_rows·row_bytes (next block along MN), SBO = 8·row_bytes (next
 *                      8 K rows)
 *     without:         LBO = 128 (next 8 K rows: one 8×16-byte core matrix), SBO =
 *                      k_rows·16 (next block of 8 MN elements)
 *
 * K-STEP ADVANCE (one wgmma consumes k16 for 16-bit types, k32 for fp8: 32 bytes of K):
 *   K-major:  start += smem_k_major_offset(swizzle, rows, k_bytes)
 *             = (k_bytes / row_bytes)·rows·row_bytes + k_bytes mod row_bytes
 *             i.e. +32 B per step inside a 128-byte swizzled row, then the next block
 *   MN-major: start += k·row_bytes (k = K elements consumed so far)
 *   smem_desc_advance_low(desc, bytes) adds to the start field in the low 32 bits (no carry
 *   can occur: shared addresses are < 2^18).
 */
#ifndef FLASHC_KERNELS_COMMON_PTX_DESC_CUH
#define FLASHC_KERNELS_COMMON_PTX_DESC_CUH

#include "kernels/common/ptx_arch.cuh"

/* Swizzle modes, named by their span in bytes (the same numbers as fc_tensor_map_swizzle on
 * the host; neither the descriptor's nor the driver's encoding). */
enum smem_swizzle {
  SMEM_SWIZZLE_NONE = 0,
  SMEM_SWIZZLE_32B = 32,
  SMEM_SWIZZLE_64B = 64,
  SMEM_SWIZZLE_128B = 128
};

/* Bytes per line of a block (see above): the span, or 16 without swizzle. */
static __host__ __device__ __forceinline__ constexpr uint32_t smem_swizzle_row_bytes(smem_swizzle swizzle) {
  return swizzle == SMEM_SWIZZLE_NONE ? 16u : static_cast<uint32_t>(swizzle);
}

/* Alignment the tile start needs for base offset 0: where the XOR pattern repeats. */
static __host__ __device__ __forceinline__ constexpr uint32_t smem_swizzle_alignment(smem_swizzle swizzle) {
  return swizzle == SMEM_SWIZZLE_NONE ? 16u : 8u * static_cast<uint32_t>(swizzle);
}

/* The descriptor's 2-bit layout type. */
static __host__ __device__ __forceinline__ constexpr uint32_t smem_desc_layout_type(smem_swizzle swizzle) {
  return swizzle == SMEM_SWIZZLE_128B ? 1u : swizzle == SMEM_SWIZZLE_64B ? 2u : swizzle == SMEM_SWIZZLE_32B ? 3u : 0u;
}

/* Packs the fields (byte quantities, multiples of 16) into a descriptor. */
static __host__ __device__ __forceinline__ constexpr uint64_t smem_desc_encode(uint32_t start_address,
                                                                              uint32_t leading_byte_offset,
                                                                              uint32_t stride_byte_offset,
                                                                              smem_swizzle swizzle) {
  return static_cast<uint64_t>((start_address >> 4) & 0x3FFFu) |
         (static_cast<uint64_t>((leading_byte_offset >> 4) & 0x3FFFu) << 16) |
         (static_cast<uint64_t>((stride_byte_offset >> 4) & 0x3FFFu) << 32) |
         (static_cast<uint64_t>(smem_desc_layout_type(swizzle)) << 62);
}

/* Moves the start address by `bytes` (a multiple of 16): the k-step and ring-slot advance.
 * Only the low 32 bits are added to: shared addresses stay below 256 KB, so the 14-bit
 * start-address field never carries into the rest, and an advance costs the issuing code one
 * 32-bit add (the high word stays put) instead of a 64-bit add or a re-encoded descriptor. */
static __host__ __device__ __forceinline__ constexpr uint64_t smem_desc_advance_low(uint64_t desc, uint32_t bytes) {
  return (desc & 0xFFFFFFFF00000000ull) | static_cast<uint32_t>(static_cast<uint32_t>(desc) + (bytes >> 4));
}

/* Byte offset of K byte `k_bytes` (a multiple of 16) in a K-major tile of `rows` rows. */
static __host__ __device__ __forceinline__ constexpr uint32_t smem_k_major_offset(smem_swizzle swizzle, uint32_t rows,
                                                                                 uint32_t k_bytes) {
  return (k_bytes / smem_swizzle_row_bytes(swizzle)) * rows * smem_swizzle_row_bytes(swizzle) +
         k_bytes % smem_swizzle_row_bytes(swizzle);
}

/* Byte offset of K row `k` in an MN-major tile. */
static __host__ __device__ __forceinline__ constexpr uint32_t smem_mn_major_offset(smem_swizzle swizzle, uint32_t k) {
  return k * smem_swizzle_row_bytes(swizzle);
}

/* Descriptor of a K-major tile of `rows` (M or N, a multiple of 8) rows at shared address
 * `tile_address` (aligned to smem_swizzle_alignment), positioned at K byte `k_bytes`. */
static __host__ __device__ __forceinline__ constexpr uint64_t smem_desc_k_major_at(uint32_t tile_address,
                                                                                  smem_swizzle swizzle,
                                                                                  uint32_t rows, uint32_t k_bytes) {
  return smem_desc_encode(tile_address + smem_k_major_offset(swizzle, rows, k_bytes),
                          swizzle == SMEM_SWIZZLE_NONE ? rows * 16u : 16u, 8u * smem_swizzle_row_bytes(swizzle),
                          swizzle);
}

/* Descriptor of an MN-major tile with `k_rows` K rows (a multiple of 8), positioned at K row
 * `k` (a multiple of 8). */
static __host__ __device__ __forceinline__ constexpr uint64_t smem_desc_mn_major_at(uint32_t tile_address,
                                                                                   smem_swizzle swizzle,
                                                                                   uint32_t k_rows, uint32_t k) {
  return swizzle == SMEM_SWIZZLE_NONE
             ? smem_desc_encode(tile_address + smem_mn_major_offset(swizzle, k), 128u, k_rows * 16u, swizzle)
             : smem_desc_encode(tile_address + smem_mn_major_offset(swizzle, k),
                                k_rows * smem_swizzle_row_bytes(swizzle), 8u * smem_swizzle_row_bytes(swizzle),
                                swizzle);
}

/* Device conveniences taking a generic pointer into shared memory. */
static __device__ __forceinline__ uint64_t smem_desc_k_major(const void* tile, smem_swizzle swizzle, uint32_t rows,
                                                             uint32_t k_bytes = 0) {
  return smem_desc_k_major_at(smem_u32(tile), swizzle, rows, k_bytes);
}

static __device__ __forceinline__ uint64_t smem_desc_mn_major(const void* tile, smem_swizzle swizzle, uint32_t k_rows,
                                                              uint32_t k = 0) {
  return smem_desc_mn_major_at(smem_u32(tile), swizzle, k_rows, k);
}

/* ---------------------------------------------------------------------------------------- */
/* Addresses inside swizzled tiles, for ordinary loads and stores (writing a tile that TMA
 * stores or WGMMA reads, reading one that TMA loaded). Offsets are from a tile start aligned
 * to smem_swizzle_alignment().                                                               */
/* ---------------------------------------------------------------------------------------- */

/* Physical offset of logical byte offset `offset` (line pitch = the span): 16-byte chunk
 * index XOR (line index mod span/16) — for 128B: chunk ^= row % 8. */
static __host__ __device__ __forceinline__ constexpr uint32_t smem_swizzle_offset(smem_swizzle swizzle, uint32_t offset) {
  return swizzle == SMEM_SWIZZLE_NONE
             ? offset
             : offset ^ (((offset >> 7) & (static_cast<uint32_t>(swizzle) / 16u - 1u)) << 4);
}

/* Byte offset of element (row, k) of a K-major tile of `rows` rows, `element_bytes` each. */
static __host__ __device__ __forceinline__ constexpr uint32_t smem_k_major_element_offset(smem_swizzle swizzle,
                                                                                         uint32_t rows, uint32_t row,
                                                                                         uint32_t k,
                                                                                         uint32_t element_bytes) {
  return smem_swizzle_offset(swizzle, (k * element_bytes / smem_swizzle_row_bytes(swizzle)) * rows *
                                              smem_swizzle_row_bytes(swizzle) +
                                          row * smem_swizzle_row_bytes(swizzle) +
                                          (k * element_bytes) % smem_swizzle_row_bytes(swizzle));
}

/* Byte offset of element (mn, k) of an MN-major tile with `k_rows` K rows. */
static __host__ __device__ __forceinline__ constexpr uint32_t smem_mn_major_element_offset(smem_swizzle swizzle,
                                                                                          uint32_t k_rows, uint32_t mn,
                                                                                          uint32_t k,
                                                                                          uint32_t element_bytes) {
  return smem_swizzle_offset(swizzle, (mn * element_bytes / smem_swizzle_row_bytes(swizzle)) * k_rows *
                                              smem_swizzle_row_bytes(swizzle) +
                                          k * smem_swizzle_row_bytes(swizzle) +
                                          (mn * element_bytes) % smem_swizzle_row_bytes(swizzle));
}

#endif
