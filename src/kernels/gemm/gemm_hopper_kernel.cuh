/*
 * gemm_hopper_kernel.cuh — the Hopper GEMM kernel (sm_90a): D = act(alpha·scale_a·scale_b·A·B
 * + beta·C + bias) for row-major D (the host normalizes a column-major D), one persistent CTA
 * per SM, 3 warpgroups:
 *   warpgroup 0      producer: setmaxnreg down to 40; one elected thread issues every TMA load
 *                    into the STAGES-slot mbarrier ring (gemm_hopper_mainloop.cuh);
 *   warpgroups 1, 2  consumers: setmaxnreg up to 232; each owns 64 rows of the BLOCK_M × BLOCK_N
 *                    tile, runs WGMMA over the ring, then the epilogue (gemm_hopper_epilogue.cuh:
 *                    staging buffers + TMA store, named barrier 1 + consumer per warpgroup)
 *                    while the producer already fills the ring for the CTA's next tile. Plain
 *                    tiles into a 16-bit D by TMA (the common case) are packed first and stored
 *                    while the next tile's first k-tile runs on the tensor core
 *                    (gemm_hopper_consume_tiles_overlapped).
 * Units of work (whole tiles, or k-ranges of the stream-K tiles of the last partial round) come
 * from gemm_hopper_scheduler.cuh; split tiles are handed over through the workspace
 * (gemm_hopper_stream_k.cuh); shapes from gemm_hopper_config.cuh.
 * Instantiated per (input kind, tile width, A MN-major, B MN-major, WGMMA chains per k-step —
 * gemm_hopper_config.cuh) in gemm_hopper_{f16,bf16}*.cu and gemm_hopper_e4m3{,_n112,_n144}.cu.
 * Check: tests/gpu/gpu_gemm.c; `nvcc -Xptxas -v`: no spills, no stack frame, no C7510/C7519.
 */
#ifndef FLASHC_KERNELS_GEMM_HOPPER_KERNEL_CUH
#define FLASHC_KERNELS_GEMM_HOPPER_KERNEL_CUH

#include <cuda.h>
#include <cuda_runtime.h>

#include <type_traits>

#include "kernels/common/ptx.cuh"
#include "kernels/common/ring.cuh"
#include "kernels/common/kernel_attributes.cuh"
#include "kernels/common/launch_programmatic.cuh"
#include "kernels/gemm/gemm_hopper_config.cuh"
#include "kernels/gemm/gemm_hopper_epilogue.cuh"
#include "kernels/gemm/gemm_hopper_mainloop.cuh"
#include "kernels/gemm/gemm_hopper_scheduler.cuh"
#include "kernels/gemm/gemm_hopper_stream_k.cuh"

/* The kernel's one parameter (passed as __grid_constant__ so the tensor maps stay in
 * parameter space, where TMA reads them). */
struct gemm_hopper_params {
  CUtensorMap map_a; /* 3-D: (contiguous, strided, batch) — see gemm_hopper_launch.cu */
  CUtensorMap map_b;
  CUtensorMap map_d; /* 3-D (n, m, batch), box (128 bytes of columns, 64 rows); valid when epilogue.d_tma */
  gemm_hopper_scheduler scheduler; /* with k_tiles and the stream-K split */
  gemm_hopper_stream_k_args stream_k;
  int a_batched, b_batched; /* 0: one matrix broadcast to every batch (batch coordinate 0) */
  gemm_hopper_epilogue_args epilogue;
};

/* What one consumer warpgroup needs besides the parameters. */
struct gemm_hopper_consumer_context {
  int consumer;              /* 0 or 1: rows 64·consumer .. of every tile */
  int thread;                /* 0..127 within the warpgroup */
  float acc_scale;           /* alpha · scale_a · scale_b */
  uint8_t* staging;          /* this warpgroup's epilogue buffers */
  uint32_t staging_barrier;  /* its named barrier */
};

/* A consumer warpgroup's units, one after another: K loop, then (for a whole tile, or the
 * tail of a split one once it has collected the rest) the epilogue (any epilogue). The
 * data-parallel tiles and the stream-K units run in two loops over one body: in one loop over
 * both (gemm_hopper_next_work), ptxas moved the e4m3 k-loop's descriptor arithmetic out of
 * the uniform registers (R2UR per descriptor, +11 % instructions per k-tile), so the hot loop
 * stays the data-parallel one it was. */
template <int Input, int BlockN, int AMnMajor, int BMnMajor, int Chains>
static __device__ __forceinline__ void gemm_hopper_consume_tiles(const gemm_hopper_params& params,
                                                                 const gemm_hopper_ring& ring,
                                                                 uint32_t units,
                                                                 const gemm_hopper_consumer_context& c) {
  using T = gemm_hopper_tile<Input, BlockN>;
  const gemm_hopper_scheduler& s = params.scheduler;
  ring_position position = {0, 0};
  uint32_t chunk_counter = 0;
  float acc[T::ACCUMULATORS];
  /* One unit; `split` (compile time): a stream-K unit, settled before any epilogue. */
  auto run_unit = [&](const gemm_hopper_work& work, auto split) {
    const gemm_hopper_tile_coord tile = gemm_hopper_tile_at(s, work.linear);
    const int row0 = tile.tile_m * T::BLOCK_M + c.consumer * T::ROWS_PER_CONSUMER, col0 = tile.tile_n * T::BLOCK_N;
    if (work.k_end == s.k_tiles) /* this CTA stores the tile: no-op without C */
      gemm_hopper_prefetch_c<T::BLOCK_N>(params.epilogue, tile.batch, row0, col0, c.thread);
    gemm_hopper_consume<Input, BlockN, AMnMajor, BMnMajor, Chains>(acc, c.consumer, work.k_end - work.k_begin, ring, position);
    if constexpr (decltype(split)::value) {
      if (!gemm_hopper_stream_k_settle<T::ACCUMULATORS>(params.stream_k, s, work, c.consumer, acc, c.thread,
                                                        c.staging_barrier))
        return;
    }
#ifdef GEMM_HOPPER_PROFILE_SKIP_EPILOGUE /* profiling builds only: the main loop's share of the time */
    if (acc[0] == 12345.0f)
#endif
    gemm_hopper_epilogue<T::BLOCK_N, T::D_CHUNKS_PER_ROUND>(params.epilogue, &params.map_d, acc, c.acc_scale,
                                                            tile.batch, row0, col0, c.thread, c.staging,
                                                            c.staging_barrier, chunk_counter);
  };
  for (int linear = blockIdx.x; linear < s.dp_tiles; linear += gridDim.x) {
    const gemm_hopper_work whole = {linear, 0, s.k_tiles};
    run_unit(whole, std::false_type{});
  }
  const int count = gemm_hopper_stream_k_unit_count<true>(units);
  for (int index = 0; index < count; ++index)
    run_unit(gemm_hopper_stream_k_unit<true>(units, index), std::true_type{});
}

/* The CTA's last tile (whole, plain, 16-bit D by TMA) on two chains, its last k-tile not yet
 * issued and the k-tile before it in flight (`previous_stage`): the last k-tile's two chains
 * go as two commit groups (gemm_hopper_issue_k_tile, GroupPerHalf). Once the first is complete (with the
 * k-tile before it), the first half's chunks are packed and stored while the second half's
 * WGMMAs run; then the rest. */
template <int Input, int BlockN, int AMnMajor, int BMnMajor, int Out>
static __device__ __forceinline__ void gemm_hopper_finish_in_halves(const gemm_hopper_params& params,
                                                                    const gemm_hopper_ring& ring,
                                                                    ring_position& position, int previous_stage,
                                                                    const gemm_hopper_tile_coord& tile,
                                                                    float (&acc)[gemm_hopper_tile<Input, BlockN>::ACCUMULATORS],
                                                                    const gemm_hopper_consumer_context& c,
                                                                    uint32_t& chunk_counter) {
  using T = gemm_hopper_tile<Input, BlockN>;
  constexpr int CHUNKS = BlockN * gemm_out_traits<Out>::BYTES /
                         static_cast<int>(gemm_hopper_d_chunk_bytes(BlockN, gemm_out_traits<Out>::BYTES));
  static_assert(CHUNKS % 2 == 0, "each half of the columns is whole chunks");
  using pairs_t = gemm_hopper_scaled_pairs<Out, BlockN>;
  const int stage = gemm_hopper_issue_k_tile<Input, BlockN, AMnMajor, BMnMajor, GEMM_HOPPER_TWO_CHAINS, true>(
      acc, c.consumer, ring, position, 1u);
  const gemm_hopper_epilogue_args& e = params.epilogue;
  const int row0 = tile.tile_m * T::BLOCK_M + c.consumer * T::ROWS_PER_CONSUMER, col0 = tile.tile_n * T::BLOCK_N;
  const pairs_t pairs{acc, c.acc_scale};
  wgmma_wait_group<1>(); /* the k-tile before and the first half */
  wgmma_fence_operand(gemm_hopper_fragment_half<0>(acc));
  gemm_hopper_release(&ring.empty[previous_stage]);
  gemm_hopper_store_tma<Out, BlockN, pairs_t, 0, CHUNKS / 2>(e, &params.map_d, pairs, tile.batch, row0, col0, c.thread,
                                                             c.staging, c.staging_barrier, chunk_counter);
  wgmma_wait_group<0>();
  wgmma_fence_operand(gemm_hopper_fragment_half<1>(acc));
  gemm_hopper_release(&ring.empty[stage]);
  gemm_hopper_store_tma<Out, BlockN, pairs_t, CHUNKS / 2, CHUNKS>(e, &params.map_d, pairs, tile.batch, row0, col0,
                                                                  c.thread, c.staging, c.staging_barrier, chunk_counter);
}

/* 16-bit inputs, tiles into a 16-bit D by TMA store:
 * after a tile's K loop the warpgroup packs the tile into D's dtype, issues the next unit's
 * first k-tile (its WGMMAs overwrite the accumulators, which are free now), and only then
 * stores the packed tile — so the tensor core works through the epilogue instead of idling.
 * Plain tiles are packed as they are (gemm_hopper_pack_d); with Fused, C, the bias and the
 * activation are applied in registers first (gemm_hopper_finish_pack) — a separate
 * instantiation, so the plain loop's code stays what it was measured as.
 * A stream-K piece that does not end its tile is published instead (nothing to store). */
template <int Input, int BlockN, int AMnMajor, int BMnMajor, int Chains, int Out, bool Fused>
static __device__ __forceinline__ void gemm_hopper_consume_tiles_overlapped(const gemm_hopper_params& params,
                                                                            const gemm_hopper_ring& ring,
                                                                            uint32_t units,
                                                                            const gemm_hopper_consumer_context& c) {
  using T = gemm_hopper_tile<Input, BlockN>;
  /* On two chains, the CTA's last tile when plain ends in halves (gemm_hopper_finish_in_halves). */
  constexpr bool HALVES = Chains == GEMM_HOPPER_TWO_CHAINS && !Fused;
  const gemm_hopper_epilogue_args& e = params.epilogue;
  const gemm_hopper_scheduler& s = params.scheduler;
  ring_position position = {0, 0};
  uint32_t chunk_counter = 0;
  float acc[T::ACCUMULATORS];
  uint32_t words[BlockN / 4]; /* the finished tile, packed */
  gemm_hopper_work_cursor cursor = gemm_hopper_work_begin();
  gemm_hopper_work first;
  if (!gemm_hopper_next_work<true>(s, units, cursor, first)) return;
  int k_count = first.k_end - first.k_begin; /* of the unit being issued (the rest of it is
                                                derived again at its end: fewer live registers) */
  /* Whether this unit is the CTA's last, a whole tile whose last k-tile runs in halves after the
   * loop (gemm_hopper_finish_in_halves; k_count then counts the k-tiles before it). */
  auto last_in_halves = [&](const gemm_hopper_work& w, int count) {
    if constexpr (HALVES)
      return count >= 2 && w.k_begin == 0 && w.k_end == s.k_tiles && !gemm_hopper_has_work<true>(s, units, cursor);
    return false;
  };
  bool halves = last_in_halves(first, k_count);
  if (halves) --k_count;
  /* One flat loop over the CTA's k-tiles (unit after unit), so a WGMMA group in flight only
   * ever crosses this loop's back edge, as in gemm_hopper_consume: with the tile loop and
   * the K loop nested, ptxas serialized every WGMMA of the kernel (C7511 / C7517). The packed
   * tile lives only from the pack to its store in the same trip (the next unit's k-tile 0 is
   * issued between them): were the store at the loop's top behind a flag, `words` would be
   * live through every k-tile, and with the stream-K state that spilled. */
  int k_tile = 0, previous_stage = -1;
  for (;;) {
    if (k_tile < k_count) { /* false only for a one-k-tile unit issued below */
      const int stage =
          gemm_hopper_issue_k_tile<Input, BlockN, AMnMajor, BMnMajor, Chains>(acc, c.consumer, ring, position, k_tile > 0);
      wgmma_wait_group<1>();
      if (previous_stage >= 0) gemm_hopper_release(&ring.empty[previous_stage]); /* read by the group before */
      previous_stage = stage;
      if constexpr (Fused && GEMM_HOPPER_FUSED_C_PREFETCH_K_TILES > 0) {
        /* C into L2 a few k-tiles before the finish reads it (the unit's coordinates derived
         * again here, once per unit, rather than kept live through the loop). */
        if (k_tile + GEMM_HOPPER_FUSED_C_PREFETCH_K_TILES == k_count) {
          const gemm_hopper_work unit = gemm_hopper_last_work<true>(s, units, cursor);
          if (unit.k_end == s.k_tiles) {
            const gemm_hopper_tile_coord tile = gemm_hopper_tile_at(s, unit.linear);
            gemm_hopper_prefetch_c<T::BLOCK_N>(e, tile.batch, tile.tile_m * T::BLOCK_M + c.consumer * T::ROWS_PER_CONSUMER,
                                               tile.tile_n * T::BLOCK_N, c.thread);
          }
        }
      }
      if (++k_tile < k_count) continue;
    }
    if constexpr (HALVES) {
      if (halves) { /* the CTA's last tile: its last k-tile and the stores, in halves */
        const gemm_hopper_work work = gemm_hopper_last_work<true>(s, units, cursor);
        gemm_hopper_finish_in_halves<Input, BlockN, AMnMajor, BMnMajor, Out>(
            params, ring, position, previous_stage, gemm_hopper_tile_at(s, work.linear), acc, c,
            chunk_counter);
        break;
      }
    }
    /* The unit is complete: settle it (stream-K), pack a tile to store, free the accumulators. */
    wgmma_wait_group<0>();
    wgmma_fence_operand(acc);
    gemm_hopper_release(&ring.empty[previous_stage]);
    previous_stage = -1;
    const gemm_hopper_work work = gemm_hopper_last_work<true>(s, units, cursor);
    const bool store = gemm_hopper_stream_k_settle<T::ACCUMULATORS>(params.stream_k, s, work, c.consumer, acc,
                                                                    c.thread, c.staging_barrier);
    /* The tile's coordinates and packed words (the store itself follows `issue_next`). The
     * fused finish (~3k instructions) is compiled once, ahead of both exits below; the plain
     * pack stays inside each exit, where it was measured. */
    gemm_hopper_tile_coord fused_tile;
    if constexpr (Fused) {
      if (store) {
        fused_tile = gemm_hopper_tile_at(s, work.linear);
        gemm_hopper_finish_pack<Out, BlockN>(e, acc, c.acc_scale, fused_tile.batch,
                                             fused_tile.tile_m * T::BLOCK_M + c.consumer * T::ROWS_PER_CONSUMER,
                                             fused_tile.tile_n * T::BLOCK_N, c.thread, words);
      }
    }
    auto store_tile = [&](auto issue_next) {
      gemm_hopper_tile_coord finished;
      if constexpr (Fused) {
        finished = fused_tile;
      } else {
        finished = gemm_hopper_tile_at(s, work.linear);
        gemm_hopper_pack_d<Out, BlockN>(acc, c.acc_scale, words);
      }
      issue_next();
      gemm_hopper_store_tma<Out, BlockN>(e, &params.map_d, gemm_hopper_packed_pairs<BlockN>{words}, finished.batch,
                                         finished.tile_m * T::BLOCK_M + c.consumer * T::ROWS_PER_CONSUMER,
                                         finished.tile_n * T::BLOCK_N, c.thread, c.staging, c.staging_barrier,
                                         chunk_counter);
    };
    /* Two exits written out, so that no path leaves the loop with a WGMMA group in flight
     * (ptxas cannot correlate the flags and injected waits that serialized every WGMMA). */
    if (!gemm_hopper_has_work<true>(s, units, cursor)) {
      if (store) store_tile([] {});
      break;
    }
    k_tile = 0;
    if (store) {
      store_tile([&] {
        /* The next unit's k-tile 0 runs on the tensor core while this tile leaves (the
         * consumer needs no coordinates to issue it: the ring's next slot holds it). */
        previous_stage =
            gemm_hopper_issue_k_tile<Input, BlockN, AMnMajor, BMnMajor, Chains>(acc, c.consumer, ring, position, 0u);
        k_tile = 1;
      });
    }
    gemm_hopper_work next;
    gemm_hopper_next_work<true>(s, units, cursor, next);
    k_count = next.k_end - next.k_begin;
    halves = last_in_halves(next, k_count);
    if (halves) --k_count;
  }
}

template <int Input, int BlockN, int AMnMajor, int BMnMajor, int Chains>
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
  ring.full = reinterpret_cast<uint64_t*>(epilogue_staging + T::EPILOGUE_BYTES);
  ring.empty = ring.full + T::STAGES;
  /* The CTA's stream-K units, beside the barriers. */
  static_assert(2 * T::STAGES * sizeof(uint64_t) + sizeof(gemm_hopper_stream_k_units) <= GEMM_HOPPER_SMEM_BARRIER_BYTES,
                "the ring's barriers and the stream-K units fit their area");
  gemm_hopper_stream_k_units* units_table = reinterpret_cast<gemm_hopper_stream_k_units*>(ring.empty + T::STAGES);
  const uint32_t units = smem_u32(units_table);

  if (threadIdx.x == 0) {
#pragma unroll
    for (int stage = 0; stage < T::STAGES; ++stage) {
      mbarrier_init(&ring.full[stage], 1);
      mbarrier_init(&ring.empty[stage], GEMM_HOPPER_CONSUMER_WARPGROUPS * 4);
    }
    fence_mbarrier_init();
    gemm_hopper_stream_k_units_of_cta(params.scheduler, units_table);
  }
  __syncthreads();
  /* A programmatic dependent (launch_programmatic.cuh): the previous kernel on the stream may
   * run until here (nothing above touched global memory); the next may become resident now
   * (persistent grid: all our CTAs already are). */
  grid_dependency_wait();
  grid_dependency_launch_dependents();

  const int warpgroup = warpgroup_index_uniform();
  if (warpgroup == 0) {
    setmaxnreg_dec<GEMM_HOPPER_PRODUCER_REGISTERS>();
    if (warp_index_uniform() == 0 && elect_one_sync()) {
      gemm_hopper_produce<Input, BlockN, AMnMajor, BMnMajor>(&params.map_a, &params.map_b, params.scheduler,
                                                             units, params.a_batched, params.b_batched, ring);
    }
  } else {
    setmaxnreg_inc<GEMM_HOPPER_CONSUMER_REGISTERS>();
    const gemm_hopper_epilogue_args& e = params.epilogue;
    gemm_hopper_consumer_context c;
    c.consumer = warpgroup - 1;
    c.thread = threadIdx.x % GEMM_HOPPER_WARPGROUP_THREADS;
    c.acc_scale = e.alpha * (e.scale_a ? __ldg(e.scale_a) : 1.0f) * (e.scale_b ? __ldg(e.scale_b) : 1.0f);
    c.staging = epilogue_staging + c.consumer * T::STAGING_BYTES;
    c.staging_barrier = 1u + static_cast<uint32_t>(c.consumer); /* named barrier: this warpgroup's staging */
    /* Tiles into a 16-bit D by TMA store leave while the next tile's first k-tile runs: plain
     * ones, and fused ones (C, bias, activation) whose operands allow it (e.fused_pairs), whose
     * finish runs in registers (gemm_hopper_finish_pack).
     * Not for e4m3: its WGMMAs write only the partial accumulators, so its epilogue already
     * runs beside the next k-tiles, and the same stream-through-tiles loop measured ±0 (H200,
     * torch._scaled_mm ratio 0.958/0.974 → 0.970/0.954 at 4096³, same call). */
    bool overlapped = false;
#ifndef GEMM_HOPPER_PROFILE_SKIP_EPILOGUE
    if constexpr (!T::PROMOTE_EACH_K_TILE) {
      if (gemm_hopper_plain(e) && e.d_tma && e.d_dtype != FLASHC_DTYPE_FP32) {
        overlapped = true;
        if (e.d_dtype == FLASHC_DTYPE_BF16)
          gemm_hopper_consume_tiles_overlapped<Input, BlockN, AMnMajor, BMnMajor, Chains, FLASHC_DTYPE_BF16, false>(params, ring, units, c);
        else
          gemm_hopper_consume_tiles_overlapped<Input, BlockN, AMnMajor, BMnMajor, Chains, FLASHC_DTYPE_FP16, false>(params, ring, units, c);
      } else if (e.fused_pairs) { /* implies d_tma and a 16-bit D */
        overlapped = true;
        if (e.d_dtype == FLASHC_DTYPE_BF16)
          gemm_hopper_consume_tiles_overlapped<Input, BlockN, AMnMajor, BMnMajor, Chains, FLASHC_DTYPE_BF16, true>(params, ring, units, c);
        else
          gemm_hopper_consume_tiles_overlapped<Input, BlockN, AMnMajor, BMnMajor, Chains, FLASHC_DTYPE_FP16, true>(params, ring, units, c);
      }
    }
#endif
    if (!overlapped) gemm_hopper_consume_tiles<Input, BlockN, AMnMajor, BMnMajor, Chains>(params, ring, units, c);
    gemm_hopper_epilogue_finish(e, c.thread);
  }
}

/* Host side of one (input kind, tile width, chains) (gemm_hopper_{f16,bf16}[_n128|_n64|_n256_two_chains].cu,
 * gemm_hopper_e4m3{,_n112,_n144}.cu): picks the layout instantiation, sets its shared-memory attribute once
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
cudaError_t gemm_hopper_launch_f16_n256_two_chains(GEMM_HOPPER_LAUNCH_ARGS);
cudaError_t gemm_hopper_launch_bf16_n256_two_chains(GEMM_HOPPER_LAUNCH_ARGS);
cudaError_t gemm_hopper_launch_e4m3(GEMM_HOPPER_LAUNCH_ARGS); /* K-major operands only */
cudaError_t gemm_hopper_launch_e4m3_n112(GEMM_HOPPER_LAUNCH_ARGS);
cudaError_t gemm_hopper_launch_e4m3_n144(GEMM_HOPPER_LAUNCH_ARGS);

/* Kernel ids for the attribute cache: 16 per input kind, 4 layouts per (tile width, chains) —
 * index 2 is the 16-bit 64-wide tile or e4m3's 112-wide one, index 3 e4m3's 144-wide tile or
 * the 16-bit 256-wide tile on two chains. */
constexpr int gemm_hopper_variant_index(int block_n, int chains) {
  return chains == GEMM_HOPPER_TWO_CHAINS ? 3
         : block_n == 256                 ? 0
         : block_n == 128                 ? 1
         : block_n == 64 || block_n == 112 ? 2
                                           : 3;
}

template <int Input, int BlockN, int AMnMajor, int BMnMajor, int Chains = GEMM_HOPPER_ONE_CHAIN>
static cudaError_t gemm_hopper_launch_one(const gemm_hopper_params& params, const fc_cuda_context* context, int grid,
                                          cudaStream_t stream) {
  auto kernel = gemm_hopper_kernel<Input, BlockN, AMnMajor, BMnMajor, Chains>;
  constexpr int SMEM_BYTES = static_cast<int>(gemm_hopper_tile<Input, BlockN>::SMEM_BYTES);
  constexpr int KERNEL_ID =
      KERNEL_ATTRIBUTE_ID_GEMM_HOPPER_FIRST + Input * 16 + gemm_hopper_variant_index(BlockN, Chains) * 4 + AMnMajor * 2 + BMnMajor;
  static_assert(KERNEL_ID < KERNEL_ATTRIBUTE_ID_GEMM_PORTABLE_FIRST, "Hopper kernel ids");
  cudaError_t error = set_shared_memory_once(context, KERNEL_ID, kernel, SMEM_BYTES);
  if (error != cudaSuccess) return error;
  return launch_programmatic(kernel, dim3(static_cast<unsigned>(grid)), dim3(GEMM_HOPPER_THREADS), SMEM_BYTES, stream,
                             true, params);
}

/* The four layouts of one (input kind, tile width, chains). */
template <int Input, int BlockN, int Chains = GEMM_HOPPER_ONE_CHAIN>
static cudaError_t gemm_hopper_launch_layouts(GEMM_HOPPER_LAUNCH_ARGS) {
  if (!a_mn_major && !b_mn_major) return gemm_hopper_launch_one<Input, BlockN, 0, 0, Chains>(params, context, grid, stream);
  if (!a_mn_major && b_mn_major) return gemm_hopper_launch_one<Input, BlockN, 0, 1, Chains>(params, context, grid, stream);
  if (a_mn_major && !b_mn_major) return gemm_hopper_launch_one<Input, BlockN, 1, 0, Chains>(params, context, grid, stream);
  return gemm_hopper_launch_one<Input, BlockN, 1, 1, Chains>(params, context, grid, stream);
}

#endif
