/*
 * gemm_hopper_mainloop.cuh — the two halves of the Hopper GEMM main loop.
 *
 * Shared memory holds a ring of STAGES slots; slot s = [A k-tile | B k-tile], each in the
 * 128B-swizzled block layout of ptx_desc.cuh (one TMA box per block), guarded by
 * full[s] (1 arrival + the slot's TMA bytes) and empty[s] (one arrival per consumer warp).
 *
 * Producer (one elected thread): for each unit of this CTA (a tile's k-tiles [k_begin, k_end),
 * gemm_hopper_scheduler.cuh), for each k-tile: wait empty,
 * expect_tx(STAGE_BYTES), TMA-load the A and B k-tiles (out-of-range rows and K columns are
 * zero-filled, so M/N/K tails need no code).
 *   A row-major (K-major):  one box (BLOCK_K × BLOCK_M rows) at (k0, m0, batch)
 *   A col-major (M-major):  BLOCK_M/64 boxes (64 M × BLOCK_K K rows) at (m0 + 64i, k0, batch)
 *   B col-major (K-major):  one box (BLOCK_K × BLOCK_N rows) at (k0, n0, batch)
 *   B row-major (N-major):  BLOCK_N/64 boxes (64 N × BLOCK_K K rows) at (n0 + 64i, k0, batch)
 * Consumer warpgroup c (rows 64c..64c+63 of the tile): per k-tile, wait full, then
 * WGMMAS_PER_K_TILE wgmma m64 × BLOCK_N with descriptors into the slot (K-major: +32 B per
 * step; MN-major: +K_PER_WGMMA rows · 128 B per step, LBO = next 64-wide block).
 *   16-bit: accumulate in place, keep one batch in flight (wait_group 1), release the previous slot.
 * One k-tile's issue is gemm_hopper_issue_k_tile, shared by both K loops and by the kernel's
 * overlapped consumer loop.
 *   e4m3:   a fresh partial per k-tile (scaleD = 0 on its first step), wait_group 0, release,
 *           add into the fp32 accumulator (the promotion that keeps long-K FP8 accurate).
 * Check: tests/gpu/gpu_gemm.c (all four layouts, K tails, K = 1 … 2048+).
 */
#ifndef FLASHC_KERNELS_GEMM_HOPPER_MAINLOOP_CUH
#define FLASHC_KERNELS_GEMM_HOPPER_MAINLOOP_CUH

#include <cuda.h>

#include "kernels/common/ptx.cuh"
#include "kernels/common/ring.cuh"
#include "kernels/gemm/gemm_hopper_config.cuh"
#include "kernels/gemm/gemm_hopper_scheduler.cuh"

/* The pipeline's shared state: slot base and barriers. */
struct gemm_hopper_ring {
  uint8_t* slots; /* STAGES × STAGE_BYTES, 1024-aligned */
  uint64_t* full;
  uint64_t* empty;
};

/* Producer: one thread. */
template <int Input, int BlockN, int AMnMajor, int BMnMajor>
static __device__ __forceinline__ void gemm_hopper_produce(const CUtensorMap* map_a, const CUtensorMap* map_b,
                                                           const gemm_hopper_scheduler& scheduler,
                                                           uint32_t units, int a_batched,
                                                           int b_batched, const gemm_hopper_ring& ring) {
  using T = gemm_hopper_tile<Input, BlockN>;
  constexpr uint32_t MN_BLOCK_BYTES = T::BLOCK_K * GEMM_HOPPER_SWIZZLE_BYTES; /* 64 MN × BLOCK_K rows */
  tma_prefetch_map(map_a);
  tma_prefetch_map(map_b);
  ring_position position = {0, 0};
  gemm_hopper_work_cursor cursor = gemm_hopper_work_begin();
  gemm_hopper_work work;
  while (gemm_hopper_next_work<false>(scheduler, units, cursor, work)) {
    const gemm_hopper_tile_coord tile = gemm_hopper_tile_at(scheduler, work.linear);
    const int m0 = tile.tile_m * T::BLOCK_M, n0 = tile.tile_n * T::BLOCK_N;
    const int batch_a = a_batched ? tile.batch : 0, batch_b = b_batched ? tile.batch : 0;
    for (int k_tile = work.k_begin; k_tile < work.k_end; ++k_tile) {
      const int k0 = k_tile * T::BLOCK_K;
      mbarrier_wait_parity(&ring.empty[position.stage], position.phase ^ 1u);
      uint64_t* full = &ring.full[position.stage];
      uint8_t* slot_a = ring.slots + position.stage * T::STAGE_BYTES;
      uint8_t* slot_b = slot_a + T::A_STAGE_BYTES;
      mbarrier_arrive_expect_tx(full, T::STAGE_BYTES);
      if constexpr (AMnMajor) {
#pragma unroll
        for (int block = 0; block < T::BLOCK_M / 64; ++block)
          tma_load_3d(slot_a + block * MN_BLOCK_BYTES, map_a, full, m0 + 64 * block, k0, batch_a);
      } else {
        tma_load_3d(slot_a, map_a, full, k0, m0, batch_a);
      }
      if constexpr (BMnMajor) {
        static_assert(T::BLOCK_N % 64 == 0, "MN-major B in whole 64-wide boxes");
#pragma unroll
        for (int block = 0; block < T::BLOCK_N / 64; ++block)
          tma_load_3d(slot_b + block * MN_BLOCK_BYTES, map_b, full, n0 + 64 * block, k0, batch_b);
      } else {
        tma_load_3d(slot_b, map_b, full, k0, n0, batch_b);
      }
      ring_advance<T::STAGES>(position);
    }
  }
}

/* One warp lane per warp releases a slot: empty[] counts CONSUMER_WARPGROUPS × 4 arrivals. */
static __device__ __forceinline__ void gemm_hopper_release(uint64_t* empty) {
  if (lane_id() == 0) mbarrier_arrive(empty);
}

/* One wgmma m64 × BLOCK_N × k16/k32 of the instantiated input kind; TA/TB = MN-major operand. */
template <int Input, int BlockN, int TA, int TB>
static __device__ __forceinline__ void gemm_hopper_wgmma(float (&acc)[gemm_hopper_tile<Input, BlockN>::ACCUMULATORS],
                                                         uint64_t desc_a, uint64_t desc_b, uint32_t accumulate) {
  if constexpr (Input == GEMM_INPUT_F16) wgmma_ss_f16<TA, TB>(acc, desc_a, desc_b, accumulate);
  else if constexpr (Input == GEMM_INPUT_BF16) wgmma_ss_bf16<TA, TB>(acc, desc_a, desc_b, accumulate);
  else wgmma_ss_e4m3(acc, desc_a, desc_b, accumulate);
}

/* Descriptors of every k-step of ring slot `stage`, for consumer warpgroup `consumer`: the
 * descriptors of slot 0's first k-step (loop-invariant: ptxas keeps them in uniform
 * registers), each advanced by the slot's and the step's byte offset in the 32-bit low word
 * (the 14-bit start field cannot carry: shared addresses are < 2^18). Encoding each
 * descriptor from its address instead cost ~50 uniform instructions per e4m3 k-tile, a third
 * of the k-loop's instructions. */
template <int Input, int BlockN, int AMnMajor, int BMnMajor>
static __device__ __forceinline__ void gemm_hopper_descriptors(
    uint32_t slots_address, int stage, int consumer,
    uint64_t (&desc_a)[gemm_hopper_tile<Input, BlockN>::WGMMAS_PER_K_TILE],
    uint64_t (&desc_b)[gemm_hopper_tile<Input, BlockN>::WGMMAS_PER_K_TILE]) {
  using T = gemm_hopper_tile<Input, BlockN>;
  constexpr smem_swizzle SW = SMEM_SWIZZLE_128B;
  const uint32_t b_address = slots_address + T::A_STAGE_BYTES;
  uint64_t base_a, base_b;
  if constexpr (AMnMajor) /* block `consumer` holds M rows 64c..64c+63 (64 MN × BLOCK_K K rows) */
    base_a = smem_desc_mn_major_at(slots_address + consumer * T::BLOCK_K * GEMM_HOPPER_SWIZZLE_BYTES, SW, T::BLOCK_K, 0);
  else
    base_a = smem_desc_k_major_at(slots_address + consumer * T::ROWS_PER_CONSUMER * GEMM_HOPPER_SWIZZLE_BYTES, SW,
                                  T::ROWS_PER_CONSUMER, 0);
  if constexpr (BMnMajor) base_b = smem_desc_mn_major_at(b_address, SW, T::BLOCK_K, 0);
  else base_b = smem_desc_k_major_at(b_address, SW, T::BLOCK_N, 0);
  const uint32_t slot_offset = static_cast<uint32_t>(stage) * T::STAGE_BYTES;
#pragma unroll
  for (int step = 0; step < T::WGMMAS_PER_K_TILE; ++step) {
    const uint32_t a_step = AMnMajor ? smem_mn_major_offset(SW, step * T::K_PER_WGMMA)
                                     : smem_k_major_offset(SW, T::ROWS_PER_CONSUMER, step * 32u);
    const uint32_t b_step = BMnMajor ? smem_mn_major_offset(SW, step * T::K_PER_WGMMA)
                                     : smem_k_major_offset(SW, T::BLOCK_N, step * 32u);
    desc_a[step] = smem_desc_advance_low(base_a, slot_offset + a_step);
    desc_b[step] = smem_desc_advance_low(base_b, slot_offset + b_step);
  }
}

/* A compile-time buffer index (0 or 1) for the FP8 promotion's generic lambda. */
template <int Index>
struct gemm_buffer {
  static constexpr int value = Index;
};

/* Half `Half` of an accumulator fragment (0: the first ACCUMULATORS/2 registers, which hold the
 * tile's first BLOCK_N/2 columns: the fragment's registers are its columns in order). */
template <int Half, int Accumulators>
static __device__ __forceinline__ float (&gemm_hopper_fragment_half(float (&acc)[Accumulators]))[Accumulators / 2] {
  static_assert(Accumulators % 2 == 0 && (Half == 0 || Half == 1), "two halves");
  return *reinterpret_cast<float (*)[Accumulators / 2]>(&acc[Half * (Accumulators / 2)]);
}

/* One k-tile's WGMMA chain over half `Half` of a 16-bit 256-wide tile's columns (0: 0–127, 1:
 * 128–255): m64n128 WGMMAs on that half of the accumulator fragment, with B's descriptors advanced by
 * 128 rows (K-major) or two 64-wide blocks (MN-major): 128 · 128 bytes either way. */
template <int Input, int BlockN, int AMnMajor, int BMnMajor, int Half>
static __device__ __forceinline__ void gemm_hopper_half_chain(
    float (&acc)[gemm_hopper_tile<Input, BlockN>::ACCUMULATORS],
    const uint64_t (&desc_a)[gemm_hopper_tile<Input, BlockN>::WGMMAS_PER_K_TILE],
    const uint64_t (&desc_b)[gemm_hopper_tile<Input, BlockN>::WGMMAS_PER_K_TILE], uint32_t accumulate) {
  using T = gemm_hopper_tile<Input, BlockN>;
  constexpr int HALF_N = BlockN / 2;
  constexpr uint32_t B_OFFSET = Half * HALF_N * GEMM_HOPPER_SWIZZLE_BYTES;
  static_assert(BlockN == 256 && !T::PROMOTE_EACH_K_TILE && (Half == 0 || Half == 1), "16-bit 256-wide tile halves");
  float (&half)[T::ACCUMULATORS / 2] = gemm_hopper_fragment_half<Half>(acc);
#pragma unroll
  for (int step = 0; step < T::WGMMAS_PER_K_TILE; ++step)
    gemm_hopper_wgmma<Input, HALF_N, AMnMajor, BMnMajor>(half, desc_a[step], smem_desc_advance_low(desc_b[step], B_OFFSET),
                                                         step == 0 ? accumulate : 1u);
}

/* Consumer warpgroup `consumer`: wait for the next ring slot and issue its k-tile's WGMMAs
 * into `acc` — the 16-bit accumulators, or an e4m3 partial (accumulate = 0: the first step
 * overwrites them) — committed as one group and not waited for; returns the slot, for the
 * caller to release once the group is complete. Chains (gemm_hopper_config.cuh): one
 * m64nBLOCK_N WGMMA per k-step, or two m64n(BLOCK_N/2) ones on the fragment's halves (the
 * second with B's descriptors BLOCK_N/2 rows (K-major) or 64-wide blocks (MN-major) on: the
 * same bytes either way). GroupPerHalf (two chains only): each chain its own commit group, so
 * that a wait_group<1> after it completes the first half only (gemm_hopper_finish_in_halves). */
template <int Input, int BlockN, int AMnMajor, int BMnMajor, int Chains = GEMM_HOPPER_ONE_CHAIN,
          bool GroupPerHalf = false>
static __device__ __forceinline__ int gemm_hopper_issue_k_tile(
    float (&acc)[gemm_hopper_tile<Input, BlockN>::ACCUMULATORS], int consumer, const gemm_hopper_ring& ring,
    ring_position& position, uint32_t accumulate) {
  using T = gemm_hopper_tile<Input, BlockN>;
  const int stage = position.stage;
  uint64_t desc_a[T::WGMMAS_PER_K_TILE], desc_b[T::WGMMAS_PER_K_TILE];
  gemm_hopper_descriptors<Input, BlockN, AMnMajor, BMnMajor>(smem_u32(ring.slots), stage, consumer, desc_a, desc_b);
  mbarrier_wait_parity(&ring.full[stage], position.phase);
  wgmma_fence_operand(acc);
  wgmma_fence();
  static_assert(Chains == GEMM_HOPPER_ONE_CHAIN || (Chains == GEMM_HOPPER_TWO_CHAINS && BlockN == 256 && !T::PROMOTE_EACH_K_TILE),
                "two chains: the 16-bit 256-wide tile only");
  static_assert(!GroupPerHalf || Chains == GEMM_HOPPER_TWO_CHAINS, "a group per half needs two chains");
  if constexpr (GroupPerHalf) {
    gemm_hopper_half_chain<Input, BlockN, AMnMajor, BMnMajor, 0>(acc, desc_a, desc_b, accumulate);
    wgmma_commit_group();
    gemm_hopper_half_chain<Input, BlockN, AMnMajor, BMnMajor, 1>(acc, desc_a, desc_b, accumulate);
    wgmma_commit_group();
    wgmma_fence_operand(gemm_hopper_fragment_half<0>(acc));
  } else {
    if constexpr (Chains == GEMM_HOPPER_TWO_CHAINS) {
      gemm_hopper_half_chain<Input, BlockN, AMnMajor, BMnMajor, 0>(acc, desc_a, desc_b, accumulate);
      gemm_hopper_half_chain<Input, BlockN, AMnMajor, BMnMajor, 1>(acc, desc_a, desc_b, accumulate);
    } else {
#pragma unroll
      for (int step = 0; step < T::WGMMAS_PER_K_TILE; ++step)
        gemm_hopper_wgmma<Input, BlockN, AMnMajor, BMnMajor>(acc, desc_a[step], desc_b[step], step == 0 ? accumulate : 1u);
    }
    wgmma_commit_group();
    wgmma_fence_operand(acc);
  }
  ring_advance<T::STAGES>(position);
  return stage;
}

/* Consumer warpgroup `consumer`: the whole K loop of one tile into `acc` (fully overwritten). */
template <int Input, int BlockN, int AMnMajor, int BMnMajor, int Chains = GEMM_HOPPER_ONE_CHAIN>
static __device__ __forceinline__ void gemm_hopper_consume(float (&acc)[gemm_hopper_tile<Input, BlockN>::ACCUMULATORS],
                                                           int consumer, int k_tiles, const gemm_hopper_ring& ring,
                                                           ring_position& position) {
  using T = gemm_hopper_tile<Input, BlockN>;
  if constexpr (!T::PROMOTE_EACH_K_TILE) {
    int previous_stage = -1;
    for (int k_tile = 0; k_tile < k_tiles; ++k_tile) {
      const int stage =
          gemm_hopper_issue_k_tile<Input, BlockN, AMnMajor, BMnMajor, Chains>(acc, consumer, ring, position, k_tile > 0);
      wgmma_wait_group<1>();
      /* The batch before this one has finished reading its slot. */
      if (previous_stage >= 0) gemm_hopper_release(&ring.empty[previous_stage]);
      previous_stage = stage;
    }
    wgmma_wait_group<0>();
    wgmma_fence_operand(acc);
    if (previous_stage >= 0) gemm_hopper_release(&ring.empty[previous_stage]);
  } else {
    /* Two partial accumulators: k-tile i runs into one while the other, k-tile i − 1's, is
     * added into the fp32 accumulator, so the promotion and the wait for it overlap the next
     * k-tile's WGMMAs (one buffer serialized issue → wait → add every k-tile). */
    float partial[2][T::ACCUMULATORS];
#pragma unroll
    for (int i = 0; i < T::ACCUMULATORS; ++i) acc[i] = 0.0f;
    if (k_tiles <= 0) return;
    /* The next k-tile's WGMMAs into partial[Current] (issue only); returns its ring slot. */
    auto issue_into = [&](auto buffer) {
      return gemm_hopper_issue_k_tile<Input, BlockN, AMnMajor, BMnMajor>(partial[decltype(buffer)::value], consumer,
                                                                         ring, position, 0u);
    };
    int previous_stage = issue_into(gemm_buffer<0>{}); /* k-tile 0 */
    /* Issue into Current, then promote the other buffer (the k-tile before), which the wait
     * for all but the newest group has completed. */
    auto step_into = [&](auto buffer) {
      constexpr int CURRENT = decltype(buffer)::value, PREVIOUS = 1 - CURRENT;
      const int stage = issue_into(buffer);
      wgmma_wait_group<1>();
      wgmma_fence_operand(partial[PREVIOUS]);
      gemm_hopper_release(&ring.empty[previous_stage]); /* its slot is read */
      previous_stage = stage;
#pragma unroll
      for (int i = 0; i < T::ACCUMULATORS; ++i) acc[i] += partial[PREVIOUS][i];
    };
    auto finish_from = [&](auto buffer) {
      constexpr int LAST = decltype(buffer)::value;
      wgmma_wait_group<0>();
      wgmma_fence_operand(partial[LAST]);
      gemm_hopper_release(&ring.empty[previous_stage]);
#pragma unroll
      for (int i = 0; i < T::ACCUMULATORS; ++i) acc[i] += partial[LAST][i];
    };
    int k_tile = 1;
    for (; k_tile + 1 < k_tiles; k_tile += 2) { /* two per trip, so the buffers alternate at compile time */
      step_into(gemm_buffer<1>{});
      step_into(gemm_buffer<0>{});
    }
    if (k_tile < k_tiles) {
      step_into(gemm_buffer<1>{});
      finish_from(gemm_buffer<1>{});
    } else {
      finish_from(gemm_buffer<0>{});
    }
  }
}

#endif
