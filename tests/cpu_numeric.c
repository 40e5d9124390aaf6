/*
 * cpu_numeric.c — the library's software conversions (src/host/numeric.h: fp16, bf16, e4m3
 * to and from fp32, used by the CPU backend) against the test suite's own implementation
 * (oracle.c, written from the format definitions): every fp16/bf16/e4m3 bit pattern decodes
 * to the same value, and fp32 values at and around every rounding midpoint, overflow
 * thresholds, subnormals and a million random values encode to the same (round to nearest
 * even, fp16 overflow to inf, e4m3 saturation to ±448, NaN stays NaN).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "host/numeric.h"
#include "oracle.h"

static int same_value(double a, double b) {
  if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
  return a == b && signbit(a) == signbit(b);
}

static float lib_round(float x, flashc_dtype dtype) {
  switch (dtype) {
    case FLASHC_DTYPE_FP16: return fc_fp16_to_f32(fc_f32_to_fp16(x));
    case FLASHC_DTYPE_BF16: return fc_bf16_to_f32(fc_f32_to_bf16(x));
    case FLASHC_DTYPE_E4M3: return fc_e4m3_to_f32(fc_f32_to_e4m3(x));
    default: return x;
  }
}

static int check_encode(flashc_dtype dtype, float x, int* reported) {
  double expected = test_round((double)x, dtype);
  double got = lib_round(x, dtype);
  if (same_value(expected, got)) return 1;
  if ((*reported)++ < 5)
    printf("  %s: %.9g (0x%08x) rounds to %.9g, expected %.9g\n", test_dtype_name(dtype), (double)x,
           fc_f32_bits(x), got, expected);
  return 0;
}

static void check_format(flashc_dtype dtype, test_rng* rng) {
  int bits = (int)test_dtype_size(dtype) * 8;
  uint32_t patterns = 1u << bits;
  long decode_bad = 0, encode_bad = 0, encode_checked = 0;
  int reported = 0;
  for (uint32_t pattern = 0; pattern < patterns; ++pattern) {
    uint16_t p16 = (uint16_t)pattern;
    uint8_t p8 = (uint8_t)pattern;
    const void* base = bits == 16 ? (const void*)&p16 : (const void*)&p8;
    double expected = test_load(base, 0, dtype);
    double got = fc_load_f32(base, 0, dtype);
    if (!same_value(expected, got)) {
      if (reported++ < 5)
        printf("  %s: pattern 0x%x decodes to %.9g, expected %.9g\n", test_dtype_name(dtype), pattern, got, expected);
      ++decode_bad;
    }
    /* round trip of representable values, and the midpoints to the next pattern */
    if (!isfinite(expected)) continue;
    encode_checked++;
    encode_bad += !check_encode(dtype, (float)expected, &reported);
    uint32_t next_pattern = pattern + 1;
    if (next_pattern >= patterns) continue;
    uint16_t n16 = (uint16_t)next_pattern;
    uint8_t n8 = (uint8_t)next_pattern;
    double next = test_load(bits == 16 ? (const void*)&n16 : (const void*)&n8, 0, dtype);
    if (!isfinite(next) || signbit(next) != signbit(expected)) {
      /* the overflow threshold: half a unit in the last place above the largest value */
      if (fabs(expected) > 1.0) {
        int exponent;
        frexp(fabs(expected), &exponent);
        double half_ulp = ldexp(test_unit_roundoff(dtype), exponent - 1);
        float probe = (float)(expected + copysign(half_ulp, expected));
        encode_checked += 3;
        encode_bad += !check_encode(dtype, probe, &reported);
        encode_bad += !check_encode(dtype, nextafterf(probe, 0.0f), &reported);
        encode_bad += !check_encode(dtype, nextafterf(probe, probe * 2.0f), &reported);
      }
      continue;
    }
    float mid = (float)((expected + next) / 2.0);
    encode_checked += 3;
    encode_bad += !check_encode(dtype, mid, &reported);
    encode_bad += !check_encode(dtype, nextafterf(mid, INFINITY), &reported);
    encode_bad += !check_encode(dtype, nextafterf(mid, -INFINITY), &reported);
  }
  /* specials and random values over the whole fp32 range */
  const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 65504.0f, 65519.0f, 65520.0f, 1e10f,
                            448.0f, 464.0f, 479.0f, 480.0f, 1e-10f, -1e-10f, 1e-45f, 3.4e38f, -3.4e38f};
  for (size_t i = 0; i < sizeof specials / sizeof specials[0]; ++i, ++encode_checked)
    encode_bad += !check_encode(dtype, specials[i], &reported);
  for (int i = 0; i < 1000000; ++i, ++encode_checked) {
    uint32_t u = (uint32_t)test_rng_next(rng);
    float x = fc_bits_f32(u);
    if (i % 2) x = (float)(test_rng_normal(rng) * ldexp(1.0, test_rng_int(rng, -30, 20)));
    encode_bad += !check_encode(dtype, x, &reported);
  }
  test_case_result(decode_bad == 0 && encode_bad == 0,
                   "numeric %s: %u patterns decoded (%ld wrong), %ld encodings (%ld wrong)",
                   test_dtype_name(dtype), patterns, decode_bad, encode_checked, encode_bad);
}

int main(void) {
  uint64_t seed = test_seed();
  test_rng rng = test_rng_make(seed, 1);
  check_format(FLASHC_DTYPE_FP16, &rng);
  check_format(FLASHC_DTYPE_BF16, &rng);
  check_format(FLASHC_DTYPE_E4M3, &rng);
  /* fp32 storage is the identity */
  float x = 1.2345678f;
  test_case_result(fc_load_f32(&x, 0, FLASHC_DTYPE_FP32) == x, "numeric fp32 load");
  return test_summary();
}
