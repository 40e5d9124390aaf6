/*
 * bench_util.h — what the C benchmark programs share (ab_attn.c, attn_timeline.c): fatal
 * errors with the program's name, CUDA error checks, and uniform 16-bit inputs. Define
 * BENCH_PROGRAM (the name printed before an error) before including it.
 */
#ifndef FLASHC_BENCH_UTIL_H
#define FLASHC_BENCH_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#ifndef BENCH_PROGRAM
#error "define BENCH_PROGRAM before including bench_util.h"
#endif

static void die(const char* what, const char* detail) {
  fprintf(stderr, BENCH_PROGRAM ": %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
  exit(1);
}

static void check_cuda(cudaError_t error, const char* what) {
  if (error != cudaSuccess) die(what, cudaGetErrorString(error));
}

/* Uniform values in [-1, 1) as bf16 or fp16 bits, reproducible per seed (a 64-bit LCG); both
 * conversions truncate, which is all a timing needs. */
static void fill_random(uint16_t* data, size_t count, int bf16, uint64_t seed) {
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < count; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const float value = (float)((state >> 40) & 0xFFFFFF) / 8388608.0f - 1.0f;
    uint32_t bits;
    memcpy(&bits, &value, 4);
    if (bf16) {
      data[i] = (uint16_t)(bits >> 16);
    } else { /* sign, exponent and 10 mantissa bits of a value in [-1, 1) */
      const uint32_t sign = (bits >> 16) & 0x8000u;
      const int exponent = (int)((bits >> 23) & 0xFF) - 127 + 15;
      data[i] = exponent <= 0 ? (uint16_t)sign
                              : (uint16_t)(sign | ((uint32_t)exponent << 10) | ((bits >> 13) & 0x3FF));
    }
  }
}

#endif
