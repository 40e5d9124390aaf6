/*
 * bench_kernel_util.cuh — what the CUDA micro-benchmarks (mma_rates.cu, pipe_rates.cu,
 * wgmma_rates.cu, attn_loop_rates.cu) share: reproducible operand bits the device writes and
 * the host can recompute, and the device header line they print.
 */
#ifndef FLASHC_BENCH_KERNEL_UTIL_CUH
#define FLASHC_BENCH_KERNEL_UTIL_CUH

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

#include "kernels/common/ptx.cuh"

/* A 32-bit integer hash (lowbias32): the operand bits of word `seed`. */
static __host__ __device__ __forceinline__ uint32_t bench_hash32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

/* 16 of those bits as a value in [−1, 1): scores of K = 128 products stay finite. */
static __host__ __device__ __forceinline__ float bench_unit(uint32_t bits16) {
  return static_cast<float>(bits16 & 0xffffu) / 32768.0f - 1.0f;
}

/* The bf16 pair of word `seed` (low half from the hash's low 16 bits). */
static __device__ __forceinline__ uint32_t bench_random_bf16x2(uint32_t seed) {
  const uint32_t h = bench_hash32(seed);
  return pack_bf16x2(bench_unit(h), bench_unit(h >> 16));
}

/* The SM count of device 0, after printing "# NAME, N SMs; " (the caller ends the line); 0
 * after printing "PROGRAM: no CUDA device" when there is none (the caller exits 77, ctest's skip). */
static int bench_print_device(const char* program) {
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
    printf("%s: no CUDA device\n", program);
    return 0;
  }
  printf("# %s, %d SMs; ", prop.name, prop.multiProcessorCount);
  return prop.multiProcessorCount;
}

#endif
