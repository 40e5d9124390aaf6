/*
 * gemm_stream_k_plan.h — the host side of the stream-K tail that both GEMM paths run
 * (gemm_hopper_launch.cu with gemm_hopper_stream_k.cuh, gemm_portable_launch_sm80.cu with
 * gemm_portable_stream_k.cuh): when and how the tiles of a partial last round are spread over
 * every SM, and the workspace the split tiles' fp32 partials and flags take.
 *
 * The cost model (gemm_stream_k_model, its constants measured per path): `sms` workers take
 * whole tiles round robin; without stream-K the last, partial round (rest = tiles % sms tiles)
 * takes a whole tile's time, k_tiles k-tile times, less thin_round_speedup · idle³ of it, idle
 * = 1 − rest / sms (a round that leaves most SMs idle runs its few tiles faster: the busy SMs
 * have the power and the memory system to themselves); with it every worker runs ceil(rest ·
 * k_tiles / sms) k-tiles plus the hand-over: publish an fp32 partial tile, wait, collect it
 * (handover_k_tiles k-tile times), and extra_partial_k_tiles for each further partial the
 * tile's last CTA collects (a tile spreads over sms / rest CTAs; the collect reads them one
 * after another). Stream-K runs where that saves at least min_gain of the whole-rounds time,
 * or always when forced.
 * Host code only; checked on the GPU by the stream-K cases of tests/gpu/gpu_gemm.c and
 * tests/gpu/gpu_gemm_portable.c, which force it.
 */
#ifndef FLASHC_KERNELS_GEMM_STREAM_K_PLAN_H
#define FLASHC_KERNELS_GEMM_STREAM_K_PLAN_H

#include <stddef.h>
#include <stdint.h>

struct gemm_stream_k_plan {
  bool on;
  int64_t dp_tiles;   /* whole tiles, round robin (all of them without stream-K) */
  int64_t iterations; /* k-tiles of the stream-K tiles, laid end to end */
};

/* The constants of the cost model above, in k-tile times of the path's kernel. */
struct gemm_stream_k_model {
  double handover_k_tiles;      /* publish one partial, wait, collect it */
  double extra_partial_k_tiles; /* each partial beyond the first that a tile's last CTA collects */
  double thin_round_speedup;    /* the whole last round's time saved at idle = 1 (scaled by idle³) */
  double min_gain;              /* of the whole-rounds time, for stream-K to run */
};

/* mode: 0 the cost model, 1 wherever the tiles leave a partial round, -1 never (the
 * fc_cuda_context knobs of tests and benchmarks). */
static inline gemm_stream_k_plan gemm_stream_k_plan_for(int64_t tiles, int64_t k_tiles, int64_t sms, int mode,
                                                        const gemm_stream_k_model& model) {
  const int64_t full_rounds = tiles / sms, rest = tiles % sms;
  gemm_stream_k_plan plan = {false, tiles, 0};
  /* The devices' run arithmetic stays in 32 bits. */
  const int64_t int_max = 0x7fffffff;
  if (mode < 0 || rest == 0 || k_tiles <= 0 || sms * sms > int_max || tiles + sms + rest * k_tiles > int_max)
    return plan;
  const double k = static_cast<double>(k_tiles);
  const double contributors = static_cast<double>(sms) / static_cast<double>(rest); /* CTAs per split tile */
  const double extra_partials = contributors > 2.0 ? contributors - 2.0 : 0.0;
  const double idle = 1.0 - static_cast<double>(rest) / static_cast<double>(sms);
  const double spread_time = static_cast<double>((rest * k_tiles + sms - 1) / sms) + model.handover_k_tiles +
                             model.extra_partial_k_tiles * extra_partials;
  const double last_round_time = k * (1.0 - model.thin_round_speedup * idle * idle * idle);
  /* (min_gain of whole rounds of whole tiles, so that the floor does not move with the speedup) */
  if (mode == 0 && last_round_time - spread_time < model.min_gain * static_cast<double>(full_rounds + 1) * k)
    return plan;
  plan.on = true;
  plan.dp_tiles = full_rounds * sms;
  plan.iterations = rest * k_tiles;
  return plan;
}

/* The workspace of a stream-K launch: `slots` partial tiles of tile_floats fp32 values, then
 * `flags` 64-bit flags; nothing without stream-K. */
constexpr size_t GEMM_STREAM_K_ALIGNMENT = 256;

struct gemm_stream_k_workspace {
  size_t partial_bytes, flag_bytes, total;
};

static inline gemm_stream_k_workspace gemm_stream_k_workspace_for(bool on, size_t slots, size_t tile_floats,
                                                                  size_t flags) {
  gemm_stream_k_workspace w = {0, 0, 0};
  if (!on) return w;
  w.partial_bytes = slots * tile_floats * sizeof(float);
  w.flag_bytes = flags * sizeof(uint64_t);
  w.total = w.partial_bytes + w.flag_bytes + GEMM_STREAM_K_ALIGNMENT; /* room to align the start */
  return w;
}

/* The partials and the flags inside a caller's workspace of layout w. */
static inline void gemm_stream_k_workspace_at(void* workspace, const gemm_stream_k_workspace& w, float** partials,
                                              uint64_t** flags) {
  const uintptr_t base =
      (reinterpret_cast<uintptr_t>(workspace) + GEMM_STREAM_K_ALIGNMENT - 1) & ~(GEMM_STREAM_K_ALIGNMENT - 1);
  *partials = reinterpret_cast<float*>(base);
  *flags = reinterpret_cast<uint64_t*>(base + w.partial_bytes);
}

#endif
