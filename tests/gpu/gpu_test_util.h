/*
 * gpu_test_util.h — what the kernel-level GPU tests share: a CUDA call check that ends the
 * program with the call, the place and the runtime's message (test_fatal), and a host-to-device
 * copy into a fresh allocation.
 */
#ifndef FLASHC_TESTS_GPU_TEST_UTIL_H
#define FLASHC_TESTS_GPU_TEST_UTIL_H

#include <stddef.h>

#include <cuda_runtime.h>

#include "oracle.h"

#define CUDA_CHECK(call)                                                                                 \
  do {                                                                                                   \
    cudaError_t e_ = (call);                                                                             \
    if (e_ != cudaSuccess) test_fatal("%s:%d %s: %s", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
  } while (0)

/* A device copy of `bytes` bytes at `host` (a 1-byte allocation for 0 bytes); cudaFree it. */
static inline void* test_device_copy(const void* host, size_t bytes) {
  void* device = NULL;
  CUDA_CHECK(cudaMalloc(&device, bytes ? bytes : 1));
  if (bytes) CUDA_CHECK(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice));
  return device;
}

#endif
