/*
 * ptx_test_util.cuh — shared by the PTX-layer unit tests (tests/ptx/gpu_ptx_*.cu): the skip
 * rule, CUDA error checks, a seeded RNG, tensor-map construction, a bounded mbarrier wait
 * (a broken barrier traps instead of hanging the test), and per-case reporting.
 */
#ifndef FLASHC_TESTS_PTX_TEST_UTIL_CUH
#define FLASHC_TESTS_PTX_TEST_UTIL_CUH

#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "host/numeric.h"
#include "host/tensor_map.h"
#include "kernels/common/ptx.cuh"

#define PTX_TEST_PASS 0
#define PTX_TEST_FAIL 1
#define PTX_TEST_SKIP 77

/* Test programs may exit: a failed CUDA call usually means a kernel trapped and the context
 * is gone. */
#define CUDA_CHECK(call)                                                                         \
  do {                                                                                           \
    cudaError_t cuda_check_error_ = (call);                                                      \
    if (cuda_check_error_ != cudaSuccess) {                                                      \
      fprintf(stderr, "FAIL %s:%d: %s: %s (%s)\n", __FILE__, __LINE__, #call,                    \
              cudaGetErrorString(cuda_check_error_), cudaGetErrorName(cuda_check_error_));       \
      exit(PTX_TEST_FAIL);                                                                       \
    }                                                                                            \
  } while (0)

#define FLASHC_CHECK(call)                                                                       \
  do {                                                                                           \
    flashc_status flashc_check_status_ = (call);                                                 \
    if (flashc_check_status_ != FLASHC_STATUS_SUCCESS) {                                         \
      fprintf(stderr, "FAIL %s:%d: %s: %s: %s\n", __FILE__, __LINE__, #call,                     \
              flashc_status_name(flashc_check_status_), flashc_last_error());                    \
      exit(PTX_TEST_FAIL);                                                                       \
    }                                                                                            \
  } while (0)

/* 0 when an sm_90 GPU is present; otherwise prints why and returns PTX_TEST_SKIP. */
static int ptx_test_require_sm90(const char* program) {
  int count = 0;
  cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess || count == 0) {
    printf("SKIP %s: no CUDA device (%s)\n", program, error != cudaSuccess ? cudaGetErrorString(error) : "0 devices");
    return PTX_TEST_SKIP;
  }
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess || prop.major != 9 || prop.minor != 0) {
    printf("SKIP %s: device 0 is not compute capability 9.0 (sm_90a binaries)\n", program);
    return PTX_TEST_SKIP;
  }
  printf("%s on %s (%d SMs)\n", program, prop.name, prop.multiProcessorCount);
  return 0;
}

/* ---- seeded RNG: FLASHC_TEST_SEED or time/pid; the seed is printed so a run can be replayed ---- */

typedef struct ptx_rng {
  uint64_t state;
} ptx_rng;

static uint64_t ptx_test_seed(void) {
  const char* fixed = getenv("FLASHC_TEST_SEED");
  uint64_t seed = fixed ? strtoull(fixed, NULL, 0)
                        : ((uint64_t)time(NULL) * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)getpid() << 17) ^ (uint64_t)clock();
  printf("seed = %llu (FLASHC_TEST_SEED=%llu replays this run)\n", (unsigned long long)seed, (unsigned long long)seed);
  return seed;
}

static uint64_t ptx_rng_next(ptx_rng* rng) { /* splitmix64 */
  uint64_t z = (rng->state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static double ptx_rng_uniform(ptx_rng* rng, double lo, double hi) {
  return lo + (hi - lo) * (double)(ptx_rng_next(rng) >> 11) * (1.0 / 9007199254740992.0);
}

/* A random nonzero value of `dtype` (stored bits) in about [-range, range]. */
static uint16_t ptx_random_16bit(ptx_rng* rng, flashc_dtype dtype, double range) {
  for (;;) {
    float x = (float)ptx_rng_uniform(rng, -range, range);
    uint16_t bits = dtype == FLASHC_DTYPE_BF16 ? fc_f32_to_bf16(x) : fc_f32_to_fp16(x);
    float back = dtype == FLASHC_DTYPE_BF16 ? fc_bf16_to_f32(bits) : fc_fp16_to_f32(bits);
    if (back != 0.0f) return bits;
  }
}

static uint8_t ptx_random_e4m3(ptx_rng* rng, double range) {
  for (;;) {
    uint8_t bits = fc_f32_to_e4m3((float)ptx_rng_uniform(rng, -range, range));
    if (fc_e4m3_to_f32(bits) != 0.0f) return bits;
  }
}

static float ptx_16bit_to_f32(uint16_t bits, flashc_dtype dtype) {
  return dtype == FLASHC_DTYPE_BF16 ? fc_bf16_to_f32(bits) : fc_fp16_to_f32(bits);
}

/* ---- tensor maps ---- */

/* A rank-`rank` map over a tensor with the given dims/strides (elements, innermost first). */
static fc_tensor_map ptx_make_map(const fc_tensor_map_encoder* encoder, flashc_dtype dtype, const void* base, int rank,
                                  const uint64_t* dims, const int64_t* strides, const uint32_t* box,
                                  fc_tensor_map_swizzle swizzle) {
  fc_tensor_map_desc desc;
  fc_tensor_map_desc_init(&desc);
  desc.dtype = dtype;
  desc.rank = rank;
  desc.global_address = base;
  for (int i = 0; i < rank; ++i) {
    desc.global_dims[i] = dims[i];
    desc.global_strides[i] = strides[i];
    desc.box_dims[i] = box[i];
  }
  desc.swizzle = swizzle;
  fc_tensor_map map;
  FLASHC_CHECK(fc_tensor_map_encode_tiled(encoder, &desc, &map));
  return map;
}

/* A 2-D map over a row-major matrix: `cols` contiguous, `rows` rows `pitch` elements apart. */
static fc_tensor_map ptx_make_map_2d(const fc_tensor_map_encoder* encoder, flashc_dtype dtype, const void* base,
                                     uint64_t cols, uint64_t rows, int64_t pitch, uint32_t box_cols, uint32_t box_rows,
                                     fc_tensor_map_swizzle swizzle) {
  const uint64_t dims[2] = {cols, rows};
  const int64_t strides[2] = {1, pitch};
  const uint32_t box[2] = {box_cols, box_rows};
  return ptx_make_map(encoder, dtype, base, 2, dims, strides, box, swizzle);
}

/* ---- device helpers ---- */

/* mbarrier_wait_parity with a deadline: a barrier that never completes (wrong byte count,
 * missing arrival) traps after ~2 s of GPU clock instead of hanging the test run (the host
 * then reports the failed launch). No printf here: a call inside a wgmma register window
 * would serialize the wgmmas (ptxas C7510), and the compiler may hoist accumulator setup
 * above this loop. */
static __device__ __forceinline__ void ptx_test_wait(uint64_t* bar, uint32_t parity) {
  const long long start = clock64();
  while (!mbarrier_try_wait_parity(bar, parity)) {
    if (clock64() - start > 4000000000ll) __trap();
  }
}

/* The same with no trap: false after ~2 s. For TMA tests, which record the timeout and end
 * the CTA normally, so the CUDA context survives and later cases still run. */
static __device__ __forceinline__ bool ptx_test_wait_or_timeout(uint64_t* bar, uint32_t parity) {
  const long long start = clock64();
  while (!mbarrier_try_wait_parity(bar, parity)) {
    if (clock64() - start > 4000000000ll) return false;
  }
  return true;
}

/* First 1024-byte aligned address in a dynamic shared buffer (allocate 1024 extra bytes):
 * 128B-swizzled tiles must start on their pattern's 1024-byte boundary. */
static __device__ __forceinline__ uint8_t* ptx_align_1024(uint8_t* raw) {
  uint32_t address = smem_u32(raw);
  return raw + (((address + 1023u) & ~1023u) - address);
}

/* ---- reporting ---- */

typedef struct ptx_report {
  int cases;
  int failed;
} ptx_report;

static void ptx_report_case(ptx_report* report, bool ok, const char* name, const char* detail) {
  report->cases += 1;
  if (!ok) report->failed += 1;
  printf("%s %s%s%s\n", ok ? "PASS" : "FAIL", name, detail && detail[0] ? ": " : "", detail ? detail : "");
  fflush(stdout);
}

static int ptx_report_finish(const ptx_report* report, const char* program) {
  printf("%s: %d cases, %d failed\n", program, report->cases, report->failed);
  return report->failed == 0 ? PTX_TEST_PASS : PTX_TEST_FAIL;
}

#endif
