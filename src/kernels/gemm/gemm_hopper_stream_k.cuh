/*
 * gemm_hopper_stream_k.cuh — the hand-over of split tiles between the CTAs of a stream-K
 * launch (the schedule is gemm_hopper_scheduler.cuh): a CTA that computed k-tiles [k_begin,
 * k_end) of a tile with k_end < k_tiles publishes its fp32 accumulators (before alpha, scales
 * or any epilogue) into its own workspace slot and raises its flag; the CTA holding the tile's
 * last k-tiles (the tail, which it runs last) waits for each earlier CTA's flag, adds its slot
 * into its own accumulators and then runs the ordinary epilogue, so C, bias, activations and
 * every store path see a whole tile. Each consumer warpgroup (64 rows) publishes and collects
 * on its own: slot and flag index = cta · CONSUMER_WARPGROUPS + consumer.
 *
 * Slots hold the accumulator fragments as they sit in registers: float4 i of thread t at
 * (i · 128 + t) · 16 bytes, so every access is one coalesced 16-byte vector per thread and no
 * index arithmetic beyond that. Flags are 64-bit words raised to the launch's tag
 * (fc_launch_tag: unique per launch), so what earlier launches left in them never reads as
 * raised and nothing clears them: a clearing kernel before each launch (as a programmatic
 * dependent launch) cost ~5 µs per GEMM on the H200, more than stream-K saved below ~200 µs.
 * Memory order: group_flag_raise (ptx_misc.cuh): the warpgroup meets after its slot stores and
 * one thread releases the flag at GPU scope; in the tail one thread per earlier CTA acquires
 * its flag (flag_wait), the warpgroup meets, and the slots are read through L2 (ld.global.cg).
 * Deadlock freedom: a CTA publishes before it waits for anything, waits only for
 * lower-numbered CTAs (launched before it), and the grid is at most one CTA per SM.
 * Check: tests/gpu/gpu_gemm.c forces stream-K on a third of its cases, with tiles split into
 * up to as many pieces as there are CTAs.
 */
#ifndef FLASHC_KERNELS_GEMM_HOPPER_STREAM_K_CUH
#define FLASHC_KERNELS_GEMM_HOPPER_STREAM_K_CUH

#include "kernels/common/ptx.cuh"
#include "kernels/gemm/gemm_hopper_config.cuh"
#include "kernels/gemm/gemm_hopper_scheduler.cuh"

/* The workspace of a stream-K launch (both NULL without stream-K). */
struct gemm_hopper_stream_k_args {
  float* partials;  /* gridDim.x · CONSUMER_WARPGROUPS slots of 128 threads × ACCUMULATORS floats */
  uint64_t* flags;  /* gridDim.x · CONSUMER_WARPGROUPS words, raised = tag */
  uint64_t tag;     /* this launch's (fc_launch_tag) */
};

template <int Accumulators>
static __device__ __forceinline__ float4* gemm_hopper_stream_k_slot(const gemm_hopper_stream_k_args& w, int cta,
                                                                    int consumer, int thread) {
  static_assert(Accumulators % 4 == 0, "whole float4 per thread");
  const size_t slot = static_cast<size_t>(cta) * GEMM_HOPPER_CONSUMER_WARPGROUPS + consumer;
  return reinterpret_cast<float4*>(w.partials) + slot * (Accumulators / 4) * GEMM_HOPPER_WARPGROUP_THREADS + thread;
}

/* This CTA's partial tile of consumer warpgroup `consumer` → its slot, then its flag. */
template <int Accumulators>
static __device__ __forceinline__ void gemm_hopper_stream_k_publish(const gemm_hopper_stream_k_args& w, int consumer,
                                                                    const float (&acc)[Accumulators], int thread,
                                                                    uint32_t warpgroup_barrier) {
  const int cta = cta_index_unhoisted();
  float4* slot = gemm_hopper_stream_k_slot<Accumulators>(w, cta, consumer, thread);
#pragma unroll
  for (int i = 0; i < Accumulators / 4; ++i)
    __stcg(slot + i * GEMM_HOPPER_WARPGROUP_THREADS, make_float4(acc[4 * i], acc[4 * i + 1], acc[4 * i + 2], acc[4 * i + 3]));
  group_flag_raise(&w.flags[cta * GEMM_HOPPER_CONSUMER_WARPGROUPS + consumer], w.tag, warpgroup_barrier,
                   GEMM_HOPPER_WARPGROUP_THREADS, thread);
}

/* The tail of a split tile: adds the partials of every earlier CTA whose run reaches into the
 * tile (past `tile_begin`, in the scheduler's stream-K iterations) into `acc`. The earlier CTAs
 * are cta − 1, cta − 2, … down to the one whose run holds tile_begin; thread t first waits for
 * the flag of cta − 1 − t (t + 128, … where a thin tail spreads a tile over more CTAs than
 * that), so all the flags cost one round trip and one meeting of the warpgroup, not one each
 * (the serial collect cost ~2.5 k-tiles per partial where a tile spread over 16 CTAs, H200,
 * 39th session); then the slots are added in order. An empty run (fewer k-tiles than CTAs) has
 * nothing published. */
template <int Accumulators>
static __device__ __forceinline__ void gemm_hopper_stream_k_collect(const gemm_hopper_stream_k_args& w,
                                                                    const gemm_hopper_scheduler& s, int tile_begin,
                                                                    int consumer, float (&acc)[Accumulators],
                                                                    int thread, uint32_t warpgroup_barrier) {
  const int cta_now = cta_index_unhoisted();
  for (int cta = cta_now - 1 - thread; cta >= 0; cta -= GEMM_HOPPER_WARPGROUP_THREADS) {
    const int end = gemm_hopper_stream_k_run_begin(s, cta + 1);
    if (end <= tile_begin) break;
    if (gemm_hopper_stream_k_run_begin(s, cta) < end)
      flag_wait(&w.flags[cta * GEMM_HOPPER_CONSUMER_WARPGROUPS + consumer], w.tag);
  }
  named_barrier_sync(warpgroup_barrier, GEMM_HOPPER_WARPGROUP_THREADS);
  int cta = cta_now - 1;
  int end = gemm_hopper_stream_k_run_begin(s, cta + 1);
  for (; cta >= 0 && end > tile_begin; --cta) {
    const int begin = gemm_hopper_stream_k_run_begin(s, cta);
    const bool published = end > begin;
    end = begin;
    if (!published) continue;
    const float4* slot = gemm_hopper_stream_k_slot<Accumulators>(w, cta, consumer, thread);
#pragma unroll
    for (int i = 0; i < Accumulators / 4; ++i) {
      const float4 v = __ldcg(slot + i * GEMM_HOPPER_WARPGROUP_THREADS);
      acc[4 * i] += v.x;
      acc[4 * i + 1] += v.y;
      acc[4 * i + 2] += v.z;
      acc[4 * i + 3] += v.w;
    }
  }
}

/* After a unit's K loop: a piece that does not end the tile is published (returns false:
 * nothing to store); a tail collects the rest of its tile; a whole tile passes. Returns
 * whether the caller stores the tile. */
template <int Accumulators>
static __device__ __forceinline__ bool gemm_hopper_stream_k_settle(const gemm_hopper_stream_k_args& w,
                                                                   const gemm_hopper_scheduler& s,
                                                                   const gemm_hopper_work& work, int consumer,
                                                                   float (&acc)[Accumulators], int thread,
                                                                   uint32_t warpgroup_barrier) {
  if (work.k_end < s.k_tiles) {
    gemm_hopper_stream_k_publish<Accumulators>(w, consumer, acc, thread, warpgroup_barrier);
    return false;
  }
  if (work.k_begin > 0) {
    const int tile_begin = (work.linear - s.dp_tiles) * s.k_tiles;
    gemm_hopper_stream_k_collect<Accumulators>(w, s, tile_begin, consumer, acc, thread, warpgroup_barrier);
  }
  return true;
}

#endif
