/*
 * attn_fwd_kernel.cuh — the Hopper attention forward kernel (sm_90a): O = softmax(scale ·
 * Q·Kᵀ + mask) · V per (batch, query head), with optional softcap, causal / local windows,
 * GQA/MQA, varlen (cu_seqlens, seqused), paged KV, split-KV (fp32 partials that the launcher
 * merges with the combine kernel) and LSE; FlashAttention-3's structure:
 *   warpgroup 0      producer: setmaxnreg down to 24; one elected thread issues every TMA load
 *                    (Q per tile, K and V through their mbarrier rings; attn_fwd_mainloop.cuh);
 *   warpgroups 1..C  consumers (C = 2; 1, 3 or 4 in d64's other instances, 1 in d128's
 *                    window one): setmaxnreg up to 240 (160 with 3, 112 with 4, 136 / 232
 *                    with 1); each owns 64 query rows of the tile (BLOCK_M = 64 C),
 *                    runs S = Q·Kᵀ and O += P·V on WGMMA with the online softmax in
 *                    registers between them (attn_fwd_softmax.cuh, attn_fwd_mask.cuh), then
 *                    the epilogue (attn_fwd_epilogue.cuh).
 * Persistent CTAs, one per SM (three or two for the one-consumer instances:
 * attn_fwd_ctas_per_sm), walk tiles in the order of attn_fwd_scheduler.cuh; uniform grids
 * split their last partial round's tiles along the keys (attn_fwd_stream_k.cuh).
 * Instantiated per (input dtype, d, d_v, BLOCK_N, C, with the stream-K tail or not) in
 * src/kernels/inst/attn_fwd_*.cu; shapes from attn_fwd_config.cuh; launched by attn_fwd_launch.cu.
 * Check: tests/gpu/gpu_attn_fwd.c against the CPU reference; `nvcc -Xptxas -v`: no spills,
 * no stack frame, no C7510/C7519 (serialized wgmma) warnings; SASS shows HGMMA.
 */
#ifndef FLASHC_KERNELS_ATTN_FWD_KERNEL_CUH
#define FLASHC_KERNELS_ATTN_FWD_KERNEL_CUH

#include <cuda.h>
#include <cuda_runtime.h>

#include "kernels/attn/attn_fwd_config.cuh"
#include "kernels/attn/attn_fwd_epilogue.cuh"
#include "kernels/attn/attn_fwd_instances.cuh"
#include "kernels/attn/attn_fwd_mainloop.cuh"
#include "kernels/attn/attn_fwd_params.cuh"
#include "kernels/attn/attn_fwd_scheduler.cuh"
#include "kernels/attn/attn_fwd_stream_k.cuh"
#include "kernels/common/kernel_attributes.cuh"
#include "kernels/common/launch_programmatic.cuh"
#include "kernels/common/ptx.cuh"

/* After a piece's key loop (attn_fwd_stream_k.cuh): a publishing piece hands its O and rows
 * over and gives back the slots it held for O (returns false: no epilogue); a finishing
 * piece first merges the earlier CTAs' pieces; a whole tile passes. */
template <class T>
static __device__ __forceinline__ bool attn_fwd_settle_piece(const attn_fwd_params& p, const attn_fwd_smem& sm,
                                                             int piece, int held_v_stage, int consumer, int thread,
                                                             float (&o)[T::O_ACCUMULATORS], attn_softmax_rows& rows,
                                                             attn_fwd_consumer_state& state) {
  if constexpr (T::STREAM_K) {
    if (piece == ATTN_FWD_PIECE_PUBLISH) {
      attn_fwd_stream_k_publish<T>(p, consumer, thread, o, rows);
      attn_fwd_release_o_slot<T>(p, sm, held_v_stage, consumer, thread, false, state);
      return false;
    }
    if (piece >= 0) attn_fwd_stream_k_collect<T>(p, piece, consumer, thread, o, rows);
  }
  return true;
}

template <int Input, int HeadDim, int HeadDimV, int BlockN, int Consumers, int Kind>
__global__ void __launch_bounds__(attn_fwd_tile<HeadDim, HeadDimV, BlockN, Consumers, Kind>::THREADS,
                                  attn_fwd_tile<HeadDim, HeadDimV, BlockN, Consumers, Kind>::CTAS_PER_SM)
    attn_fwd_kernel(const __grid_constant__ attn_fwd_params params) {
  using T = attn_fwd_tile<HeadDim, HeadDimV, BlockN, Consumers, Kind>;
  extern __shared__ uint8_t attn_smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(attn_smem_raw) + ATTN_FWD_SMEM_ALIGNMENT - 1) &
                                             ~static_cast<uintptr_t>(ATTN_FWD_SMEM_ALIGNMENT - 1));
  attn_fwd_smem sm;
  sm.q = smem + T::Q_OFFSET;
  sm.o = smem + T::O_OFFSET;
  sm.k = smem + T::K_OFFSET;
  sm.v = smem + T::V_OFFSET;
  uint64_t* barriers = reinterpret_cast<uint64_t*>(smem + T::BARRIER_OFFSET);
  sm.q_full = barriers;
  sm.q_empty = barriers + T::Q_STAGES;
  sm.k_full = barriers + 2 * T::Q_STAGES;
  sm.k_empty = sm.k_full + T::STAGES;
  sm.v_full = sm.k_empty + T::STAGES;
  sm.v_empty = sm.v_full + T::STAGES;
  sm.k_slot_read = sm.v_empty + T::STAGES; /* (O_PASS0_IN_K_SLOT only: the jobs follow them there) */
  sm.v_slot_read = sm.k_slot_read + 1;
  sm.job = reinterpret_cast<attn_fwd_job*>(sm.v_empty + T::STAGES + (T::O_PASS0_IN_K_SLOT ? 2 : 0));
  sm.softmax_pins = reinterpret_cast<int*>(attn_fwd_job_at<T>(sm, T::JOB_SLOTS));
  static_assert((2 * T::Q_STAGES + 4 * T::STAGES + (T::O_PASS0_IN_K_SLOT ? 2 : 0)) * sizeof(uint64_t) +
                        T::JOB_SLOTS * attn_fwd_job_stride<T>() + T::CONSUMER_THREADS / 32 * sizeof(int) <=
                    T::BARRIER_BYTES,
                "barrier space: barriers, the handed-over jobs (and pieces' roles) and the softmax pins");

  if (threadIdx.x == 0) {
#pragma unroll
    for (unsigned stage = 0; stage < T::Q_STAGES; ++stage) {
      mbarrier_init(&sm.q_full[stage], 1);
      mbarrier_init(&sm.q_empty[stage], attn_fwd_q_releases<T>());
    }
#pragma unroll
    for (int stage = 0; stage < T::STAGES; ++stage) {
      mbarrier_init(&sm.k_full[stage], 1);
      mbarrier_init(&sm.k_empty[stage], attn_fwd_slot_releases<T>());
      mbarrier_init(&sm.v_full[stage], 1);
      mbarrier_init(&sm.v_empty[stage], attn_fwd_slot_releases<T>());
    }
    if constexpr (T::O_PASS0_IN_K_SLOT) {
      mbarrier_init(sm.k_slot_read, attn_fwd_slot_releases<T>());
      mbarrier_init(sm.v_slot_read, attn_fwd_slot_releases<T>());
    }

    fence_mbarrier_init();
  }
  __syncthreads();

  /* Launched as a programmatic dependent (launch_programmatic.cuh): the previous kernel on the
   * stream may still be running until here; nothing above touched global memory. Then the next
   * kernel (the next call, or split-KV's combine) may become resident: it waits for this grid's
   * completion before it touches memory, and all our CTAs are resident (persistent grid), so
   * its CTAs cannot displace ours. */
  grid_dependency_wait();
  grid_dependency_launch_dependents();
  attn_fwd_timeline_cta_start(params);
  const int warpgroup = warpgroup_index_uniform();
  if (warpgroup == 0) {
    setmaxnreg_dec<ATTN_FWD_PRODUCER_REGISTERS>();
    if (warp_index_uniform() == 0 && elect_one_sync()) attn_fwd_produce<T>(params, sm);
  } else {
    setmaxnreg_inc<T::CONSUMER_REGISTERS>();
    const int consumer = warpgroup - 1;
    const int thread = threadIdx.x % ATTN_FWD_WARPGROUP_THREADS;
    attn_fwd_consumer_state state = {{0, 0}, {0, 0}, 0u, 0u, -1, {}};
    state.timeline = attn_fwd_timeline_open(params, consumer * ATTN_FWD_WARPGROUP_THREADS + thread);
    float o[T::O_ACCUMULATORS];
    attn_softmax_rows rows;
    attn_softmax_result finished; /* 1/l and LSE of the thread's rows (attn_fwd_finish_rows_early, EARLY_LSE) */
    if (consumer == T::CONSUMERS - 1) attn_fwd_pass_turn<T>(consumer); /* consumer 0 issues first */
    for (;;) {
      const attn_fwd_job* job = attn_fwd_job_at<T>(sm, T::job_slot(state.q_count));
      /* this tile's Q, and the job beside it */
      mbarrier_wait_parity(&sm.q_full[T::q_stage(state.q_count)], T::q_parity(state.q_count));
      ++state.q_count;
      if (job->first < 0) break;
      attn_fwd_stamp(state.timeline, ATTN_EVENT_TILE);
      if constexpr (T::EPILOGUE_REREADS_JOB) {
        int held_v_stage;
        const bool rows_end_in_loop =
            attn_fwd_rows_end_in_loop<T>(attn_fwd_job_role<T>(sm, T::job_slot(state.q_count - 1u)));
        {
          const attn_fwd_sequence seq = job->seq;
          held_v_stage = attn_fwd_consume<Input, T>(params, sm, seq, job->tile.m_block * T::BLOCK_M, job->first,
                                                    job->end, consumer, thread, state, o, rows, rows_end_in_loop,
                                                    finished);
        }
        /* The job again (still this tile's, see attn_fwd_tile::JOB_SLOTS; its index from the phase, so not
         * even its address lives through the key loop). */
        const attn_fwd_job* again = attn_fwd_job_at<T>(sm, T::job_slot(state.q_count - 1u));
        const int piece = attn_fwd_job_role<T>(sm, T::job_slot(state.q_count - 1u));
        if (!attn_fwd_settle_piece<T>(params, sm, piece, held_v_stage, consumer, thread, o, rows, state)) continue;
        const attn_fwd_tile_coord tile = again->tile;
        const attn_fwd_sequence seq = again->seq;
        attn_fwd_epilogue<Input, T>(params, sm, seq, tile, tile.m_block * T::BLOCK_M, consumer, thread, held_v_stage,
                                    o, rows, rows_end_in_loop, finished, state);
      } else {
        const attn_fwd_tile_coord tile = job->tile;
        const attn_fwd_sequence seq = job->seq;
        const int piece = attn_fwd_job_role<T>(sm, T::job_slot(state.q_count - 1u));
        const int m0 = tile.m_block * T::BLOCK_M;
        /* The same tile body twice, on purpose: written once under a runtime test that is false
         * at compile time, it moved ptxas's schedule of the instances without idle consumers
         * (bench/sass_diff.sh: 88–1590 lines). This form of the other branch is the one measured
         * neutral; an earlier one (the idle test first, with `continue`, the follower also
         * zeroing V tails) scheduled the working path 0.5 % slower (docs/PERF.md, 43rd session). */
        if constexpr (T::IDLE_CONSUMERS_FOLLOW) {
          if (!attn_fwd_consumer_idle<T>(params, seq, m0, consumer)) {
            const bool rows_end_in_loop = attn_fwd_rows_end_in_loop<T>(piece);
            const int held_v_stage = attn_fwd_consume<Input, T>(params, sm, seq, m0, job->first, job->end, consumer,
                                                                thread, state, o, rows, rows_end_in_loop, finished);
            if (!attn_fwd_settle_piece<T>(params, sm, piece, held_v_stage, consumer, thread, o, rows, state)) continue;
            attn_fwd_epilogue<Input, T>(params, sm, seq, tile, m0, consumer, thread, held_v_stage, o, rows,
                                        rows_end_in_loop, finished, state);
          } else { /* no row of this warpgroup in the tile: follow its key loop only */
            attn_fwd_follow_key_loop<T>(sm, job->first, job->end, state);
          }
        } else {
          const bool rows_end_in_loop = attn_fwd_rows_end_in_loop<T>(piece);
          const int held_v_stage = attn_fwd_consume<Input, T>(params, sm, seq, m0, job->first, job->end, consumer, thread,
                                                              state, o, rows, rows_end_in_loop, finished);
          if (!attn_fwd_settle_piece<T>(params, sm, piece, held_v_stage, consumer, thread, o, rows, state)) continue;
          attn_fwd_epilogue<Input, T>(params, sm, seq, tile, m0, consumer, thread, held_v_stage, o, rows, rows_end_in_loop,
                                      finished, state);
        }
      }
      attn_fwd_stamp(state.timeline, ATTN_EVENT_EPILOGUE);
    }
    if (consumer == 0) attn_fwd_wait_turn<T>(consumer); /* the turn the last consumer handed over */
    attn_fwd_release_deferred_v_slot<T>(sm, state, thread); /* (also waits for the last O store's reads) */
    /* The last TMA store of O must have read its staging buffer before the CTA's shared memory goes. */
    if (T::O_SEPARATE && params.o_tma_store && thread == 0) tma_wait_group_read<0>();
    attn_fwd_timeline_cta_end(params, thread);
  }
}

/* Sets the kernel's shared-memory limit once per handle (kernel_attributes.cuh) and launches. */
template <int Input, int HeadDim, int HeadDimV, int BlockN, int Consumers, int Kind>
cudaError_t attn_fwd_launch_kernel(const attn_fwd_params& params, int grid, cudaStream_t stream,
                                   const fc_cuda_context* context) {
  using T = attn_fwd_tile<HeadDim, HeadDimV, BlockN, Consumers, Kind>;
  auto kernel = attn_fwd_kernel<Input, HeadDim, HeadDimV, BlockN, Consumers, Kind>;
  constexpr int smem_bytes = static_cast<int>(T::SMEM_BYTES);
  constexpr int INSTANCE = attn_fwd_instance_index(HeadDim, HeadDimV, BlockN, Consumers, Kind);
  constexpr int KERNEL_ID = KERNEL_ATTRIBUTE_ID_ATTN_FWD_FIRST + 2 * INSTANCE + Input;
  static_assert(INSTANCE >= 0 && KERNEL_ID < KERNEL_ATTRIBUTE_ID_END,
                "attention kernel ids");
  /* An instance without windows would ignore them (consumers_for_problem never picks one). */
  if (!T::WINDOWS && (params.window_left >= 0 || params.window_right >= 0)) return cudaErrorInvalidValue;
  /* A plan with a stream-K tail needs the kernel that runs it (the launcher picks it). */
  if (!T::STREAM_K && params.sk_first_tile < params.tile_count) return cudaErrorInvalidValue;
  cudaError_t error = set_shared_memory_once(context, KERNEL_ID, kernel, smem_bytes);
  if (error != cudaSuccess) return error;
  return launch_programmatic(kernel, dim3(static_cast<unsigned>(grid)), dim3(T::THREADS), smem_bytes, stream, true,
                             params);
}

#endif
