/*
 * cpu_gemm_tile_order.cu — the Hopper GEMM's tile decode (gemm_hopper_tile_at in
 * src/kernels/gemm/gemm_hopper_scheduler.cuh) and the fast divisions it can use
 * (src/kernels/common/fast_divmod.cuh), run on the host:
 *   - fc_fast_divide equals the / operator for every divisor 1 … 4096, for large divisors up
 *     to 2^31 − 1, on edge dividends (0, multiples of d and their neighbours, 2^31 − 1) and
 *     random ones below 2^31;
 *   - over random grids (tiles_m, tiles_n, batches, group rows 1 … 40, clamped as the launcher
 *     clamps them), the decode with fast divisions (GEMM_HOPPER_FAST_DIVMOD, on in this file)
 *     gives every linear tile the coordinates of the reference decode by integer division (the
 *     kernels' default, written out here), and the decode is a bijection onto the grid: each
 *     (batch, tile_m, tile_n) once, so the scheduler computes every output tile exactly once.
 * Runs without a GPU (built with nvcc because the headers are CUDA C++).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#define GEMM_HOPPER_FAST_DIVMOD 1
#include "kernels/gemm/gemm_hopper_scheduler.cuh"
extern "C" {
#include "oracle.h"
}

/* The reference: the decode by integer division (the kernels' default build). */
static gemm_hopper_tile_coord reference_tile_at(const gemm_hopper_scheduler& s, int linear) {
  gemm_hopper_tile_coord coord;
  coord.batch = linear / s.tiles_per_batch;
  const int local = linear - coord.batch * s.tiles_per_batch;
  const int tiles_per_group = s.group_m * s.tiles_n;
  const int group = local / tiles_per_group;
  const int first_m = group * s.group_m;
  const int rows_in_group = std::min(s.tiles_m - first_m, s.group_m);
  const int in_group = local - group * tiles_per_group;
  coord.tile_m = first_m + in_group % rows_in_group;
  coord.tile_n = in_group / rows_in_group;
  return coord;
}

static int divides_like_the_operator(int n, int d) {
  const fc_fast_divisor f = fc_fast_divisor_make(d);
  return fc_fast_divide(n, f) == n / d;
}

/* Returns the number of failures (and prints the first few). */
static int check_divisions(test_rng* rng) {
  int failures = 0;
  long long checked = 0;
  std::vector<int> divisors;
  for (int d = 1; d <= 4096; ++d) divisors.push_back(d);
  for (int shift = 12; shift <= 30; ++shift) {
    const int p = 1 << shift;
    divisors.push_back(p - 1), divisors.push_back(p), divisors.push_back(p + 1);
  }
  divisors.push_back(0x7fffffff);
  for (int i = 0; i < 2000; ++i) divisors.push_back(1 + (int)(test_rng_next(rng) % 0x7fffffffu));
  for (int d : divisors) {
    std::vector<int> dividends = {0, 1, d - 1, d, 0x7fffffff, 0x7ffffffe};
    for (int q : {1, 2, 3, 7, 1000, 65535}) {
      const long long base = (long long)q * d;
      for (long long n : {base - 1, base, base + 1})
        if (n >= 0 && n <= 0x7fffffff) dividends.push_back((int)n);
    }
    for (int i = 0; i < 64; ++i) dividends.push_back((int)(test_rng_next(rng) % 0x80000000u));
    for (int n : dividends) {
      if (n < 0) continue;
      ++checked;
      if (!divides_like_the_operator(n, d)) {
        if (failures++ < 5) printf("FAIL fast division %d / %d: %d, want %d\n", n, d, fc_fast_divide(n, fc_fast_divisor_make(d)), n / d);
      }
    }
  }
  printf("%-4s fast division: %zu divisors, %lld dividends\n", failures ? "FAIL" : "ok", divisors.size(), checked);
  return failures;
}

static int check_grid(int tiles_m, int tiles_n, int batches, int group_m) {
  gemm_hopper_scheduler s;
  memset(&s, 0, sizeof s);
  s.tiles_m = tiles_m;
  s.tiles_n = tiles_n;
  s.tiles_per_batch = tiles_m * tiles_n;
  s.tile_count = s.tiles_per_batch * batches;
  s.group_m = std::min(group_m, tiles_m); /* as plan_launch clamps it */
  gemm_hopper_scheduler_set_divisors(s);
  std::vector<char> seen((size_t)s.tile_count, 0);
  for (int linear = 0; linear < s.tile_count; ++linear) {
    const gemm_hopper_tile_coord fast = gemm_hopper_tile_at(s, linear), want = reference_tile_at(s, linear);
    if (fast.batch != want.batch || fast.tile_m != want.tile_m || fast.tile_n != want.tile_n) {
      printf("FAIL grid %d x %d x %d, group %d: tile %d decodes to (%d, %d, %d), want (%d, %d, %d)\n", tiles_m,
             tiles_n, batches, s.group_m, linear, fast.batch, fast.tile_m, fast.tile_n, want.batch, want.tile_m,
             want.tile_n);
      return 1;
    }
    if (fast.batch < 0 || fast.batch >= batches || fast.tile_m < 0 || fast.tile_m >= tiles_m || fast.tile_n < 0 ||
        fast.tile_n >= tiles_n) {
      printf("FAIL grid %d x %d x %d, group %d: tile %d decodes outside the grid\n", tiles_m, tiles_n, batches,
             s.group_m, linear);
      return 1;
    }
    char& mark = seen[((size_t)fast.batch * tiles_m + fast.tile_m) * tiles_n + fast.tile_n];
    if (mark) {
      printf("FAIL grid %d x %d x %d, group %d: tile %d repeats a tile\n", tiles_m, tiles_n, batches, s.group_m, linear);
      return 1;
    }
    mark = 1;
  }
  return 0; /* tile_count distinct in-grid tiles of tile_count: every tile once */
}

int main(void) {
  const uint64_t seed = test_seed();
  test_rng rng = test_rng_make(seed, 0);
  const int division_failed = check_divisions(&rng) ? 1 : 0;
  int grids = 0, grid_failures = 0;
  /* The sweep's own grids (128 × 256 tiles; 128 × 128 and 128 × 144 for e4m3) and random ones. */
  static const int fixed[][4] = {{16, 8, 1, 8},  {32, 16, 1, 8},   {64, 32, 1, 8},  {32, 56, 1, 8},   {64, 112, 1, 16},
                                 {128, 16, 1, 8}, {32, 32, 1, 8},  {64, 57, 1, 16}, {3, 3, 50, 8},    {1, 1, 1, 8},
                                 {7, 5, 3, 2},    {13, 11, 2, 3},  {9, 4, 1, 1},    {40, 2, 1, 40}};
  for (const auto& g : fixed) {
    ++grids;
    grid_failures += check_grid(g[0], g[1], g[2], g[3]);
  }
  for (int i = 0; i < 400; ++i) {
    const int tiles_m = test_rng_int(&rng, 1, 70), tiles_n = test_rng_int(&rng, 1, 70);
    const int batches = test_rng_int(&rng, 1, 4), group_m = test_rng_int(&rng, 1, 40);
    ++grids;
    grid_failures += check_grid(tiles_m, tiles_n, batches, group_m);
  }
  printf("%-4s tile decode: %d grids, %d failed\n", grid_failures ? "FAIL" : "ok", grids, grid_failures);
  const int failed = division_failed + (grid_failures ? 1 : 0);
  printf("cpu_gemm_tile_order: 2 checks, %d failed (seed %llu)\n", failed, (unsigned long long)seed);
  return failed ? 1 : 0;
}
