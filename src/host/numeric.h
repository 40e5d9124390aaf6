/*
 * numeric.h — software conversions between fp32 and fp16 / bf16 / e4m3 storage, used by the
 * CPU backend, the reference, the CLI and the tests. Round-to-nearest-even, as the GPU's
 * cvt.rn instructions do; NaN stays NaN; e4m3 saturates to ±448 like cvt.rn.satfinite.
 */
#ifndef FLASHC_HOST_NUMERIC_H
#define FLASHC_HOST_NUMERIC_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "flashc.h"

static inline uint32_t fc_f32_bits(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}

static inline float fc_bits_f32(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

/* ---- bf16: the upper 16 bits of an fp32 ---- */

static inline float fc_bf16_to_f32(uint16_t h) { return fc_bits_f32((uint32_t)h << 16); }

static inline uint16_t fc_f32_to_bf16(float x) {
  uint32_t u = fc_f32_bits(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* quiet NaN */
  uint32_t rounding_bias = 0x7fffu + ((u >> 16) & 1u);                      /* ties to even */
  return (uint16_t)((u + rounding_bias) >> 16);
}

/* ---- fp16: 1 sign, 5 exponent (bias 15), 10 mantissa bits ---- */

static inline float fc_fp16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1fu) return fc_bits_f32(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) { /* zero or subnormal: mantissa · 2^-24 */
    float magnitude = (float)mantissa * 5.9604644775390625e-8f;
    return sign ? -magnitude : magnitude;
  }
  return fc_bits_f32(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

static inline uint16_t fc_f32_to_fp16(float x) {
  uint32_t u = fc_f32_bits(x);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t magnitude = u & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);   /* NaN */
  if (magnitude >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);  /* rounds to >= 65520: inf */
  if (magnitude < 0x38800000u) {                                     /* below 2^-14: subnormal */
    /* Scale into units of 2^-24 and round to nearest even with the FPU (exact for this range). */
    float scaled = fc_bits_f32(magnitude) * 16777216.0f;
    float rounded = nearbyintf(scaled);
    return (uint16_t)(sign | (uint16_t)rounded);
  }
  uint32_t rebased = magnitude - (112u << 23); /* exponent bias 127 -> 15 */
  uint32_t rounding_bias = 0xfffu + ((rebased >> 13) & 1u);
  return (uint16_t)(sign | ((rebased + rounding_bias) >> 13));
}

/* ---- e4m3 (OCP "fn" variant): 1 sign, 4 exponent (bias 7), 3 mantissa; no inf; NaN = 0x7f ---- */

static inline float fc_e4m3_to_f32(uint8_t v) {
  uint32_t sign = v & 0x80u;
  uint32_t exponent = (v >> 3) & 0xfu;
  uint32_t mantissa = v & 0x7u;
  float magnitude;
  if (exponent == 0xfu && mantissa == 0x7u) return NAN;
  if (exponent == 0) magnitude = (float)mantissa * 0.001953125f; /* mantissa · 2^-9 */
  else magnitude = ldexpf(1.0f + (float)mantissa / 8.0f, (int)exponent - 7);
  return sign ? -magnitude : magnitude;
}

#define FC_E4M3_MAX 448.0f

static inline uint8_t fc_f32_to_e4m3(float x) {
  if (isnan(x)) return 0x7f;
  uint8_t sign = signbit(x) ? 0x80u : 0u;
  float a = fabsf(x);
  if (a >= FC_E4M3_MAX) return (uint8_t)(sign | 0x7eu); /* saturate to 448 */
  if (a < 0.015625f) { /* below 2^-6: subnormal steps of 2^-9 */
    float steps = nearbyintf(a * 512.0f);
    return (uint8_t)(sign | (uint8_t)steps); /* 8 steps round up into the first normal: 0x08 */
  }
  int exponent;
  float fraction = frexpf(a, &exponent); /* a = fraction · 2^exponent, fraction in [0.5, 1) */
  /* a = 1.m · 2^(exponent-1); keep 3 mantissa bits with ties to even. */
  float mantissa_steps = nearbyintf((fraction * 2.0f - 1.0f) * 8.0f);
  int biased = exponent - 1 + 7;
  if (mantissa_steps >= 8.0f) {
    mantissa_steps = 0.0f;
    biased += 1;
  }
  uint8_t bits = (uint8_t)((biased << 3) | (int)mantissa_steps);
  if (bits > 0x7eu) bits = 0x7eu;
  return (uint8_t)(sign | bits);
}

/* ---- generic element access by dtype ---- */

static inline float fc_load_f32(const void* base, int64_t index, flashc_dtype dtype) {
  switch (dtype) {
    case FLASHC_DTYPE_FP32: return ((const float*)base)[index];
    case FLASHC_DTYPE_FP16: return fc_fp16_to_f32(((const uint16_t*)base)[index]);
    case FLASHC_DTYPE_BF16: return fc_bf16_to_f32(((const uint16_t*)base)[index]);
    case FLASHC_DTYPE_E4M3: return fc_e4m3_to_f32(((const uint8_t*)base)[index]);
    default: return NAN;
  }
}

static inline void fc_store_f32(void* base, int64_t index, flashc_dtype dtype, float value) {
  switch (dtype) {
    case FLASHC_DTYPE_FP32: ((float*)base)[index] = value; break;
    case FLASHC_DTYPE_FP16: ((uint16_t*)base)[index] = fc_f32_to_fp16(value); break;
    case FLASHC_DTYPE_BF16: ((uint16_t*)base)[index] = fc_f32_to_bf16(value); break;
    case FLASHC_DTYPE_E4M3: ((uint8_t*)base)[index] = fc_f32_to_e4m3(value); break;
    default: break;
  }
}

/* The value x takes once stored in dtype (used for "P rounded to dtype" in references). */
static inline float fc_round_to_dtype(float x, flashc_dtype dtype) {
  switch (dtype) {
    case FLASHC_DTYPE_FP16: return fc_fp16_to_f32(fc_f32_to_fp16(x));
    case FLASHC_DTYPE_BF16: return fc_bf16_to_f32(fc_f32_to_bf16(x));
    case FLASHC_DTYPE_E4M3: return fc_e4m3_to_f32(fc_f32_to_e4m3(x));
    default: return x;
  }
}

#endif /* FLASHC_HOST_NUMERIC_H */
