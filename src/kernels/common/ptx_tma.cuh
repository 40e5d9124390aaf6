/*
 * ptx_tma.cuh — the tensor memory accelerator (bulk asynchronous copies, sm_90).
 *
 * Tensor maps are encoded on the host (src/host/tensor_map.h) and passed to the kernel by
 * value as `const __grid_constant__ CUtensorMap map`; the wrappers take its address (&map).
 * Coordinates are element indices, innermost dimension first (c0 = the contiguous one).
 *   loads:  a box may start at negative coordinates and run past the end; every
 *           out-of-bounds element is zero-filled (NaN with FC_TENSOR_MAP_OOB_NAN), and the
 *           barrier still receives the whole box's bytes.
 *   stores / reductions: a box may run past the end (those elements are dropped), but its
 *           start coordinates must be >= 0 — a TMA store at a negative coordinate is an
 *           illegal instruction (measured on the H200: cudaErrorIllegalInstruction; see
 *           gpu_ptx_tma --negative-store). Clamp the origin or store a smaller box.
 *
 * Loads complete on an mbarrier: the issuing thread first announces the bytes with
 * mbarrier_arrive_expect_tx(bar, box bytes) (ptx_mbarrier.cuh), consumers wait on its
 * parity. The destination is 128-byte aligned (1024 for the 128B swizzle, whose pattern is
 * anchored on 1024-byte boundaries; see ptx_desc.cuh) and receives the box packed: rows of
 * box0 × element bytes, in the tensor map's swizzle.
 *
 * Stores and reductions read shared memory asynchronously: data written there by ordinary
 * stores needs fence_proxy_async_shared_cta() (ptx_misc.cuh) in the writing threads and a
 * barrier before the issuing thread starts the copy; then tma_commit_group() and, before the
 * shared memory is overwritten (or the CTA exits), tma_wait_group_read<0>().
 *
 * One thread issues each copy (elect_one_sync() or threadIdx.x == 0).
 */
#ifndef FLASHC_KERNELS_COMMON_PTX_TMA_CUH
#define FLASHC_KERNELS_COMMON_PTX_TMA_CUH

#include <cuda.h> /* CUtensorMap */

#include "kernels/common/ptx_arch.cuh"

static __device__ __forceinline__ uint64_t tma_map_address(const CUtensorMap* map) {
  return reinterpret_cast<uint64_t>(map);
}

/* Brings the tensor map into the descriptor cache; once per kernel, by the issuing thread.
 *   prefetch.tensormap [map]; */
static __device__ __forceinline__ void tma_prefetch_map(const CUtensorMap* map) {
#if FC_PTX_HAS_SM90
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(tma_map_address(map)) : "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

/* ---------------------------------------------------------------------------------------- */
/* L2 cache policies for the *_hint loads (createpolicy; the value is an opaque 64-bit word) */
/* ---------------------------------------------------------------------------------------- */

/* createpolicy.fractional.L2::evict_first.b64 policy, 1.0;   (streamed once: Q, A tiles) */
static __device__ __forceinline__ uint64_t l2_policy_evict_first() {
#if FC_PTX_HAS_SM80
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
  return policy;
#else
  return 0;
#endif
}

/* createpolicy.fractional.L2::evict_last.b64 policy, 1.0;   (re-read by many CTAs: K, V) */
static __device__ __forceinline__ uint64_t l2_policy_evict_last() {
#if FC_PTX_HAS_SM80
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\n" : "=l"(policy));
  return policy;
#else
  return 0;
#endif
}

/* ---------------------------------------------------------------------------------------- */
/* Tensor tile loads: global → shared, completing `box bytes` of transactions on `bar`.
 *   cp.async.bulk.tensor.Nd.shared::cluster.global.tile.mbarrier::complete_tx::bytes
 *       [dst], [map, {c0, ..., cN-1}], [bar];
 * (a .shared::cta address is a valid .shared::cluster address of the issuing CTA)          */
/* ---------------------------------------------------------------------------------------- */

static __device__ __forceinline__ void tma_load_1d(void* dst, const CUtensorMap* map, uint64_t* bar,
                                                   int32_t c0) {
#if FC_PTX_HAS_SM90
  asm volatile(
      "cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3}], [%2];\n" ::"r"(smem_u32(dst)),
      "l"(tma_map_address(map)), "r"(smem_u32(bar)), "r"(c0)
      : "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

static __device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, uint64_t* bar,
                                                   int32_t c0, int32_t c1) {
#if FC_PTX_HAS_SM90
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4}], [%2];\n" ::"r"(smem_u32(dst)),
      "l"(tma_map_address(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1)
      : "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

static __device__ __forceinline__ void tma_load_3d(void* dst, const CUtensorMap* map, uint64_t* bar,
                                                   int32_t c0, int32_t c1, int32_t c2) {
#if FC_PTX_HAS_SM90
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5}], [%2];\n" ::"r"(smem_u32(dst)),
      "l"(tma_map_address(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

static __device__ __forceinline__ void tma_load_4d(void* dst, const CUtensorMap* map, uint64_t* bar,
                                                   int32_t c0, int32_t c1, int32_t c2, int32_t c3) {
#if FC_PTX_HAS_SM90
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5, %6}], [%2];\n" ::"r"(smem_u32(dst)),
      "l"(tma_map_address(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

static __device__ __forceinline__ void tma_load_5d(void* dst, const CUtensorMap* map, uint64_t* bar,
                                                   int32_t c0, int32_t c1, int32_t c2, int32_t c3,
                                                   int32_t c4) {
#if FC_PTX_HAS_SM90
  asm volatile(
      "cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5, %6, %7}], [%2];\n" ::"r"(smem_u32(dst)),
      "l"(tma_map_address(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4)
      : "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

/* With an L2 cache policy (l2_policy_evict_first/last):
 *   cp.async.bulk.tensor.Nd.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint
 *       [dst], [map, {c0, ...}], [bar], policy; */
static __device__ __forceinline__ void tma_load_2d_hint(void* dst, const CUtensorMap* map, uint64_t* bar,
                                                        int32_t c0, int32_t c1, uint64_t policy) {
#if FC_PTX_HAS_SM90
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint"
      " [%0], [%1, {%3, %4}], [%2], %5;\n" ::"r"(smem_u32(dst)),
      "l"(tma_map_address(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "l"(policy)
      : "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

static __device__ __forceinline__ void tma_load_3d_hint(void* dst, const CUtensorMap* map, uint64_t* bar,
                                                        int32_t c0, int32_t c1, int32_t c2,
                                                        uint64_t policy) {
#if FC_PTX_HAS_SM90
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint"
      " [%0], [%1, {%3, %4, %5}], [%2], %6;\n" ::"r"(smem_u32(dst)),
      "l"(tma_map_address(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "r"(c2), "l"(policy)
      : "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

static __device__ __forceinline__ void tma_load_4d_hint(void* dst, const CUtensorMap* map, uint64_t* bar,
                                                        int32_t c0, int32_t c1, int32_t c2, int32_t c3,
                                                        uint64_t policy) {
#if FC_PTX_HAS_SM90
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint"
      " [%0], [%1, {%3, %4, %5, %6}], [%2], %7;\n" ::"r"(smem_u32(dst)),
      "l"(tma_map_address(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "l"(policy)
      : "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

/* ---------------------------------------------------------------------------------------- */
/* Multicast loads (sm_90a): one global read lands at the same shared-memory offset in every
 * CTA of the cluster whose rank bit is set in `cta_mask`, and completes the box's bytes on
 * the barrier at `bar`'s offset in each of those CTAs (each of them expects the bytes).
 *   cp.async.bulk.tensor.Nd.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster
 *       [dst], [map, {c0, ...}], [bar], cta_mask;                                           */
/* ---------------------------------------------------------------------------------------- */

static __device__ __forceinline__ void tma_load_2d_multicast(void* dst, const CUtensorMap* map,
                                                             uint64_t* bar, uint16_t cta_mask,
                                                             int32_t c0, int32_t c1) {
#if FC_PTX_HAS_SM90A
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%4, %5}], [%2], %3;\n" ::"r"(smem_u32(dst)),
      "l"(tma_map_address(map)), "r"(smem_u32(bar)), "h"(cta_mask), "r"(c0), "r"(c1)
      : "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

static __device__ __forceinline__ void tma_load_3d_multicast(void* dst, const CUtensorMap* map,
                                                             uint64_t* bar, uint16_t cta_mask,
                                                             int32_t c0, int32_t c1, int32_t c2) {
#if FC_PTX_HAS_SM90A
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%4, %5, %6}], [%2], %3;\n" ::"r"(smem_u32(dst)),
      "l"(tma_map_address(map)), "r"(smem_u32(bar)), "h"(cta_mask), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

static __device__ __forceinline__ void tma_load_4d_multicast(void* dst, const CUtensorMap* map,
                                                             uint64_t* bar, uint16_t cta_mask,
                                                             int32_t c0, int32_t c1, int32_t c2,
                                                             int32_t c3) {
#if FC_PTX_HAS_SM90A
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%4, %5, %6, %7}], [%2], %3;\n" ::"r"(smem_u32(dst)),
      "l"(tma_map_address(map)), "r"(smem_u32(bar)), "h"(cta_mask), "r"(c0), "r"(c1), "r"(c2),
      "r"(c3)
      : "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

/* ---------------------------------------------------------------------------------------- */
/* Tensor tile stores: shared (packed box, in the map's swizzle) → global, bulk-group
 * completion; box elements past the end are not written. Coordinates must be >= 0 (a
 * negative one faults; see the top of this file).
 *   cp.async.bulk.tensor.Nd.global.shared::cta.tile.bulk_group [map, {c0, ...}], [src];     */
/* ---------------------------------------------------------------------------------------- */

static __device__ __forceinline__ void tma_store_1d(const CUtensorMap* map, const void* src, int32_t c0) {
#if FC_PTX_HAS_SM90
  asm volatile("cp.async.bulk.tensor.1d.global.shared::cta.tile.bulk_group [%0, {%2}], [%1];\n" ::"l"(
                   tma_map_address(map)),
               "r"(smem_u32(src)), "r"(c0)
               : "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

static __device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, const void* src, int32_t c0,
                                                    int32_t c1) {
#if FC_PTX_HAS_SM90
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"(
                   tma_map_address(map)),
               "r"(smem_u32(src)), "r"(c0), "r"(c1)
               : "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

static __device__ __forceinline__ void tma_store_3d(const CUtensorMap* map, const void* src, int32_t c0,
                                                    int32_t c1, int32_t c2) {
#if FC_PTX_HAS_SM90
  asm volatile(
      "cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4}], [%1];\n" ::"l"(
          tma_map_address(map)),
      "r"(smem_u32(src)), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

static __device__ __forceinline__ void tma_store_4d(const CUtensorMap* map, const void* src, int32_t c0,
                                                    int32_t c1, int32_t c2, int32_t c3) {
#if FC_PTX_HAS_SM90
  asm volatile(
      "cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4, %5}], [%1];\n" ::"l"(
          tma_map_address(map)),
      "r"(smem_u32(src)), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

static __device__ __forceinline__ void tma_store_5d(const CUtensorMap* map, const void* src, int32_t c0,
                                                    int32_t c1, int32_t c2, int32_t c3, int32_t c4) {
#if FC_PTX_HAS_SM90
  asm volatile(
      "cp.async.bulk.tensor.5d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4, %5, %6}], [%1];\n" ::"l"(
          tma_map_address(map)),
      "r"(smem_u32(src)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4)
      : "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

/* Element-wise add of the shared box into global memory (atomic per element; the map's dtype,
 * e.g. fp32 for dQ accumulation).
 *   cp.reduce.async.bulk.tensor.Nd.global.shared::cta.add.tile.bulk_group [map, {c0, ...}], [src]; */
static __device__ __forceinline__ void tma_reduce_add_2d(const CUtensorMap* map, const void* src,
                                                         int32_t c0, int32_t c1) {
#if FC_PTX_HAS_SM90
  asm volatile(
      "cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"(
          tma_map_address(map)),
      "r"(smem_u32(src)), "r"(c0), "r"(c1)
      : "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

static __device__ __forceinline__ void tma_reduce_add_3d(const CUtensorMap* map, const void* src,
                                                         int32_t c0, int32_t c1, int32_t c2) {
#if FC_PTX_HAS_SM90
  asm volatile(
      "cp.reduce.async.bulk.tensor.3d.global.shared::cta.add.tile.bulk_group [%0, {%2, %3, %4}], [%1];\n" ::"l"(
          tma_map_address(map)),
      "r"(smem_u32(src)), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

/* ---------------------------------------------------------------------------------------- */
/* Plain bulk copies (no tensor map): contiguous `bytes` (a multiple of 16; both addresses
 * 16-byte aligned).                                                                          */
/* ---------------------------------------------------------------------------------------- */

/* cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [src], bytes, [bar]; */
static __device__ __forceinline__ void bulk_load(void* dst, const void* global_src, uint32_t bytes,
                                                 uint64_t* bar) {
#if FC_PTX_HAS_SM90
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
          smem_u32(dst)),
      "l"(global_src), "r"(bytes), "r"(smem_u32(bar))
      : "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

/* cp.async.bulk.global.shared::cta.bulk_group [dst], [src], bytes; */
static __device__ __forceinline__ void bulk_store(void* global_dst, const void* src, uint32_t bytes) {
#if FC_PTX_HAS_SM90
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n" ::"l"(global_dst),
               "r"(smem_u32(src)), "r"(bytes)
               : "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

/* Element-wise fp32 add of `bytes` of shared memory into global memory (the backward's dQ
 * accumulation; atomic per element, so many CTAs may add into the same buffer).
 *   cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [dst], [src], bytes; */
static __device__ __forceinline__ void bulk_reduce_add_f32(float* global_dst, const float* src,
                                                           uint32_t bytes) {
#if FC_PTX_HAS_SM90
  asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;\n" ::"l"(
                   global_dst),
               "r"(smem_u32(src)), "r"(bytes)
               : "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

/* ---------------------------------------------------------------------------------------- */
/* Bulk-group completion (stores and reductions)                                             */
/* ---------------------------------------------------------------------------------------- */

/* Closes the group of bulk copies this thread issued since the last commit.
 *   cp.async.bulk.commit_group; */
static __device__ __forceinline__ void tma_commit_group() {
#if FC_PTX_HAS_SM90
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

/* Waits until at most Pending groups still READ their shared source (the smem may then be
 * overwritten; the global writes may still be in flight).
 *   cp.async.bulk.wait_group.read Pending; */
template <int Pending>
static __device__ __forceinline__ void tma_wait_group_read() {
#if FC_PTX_HAS_SM90
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(Pending) : "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

/* Waits until at most Pending groups are incomplete (global writes done and visible to this
 * thread).
 *   cp.async.bulk.wait_group Pending; */
template <int Pending>
static __device__ __forceinline__ void tma_wait_group() {
#if FC_PTX_HAS_SM90
  asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(Pending) : "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

#endif
