/*
 * fast_divmod.cuh — dividing non-negative 32-bit ints below 2^31 by a divisor fixed for a whole
 * launch: one multiply-high, one add and one shift instead of the ~20 instructions (and a
 * branch) an integer division compiles to.
 *
 * The method (Granlund & Montgomery, "Division by invariant integers using multiplication",
 * 1994, §4): for a divisor d ≥ 1 let l = ⌈log2 d⌉ and m = ⌊2^32 · (2^l − d) / d⌋ + 1 (below 2^32).
 * With the 33-bit multiplier 2^32 + m, ⌊n / d⌋ = ⌊(2^32 + m) · n / 2^(32 + l)⌋ for every n < 2^32,
 * and that is (umulhi(m, n) + n) >> l: umulhi(m, n) + n is the integer part of the product's top
 * 33 bits, and a fraction below one cannot move a floor of an integer. The sum stays within 32
 * bits while n < 2^31 (umulhi(m, n) ≤ n), which callers guarantee.
 * Host and device share the arithmetic, so host tests check exactly what the kernels compute.
 * Check: tests/cpu_gemm_tile_order.cu (every divisor 1 … 4096 and large ones, edge and random
 * dividends, against the / operator).
 */
#ifndef FLASHC_KERNELS_COMMON_FAST_DIVMOD_CUH
#define FLASHC_KERNELS_COMMON_FAST_DIVMOD_CUH

#include <stdint.h>

struct fc_fast_divisor {
  uint32_t multiplier; /* m above */
  uint32_t shift;      /* l above */
  int divisor;         /* d, for the remainder */
};

/* The divisor d (taken as 1 below 1, so that an empty grid's scheduler stays defined). */
static inline __host__ fc_fast_divisor fc_fast_divisor_make(int d) {
  if (d < 1) d = 1;
  uint32_t l = 0;
  while ((uint64_t(1) << l) < static_cast<uint64_t>(d)) ++l;
  const uint64_t m = ((uint64_t(1) << 32) * ((uint64_t(1) << l) - static_cast<uint64_t>(d))) / static_cast<uint64_t>(d) + 1;
  fc_fast_divisor result;
  result.multiplier = static_cast<uint32_t>(m);
  result.shift = l;
  result.divisor = d;
  return result;
}

/* ⌊n / d⌋ for 0 ≤ n < 2^31. */
static __host__ __device__ __forceinline__ int fc_fast_divide(int n, const fc_fast_divisor& d) {
  const uint32_t u = static_cast<uint32_t>(n);
#ifdef __CUDA_ARCH__
  const uint32_t high = __umulhi(u, d.multiplier);
#else
  const uint32_t high = static_cast<uint32_t>((static_cast<uint64_t>(u) * d.multiplier) >> 32);
#endif
  return static_cast<int>((high + u) >> d.shift);
}

#endif
