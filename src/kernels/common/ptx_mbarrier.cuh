/*
 * ptx_mbarrier.cuh — shared-memory barriers (mbarrier), the synchronization of every TMA
 * pipeline.
 *
 * An mbarrier is a 64-bit word in shared memory (uint64_t, 8-byte aligned). It completes a
 * phase when its pending arrival count reaches zero AND its transaction count (bytes that
 * TMA copies announced with expect_tx have still to deliver) reaches zero; then it flips its
 * phase parity and re-arms with the count given at init.
 *
 * The pipeline pattern (one ring of `stages` slots, each with a full and an empty barrier):
 *   setup (one thread):  mbarrier_init(&full[s], 1); mbarrier_init(&empty[s], consumer_arrivals);
 *                        fence_mbarrier_init();  then __syncthreads() (cluster_sync() in a cluster)
 *   producer, per slot:  mbarrier_wait_parity(&empty[s], phase ^ 1);   (first pass returns at once)
 *                        mbarrier_arrive_expect_tx(&full[s], bytes);  tma_load_2d(..., &full[s]);
 *   consumer, per slot:  mbarrier_wait_parity(&full[s], phase);  ...use...  mbarrier_arrive(&empty[s]);
 *   `phase` starts at 0 and flips each time the slot index wraps around to 0.
 * Waiting on parity p returns once the phase with parity p has completed, i.e. while the
 * barrier's current phase parity differs from p. A fresh barrier is in phase 0, so a wait on
 * parity 1 returns immediately: that is why the producer's first wait on `empty` passes.
 *
 * All functions take generic pointers to the barrier in this CTA's shared memory.
 */
#ifndef FLASHC_KERNELS_COMMON_PTX_MBARRIER_CUH
#define FLASHC_KERNELS_COMMON_PTX_MBARRIER_CUH

#include "kernels/common/ptx_arch.cuh"

/* mbarrier.init.shared::cta.b64 [bar], arrival_count; */
static __device__ __forceinline__ void mbarrier_init(uint64_t* bar, uint32_t arrival_count) {
#if FC_PTX_HAS_SM80
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(arrival_count)
               : "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

/* mbarrier.inval.shared::cta.b64 [bar];   (before the memory is reused for something else) */
static __device__ __forceinline__ void mbarrier_invalidate(uint64_t* bar) {
#if FC_PTX_HAS_SM80
  asm volatile("mbarrier.inval.shared::cta.b64 [%0];\n" ::"r"(smem_u32(bar)) : "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

/* Makes the initializations visible to the async proxy (TMA) and to the other CTAs of the
 * cluster; follow it with a CTA or cluster barrier before any other thread uses the barriers.
 *   fence.mbarrier_init.release.cluster; */
static __device__ __forceinline__ void fence_mbarrier_init() {
#if FC_PTX_HAS_SM90
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

/* One arrival (release semantics at CTA scope).
 *   mbarrier.arrive.shared::cta.b64 _, [bar]; */
static __device__ __forceinline__ void mbarrier_arrive(uint64_t* bar) {
#if FC_PTX_HAS_SM90
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_u32(bar)) : "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

/* `count` arrivals at once.
 *   mbarrier.arrive.shared::cta.b64 _, [bar], count; */
static __device__ __forceinline__ void mbarrier_arrive_count(uint64_t* bar, uint32_t count) {
#if FC_PTX_HAS_SM90
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(count)
               : "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

/* One arrival plus `bytes` expected transaction bytes for this phase (the producer, before the
 * TMA copies that complete on `bar`; count the whole box, out-of-bounds parts included).
 *   mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], bytes; */
static __device__ __forceinline__ void mbarrier_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
#if FC_PTX_HAS_SM90
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)),
               "r"(bytes)
               : "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

/* Adds expected transaction bytes without arriving.
 *   mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [bar], bytes; */
static __device__ __forceinline__ void mbarrier_expect_tx(uint64_t* bar, uint32_t bytes) {
#if FC_PTX_HAS_SM90
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)),
               "r"(bytes)
               : "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

/* One arrival on the barrier at the same shared-memory offset in the CTA of rank
 * `cta_rank` of this cluster (the consumer freeing a slot that a peer multicasts into).
 *   mapa.shared::cluster.u32 remote, local, cta_rank;
 *   mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote]; */
static __device__ __forceinline__ void mbarrier_arrive_cluster(uint64_t* bar, uint32_t cta_rank) {
#if FC_PTX_HAS_SM90
  asm volatile(
      "{\n"
      ".reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote];\n"
      "}\n" ::"r"(smem_u32(bar)),
      "r"(cta_rank)
      : "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

/* Address of the same shared-memory location in the CTA of rank `cta_rank` (a
 * .shared::cluster address, for instructions that take one).
 *   mapa.shared::cluster.u32 remote, local, cta_rank; */
static __device__ __forceinline__ uint32_t mapa_shared_cluster(const void* local, uint32_t cta_rank) {
#if FC_PTX_HAS_SM90
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(smem_u32(local)), "r"(cta_rank));
  return remote;
#else
  FC_PTX_UNAVAILABLE();
  return 0;
#endif
}

/* One bounded wait (the hardware suspends the thread for a while): true once the phase of
 * parity `parity` has completed. Acquire semantics at CTA scope.
 *   mbarrier.try_wait.parity.shared::cta.b64 done, [bar], parity; */
static __device__ __forceinline__ bool mbarrier_try_wait_parity(uint64_t* bar, uint32_t parity) {
#if FC_PTX_HAS_SM90
  uint32_t done;
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      "selp.u32 %0, 1, 0, p;\n"
      "}\n"
      : "=r"(done)
      : "r"(smem_u32(bar)), "r"(parity)
      : "memory");
  return done != 0;
#else
  FC_PTX_UNAVAILABLE();
  return true;
#endif
}

/* Same with acquire at cluster scope: for a barrier that CTAs of the cluster arrive on
 * remotely, when the waiter then touches memory those CTAs wrote.
 *   mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [bar], parity; */
static __device__ __forceinline__ bool mbarrier_try_wait_parity_cluster(uint64_t* bar, uint32_t parity) {
#if FC_PTX_HAS_SM90
  uint32_t done;
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n"
      "selp.u32 %0, 1, 0, p;\n"
      "}\n"
      : "=r"(done)
      : "r"(smem_u32(bar)), "r"(parity)
      : "memory");
  return done != 0;
#else
  FC_PTX_UNAVAILABLE();
  return true;
#endif
}

/* Non-blocking test: true if the phase of parity `parity` has completed.
 *   mbarrier.test_wait.parity.shared::cta.b64 done, [bar], parity; */
static __device__ __forceinline__ bool mbarrier_test_wait_parity(uint64_t* bar, uint32_t parity) {
#if FC_PTX_HAS_SM90
  uint32_t done;
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      "selp.u32 %0, 1, 0, p;\n"
      "}\n"
      : "=r"(done)
      : "r"(smem_u32(bar)), "r"(parity)
      : "memory");
  return done != 0;
#else
  FC_PTX_UNAVAILABLE();
  return true;
#endif
}

/* Blocks until the phase of parity `parity` has completed: a loop of try_wait (above). */
static __device__ __forceinline__ void mbarrier_wait_parity(uint64_t* bar, uint32_t parity) {
  while (!mbarrier_try_wait_parity(bar, parity)) {
  }
}

/* Blocks with cluster-scope acquire: a loop of try_wait.parity.acquire.cluster. */
static __device__ __forceinline__ void mbarrier_wait_parity_cluster(uint64_t* bar, uint32_t parity) {
  while (!mbarrier_try_wait_parity_cluster(bar, parity)) {
  }
}

#endif
