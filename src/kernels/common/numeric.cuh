/*
 * numeric.cuh — device-side element access by runtime dtype (fp32, fp16, bf16, e4m3), with
 * the same rounding as src/host/numeric.h (round to nearest even, e4m3 saturating), for the
 * kernels that handle every dtype through one code path (fallback GEMM, epilogues).
 */
#ifndef FLASHC_KERNELS_COMMON_NUMERIC_CUH
#define FLASHC_KERNELS_COMMON_NUMERIC_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <stdint.h>

#include "flashc.h"

static __device__ __forceinline__ float fc_dev_load(const void* base, int64_t index, flashc_dtype dtype) {
  switch (dtype) {
    case FLASHC_DTYPE_FP32: return static_cast<const float*>(base)[index];
    case FLASHC_DTYPE_FP16: return __half2float(static_cast<const __half*>(base)[index]);
    case FLASHC_DTYPE_BF16: return __bfloat162float(static_cast<const __nv_bfloat16*>(base)[index]);
    case FLASHC_DTYPE_E4M3: return float(static_cast<const __nv_fp8_e4m3*>(base)[index]);
    default: return __int_as_float(0x7fc00000); /* NaN: validation never lets this through */
  }
}

static __device__ __forceinline__ void fc_dev_store(void* base, int64_t index, flashc_dtype dtype, float value) {
  switch (dtype) {
    case FLASHC_DTYPE_FP32: static_cast<float*>(base)[index] = value; break;
    case FLASHC_DTYPE_FP16: static_cast<__half*>(base)[index] = __float2half_rn(value); break;
    case FLASHC_DTYPE_BF16: static_cast<__nv_bfloat16*>(base)[index] = __float2bfloat16_rn(value); break;
    case FLASHC_DTYPE_E4M3: static_cast<__nv_fp8_e4m3*>(base)[index] = __nv_fp8_e4m3(value); break;
    default: break;
  }
}

#endif
