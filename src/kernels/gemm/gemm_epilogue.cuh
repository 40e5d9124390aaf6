/*
 * gemm_epilogue.cuh — what every GEMM kernel's epilogue shares: the per-element formula
 *   x = alpha · scale_a · scale_b · acc + beta · C + bias,  D = act(x)
 * (flashc_gemm_params in include/flashc.h; kernels read the scales once, they are device
 * scalars, and fold them into one `acc_scale`), and element access to C, D and bias in the
 * output dtype `Out` (a flashc_dtype: FP32, FP16 or BF16): loads of one or four consecutive
 * elements, stores of one, two or four, the wider forms on 2- or 4-element aligned addresses.
 */
#ifndef FLASHC_KERNELS_GEMM_EPILOGUE_CUH
#define FLASHC_KERNELS_GEMM_EPILOGUE_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include <type_traits>

#include "flashc.h"
#include "kernels/common/ptx_misc.cuh" /* pack_f16x2, pack_bf16x2 */

/* GELU, tanh approximation: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), as cuBLASLt's epilogue. */
#define FC_GELU_CUBIC_COEFFICIENT 0.044715f
#define FC_SQRT_2_OVER_PI 0.7978845608028654f /* sqrt(2 / pi) */

static __device__ __forceinline__ float fc_gemm_activation(float x, flashc_activation activation) {
  switch (activation) {
    case FLASHC_ACTIVATION_RELU: return fmaxf(x, 0.0f);
    case FLASHC_ACTIVATION_GELU: {
      float inner = FC_SQRT_2_OVER_PI * (x + FC_GELU_CUBIC_COEFFICIENT * x * x * x);
      return 0.5f * x * (1.0f + tanhf(inner));
    }
    default: return x;
  }
}

/* GELU (tanh form) as x·σ(2u) = x / (1 + e^(−2u)), u = √(2/π)·(x + 0.044715·x³) — the same
 * function — with two MUFU operations (ex2, rcp) instead of the accurate tanhf's branches. The
 * exponent in base 2 is one polynomial, t = −2·log2(e)·u = x·(A + B·x²): three FMA-pipe
 * operations, and no subnormal fix-up around the ex2 (t < −126 gives 2^t = 0 and GELU = x, its
 * limit) — 7 operations per element where __expf's form took 13 (ncu, 29th session: GELU's
 * arithmetic was a third of the fused epilogue's samples). Its error (~1e-6 relative, both
 * tails included: no 1 + tanh cancellation) is far below the rounding of a 16-bit output, so
 * the 16-bit outputs use it; fp32 outputs keep tanhf. */
static __device__ __forceinline__ float fc_gemm_gelu_fast(float x) {
  constexpr float A = -2.0f * 1.4426950408889634f * FC_SQRT_2_OVER_PI; /* −2·log2(e)·√(2/π) */
  constexpr float B = A * FC_GELU_CUBIC_COEFFICIENT;
  const float t = x * fmaf(B, x * x, A);
  return __fdividef(x, 1.0f + exp2_approx_ftz(t));
}

/* The same GELU in __expf's form (13 operations per element). The portable kernels keep it: in
 * the sm_80 A/B K-major 128 × 256 kernel, at 255 registers, the base-2 form above made ptxas
 * spill 4 bytes. */
static __device__ __forceinline__ float fc_gemm_gelu_fast_expf(float x) {
  const float u = FC_SQRT_2_OVER_PI * (x + FC_GELU_CUBIC_COEFFICIENT * x * x * x);
  return __fdividef(x, 1.0f + __expf(-2.0f * u));
}

/* The activation for output dtype `Out` (16-bit outputs: GELU in the base-2 form, or in __expf's
 * with Base2Gelu = false). */
template <int Out, bool Base2Gelu = true>
static __device__ __forceinline__ float fc_gemm_activation_out(float x, flashc_activation activation) {
  if constexpr (Out != FLASHC_DTYPE_FP32)
    if (activation == FLASHC_ACTIVATION_GELU) return Base2Gelu ? fc_gemm_gelu_fast(x) : fc_gemm_gelu_fast_expf(x);
  return fc_gemm_activation(x, activation);
}

template <int Out>
static __device__ __forceinline__ float gemm_load_one(const void* base, int64_t index) {
  if constexpr (Out == FLASHC_DTYPE_FP32) return static_cast<const float*>(base)[index];
  else if constexpr (Out == FLASHC_DTYPE_FP16) return __half2float(static_cast<const __half*>(base)[index]);
  else return __bfloat162float(static_cast<const __nv_bfloat16*>(base)[index]);
}

template <int Out>
static __device__ __forceinline__ void gemm_store_pair(void* base, int64_t index, float x0, float x1) {
  if constexpr (Out == FLASHC_DTYPE_FP32) {
    *reinterpret_cast<float2*>(static_cast<float*>(base) + index) = make_float2(x0, x1);
  } else if constexpr (Out == FLASHC_DTYPE_FP16) {
    *reinterpret_cast<uint32_t*>(static_cast<__half*>(base) + index) = pack_f16x2(x0, x1);
  } else {
    *reinterpret_cast<uint32_t*>(static_cast<__nv_bfloat16*>(base) + index) = pack_bf16x2(x0, x1);
  }
}

template <int Out>
static __device__ __forceinline__ void gemm_store_one(void* base, int64_t index, float x) {
  if constexpr (Out == FLASHC_DTYPE_FP32) static_cast<float*>(base)[index] = x;
  else if constexpr (Out == FLASHC_DTYPE_FP16) static_cast<__half*>(base)[index] = __float2half_rn(x);
  else static_cast<__nv_bfloat16*>(base)[index] = __float2bfloat16_rn(x);
}

/* Four consecutive elements (4-element aligned), as loaded (the words of Out's dtype) and as
 * floats; gemm_load_quad = both steps. The raw form lets a caller have several loads in flight
 * in half the registers for 16-bit outputs. */
template <int Out>
using gemm_raw_quad = typename std::conditional<Out == FLASHC_DTYPE_FP32, float4, uint2>::type;

template <int Out>
static __device__ __forceinline__ gemm_raw_quad<Out> gemm_load_quad_raw(const void* base, int64_t index) {
  if constexpr (Out == FLASHC_DTYPE_FP32) return *reinterpret_cast<const float4*>(static_cast<const float*>(base) + index);
  else return *reinterpret_cast<const uint2*>(static_cast<const uint16_t*>(base) + index);
}

/* Two consecutive 16-bit elements of dtype Out (FP16 or BF16) as loaded in one 32-bit word. */
template <int Out>
static __device__ __forceinline__ float2 gemm_pair_of_raw(uint32_t raw) {
  static_assert(Out != FLASHC_DTYPE_FP32, "a 32-bit word holds a pair of 16-bit elements");
  if constexpr (Out == FLASHC_DTYPE_FP16) return __half22float2(*reinterpret_cast<const __half2*>(&raw));
  else return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&raw));
}

template <int Out>
static __device__ __forceinline__ float4 gemm_quad_of_raw(const gemm_raw_quad<Out>& raw) {
  if constexpr (Out == FLASHC_DTYPE_FP32) {
    return raw;
  } else {
    const float2 low = gemm_pair_of_raw<Out>(raw.x), high = gemm_pair_of_raw<Out>(raw.y);
    return make_float4(low.x, low.y, high.x, high.y);
  }
}

template <int Out>
static __device__ __forceinline__ float4 gemm_load_quad(const void* base, int64_t index) {
  return gemm_quad_of_raw<Out>(gemm_load_quad_raw<Out>(base, index));
}

template <int Out>
static __device__ __forceinline__ void gemm_store_quad(void* base, int64_t index, float4 x) {
  if constexpr (Out == FLASHC_DTYPE_FP32) {
    *reinterpret_cast<float4*>(static_cast<float*>(base) + index) = x;
  } else if constexpr (Out == FLASHC_DTYPE_FP16) {
    *reinterpret_cast<uint2*>(static_cast<uint16_t*>(base) + index) = make_uint2(pack_f16x2(x.x, x.y), pack_f16x2(x.z, x.w));
  } else {
    *reinterpret_cast<uint2*>(static_cast<uint16_t*>(base) + index) =
        make_uint2(pack_bf16x2(x.x, x.y), pack_bf16x2(x.z, x.w));
  }
}

#endif
