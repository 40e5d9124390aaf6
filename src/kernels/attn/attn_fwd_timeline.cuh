/*
 * attn_fwd_timeline.cuh — the consumers' event stamps (layout: attn_fwd_timeline.h). With
 * FLASHC_ATTN_TIMELINE unset (every normal build) the recorder is an empty struct and every
 * stamp compiles to nothing: the kernel's code is the same as without these calls.
 *
 * What it is for: seeing how the consumer warpgroups' wgmma issues, waits and softmaxes
 * interleave in time (docs/NOTES-attn-fwd.md, 10th session), which sampling profilers do not
 * show. Each stamp is a clock read and a global store by one lane, so the timeline is slightly
 * slower than the kernel it describes. Check: bench/attn_timeline.c prints the intervals.
 */
#ifndef FLASHC_KERNELS_ATTN_FWD_TIMELINE_CUH
#define FLASHC_KERNELS_ATTN_FWD_TIMELINE_CUH

#include <stdint.h>

#include "kernels/attn/attn_fwd_params.cuh"
#include "kernels/attn/attn_fwd_timeline.h"
#include "kernels/common/ptx_misc.cuh"

#if FLASHC_ATTN_TIMELINE
/* One consumer thread's recorder: its warp's entries (lane 0 of a CTA-0 warp) or none. */
struct attn_fwd_timeline {
  uint64_t* entries;
  int count;
};

static __device__ __forceinline__ attn_fwd_timeline attn_fwd_timeline_open(const attn_fwd_params& p,
                                                                           int consumer_thread) {
  attn_fwd_timeline t;
  /* FLASHC_ATTN_TIMELINE=2: the CTA spans only (attn_fwd_timeline.h) */
  const bool records = FLASHC_ATTN_TIMELINE == 1 && p.timeline != nullptr && blockIdx.x == 0 && consumer_thread % 32 == 0;
  t.entries = records ? p.timeline + (consumer_thread / 32) * ATTN_FWD_TIMELINE_CAPACITY : nullptr;
  t.count = 0;
  return t;
}

static __device__ __forceinline__ void attn_fwd_stamp(attn_fwd_timeline& t, int event) {
  if (t.entries != nullptr && t.count < ATTN_FWD_TIMELINE_CAPACITY)
    t.entries[t.count++] =
        (static_cast<uint64_t>(clock64()) << ATTN_FWD_TIMELINE_EVENT_BITS) | static_cast<uint64_t>(event);
}

/* This CTA's pair in the CTA area (attn_fwd_timeline.h): start, then end; null when not recorded. */
static __device__ __forceinline__ uint64_t* attn_fwd_timeline_cta_pair(const attn_fwd_params& p) {
  return p.timeline != nullptr && blockIdx.x < ATTN_FWD_TIMELINE_CTAS
             ? p.timeline + ATTN_FWD_TIMELINE_CTA_AREA + 2 * blockIdx.x
             : nullptr;
}

/* The CTA's start (thread 0, once its barriers are set up) and end (the later of its consumer
 * warpgroups' ends) on %globaltimer. */
static __device__ __forceinline__ void attn_fwd_timeline_cta_start(const attn_fwd_params& p) {
  uint64_t* pair = attn_fwd_timeline_cta_pair(p);
  if (pair != nullptr && threadIdx.x == 0) pair[0] = globaltimer_ns();
}

static __device__ __forceinline__ void attn_fwd_timeline_cta_end(const attn_fwd_params& p, int warpgroup_thread) {
  uint64_t* pair = attn_fwd_timeline_cta_pair(p);
  if (pair != nullptr && warpgroup_thread == 0)
    atomicMax(reinterpret_cast<unsigned long long*>(pair + 1), static_cast<unsigned long long>(globaltimer_ns()));
}
#else
struct attn_fwd_timeline {};

static __device__ __forceinline__ void attn_fwd_timeline_cta_start(const attn_fwd_params&) {}
static __device__ __forceinline__ void attn_fwd_timeline_cta_end(const attn_fwd_params&, int) {}

static __device__ __forceinline__ attn_fwd_timeline attn_fwd_timeline_open(const attn_fwd_params&, int) {
  return attn_fwd_timeline{};
}

static __device__ __forceinline__ void attn_fwd_stamp(attn_fwd_timeline&, int) {}
#endif

#endif
