/*
 * ptx_misc.cuh — the small instructions around the big ones: register reallocation between
 * warpgroups, proxy fences, named barriers, electing one lane, warp/warpgroup indices,
 * ldmatrix/stmatrix, cluster identity and cluster barriers, packing floats into 16-/8-bit
 * pairs, programmatic dependent launch, the global nanosecond timer, and the sm_80 pieces the portable path uses
 * (cp.async with zero fill, mma.sync m16n8k16).
 *
 * Every wrapper says the exact PTX it emits. Register fragments follow the PTX ISA:
 *   ldmatrix .x4 — lanes 8i..8i+7 give the row addresses of 8×8 matrix i (16 bytes per row);
 *     register i of lane l receives row l/4, columns 2(l%4), 2(l%4)+1 of matrix i.
 *     With .trans, register i of lane l receives column l/4, rows 2(l%4), 2(l%4)+1 (the
 *     matrix is transposed on the way).
 *   stmatrix .x4 — the exact inverse of ldmatrix .x4 (same address and fragment roles).
 */
#ifndef FLASHC_KERNELS_COMMON_PTX_MISC_CUH
#define FLASHC_KERNELS_COMMON_PTX_MISC_CUH

#include "kernels/common/ptx_arch.cuh"

/* ---------------------------------------------------------------------------------------- */
/* Register reallocation (sm_90a). Effective only when the kernel has a register cap at entry
 * (__launch_bounds__(threads, 1)) and every warp of a warpgroup executes it; each role's
 * branch of one if/else calls exactly one. Count: a multiple of 8 in [24, 256].            */
/* ---------------------------------------------------------------------------------------- */

/* setmaxnreg.inc.sync.aligned.u32 RegCount; */
template <int RegCount>
static __device__ __forceinline__ void setmaxnreg_inc() {
  static_assert(RegCount % 8 == 0 && RegCount >= 24 && RegCount <= 256, "setmaxnreg count");
#if FC_PTX_HAS_SM90A
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(RegCount));
#else
  FC_PTX_UNAVAILABLE();
#endif
}

/* setmaxnreg.dec.sync.aligned.u32 RegCount; */
template <int RegCount>
static __device__ __forceinline__ void setmaxnreg_dec() {
  static_assert(RegCount % 8 == 0 && RegCount >= 24 && RegCount <= 256, "setmaxnreg count");
#if FC_PTX_HAS_SM90A
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(RegCount));
#else
  FC_PTX_UNAVAILABLE();
#endif
}

/* ---------------------------------------------------------------------------------------- */
/* Proxy fences: shared memory written by ordinary stores (st.shared, stmatrix) and then read
 * by the async proxy (TMA store, WGMMA operand) needs this in each writing thread before the
 * barrier that publishes the data.                                                          */
/* ---------------------------------------------------------------------------------------- */

/* fence.proxy.async.shared::cta; */
static __device__ __forceinline__ void fence_proxy_async_shared_cta() {
#if FC_PTX_HAS_SM90
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

/* fence.proxy.async.global;   (generic-proxy global writes later read by TMA) */
static __device__ __forceinline__ void fence_proxy_async_global() {
#if FC_PTX_HAS_SM90
  asm volatile("fence.proxy.async.global;\n" ::: "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

/* ---------------------------------------------------------------------------------------- */
/* Named barriers. Id 0 is __syncthreads(); kernels name ids 1..15 by what they protect, e.g.
 *   enum { BARRIER_EPILOGUE_SMEM_FREE = 1, BARRIER_WARPGROUP_1_TURN = 2 };
 * `thread_count` is the number of threads that meet there (a multiple of 32).             */
/* ---------------------------------------------------------------------------------------- */

/* bar.sync id, thread_count;   (waits until thread_count threads arrived or synced) */
static __device__ __forceinline__ void named_barrier_sync(uint32_t id, uint32_t thread_count) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(thread_count) : "memory");
}

/* bar.arrive id, thread_count;   (signals without waiting: the producer side) */
static __device__ __forceinline__ void named_barrier_arrive(uint32_t id, uint32_t thread_count) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(thread_count) : "memory");
}

/* ---------------------------------------------------------------------------------------- */
/* Thread identity                                                                          */
/* ---------------------------------------------------------------------------------------- */

/* mov.u32 lane, %laneid; */
static __device__ __forceinline__ uint32_t lane_id() {
  uint32_t lane;
  asm("mov.u32 %0, %%laneid;\n" : "=r"(lane));
  return lane;
}

/* Warp index in the block, made warp-uniform by a shuffle from lane 0 so the compiler knows
 * branches on it do not diverge (shfl.sync.idx.b32). */
static __device__ __forceinline__ int warp_index_uniform() {
  return __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / 32), 0);
}

/* Warpgroup (4 consecutive warps, 128 threads) index in the block, warp-uniform. */
static __device__ __forceinline__ int warpgroup_index_uniform() {
  return __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / 128), 0);
}

/* x, made visibly warp-uniform (lane 0's value by shuffle), for values that are uniform but
 * derived from per-thread sources the compiler cannot see through (shared addresses). */
static __device__ __forceinline__ uint64_t uniform_u64(uint64_t x) {
  const uint32_t lo = __shfl_sync(0xffffffffu, static_cast<uint32_t>(x), 0);
  const uint32_t hi = __shfl_sync(0xffffffffu, static_cast<uint32_t>(x >> 32), 0);
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

/* A shared-memory matrix descriptor (ptx_desc.cuh) whose address field is made visibly
 * warp-uniform by a shuffle from lane 0 while its high word (strides, swizzle: compile-time
 * constants in every caller) stays a constant that ptxas can fold. Unlike uniform_u64 this
 * leaves ptxas free to rebuild each k-step's descriptor with one uniform add instead of
 * holding all of them (attn_fwd_config.cuh, UNIFORM_Q_DESCRIPTOR). */
static __device__ __forceinline__ uint64_t uniform_desc_address(uint64_t desc) {
  const uint32_t low = __shfl_sync(0xffffffffu, static_cast<uint32_t>(desc), 0);
  return (desc & 0xFFFFFFFF00000000ull) | low;
}

/* True in exactly one active lane of the warp (the same one in all lanes' view); all lanes of
 * `member_mask` must execute it.
 *   elect.sync leader|p, member_mask;  selp.u32 elected, 1, 0, p; */
static __device__ __forceinline__ bool elect_one_sync(uint32_t member_mask = 0xffffffffu) {
#if FC_PTX_HAS_SM90
  uint32_t elected;
  asm volatile(
      "{\n"
      ".reg .b32 leader;\n"
      ".reg .pred p;\n"
      "elect.sync leader|p, %1;\n"
      "selp.u32 %0, 1, 0, p;\n"
      "}\n"
      : "=r"(elected)
      : "r"(member_mask));
  return elected != 0;
#else
  return (lane_id() == static_cast<uint32_t>(__ffs(__activemask()) - 1));
#endif
}

/* ---------------------------------------------------------------------------------------- */
/* ldmatrix / stmatrix (8×8 matrices of 16-bit elements; rows of 16 bytes, 16-B aligned)     */
/* ---------------------------------------------------------------------------------------- */

/* ldmatrix.sync.aligned.m8n8.x4.shared.b16 {r0, r1, r2, r3}, [row_address]; */
static __device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* row_address) {
#if FC_PTX_HAS_SM75
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(row_address)));
#else
  FC_PTX_UNAVAILABLE();
#endif
}

/* ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {r0, r1, r2, r3}, [row_address]; */
static __device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* row_address) {
#if FC_PTX_HAS_SM75
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(row_address)));
#else
  FC_PTX_UNAVAILABLE();
#endif
}

/* ldmatrix.sync.aligned.m8n8.x2.shared.b16 {r0, r1}, [row_address];   (lanes 0..15 address) */
static __device__ __forceinline__ void ldmatrix_x2(uint32_t (&r)[2], const void* row_address) {
#if FC_PTX_HAS_SM75
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(smem_u32(row_address)));
#else
  FC_PTX_UNAVAILABLE();
#endif
}

/* ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {r0, r1}, [row_address]; */
static __device__ __forceinline__ void ldmatrix_x2_trans(uint32_t (&r)[2], const void* row_address) {
#if FC_PTX_HAS_SM75
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(smem_u32(row_address)));
#else
  FC_PTX_UNAVAILABLE();
#endif
}

/* stmatrix on a 32-bit shared address (a caller that computes addresses in the shared window
 * saves the generic→shared conversion per call).
 *   stmatrix.sync.aligned.m8n8.x4.shared.b16 [row_address], {r0, r1, r2, r3}; */
static __device__ __forceinline__ void stmatrix_x4_shared(uint32_t row_address, const uint32_t (&r)[4]) {
#if FC_PTX_HAS_SM90
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n"
               ::"r"(row_address), "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3])
               : "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

/* Two matrices (lanes 0–15 give the row addresses; lanes 16–31's are ignored).
 *   stmatrix.sync.aligned.m8n8.x2.shared.b16 [row_address], {r0, r1}; */
static __device__ __forceinline__ void stmatrix_x2_shared(uint32_t row_address, const uint32_t (&r)[2]) {
#if FC_PTX_HAS_SM90
  asm volatile("stmatrix.sync.aligned.m8n8.x2.shared.b16 [%0], {%1, %2};\n" ::"r"(row_address), "r"(r[0]), "r"(r[1])
               : "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

/* The same on a generic pointer into shared memory. */
static __device__ __forceinline__ void stmatrix_x4(void* row_address, const uint32_t (&r)[4]) {
  stmatrix_x4_shared(smem_u32(row_address), r);
}

/* stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [row_address], {r0, r1, r2, r3}; */
static __device__ __forceinline__ void stmatrix_x4_trans(void* row_address, const uint32_t (&r)[4]) {
#if FC_PTX_HAS_SM90
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n"
               ::"r"(smem_u32(row_address)), "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3])
               : "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

/* ---------------------------------------------------------------------------------------- */
/* Clusters (sm_90). A CTA's rank is its index inside the cluster, 0..cluster_size-1; the
 * multicast masks and mapa take ranks.                                                       */
/* ---------------------------------------------------------------------------------------- */

/* mov.u32 rank, %cluster_ctarank; */
static __device__ __forceinline__ uint32_t cluster_cta_rank() {
#if FC_PTX_HAS_SM90
  uint32_t rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
  return rank;
#else
  return 0;
#endif
}

/* mov.u32 count, %cluster_nctarank;   (CTAs in this cluster; 1 without clusters) */
static __device__ __forceinline__ uint32_t cluster_cta_count() {
#if FC_PTX_HAS_SM90
  uint32_t count;
  asm volatile("mov.u32 %0, %%cluster_nctarank;\n" : "=r"(count));
  return count;
#else
  return 1;
#endif
}

/* mov.u32 x, %clusterid.x;   (this cluster's index in the grid of clusters, x) */
static __device__ __forceinline__ uint32_t cluster_id_x() {
#if FC_PTX_HAS_SM90
  uint32_t x;
  asm volatile("mov.u32 %0, %%clusterid.x;\n" : "=r"(x));
  return x;
#else
  return blockIdx.x;
#endif
}

/* mov.u32 x, %cluster_ctaid.x;   (this CTA's x position inside its cluster) */
static __device__ __forceinline__ uint32_t cluster_cta_id_x() {
#if FC_PTX_HAS_SM90
  uint32_t x;
  asm volatile("mov.u32 %0, %%cluster_ctaid.x;\n" : "=r"(x));
  return x;
#else
  return 0;
#endif
}

/* barrier.cluster.arrive.release.aligned;   (all threads of all CTAs of the cluster) */
static __device__ __forceinline__ void cluster_arrive() {
#if FC_PTX_HAS_SM90
  asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

/* barrier.cluster.arrive.relaxed.aligned;   (no memory ordering: only "I have started") */
static __device__ __forceinline__ void cluster_arrive_relaxed() {
#if FC_PTX_HAS_SM90
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

/* barrier.cluster.wait.acquire.aligned; */
static __device__ __forceinline__ void cluster_wait() {
#if FC_PTX_HAS_SM90
  asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

/* cluster_arrive(); cluster_wait();   — the cluster-wide __syncthreads(). */
static __device__ __forceinline__ void cluster_sync() {
  cluster_arrive();
  cluster_wait();
}

/* ---------------------------------------------------------------------------------------- */
/* Packing two floats (round to nearest even). `low` goes to bits 0..15 (0..7 for fp8), i.e.
 * to the lower column index of a fragment pair — the order the MMA operands expect.        */
/* ---------------------------------------------------------------------------------------- */

/* cvt.rn.bf16x2.f32 packed, high, low;   (the first source fills the upper half) */
static __device__ __forceinline__ uint32_t pack_bf16x2(float low, float high) {
#if FC_PTX_HAS_SM80
  uint32_t packed;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(packed) : "f"(high), "f"(low));
  return packed;
#else
  FC_PTX_UNAVAILABLE();
  return 0;
#endif
}

/* cvt.rn.f16x2.f32 packed, high, low; */
static __device__ __forceinline__ uint32_t pack_f16x2(float low, float high) {
#if FC_PTX_HAS_SM80
  uint32_t packed;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(packed) : "f"(high), "f"(low));
  return packed;
#else
  FC_PTX_UNAVAILABLE();
  return 0;
#endif
}

/* cvt.rn.satfinite.e4m3x2.f32 packed16, high, low;   (saturates to ±448, NaN stays NaN) */
static __device__ __forceinline__ uint16_t pack_e4m3x2(float low, float high) {
#if FC_PTX_HAS_SM89
  uint16_t packed;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\n" : "=h"(packed) : "f"(high), "f"(low));
  return packed;
#else
  FC_PTX_UNAVAILABLE();
  return 0;
#endif
}

/* Four floats to four e4m3 bytes, v0 in bits 0..7: two cvt.rn.satfinite.e4m3x2.f32 + a
 * 16-bit pair merge (mov.b32 {lo, hi}). */
static __device__ __forceinline__ uint32_t pack_e4m3x4(float v0, float v1, float v2, float v3) {
  return static_cast<uint32_t>(pack_e4m3x2(v0, v1)) |
         (static_cast<uint32_t>(pack_e4m3x2(v2, v3)) << 16);
}

/* ---------------------------------------------------------------------------------------- */
/* Programmatic dependent launch (sm_90): a kernel launched with the PDL attribute may start
 * before its predecessor ends; it must wait before reading the predecessor's output.        */
/* ---------------------------------------------------------------------------------------- */

/* griddepcontrol.wait; */
static __device__ __forceinline__ void grid_dependency_wait() {
#if FC_PTX_HAS_SM90
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

/* griddepcontrol.launch_dependents; */
static __device__ __forceinline__ void grid_dependency_launch_dependents() {
#if FC_PTX_HAS_SM90
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

/* ---------------------------------------------------------------------------------------- */
/* Flags between CTAs of one grid (release / acquire at GPU scope)                          */
/* ---------------------------------------------------------------------------------------- */

/* st.release.gpu.global.u64 [flag], value;   (writes before it, and those it observed, become
 * visible to a thread that acquires the value) */
static __device__ __forceinline__ void store_release_gpu(uint64_t* flag, uint64_t value) {
#if FC_PTX_HAS_SM80
  asm volatile("st.release.gpu.global.u64 [%0], %1;\n" ::"l"(flag), "l"(value) : "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

/* ld.acquire.gpu.global.u64 value, [flag]; */
static __device__ __forceinline__ uint64_t load_acquire_gpu(const uint64_t* flag) {
  uint64_t value = 0;
#if FC_PTX_HAS_SM80
  asm volatile("ld.acquire.gpu.global.u64 %0, [%1];\n" : "=l"(value) : "l"(flag) : "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
  return value;
}

/* 2^x by the MUFU's approximation, subnormal results flushed to 0 (max relative error ~2^-22).
 * ex2.approx.ftz.f32 %0, %1; */
static __device__ __forceinline__ float exp2_approx_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

/* blockIdx.x through volatile asm: what is computed from it stays where it is used (after a
 * tile's key or K loop) instead of being hoisted to the kernel's start and kept live, or
 * spilled, through every tile. */
static __device__ __forceinline__ int cta_index_unhoisted() {
  int cta;
  asm volatile("mov.u32 %0, %%ctaid.x;\n" : "=r"(cta));
  return cta;
}

/* blockIdx.y the same way (the portable GEMM's batch). mov.u32 %0, %ctaid.y; */
static __device__ __forceinline__ uint32_t cta_index_y_unhoisted() {
  uint32_t cta;
  asm volatile("mov.u32 %0, %%ctaid.y;\n" : "=r"(cta));
  return cta;
}

/* The GPU's nanosecond clock, common to all SMs (for spans across CTAs and clock rates; clock64
 * counts the SM's own cycles).
 * mov.u64 %0, %globaltimer; */
static __device__ __forceinline__ uint64_t globaltimer_ns() {
  uint64_t ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  return ns;
}

/* Nanoseconds between two polls of a group flag that is not raised yet. */
constexpr unsigned GROUP_FLAG_POLL_NS = 100;

/* A group of threads (`threads` of them, meeting at named barrier `barrier`; `thread` is the
 * caller's index in the group) publishes what each of them stored before the call: the group
 * meets, then its thread 0 raises the flag to `tag` with a GPU-scope release. No fence per
 * thread: the barrier orders every thread's stores before thread 0's release, and a release
 * is cumulative (it publishes what happens before it, other threads' stores included). */
static __device__ __forceinline__ void group_flag_raise(uint64_t* flag, uint64_t tag, uint32_t barrier,
                                                        uint32_t threads, int thread) {
  named_barrier_sync(barrier, threads);
  if (thread == 0) store_release_gpu(flag, tag);
}

/* One thread's wait for a flag: polls it (acquire) until it reads `tag`. */
static __device__ __forceinline__ void flag_wait(const uint64_t* flag, uint64_t tag) {
  while (load_acquire_gpu(flag) != tag) __nanosleep(GROUP_FLAG_POLL_NS);
}

/* The reader's side: thread 0 waits for the flag (flag_wait), then the group meets; its
 * threads may then read what the raising group published, through L2 (ld.global.cg or
 * __ldcg: never a stale L1 line). */
static __device__ __forceinline__ void group_flag_wait(const uint64_t* flag, uint64_t tag, uint32_t barrier,
                                                       uint32_t threads, int thread) {
  if (thread == 0) flag_wait(flag, tag);
  named_barrier_sync(barrier, threads);
}

/* ---------------------------------------------------------------------------------------- */
/* sm_80 portable-path pieces                                                               */
/* ---------------------------------------------------------------------------------------- */

/* 16-byte global→shared copy that bypasses L1; when `valid` is false nothing is read and the
 * 16 destination bytes are zero-filled (the tail of a tile).
 *   cp.async.cg.shared.global [dst], [src], 16, src_bytes;   (src_bytes = valid ? 16 : 0) */
static __device__ __forceinline__ void cp_async_16(void* smem_dst, const void* global_src, bool valid) {
#if FC_PTX_HAS_SM80
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
               ::"r"(smem_u32(smem_dst)), "l"(global_src), "r"(valid ? 16 : 0)
               : "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

/* 16-byte global→shared copy of which only the first `src_bytes` (0..16) are read; the rest
 * of the 16 destination bytes is zero-filled. The partial form of cp_async_16 above,
 * for a chunk that straddles the end of a row.
 *   cp.async.cg.shared.global [dst], [src], 16, src_bytes; */
static __device__ __forceinline__ void cp_async_16_partial(uint32_t smem_dst, const void* global_src,
                                                           int src_bytes) {
#if FC_PTX_HAS_SM80
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_dst), "l"(global_src),
               "r"(src_bytes)
               : "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

/* 16-byte global→shared copy, all of it in bounds (no source size, no zero fill): the form
 * for chunks known to lie inside the matrix.
 *   cp.async.cg.shared.global [dst], [src], 16; */
static __device__ __forceinline__ void cp_async_16_whole(uint32_t smem_dst, const void* global_src) {
#if FC_PTX_HAS_SM80
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_dst), "l"(global_src) : "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

/* The ldmatrix forms above on a 32-bit shared address (saves the generic→shared
 * conversion per call). ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16 {r0..r3}, [addr]; */
static __device__ __forceinline__ void ldmatrix_x4_shared(uint32_t (&r)[4], uint32_t address, bool transpose) {
#if FC_PTX_HAS_SM75
  if (transpose)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(address));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(address));
#else
  FC_PTX_UNAVAILABLE();
#endif
}

/* cp.async.commit_group; */
static __device__ __forceinline__ void cp_async_commit_group() {
#if FC_PTX_HAS_SM80
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

/* cp.async.wait_group Pending;   (at most Pending committed groups still in flight) */
template <int Pending>
static __device__ __forceinline__ void cp_async_wait_group() {
#if FC_PTX_HAS_SM80
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending) : "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

/* Ask L2 for the 128-byte line that holds `address` (a valid global address); no result, no
 * wait, no "memory" clobber (it changes nothing the program can see).
 *   prefetch.global.L2 [address]; */
static __device__ __forceinline__ void prefetch_global_l2(const void* address) {
  asm volatile("prefetch.global.L2 [%0];\n" ::"l"(address));
}

/* D = A·B + C for one warp, m16n8k16, fp32 accumulators. Fragments (g = lane/4, q = lane%4):
 *   a[0] (row g, k 2q..2q+1)   a[1] (row g+8, k 2q..)   a[2] (row g, k 8+2q..)   a[3] (row g+8, k 8+2q..)
 *   b[0] (k 2q..2q+1, col g)   b[1] (k 8+2q.., col g)
 *   d[0..1] (row g, cols 2q, 2q+1)   d[2..3] (row g+8, cols 2q, 2q+1)
 * mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {d0..d3}, {a0..a3}, {b0, b1}, {d0..d3}; */
static __device__ __forceinline__ void mma_m16n8k16_bf16(float (&d)[4], const uint32_t (&a)[4],
                                                         const uint32_t (&b)[2]) {
#if FC_PTX_HAS_SM80
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  FC_PTX_UNAVAILABLE();
#endif
}

/* mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {d0..d3}, {a0..a3}, {b0, b1}, {d0..d3}; */
static __device__ __forceinline__ void mma_m16n8k16_f16(float (&d)[4], const uint32_t (&a)[4],
                                                        const uint32_t (&b)[2]) {
#if FC_PTX_HAS_SM80
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  FC_PTX_UNAVAILABLE();
#endif
}

#endif
