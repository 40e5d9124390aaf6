/*
 * gpu_attn_combine.c — flashc_attn_combine on a CUDA handle against the CPU backend's combine
 * (src/cpu/attn_combine.c, itself checked against the fp64 reference in cpu_attn_paged_split):
 * random problems with 1–256 splits, head_dim_v from 1 to 520 (several passes of the kernel's
 * 256 columns), fp32/fp16/bf16 outputs, padded strides, both lse_partial layouts (flashc's
 * (split, batch, head, row) and FA3's (split, batch, row, head)), lse optional, splits with
 * lse = −inf and rows whose splits are all −inf (o = 0, lse = −inf exactly). Outputs are
 * poisoned (0xFF) first; every element of the o and lse buffers is checked: written inside
 * the tensor, untouched in the padding.
 * Tolerance: both sides compute o in fp32 as a convex combination of the splits' rows, with
 * different exp/log implementations and summation orders, so |gpu − cpu| ≤ 2^-16 · max|o_s|
 * of the row (fp32 noise is ~2^-22 of that; a wrong weight or column is O(1)), plus one unit
 * in the last place of a 16-bit output (both round the fp32 value; near a rounding boundary
 * they may round apart); lse within 2^-18 · (1 + |lse|).
 *   ./build/tests/gpu/gpu_attn_combine [cases]     (FLASHC_TEST_SEED=n reproduces a run)
 * Exit 77 without a CUDA device.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "flashc.h"
#include "gpu_test_util.h"
#include "oracle.h"


typedef struct combine_case {
  int splits, batch, seqlen, heads, dv;
  flashc_dtype out_dtype;
  int fa3_lse_layout, with_lse, empty_rows;
  double minus_inf_share;
} combine_case;

static int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

static combine_case draw_case(test_rng* rng) {
  static const int split_choices[] = {1, 2, 3, 5, 8, 16, 31, 64, 129, 256};
  static const int dv_choices[] = {1, 3, 8, 32, 40, 64, 96, 128, 192, 256, 257, 384, 520};
  static const int dtypes[] = {FLASHC_DTYPE_FP32, FLASHC_DTYPE_FP16, FLASHC_DTYPE_BF16};
  combine_case c;
  c.splits = test_rng_uniform(rng) < 0.7 ? test_rng_pick(rng, split_choices, 10) : test_rng_int(rng, 1, 256);
  c.batch = test_rng_int(rng, 1, 3);
  c.seqlen = test_rng_uniform(rng) < 0.2 ? 1 : test_rng_int(rng, 1, 150);
  c.heads = test_rng_int(rng, 1, 6);
  c.dv = test_rng_pick(rng, dv_choices, 13);
  c.out_dtype = (flashc_dtype)test_rng_pick(rng, dtypes, 3);
  c.fa3_lse_layout = test_rng_int(rng, 0, 1);
  c.with_lse = test_rng_uniform(rng) < 0.8;
  c.empty_rows = test_rng_uniform(rng) < 0.3;
  c.minus_inf_share = test_rng_uniform(rng) < 0.5 ? 0.0 : 0.3 * test_rng_uniform(rng);
  /* keep the fp32 partials under ~64 MB */
  while ((double)c.splits * c.batch * c.seqlen * c.heads * c.dv > 1.6e7 && c.seqlen > 1) c.seqlen = c.seqlen / 2 + 1;
  return c;
}


/* Runs one case on both handles; returns 1 when it passes. */
static int run_case(flashc_handle_t gpu, flashc_handle_t cpu, int index, const combine_case* c, test_rng* rng) {
  const size_t out_size = test_dtype_size(c->out_dtype);
  /* Padded strides (elements): rows of o_partial 16-byte multiples (GPU alignment), of o
   * 16-byte multiples for every out dtype. */
  const int64_t op_head = round_up(c->dv, 4) + 4 * test_rng_int(rng, 0, 2);
  const int64_t op_row = op_head * c->heads + 4 * test_rng_int(rng, 0, 1);
  const int64_t op_batch = op_row * c->seqlen + 4 * test_rng_int(rng, 0, 1);
  const int64_t op_split = op_batch * c->batch + 4 * test_rng_int(rng, 0, 1);
  const int64_t o_head = round_up(c->dv, 8) + 8 * test_rng_int(rng, 0, 1);
  const int64_t o_row = o_head * c->heads + 8 * test_rng_int(rng, 0, 1);
  const int64_t o_batch = o_row * c->seqlen;
  int64_t lp_row, lp_head, lp_batch, lp_split;
  if (c->fa3_lse_layout) { /* (split, batch, row, head) */
    lp_head = 1, lp_row = c->heads + test_rng_int(rng, 0, 2);
    lp_batch = lp_row * c->seqlen, lp_split = lp_batch * c->batch + test_rng_int(rng, 0, 3);
  } else { /* (split, batch, head, row) */
    lp_row = 1, lp_head = c->seqlen + test_rng_int(rng, 0, 2);
    lp_batch = lp_head * c->heads, lp_split = lp_batch * c->batch + test_rng_int(rng, 0, 3);
  }
  const int64_t l_head = c->seqlen + test_rng_int(rng, 0, 2), l_batch = l_head * c->heads + test_rng_int(rng, 0, 2);

  const int64_t op_count = op_split * c->splits, lp_count = lp_split * c->splits;
  const int64_t o_count = o_batch * c->batch, l_count = l_batch * c->batch;
  float* o_partial = test_alloc(sizeof(float) * (size_t)op_count);
  float* lse_partial = test_alloc(sizeof(float) * (size_t)lp_count);
  for (int64_t i = 0; i < op_count; ++i) o_partial[i] = (float)test_rng_normal(rng);
  for (int64_t i = 0; i < lp_count; ++i)
    lse_partial[i] = test_rng_uniform(rng) < c->minus_inf_share ? -INFINITY : (float)(4.0 * test_rng_normal(rng));
  int empty_rows = 0;
  if (c->empty_rows) /* a few rows with every split at −inf */
    for (int r = 0; r < 3; ++r) {
      const int b = test_rng_int(rng, 0, c->batch - 1), row = test_rng_int(rng, 0, c->seqlen - 1),
                h = test_rng_int(rng, 0, c->heads - 1);
      for (int s = 0; s < c->splits; ++s) lse_partial[s * lp_split + b * lp_batch + h * lp_head + row * lp_row] = -INFINITY;
      ++empty_rows;
    }

  unsigned char* o_cpu = test_alloc(out_size * (size_t)o_count);
  unsigned char* o_gpu = test_alloc(out_size * (size_t)o_count);
  float* l_cpu = test_alloc(sizeof(float) * (size_t)l_count);
  float* l_gpu = test_alloc(sizeof(float) * (size_t)l_count);
  test_fill_poison(o_cpu, out_size * (size_t)o_count);
  test_fill_poison(o_gpu, out_size * (size_t)o_count);
  test_fill_poison(l_cpu, sizeof(float) * (size_t)l_count);
  test_fill_poison(l_gpu, sizeof(float) * (size_t)l_count);

  flashc_attn_combine_params params;
  flashc_attn_combine_params_init(&params);
  params.out_dtype = c->out_dtype;
  params.num_splits = c->splits, params.batch = c->batch, params.seqlen = c->seqlen, params.heads = c->heads;
  params.head_dim_v = c->dv;
  params.o_partial_split_stride = op_split, params.o_partial_batch_stride = op_batch;
  params.o_partial_row_stride = op_row, params.o_partial_head_stride = op_head;
  params.lse_partial_split_stride = lp_split, params.lse_partial_batch_stride = lp_batch;
  params.lse_partial_head_stride = lp_head, params.lse_partial_row_stride = lp_row;
  params.o_batch_stride = o_batch, params.o_row_stride = o_row, params.o_head_stride = o_head;
  params.lse_batch_stride = l_batch, params.lse_head_stride = l_head;

  /* CPU */
  params.o_partial = o_partial, params.lse_partial = lse_partial, params.o = o_cpu, params.lse = c->with_lse ? l_cpu : NULL;
  flashc_status status = flashc_attn_combine(cpu, &params, NULL);
  if (status != FLASHC_STATUS_SUCCESS) {
    printf("FAIL combine #%d: CPU backend: %s: %s\n", index, flashc_status_name(status), flashc_last_error());
    return 0;
  }
  /* GPU */
  float* d_op = test_device_copy(o_partial, sizeof(float) * (size_t)op_count);
  float* d_lp = test_device_copy(lse_partial, sizeof(float) * (size_t)lp_count);
  void* d_o = test_device_copy(o_gpu, out_size * (size_t)o_count);
  float* d_l = test_device_copy(l_gpu, sizeof(float) * (size_t)l_count);
  params.o_partial = d_op, params.lse_partial = d_lp, params.o = d_o, params.lse = c->with_lse ? d_l : NULL;
  status = flashc_attn_combine(gpu, &params, NULL);
  if (status != FLASHC_STATUS_SUCCESS) {
    printf("FAIL combine #%d: GPU: %s: %s\n", index, flashc_status_name(status), flashc_last_error());
    return 0;
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaMemcpy(o_gpu, d_o, out_size * (size_t)o_count, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(l_gpu, d_l, sizeof(float) * (size_t)l_count, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaFree(d_op));
  CUDA_CHECK(cudaFree(d_lp));
  CUDA_CHECK(cudaFree(d_o));
  CUDA_CHECK(cudaFree(d_l));

  /* Compare every element: inside the tensor against the CPU, the padding untouched. */
  unsigned char* inside = calloc((size_t)o_count, 1);
  unsigned char* lse_inside = calloc((size_t)l_count, 1);
  if (!inside || !lse_inside) test_fatal("out of host memory");
  const double u_out = c->out_dtype == FLASHC_DTYPE_FP32 ? 0.0 : test_unit_roundoff(c->out_dtype);
  int64_t bad = 0, clobbered = 0;
  double worst_ratio = 0.0;
  char first[256] = "";
  for (int b = 0; b < c->batch; ++b)
    for (int row = 0; row < c->seqlen; ++row)
      for (int h = 0; h < c->heads; ++h) {
        double row_scale = 0.0;
        for (int s = 0; s < c->splits; ++s) {
          if (lse_partial[s * lp_split + b * lp_batch + h * lp_head + row * lp_row] == -INFINITY) continue;
          for (int e = 0; e < c->dv; ++e)
            row_scale = fmax(row_scale, fabs(o_partial[s * op_split + b * op_batch + row * op_row + h * op_head + e]));
        }
        for (int e = 0; e < c->dv; ++e) {
          const int64_t i = b * o_batch + row * o_row + h * o_head + e;
          inside[i] = 1;
          const double want = test_load(o_cpu, i, c->out_dtype), got = test_load(o_gpu, i, c->out_dtype);
          const double tolerance = ldexp(row_scale, -16) + 2.0 * u_out * fabs(want);
          const double error = fabs(got - want);
          const int ok = row_scale == 0.0 ? got == 0.0 : error <= tolerance;
          if (!ok || isnan(got)) {
            if (!bad) snprintf(first, sizeof first, "o[b%d row%d h%d e%d] gpu %.9g cpu %.9g tol %.3g", b, row, h, e, got, want, tolerance);
            ++bad;
          } else if (tolerance > 0 && error / tolerance > worst_ratio) {
            worst_ratio = error / tolerance;
          }
        }
        if (c->with_lse) {
          const int64_t i = b * l_batch + h * l_head + row;
          lse_inside[i] = 1;
          const double want = l_cpu[i], got = l_gpu[i];
          const int ok = isinf(want) ? got == want : fabs(got - want) <= ldexp(1.0 + fabs(want), -18);
          if (!ok) {
            if (!bad) snprintf(first, sizeof first, "lse[b%d h%d row%d] gpu %.9g cpu %.9g", b, h, row, got, want);
            ++bad;
          }
        }
      }
  for (int64_t i = 0; i < o_count; ++i)
    if (!inside[i] && !test_is_poison(o_gpu, i, c->out_dtype)) ++clobbered;
  for (int64_t i = 0; i < l_count; ++i)
    if ((!c->with_lse || !lse_inside[i]) && !test_is_poison(l_gpu, i, FLASHC_DTYPE_FP32)) ++clobbered;

  const int pass = bad == 0 && clobbered == 0;
  printf("%s combine #%d splits %d b%d seqlen %d h%d dv %d %s lse-partial %s%s%s -inf %.2f | worst %.2f of tol%s%s",
         pass ? "PASS" : "FAIL", index, c->splits, c->batch, c->seqlen, c->heads, c->dv, test_dtype_name(c->out_dtype),
         c->fa3_lse_layout ? "(split,batch,row,head)" : "(split,batch,head,row)", c->with_lse ? " lse" : "",
         empty_rows ? " empty-rows" : "", c->minus_inf_share, worst_ratio, bad ? " | first: " : "", first);
  if (clobbered) printf(" | %lld padding elements written", (long long)clobbered);
  printf("\n");
  free(inside);
  free(lse_inside);
  test_free(o_partial);
  test_free(lse_partial);
  test_free(o_cpu);
  test_free(o_gpu);
  test_free(l_cpu);
  test_free(l_gpu);
  return pass;
}

int main(int argc, char** argv) {
  int device_count = 0;
  if (cudaGetDeviceCount(&device_count) != cudaSuccess || device_count == 0) {
    printf("gpu_attn_combine: no CUDA device, skipped\n");
    return 77;
  }
  const int cases = argc > 1 ? atoi(argv[1]) : 200;
  flashc_handle_t gpu = NULL, cpu = NULL;
  if (flashc_create(&gpu, 0) != FLASHC_STATUS_SUCCESS || flashc_create(&cpu, FLASHC_DEVICE_CPU) != FLASHC_STATUS_SUCCESS) {
    printf("gpu_attn_combine: flashc_create failed: %s\n", flashc_last_error());
    return 1;
  }
  const uint64_t seed = test_seed();
  printf("gpu_attn_combine: seed %llu (FLASHC_TEST_SEED=%llu reproduces)\n", (unsigned long long)seed,
         (unsigned long long)seed);
  int failed = 0;
  for (int i = 0; i < cases; ++i) {
    test_rng rng = test_rng_make(seed, (uint64_t)i + 1);
    const combine_case c = draw_case(&rng);
    failed += !run_case(gpu, cpu, i, &c, &rng);
  }
  flashc_destroy(gpu);
  flashc_destroy(cpu);
  printf("gpu_attn_combine: %d cases, %d failed (seed %llu)\n", cases, failed, (unsigned long long)seed);
  return failed ? 1 : 0;
}
