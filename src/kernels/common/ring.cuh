/*
 * ring.cuh — a position in a STAGES-slot mbarrier ring (the pipeline of ptx_mbarrier.cuh):
 * the slot index and the phase parity to wait for, which flips each time the index wraps.
 * Producers wait on empty[stage] with parity phase ^ 1 (a fresh barrier passes at once),
 * consumers on full[stage] with parity phase. Shared by the Hopper GEMM and attention.
 */
#ifndef FLASHC_KERNELS_COMMON_RING_CUH
#define FLASHC_KERNELS_COMMON_RING_CUH

#include <stdint.h>

struct ring_position {
  int stage;
  uint32_t phase;
};

template <int Stages>
static __device__ __forceinline__ void ring_advance(ring_position& position) {
  if (++position.stage == Stages) {
    position.stage = 0;
    position.phase ^= 1u;
  }
}

#endif
