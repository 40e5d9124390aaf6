/*
 * ptx_wgmma.cuh — warpgroup matrix multiply-accumulate (sm_90a).
 *
 * One warpgroup (4 consecutive warps starting at a warp index divisible by 4, 128 threads)
 * computes D(64×N, fp32) {+}= A(64×K) · B(K×N) per instruction: K = 16 for fp16/bf16,
 * 32 for e4m3. The multiply functions are in ptx_wgmma_ops.cuh (generated): one overload per
 * N = 8, 16, ..., 256, chosen by the accumulator array you pass:
 *
 *   wgmma_ss_bf16<TransA, TransB>(float (&acc)[N/2], desc_a, desc_b, accumulate)
 *   wgmma_ss_f16 <TransA, TransB>(acc, desc_a, desc_b, accumulate)
 *   wgmma_rs_bf16<TransB>(acc, const uint32_t (&a)[4], desc_b, accumulate)     A from registers
 *   wgmma_rs_f16 <TransB>(acc, a, desc_b, accumulate)
 *   wgmma_ss_e4m3(acc, desc_a, desc_b, accumulate)                              both K-major
 *   wgmma_rs_e4m3(acc, a, desc_b, accumulate)
 *
 * desc_a / desc_b: shared-memory matrix descriptors (ptx_desc.cuh). Trans = 0: the operand is
 * K-major in shared memory; Trans = 1: MN-major (16-bit types only). accumulate = 0 makes the
 * instruction write A·B (the first k-step: no need to zero the accumulators), 1 adds to D.
 *
 * PROTOCOL (per batch of multiplies, all 128 threads, warp-uniform control flow):
 *   wgmma_fence();                    before the first wgmma that reads registers (accumulators
 *                                     or RS A fragments) written by ordinary instructions
 *   wgmma_*(...); ...                 any number, e.g. one per k-step
 *   wgmma_commit_group();             closes the batch
 *   wgmma_wait_group<P>();            until at most P batches are pending; accumulators of a
 *                                     finished batch may then be read, its smem reused
 * Between issue and wait the accumulator registers belong to the tensor core: do not touch
 * them. wgmma_fence_operand(acc) before and after the batch keeps the compiler from moving
 * ordinary accesses into that window (ptxas otherwise serializes the wgmmas and warns, C7510).
 *
 * KEEPING THE PIPELINE ASYNCHRONOUS (what ptxas -v showed while building the unit tests):
 *   - no function call (printf, a non-inlined helper) while accumulators are live between the
 *     fence and the wait: C7510 "wgmma ... serialized ... crossing function boundary". Note
 *     the compiler may hoist accumulator initialization above a preceding wait loop.
 *   - unroll the k-steps of a stage with a compile-time count, and compute every descriptor
 *     before wgmma_fence(): any branch between the wgmmas (a runtime trip count, a select on
 *     a swizzle mode) makes ptxas inject warpgroup.arrive fences (C7519).
 *
 * ACCUMULATOR FRAGMENT (m64nN, fp32, N/2 registers per thread). Thread t of the warpgroup:
 * warp w = t/32 owns rows 16w..16w+15; lane l: g = l/4 (row in the 8-row half), q = l%4.
 *   acc[4j + 0], acc[4j + 1]   row 16w + g,      columns 8j + 2q, 8j + 2q + 1
 *   acc[4j + 2], acc[4j + 3]   row 16w + g + 8,  columns 8j + 2q, 8j + 2q + 1
 * for j = 0 .. N/8 - 1. A row lives in the 4 lanes of a quad (row reductions: shuffles with
 * xor 1 and 2). See wgmma_acc_row / wgmma_acc_col.
 *
 * REGISTER A FRAGMENT (RS forms), per k-step, 4 × b32 per thread, same w, g, q:
 *   16-bit (k16): a[0] row g, k 2q..2q+1    a[1] row g+8, k 2q..2q+1
 *                 a[2] row g, k 8+2q..      a[3] row g+8, k 8+2q..     (low half = lower k)
 *     — the accumulator fragment of columns 16s..16s+15, packed in pairs: see
 *       wgmma_a_from_acc_bf16/_f16 (P of attention straight into P·V).
 *   e4m3 (k32):   a[0] row g, k 4q..4q+3    a[1] row g+8, k 4q..4q+3
 *                 a[2] row g, k 16+4q..     a[3] row g+8, k 16+4q..    (byte 0 = lowest k)
 *     — NOT the accumulator's column order (an fp32 accumulator thread holds columns 2q, 2q+1
 *       of each 8-column chunk): converting P to an fp8 A operand needs a byte permutation
 *       across the quad.
 * Both fragments and every descriptor form in ptx_desc.cuh are verified on an H200 by
 * tests/ptx/gpu_ptx_wgmma.cu.
 *
 * PRECISION: 16-bit products accumulate like fp32 (errors ~1e-7 of Σ|a·b| at K = 64); e4m3
 * accumulation inside one batch is coarser, ~1e-4 of Σ|a·b| at K = 128 on the H200 — an FP8
 * GEMM with long K should add partial accumulators into fp32 registers every few k-tiles.
 */
#ifndef FLASHC_KERNELS_COMMON_PTX_WGMMA_CUH
#define FLASHC_KERNELS_COMMON_PTX_WGMMA_CUH

#include "kernels/common/ptx_arch.cuh"
#include "kernels/common/ptx_misc.cuh"
#include "kernels/common/ptx_wgmma_ops.cuh"

/* Orders prior register and shared-memory accesses of the warpgroup before the following
 * wgmma.mma_async reads them.
 *   wgmma.fence.sync.aligned; */
static __device__ __forceinline__ void wgmma_fence() {
#if FC_PTX_HAS_SM90A
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

/* wgmma.commit_group.sync.aligned; */
static __device__ __forceinline__ void wgmma_commit_group() {
#if FC_PTX_HAS_SM90A
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

/* wgmma.wait_group.sync.aligned Pending; */
template <int Pending>
static __device__ __forceinline__ void wgmma_wait_group() {
  static_assert(Pending >= 0 && Pending <= 7, "wgmma.wait_group takes 0..7");
#if FC_PTX_HAS_SM90A
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(Pending) : "memory");
#else
  FC_PTX_UNAVAILABLE();
#endif
}

/* A compiler-only barrier on each register: emits no instruction (asm volatile "" with a
 * "+f" operand), but pins the accumulators in place around an asynchronous batch. */
template <int Count>
static __device__ __forceinline__ void wgmma_fence_operand(float (&registers)[Count]) {
#pragma unroll
  for (int i = 0; i < Count; ++i) asm volatile("" : "+f"(registers[i])::"memory");
}

template <int Count>
static __device__ __forceinline__ void wgmma_fence_operand(uint32_t (&registers)[Count]) {
#pragma unroll
  for (int i = 0; i < Count; ++i) asm volatile("" : "+r"(registers[i])::"memory");
}

/* Row (0..63) and column of accumulator register `index` held by warpgroup thread
 * `thread` (0..127): the fragment above, as code. */
static __host__ __device__ __forceinline__ constexpr int wgmma_acc_row(int thread, int index) {
  return 16 * (thread / 32) + (thread % 32) / 4 + 8 * ((index >> 1) & 1);
}
static __host__ __device__ __forceinline__ constexpr int wgmma_acc_col(int thread, int index) {
  return 8 * (index / 4) + 2 * (thread % 4) + (index & 1);
}

/* The RS A operand of k-step `Step` (columns 16·Step .. 16·Step+15) from an accumulator laid
 * out as above (P = softmax(S) feeding O += P·V): pairs of fp32 rounded to nearest. */
template <int Step, int Count>
static __device__ __forceinline__ void wgmma_a_from_acc_bf16(uint32_t (&a)[4], const float (&acc)[Count]) {
  static_assert(8 * Step + 7 < Count, "k-step outside the accumulator");
  a[0] = pack_bf16x2(acc[8 * Step + 0], acc[8 * Step + 1]);
  a[1] = pack_bf16x2(acc[8 * Step + 2], acc[8 * Step + 3]);
  a[2] = pack_bf16x2(acc[8 * Step + 4], acc[8 * Step + 5]);
  a[3] = pack_bf16x2(acc[8 * Step + 6], acc[8 * Step + 7]);
}

template <int Step, int Count>
static __device__ __forceinline__ void wgmma_a_from_acc_f16(uint32_t (&a)[4], const float (&acc)[Count]) {
  static_assert(8 * Step + 7 < Count, "k-step outside the accumulator");
  a[0] = pack_f16x2(acc[8 * Step + 0], acc[8 * Step + 1]);
  a[1] = pack_f16x2(acc[8 * Step + 2], acc[8 * Step + 3]);
  a[2] = pack_f16x2(acc[8 * Step + 4], acc[8 * Step + 5]);
  a[3] = pack_f16x2(acc[8 * Step + 6], acc[8 * Step + 7]);
}

#endif
