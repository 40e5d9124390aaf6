/*
 * ptx_arch.cuh — which PTX instructions the current compilation pass may emit.
 *
 * Every wrapper in src/kernels/common/ptx_*.cuh guards its inline assembly with one of the
 * FC_PTX_HAS_* switches below. A translation unit compiled for an older target (the portable
 * sm_80 path) still includes the headers and compiles; a wrapper it calls anyway for an
 * instruction the target lacks traps at run time (FC_PTX_UNAVAILABLE), so the mistake is
 * loud instead of silent. The host compilation pass (no __CUDA_ARCH__) sees empty bodies;
 * they are never executed there.
 *
 *   FC_PTX_HAS_SM75   ldmatrix
 *   FC_PTX_HAS_SM80   cp.async, mma.sync m16n8k16, cvt to bf16x2, mbarrier init/arrive
 *   FC_PTX_HAS_SM89   cvt to e4m3x2
 *   FC_PTX_HAS_SM90   TMA (cp.async.bulk*), mbarrier try_wait / expect_tx, clusters, mapa,
 *                     stmatrix, elect.sync, fence.proxy.async, griddepcontrol
 *   FC_PTX_HAS_SM90A  wgmma, setmaxnreg, TMA multicast: only the arch-specific sm_90a target
 *                     (-gencode arch=compute_90a,code=sm_90a) defines __CUDA_ARCH_FEAT_SM90_ALL.
 */
#ifndef FLASHC_KERNELS_COMMON_PTX_ARCH_CUH
#define FLASHC_KERNELS_COMMON_PTX_ARCH_CUH

#include <stdint.h>

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
#define FC_PTX_HAS_SM75 1
#else
#define FC_PTX_HAS_SM75 0
#endif

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define FC_PTX_HAS_SM80 1
#else
#define FC_PTX_HAS_SM80 0
#endif

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
#define FC_PTX_HAS_SM89 1
#else
#define FC_PTX_HAS_SM89 0
#endif

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define FC_PTX_HAS_SM90 1
#else
#define FC_PTX_HAS_SM90 0
#endif

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define FC_PTX_HAS_SM90A 1
#else
#define FC_PTX_HAS_SM90A 0
#endif

/* The body of a wrapper whose instruction the current device target does not have. */
#if defined(__CUDA_ARCH__)
#define FC_PTX_UNAVAILABLE() __trap()
#else
#define FC_PTX_UNAVAILABLE() ((void)0)
#endif

/* 32-bit shared-state-space address of a generic pointer into this CTA's shared memory:
 * the form every `[addr]` operand of a .shared::cta / .shared::cluster instruction takes.
 * Emits: cvta.to.shared.u64 (folded by the compiler when the pointer is known shared). */
static __device__ __forceinline__ uint32_t smem_u32(const void* pointer) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(pointer));
}

#endif
