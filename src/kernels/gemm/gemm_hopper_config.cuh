/*
 * gemm_hopper_config.cuh — compile-time shape of the Hopper GEMM (sm_90a): one table of tile
 * shapes per input dtype, and every other constant derived from it (bytes per stage, stages
 * that fit the shared-memory budget, threads, registers per role).
 *
 * Roles (gemm_hopper_kernel.cuh): warpgroup 0 = producer (TMA), warpgroups 1..2 = consumers
 * (WGMMA, 64 rows of the CTA tile each). A CTA tile is BLOCK_M × BLOCK_N, consumed in k-tiles of
 * BLOCK_K elements = 128 bytes of K (the 128B swizzle span: one TMA box row per tile row).
 * Check: `nvcc -Xptxas -v` on gemm_hopper_*.cu shows no spills and no stack frame; the
 * static_asserts below hold the arithmetic.
 */
#ifndef FLASHC_KERNELS_GEMM_HOPPER_CONFIG_CUH
#define FLASHC_KERNELS_GEMM_HOPPER_CONFIG_CUH

#include <stdint.h>

/* How many k-tiles before a fused tile's end (C, bias, activation finished in registers,
 * gemm_hopper_consume_tiles_overlapped) its C is prefetched into L2. Without it the finish
 * reads C from DRAM in four dependent groups while the tensor core idles; a k-tile lasts
 * ~0.75 µs at 8192² bf16 (128 × 256 × 64 × 2 FLOPs at ~5.5 TFLOP/s per SM), so 4 cover a
 * DRAM round trip under load with room, and ~64 KB per CTA stay in L2 only for ~3 µs.
 * 0 compiles the prefetch out. */
#ifndef GEMM_HOPPER_FUSED_C_PREFETCH_K_TILES
#define GEMM_HOPPER_FUSED_C_PREFETCH_K_TILES 4
#endif

/* WGMMA chains per consumer k-step, a compile-time parameter of the kernel. Every kernel runs one
 * chain (one m64nBLOCK_N WGMMA per k-step). The 16-bit 128 × 256 tile has a second instantiation
 * with two: two m64n128 WGMMAs per k-step on the two halves of the accumulator fragment
 * (columns 0–127 and 128–255), as cuBLASLt's nvjet kernels issue them. That reads A twice (+20 %
 * shared-memory reads per k-tile: 4096³ ran 0.3–0.5 % slower, 32nd–33rd sessions), but lets the
 * CTA's last tile run its last k-tile as two commit groups and store the first half's columns
 * while the second half's WGMMAs run (gemm_hopper_finish_in_halves; on the one-chain
 * accumulator that split made ptxas serialize every WGMMA, C7511). The end of a CTA's only tile
 * is the whole tail of a one-round problem, so the host picks two chains when every CTA has one
 * whole plain tile into a TMA-stored 16-bit D (2048³ bf16: 0.986 → 1.005 of cuBLASLt). */
constexpr int GEMM_HOPPER_ONE_CHAIN = 1;
constexpr int GEMM_HOPPER_TWO_CHAINS = 2;

/* Input element kinds the kernel is instantiated for (a compile-time parameter). */
enum gemm_hopper_input { GEMM_INPUT_F16 = 0, GEMM_INPUT_BF16 = 1, GEMM_INPUT_E4M3 = 2 };

/* Shared-memory budget per CTA (227 KB opt-in on sm_90, minus a little for the barriers). */
constexpr uint32_t GEMM_HOPPER_SMEM_BYTES_MAX = 227u * 1024u;
constexpr uint32_t GEMM_HOPPER_SMEM_BARRIER_BYTES = 1024u;
constexpr uint32_t GEMM_HOPPER_SMEM_ALIGNMENT = 1024u; /* 128B swizzle pattern repeat */
constexpr uint32_t GEMM_HOPPER_SWIZZLE_BYTES = 128u;   /* one k-tile row = the swizzle span */

constexpr int GEMM_HOPPER_CONSUMER_WARPGROUPS = 2;
constexpr int GEMM_HOPPER_BLOCK_M = 128;
constexpr int GEMM_HOPPER_MAX_STAGES = 8;
/* Epilogue staging, per consumer warpgroup (its 64 rows of the tile). The ring takes the stages
 * that fit beside two 128-byte spans a warpgroup (16 KB: the general epilogue's fp32 chunks of 64
 * columns, the plain epilogue's two buffers of one 128B-swizzled span); what the last stage
 * leaves over goes to the staging too, so the 144- and 112-wide e4m3 tiles' 16-bit D leaves in
 * one whole-row chunk per tile (gemm_hopper_d_chunk_bytes). */
constexpr uint32_t GEMM_HOPPER_EPILOGUE_ROWS = 64;
constexpr uint32_t GEMM_HOPPER_EPILOGUE_SPAN_BYTES = GEMM_HOPPER_EPILOGUE_ROWS * 128u;
constexpr uint32_t GEMM_HOPPER_MIN_STAGING_BYTES = 2 * GEMM_HOPPER_EPILOGUE_SPAN_BYTES;
constexpr uint32_t gemm_hopper_stage_bytes(int block_n) {
  return static_cast<uint32_t>(GEMM_HOPPER_BLOCK_M + block_n) * GEMM_HOPPER_SWIZZLE_BYTES;
}
constexpr uint32_t GEMM_HOPPER_SMEM_FREE_BYTES =
    GEMM_HOPPER_SMEM_BYTES_MAX - GEMM_HOPPER_SMEM_BARRIER_BYTES - GEMM_HOPPER_SMEM_ALIGNMENT;
constexpr int gemm_hopper_stages(int block_n) {
  const int fit = static_cast<int>((GEMM_HOPPER_SMEM_FREE_BYTES -
                                    GEMM_HOPPER_CONSUMER_WARPGROUPS * GEMM_HOPPER_MIN_STAGING_BYTES) /
                                   gemm_hopper_stage_bytes(block_n));
  return fit < GEMM_HOPPER_MAX_STAGES ? fit : GEMM_HOPPER_MAX_STAGES;
}
/* A warpgroup's staging: its share of what the ring leaves, in whole KB (1024-aligned buffers). */
constexpr uint32_t gemm_hopper_staging_bytes(int block_n) {
  const uint32_t left =
      GEMM_HOPPER_SMEM_FREE_BYTES - static_cast<uint32_t>(gemm_hopper_stages(block_n)) * gemm_hopper_stage_bytes(block_n);
  return (left / GEMM_HOPPER_CONSUMER_WARPGROUPS) & ~1023u;
}
constexpr int GEMM_HOPPER_WARPGROUP_THREADS = 128;
constexpr int GEMM_HOPPER_THREADS = (1 + GEMM_HOPPER_CONSUMER_WARPGROUPS) * GEMM_HOPPER_WARPGROUP_THREADS;
/* setmaxnreg: 128·24 + 256·240 = 64512 ≤ 65536 registers per SM. The producer thread needs
 * ~20 (ptxas); 40/232 left the consumers of the 144-wide e4m3 tile (acc + two partials = 216)
 * a 4-byte spill once stream-K added its state. */
constexpr int GEMM_HOPPER_PRODUCER_REGISTERS = 24;
constexpr int GEMM_HOPPER_CONSUMER_REGISTERS = 240;
static_assert(GEMM_HOPPER_WARPGROUP_THREADS * (GEMM_HOPPER_PRODUCER_REGISTERS +
                                               GEMM_HOPPER_CONSUMER_WARPGROUPS * GEMM_HOPPER_CONSUMER_REGISTERS) <=
                  65536,
              "register budget");

/* Tiles per input kind and tile width BlockN (the host picks one per problem,
 * gemm_hopper_launch.cu, from the widths instantiated for the input kind):
 *   16-bit: 128 × 256 (64 rows × 256 columns per consumer: 128 fp32 accumulators per thread),
 *           the most work per byte of shared memory read; 128 × 128 and 128 × 64 for problems
 *           with too few 128 × 256 tiles to fill the SMs (M of 512–1024 tokens, 1024³).
 *   e4m3:   128 × 128, 128 × 144 and 128 × 112 (for the 128-wide tile's partial last round,
 *           gemm_hopper_e4m3_n112.cu): each consumer also keeps two partial accumulators that
 *           WGMMA fills one k-tile at a time and that are added into the fp32 accumulator after
 *           every k-tile (the fp8 tensor core accumulates with ~14 bits, see ptx_wgmma.cuh), so
 *           3 × BLOCK_N / 2 registers per thread (216 at 144 — the widest that fits; cuBLASLt
 *           runs 144-wide tiles at 8192³ on the H200). */
template <int Input>
constexpr int gemm_hopper_default_block_n() {
  return Input == GEMM_INPUT_E4M3 ? 128 : 256;
}

/* D leaves in chunks of 64 rows × gemm_hopper_d_chunk_bytes, one TMA-store box each, through
 * gemm_hopper_d_buffers staging buffers of 64 × chunk bytes:
 *  - tile widths that are whole 128-byte swizzle spans in D's dtype (multiples of 64 columns):
 *    one span per chunk, two buffers, so one chunk is written while the previous is stored;
 *  - the others (the 144- and 112-wide e4m3 tiles), unswizzled: the whole row where 64 of them
 *    fit the staging (16-bit D: 288 / 224 bytes, one chunk per tile, one buffer — the store it
 *    waits for is the previous tile's), else the widest piece of the row that holds whole
 *    8-column blocks and fits twice (fp32 D: 192 bytes of 576, 64 of 448; two buffers).
 * Until the 40th session these tiles' D left in 96- and 112-byte pieces (three and two stores
 * and barrier pairs per warpgroup and tile); whole rows ran the 144-wide shapes 1.0–2.6 % faster
 * (H200: 8192³ 0.994 → 1.004 of cuBLASLt FP8) and the 112-wide ones ±0, and 48-byte pieces (to
 * buy the 144-wide ring a sixth stage) 2–3.5 % slower: the e4m3 epilogue idles the tensor core,
 * so its cost is per store and meeting, not per byte (docs/PERF.md, 40th session).
 * The kernel's staging (gemm_hopper_store_tma) and the host's D map (gemm_hopper_launch.cu) both
 * follow these functions. */
constexpr bool gemm_hopper_d_swizzled(int block_n, int out_bytes) { return (block_n * out_bytes) % 128 == 0; }
constexpr int GEMM_HOPPER_TMA_BOX_MAX = 256; /* elements per box dimension */
constexpr uint32_t gemm_hopper_d_chunk_bytes(int block_n, int out_bytes) {
  if (gemm_hopper_d_swizzled(block_n, out_bytes)) return 128u;
  const uint32_t row_bytes = static_cast<uint32_t>(block_n * out_bytes), staging = gemm_hopper_staging_bytes(block_n);
  if (GEMM_HOPPER_EPILOGUE_ROWS * row_bytes <= staging && block_n <= GEMM_HOPPER_TMA_BOX_MAX) return row_bytes;
  for (uint32_t chunks = 2; chunks <= row_bytes / 16u; ++chunks) {
    const uint32_t bytes = row_bytes / chunks;
    if (row_bytes % chunks == 0 && bytes % 16u == 0 && (bytes / static_cast<uint32_t>(out_bytes)) % 8 == 0 &&
        2 * GEMM_HOPPER_EPILOGUE_ROWS * bytes <= staging)
      return bytes;
  }
  return 0u; /* no whole chunks: refused by gemm_hopper_tile's static_assert */
}
constexpr uint32_t gemm_hopper_d_buffers(int block_n, int out_bytes) {
  return gemm_hopper_d_chunk_bytes(block_n, out_bytes) == static_cast<uint32_t>(block_n * out_bytes) &&
                 !gemm_hopper_d_swizzled(block_n, out_bytes)
             ? 1u
             : 2u;
}
constexpr uint32_t gemm_hopper_d_buffer_bytes(int block_n, int out_bytes) {
  return GEMM_HOPPER_EPILOGUE_ROWS * gemm_hopper_d_chunk_bytes(block_n, out_bytes);
}
/* D chunks per store round of the plain TMA epilogue (gemm_hopper_store_tma; capped there at the
 * buffer count): one meeting before the round's chunks are written, one after, then the round's
 * stores. Two — both buffers at once — for the e4m3 tiles, whose tensor core idles while their
 * consumers store (NOTES-gemm-hopper item 3), so each meeting costs the kernel; one for the
 * 16-bit tiles, which store while the next tile's first k-tile runs (two per round cost them
 * 0.2–0.65 %, 40th session). H200, in process against cuBLASLt FP8, four processes each
 * (docs/PERF.md, 41st–42nd sessions): 128 wide (two 128-byte spans of 16-bit D per round) 2048³
 * +3.4 %, 4096 / 8192 × 4096 × 14336 +0.9 %; 112 wide 4096³ +1.7 %, 8192 / 16384 × 4096 × 4096
 * +1.3 / +1.5 %; 144 wide 8192³, 6144³, 4096 × 14336 × 4096 +0.3 %, 8192 × 28672 × 8192 ±0. At
 * 112 and 144 only fp32 D has two buffers (16-bit D is one whole-row chunk), so there what moved
 * is ptxas's schedule of the k-loop, which the epilogue's code shape changes: an earlier form of
 * the same rounds read 144 −0.3 to −1.0 % (NOTES-gemm-hopper item 4). Re-measure the e4m3 widths
 * after any edit of this function's users. */
template <int Input>
constexpr int gemm_hopper_d_chunks_per_round() {
  return Input == GEMM_INPUT_E4M3 ? 2 : 1;
}
static_assert(gemm_hopper_d_chunk_bytes(256, 2) == 128 && gemm_hopper_d_chunk_bytes(64, 4) == 128, "spans");
static_assert(gemm_hopper_stages(144) == 5 && gemm_hopper_staging_bytes(144) == 27u * 1024u &&
                  gemm_hopper_d_chunk_bytes(144, 2) == 288 && gemm_hopper_d_chunk_bytes(144, 4) == 192,
              "144-wide rows: whole in 16-bit, thirds in fp32");
static_assert(gemm_hopper_stages(112) == 6 && gemm_hopper_d_chunk_bytes(112, 2) == 224 &&
                  gemm_hopper_d_chunk_bytes(112, 4) == 64,
              "112-wide rows: whole in 16-bit, sevenths in fp32");

template <int Input, int BlockN>
struct gemm_hopper_tile {
  static constexpr int ELEMENT_BYTES = Input == GEMM_INPUT_E4M3 ? 1 : 2;
  static constexpr int BLOCK_M = GEMM_HOPPER_BLOCK_M;
  static constexpr int BLOCK_N = BlockN;
  static constexpr int BLOCK_K = static_cast<int>(GEMM_HOPPER_SWIZZLE_BYTES) / ELEMENT_BYTES; /* 64 or 128 */
  static constexpr int K_PER_WGMMA = 32 / ELEMENT_BYTES;                                     /* k16 / k32 */
  static constexpr int WGMMAS_PER_K_TILE = BLOCK_K / K_PER_WGMMA;                            /* 4 */
  static constexpr int ROWS_PER_CONSUMER = BLOCK_M / GEMM_HOPPER_CONSUMER_WARPGROUPS;        /* 64 */
  static constexpr int ACCUMULATORS = BLOCK_N / 2; /* fp32 per thread of a 64 × BLOCK_N wgmma */
  static constexpr bool PROMOTE_EACH_K_TILE = Input == GEMM_INPUT_E4M3;
  /* A box of TMA: inner extent 128 bytes (64 / 128 elements), outer up to 256 rows. */
  static constexpr int BOX_INNER = BLOCK_K; /* elements; also the MN extent of an MN-major box */
  static constexpr uint32_t A_STAGE_BYTES = BLOCK_M * GEMM_HOPPER_SWIZZLE_BYTES;
  static constexpr uint32_t B_STAGE_BYTES = BLOCK_N * GEMM_HOPPER_SWIZZLE_BYTES;
  static constexpr uint32_t STAGE_BYTES = A_STAGE_BYTES + B_STAGE_BYTES;
  static constexpr int STAGES = gemm_hopper_stages(BlockN);
  static constexpr uint32_t STAGING_BYTES = gemm_hopper_staging_bytes(BlockN); /* per consumer warpgroup */
  static constexpr uint32_t EPILOGUE_BYTES = GEMM_HOPPER_CONSUMER_WARPGROUPS * STAGING_BYTES;
  static constexpr int D_CHUNKS_PER_ROUND = gemm_hopper_d_chunks_per_round<Input>();
  static constexpr uint32_t SMEM_BYTES =
      GEMM_HOPPER_SMEM_ALIGNMENT + STAGES * STAGE_BYTES + EPILOGUE_BYTES + GEMM_HOPPER_SMEM_BARRIER_BYTES;

  static_assert(BLOCK_M % 64 == 0 && BLOCK_N % 16 == 0 && BLOCK_N <= 256, "tile shape");
  static_assert(gemm_hopper_d_chunk_bytes(BLOCK_N, 2) != 0 && gemm_hopper_d_chunk_bytes(BLOCK_N, 4) != 0,
                "whole D chunks for 16-bit and fp32 outputs");
  static_assert(gemm_hopper_d_buffers(BLOCK_N, 2) * gemm_hopper_d_buffer_bytes(BLOCK_N, 2) <= STAGING_BYTES &&
                    gemm_hopper_d_buffers(BLOCK_N, 4) * gemm_hopper_d_buffer_bytes(BLOCK_N, 4) <= STAGING_BYTES &&
                    GEMM_HOPPER_MIN_STAGING_BYTES <= STAGING_BYTES,
                "the plain buffers and the general epilogue's two spans fit the staging");
  static_assert(STAGE_BYTES == gemm_hopper_stage_bytes(BlockN), "one formula for the stage");
  static_assert(STAGES >= 3, "a pipeline needs at least 3 stages");
  static_assert(STAGE_BYTES % GEMM_HOPPER_SMEM_ALIGNMENT == 0, "every slot and the staging stay 1024-aligned");
  static_assert(SMEM_BYTES <= GEMM_HOPPER_SMEM_BYTES_MAX, "shared memory budget");
};

#endif
