/*
 * kernel_attributes.cuh — kernel attributes set once per handle (DESIGN §4: the handle caches
 * kernel attributes). cudaFuncSetAttribute(MaxDynamicSharedMemorySize) is needed before the
 * first launch of a kernel that uses more than 48 KB of dynamic shared memory on a device; the
 * launchers used to call it on every launch (a driver call of a few µs on the hot path).
 * Now the handle's fc_kernel_attribute_cache (src/kernels/launch.h) remembers which kernels are
 * done: one bit per instantiation, read with an acquire load, set with a release OR after the
 * call succeeded. Two threads racing on one handle may both set the attribute (harmless, the
 * value is the same); no global state is involved.
 * Kernel ids: Hopper GEMM 0–63, portable GEMM 64–127, attention forward 128–191 (see each
 * launcher).
 * Check: tests/gpu/gpu_gemm.c, gpu_gemm_portable.c and gpu_attn_fwd.c launch every kernel many
 * times per handle.
 */
#ifndef FLASHC_KERNELS_COMMON_KERNEL_ATTRIBUTES_CUH
#define FLASHC_KERNELS_COMMON_KERNEL_ATTRIBUTES_CUH

#include <cuda_runtime.h>

#include "kernels/launch.h"

constexpr int KERNEL_ATTRIBUTE_ID_GEMM_HOPPER_FIRST = 0;
constexpr int KERNEL_ATTRIBUTE_ID_GEMM_PORTABLE_FIRST = 64;
constexpr int KERNEL_ATTRIBUTE_ID_ATTN_FWD_FIRST = 128;
constexpr int KERNEL_ATTRIBUTE_ID_END = 192;
static_assert(KERNEL_ATTRIBUTE_ID_END <= FC_KERNEL_ATTRIBUTE_WORDS * 64, "attribute cache too small");

/* Sets `kernel`'s dynamic shared-memory limit to `bytes` unless this handle already did. */
template <class Kernel>
static cudaError_t set_shared_memory_once(const fc_cuda_context* context, int kernel_id, Kernel kernel,
                                               int bytes) {
  unsigned long long* word = context && context->attributes ? &context->attributes->set[kernel_id / 64] : nullptr;
  const unsigned long long bit = 1ull << (kernel_id % 64);
  if (word && (__atomic_load_n(word, __ATOMIC_ACQUIRE) & bit)) return cudaSuccess;
  const cudaError_t error = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  if (error == cudaSuccess && word) __atomic_fetch_or(word, bit, __ATOMIC_RELEASE);
  return error;
}

#endif
