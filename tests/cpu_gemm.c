/*
 * cpu_gemm.c — flashc_gemm on the CPU backend against the independent fp64 oracle under the
 * DESIGN §6 rule (out_same: fp32 accumulation in k order, epilogue in fp32): all four A/B
 * layouts with both C/D layouts, m/n/k from {1, 7, 13, 127, 129, 300}, alpha/beta incl. C
 * aliasing D, strided batches with broadcast (stride 0) A, B or C, bias, RELU and GELU,
 * fp16/bf16/fp32/e4m3 (with scales) inputs, fp16/bf16/fp32 outputs, leading dimensions
 * larger than packed. Padding of every operand is poison (NaN), so a read of it shows;
 * D is poisoned and every element outside the m×n matrices must stay untouched.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flashc.h"
#include "oracle.h"

static flashc_handle_t g_handle;

typedef struct gemm_case {
  int m, n, k, batch;
  flashc_dtype in_dtype, out_dtype;
  flashc_layout a_layout, b_layout, cd_layout;
  float alpha, beta;
  int c_mode;        /* 0: no C (beta = 0), 1: separate C, 2: C aliases D */
  int broadcast;     /* 0: none, 1: A stride 0, 2: B stride 0, 3: C stride 0 */
  int bias;
  flashc_activation activation;
  int padded_ld;     /* leading dimensions larger than packed */
  int scales;        /* pass scale_a / scale_b (required for e4m3) */
  int packed_stride_d; /* stride_d = 0 (packed); only with a packed ldd */
} gemm_case;

static const char* layout_name(flashc_layout l) { return l == FLASHC_ROW_MAJOR ? "R" : "C"; }
static const char* activation_name(flashc_activation a) {
  return a == FLASHC_ACTIVATION_RELU ? " relu" : a == FLASHC_ACTIVATION_GELU ? " gelu" : "";
}

/* A matrix operand of rows×cols in layout with leading dimension ld, `batches` copies at
 * `stride` (0 = one shared copy). Logical elements random, everything else poison. */
typedef struct operand {
  void* data;
  int64_t ld, stride, count;
} operand;

static operand operand_make(test_rng* rng, flashc_dtype dtype, flashc_layout layout, int rows, int cols, int batches,
                            int broadcast, int padded, double scale, int fill) {
  operand o;
  int64_t packed = layout == FLASHC_ROW_MAJOR ? cols : rows;
  int64_t outer = layout == FLASHC_ROW_MAJOR ? rows : cols;
  o.ld = packed + (padded ? test_rng_int(rng, 1, 9) : 0);
  int64_t span = (outer - 1) * o.ld + packed;
  o.stride = broadcast ? 0 : span + (padded ? test_rng_int(rng, 0, 7) : 0);
  int copies = broadcast ? 1 : batches;
  o.count = (int64_t)(copies - 1) * o.stride + span + 11;
  o.data = test_alloc((size_t)o.count * test_dtype_size(dtype));
  if (fill)
    for (int b = 0; b < copies; ++b)
      for (int i = 0; i < rows; ++i)
        for (int j = 0; j < cols; ++j) {
          int64_t offset = (int64_t)b * o.stride + (layout == FLASHC_ROW_MAJOR ? i * o.ld + j : j * o.ld + i);
          double value = scale * test_rng_normal(rng);
          if (test_rng_uniform(rng) < 1.0 / 300.0) value *= 4.0 + 8.0 * test_rng_uniform(rng);
          test_store(o.data, offset, dtype, value);
        }
  return o;
}

static int run_case(gemm_case c, test_rng* rng) {
  int m = c.m, n = c.n, k = c.k;
  double in_scale = c.in_dtype == FLASHC_DTYPE_E4M3 ? 8.0 : 1.0;
  operand a = operand_make(rng, c.in_dtype, c.a_layout, m, k, c.batch, c.broadcast == 1, c.padded_ld, in_scale, 1);
  operand b = operand_make(rng, c.in_dtype, c.b_layout, k, n, c.batch, c.broadcast == 2, c.padded_ld, in_scale, 1);
  /* D (poison), C (random or the initial D) */
  int pad_d = c.padded_ld && !c.packed_stride_d;
  operand d = operand_make(rng, c.out_dtype, c.cd_layout, m, n, c.batch, 0, pad_d, 1.0, 0);
  if (c.packed_stride_d) d.stride = 0;
  operand cm = {NULL, 0, 0, 0};
  if (c.c_mode == 1) cm = operand_make(rng, c.out_dtype, c.cd_layout, m, n, c.batch, c.broadcast == 3, c.padded_ld, 1.0, 1);
  if (c.c_mode == 2) { /* C aliases D: D starts with C's values */
    int64_t stride = d.stride ? d.stride : (int64_t)(c.cd_layout == FLASHC_ROW_MAJOR ? m : n) * d.ld;
    for (int bt = 0; bt < c.batch; ++bt)
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j)
          test_store(d.data, bt * stride + (c.cd_layout == FLASHC_ROW_MAJOR ? i * d.ld + j : j * d.ld + i), c.out_dtype,
                     test_rng_normal(rng));
  }
  void* bias = NULL;
  if (c.bias) {
    bias = test_alloc((size_t)(n + 3) * test_dtype_size(c.out_dtype));
    for (int j = 0; j < n; ++j) test_store(bias, j, c.out_dtype, test_rng_normal(rng));
  }
  float scale_a = (float)(0.25 + test_rng_uniform(rng)), scale_b = (float)(0.02 + 0.1 * test_rng_uniform(rng));
  if (c.in_dtype != FLASHC_DTYPE_E4M3) scale_b = (float)(0.5 + test_rng_uniform(rng));

  flashc_gemm_params p;
  flashc_gemm_params_init(&p);
  p.m = m, p.n = n, p.k = k, p.batch_count = c.batch;
  p.a_dtype = p.b_dtype = c.in_dtype;
  p.d_dtype = c.out_dtype;
  p.a_layout = c.a_layout, p.b_layout = c.b_layout, p.cd_layout = c.cd_layout;
  p.a = a.data, p.b = b.data, p.d = d.data;
  p.c = c.c_mode == 1 ? cm.data : (c.c_mode == 2 ? d.data : NULL);
  p.bias = bias;
  p.activation = c.activation;
  if (c.padded_ld) p.lda = a.ld, p.ldb = b.ld, p.ldd = pad_d ? d.ld : 0, p.ldc = c.c_mode == 1 ? cm.ld : (c.c_mode == 2 ? p.ldd : 0);
  p.stride_a = a.stride, p.stride_b = b.stride, p.stride_d = d.stride;
  p.stride_c = c.c_mode == 1 ? cm.stride : (c.c_mode == 2 ? d.stride : 0);
  p.alpha = c.alpha;
  p.beta = c.c_mode ? c.beta : 0.0f;
  if (c.scales) p.scale_a = &scale_a, p.scale_b = &scale_b;

  char description[300];
  snprintf(description, sizeof description, "gemm %s->%s m%d n%d k%d batch %d A%s B%s CD%s alpha %.3g beta %.3g%s%s%s%s%s%s%s",
           test_dtype_name(c.in_dtype), test_dtype_name(c.out_dtype), m, n, k, c.batch, layout_name(c.a_layout),
           layout_name(c.b_layout), layout_name(c.cd_layout), (double)p.alpha, (double)p.beta,
           c.c_mode == 2 ? " C=D" : (c.c_mode == 1 ? " C" : ""),
           c.broadcast == 1 ? " bcast-A" : c.broadcast == 2 ? " bcast-B" : c.broadcast == 3 && c.c_mode == 1 ? " bcast-C" : "",
           c.bias ? " bias" : "", activation_name(c.activation), c.padded_ld ? " padded-ld" : "", c.scales ? " scales" : "",
           c.packed_stride_d ? " stride_d=0" : "");

  double* ref = malloc(sizeof(double) * (size_t)d.count);
  double* same = malloc(sizeof(double) * (size_t)d.count);
  unsigned char* mask = malloc((size_t)d.count);
  unsigned char* mask2 = malloc((size_t)d.count);
  int pass = oracle_gemm(&p, ORACLE_FP64, ref, mask, d.count) == 0 && oracle_gemm(&p, ORACLE_SAME, same, mask2, d.count) == 0;
  size_t bytes = 0;
  flashc_status status = flashc_gemm_workspace_size(g_handle, &p, &bytes);
  void* workspace = NULL;
  if (status == FLASHC_STATUS_SUCCESS) {
    workspace = bytes ? test_alloc(bytes) : NULL;
    status = flashc_gemm(g_handle, &p, workspace, bytes, NULL);
  }
  char summary[128] = "";
  if (status != FLASHC_STATUS_SUCCESS) {
    test_print_status("flashc_gemm", status);
    pass = 0;
  } else if (pass) {
    test_check_result r;
    pass = test_check_output("d", d.data, c.out_dtype, d.count, ref, same, mask, -1.0, &r);
    snprintf(summary, sizeof summary, "d %.2e/%.2e l2 %.1e", r.max_error, r.bound, r.rel_l2);
  }
  test_case_result(pass, "%s | %s", description, summary);
  free(ref), free(same), free(mask), free(mask2);
  if (workspace) test_free(workspace);
  test_free(a.data), test_free(b.data), test_free(d.data);
  if (cm.data) test_free(cm.data);
  if (bias) test_free(bias);
  return pass;
}

static const int sizes[] = {1, 7, 13, 127, 129, 300};

static gemm_case random_case(test_rng* rng) {
  gemm_case c;
  memset(&c, 0, sizeof c);
  c.m = test_rng_pick(rng, sizes, 6), c.n = test_rng_pick(rng, sizes, 6), c.k = test_rng_pick(rng, sizes, 6);
  c.batch = test_rng_uniform(rng) < 0.3 ? test_rng_int(rng, 2, 3) : 1;
  const flashc_dtype ins[] = {FLASHC_DTYPE_FP16, FLASHC_DTYPE_BF16, FLASHC_DTYPE_FP32, FLASHC_DTYPE_E4M3};
  const flashc_dtype outs[] = {FLASHC_DTYPE_FP16, FLASHC_DTYPE_BF16, FLASHC_DTYPE_FP32};
  c.in_dtype = ins[test_rng_int(rng, 0, 3)];
  c.out_dtype = outs[test_rng_int(rng, 0, 2)];
  c.a_layout = (flashc_layout)test_rng_int(rng, 0, 1);
  c.b_layout = (flashc_layout)test_rng_int(rng, 0, 1);
  c.cd_layout = (flashc_layout)test_rng_int(rng, 0, 1);
  c.alpha = test_rng_uniform(rng) < 0.5 ? 1.0f : (float)(2.0 * test_rng_uniform(rng) - 0.5);
  c.c_mode = test_rng_int(rng, 0, 2);
  c.beta = (float)(test_rng_uniform(rng) < 0.3 ? 1.0 : 2.0 * test_rng_uniform(rng) - 1.0);
  if (c.beta == 0.0f) c.beta = 0.5f;
  c.broadcast = c.batch > 1 ? test_rng_int(rng, 0, 3) : 0;
  c.bias = test_rng_uniform(rng) < 0.3;
  c.activation = (flashc_activation)(test_rng_uniform(rng) < 0.6 ? 0 : test_rng_int(rng, 1, 2));
  c.padded_ld = test_rng_uniform(rng) < 0.4;
  c.scales = c.in_dtype == FLASHC_DTYPE_E4M3 || test_rng_uniform(rng) < 0.2;
  return c;
}

/* keeps the oracle's cost bounded (two modes, naive loops) */
static void bound_cost(gemm_case* c) {
  while ((double)c->m * c->n * c->k * c->batch > 1.2e7) {
    if (c->batch > 1) --c->batch;
    else if (c->k >= c->m && c->k >= c->n) c->k = c->k == 300 ? 129 : 13;
    else if (c->m >= c->n) c->m = c->m == 300 ? 129 : 13;
    else c->n = c->n == 300 ? 129 : 13;
  }
}

int main(void) {
  uint64_t seed = test_seed();
  flashc_status status = flashc_create(&g_handle, FLASHC_DEVICE_CPU);
  if (status != FLASHC_STATUS_SUCCESS) {
    test_print_status("flashc_create(CPU)", status);
    return TEST_EXIT_FAIL;
  }
  uint64_t index = 0;
  /* every layout combination in every input dtype */
  for (int layouts = 0; layouts < 8; ++layouts)
    for (int t = 0; t < 4; ++t) {
      test_rng rng = test_rng_make(seed, ++index);
      gemm_case c = random_case(&rng);
      c.a_layout = (flashc_layout)(layouts & 1);
      c.b_layout = (flashc_layout)((layouts >> 1) & 1);
      c.cd_layout = (flashc_layout)((layouts >> 2) & 1);
      const flashc_dtype ins[] = {FLASHC_DTYPE_FP16, FLASHC_DTYPE_BF16, FLASHC_DTYPE_FP32, FLASHC_DTYPE_E4M3};
      c.in_dtype = ins[t];
      c.scales = c.scales || c.in_dtype == FLASHC_DTYPE_E4M3;
      bound_cost(&c);
      run_case(c, &rng);
    }
  /* every size in each position */
  for (int i = 0; i < 6; ++i)
    for (int which = 0; which < 3; ++which) {
      test_rng rng = test_rng_make(seed, ++index);
      gemm_case c = random_case(&rng);
      if (which == 0) c.m = sizes[i];
      if (which == 1) c.n = sizes[i];
      if (which == 2) c.k = sizes[i];
      bound_cost(&c);
      run_case(c, &rng);
    }
  /* specific features */
  {
    test_rng rng = test_rng_make(seed, ++index);
    gemm_case c = random_case(&rng);
    c.m = c.n = c.k = 1, c.batch = 1;
    run_case(c, &rng);
  }
  {
    test_rng rng = test_rng_make(seed, ++index);
    gemm_case c = random_case(&rng);
    c.m = c.n = c.k = 300, c.batch = 1, c.in_dtype = FLASHC_DTYPE_BF16, c.out_dtype = FLASHC_DTYPE_BF16;
    run_case(c, &rng);
  }
  for (int mode = 0; mode < 3; ++mode) /* C aliasing D, both layouts, with batches */
    for (int layout = 0; layout < 2; ++layout) {
      test_rng rng = test_rng_make(seed, ++index);
      gemm_case c = random_case(&rng);
      c.c_mode = 2, c.cd_layout = (flashc_layout)layout, c.beta = mode == 0 ? 1.0f : -0.75f, c.alpha = mode == 2 ? 0.0f : 1.5f;
      c.batch = mode == 1 ? 3 : 1, c.broadcast = mode == 1 ? 1 : 0;
      bound_cost(&c);
      run_case(c, &rng);
    }
  for (int bc = 1; bc <= 3; ++bc) { /* broadcast A, B, C over 3 batches */
    test_rng rng = test_rng_make(seed, ++index);
    gemm_case c = random_case(&rng);
    c.batch = 3, c.broadcast = bc, c.c_mode = 1;
    bound_cost(&c);
    c.batch = 3;
    if ((double)c.m * c.n * c.k > 4e6) c.k = 13;
    run_case(c, &rng);
  }
  for (int act = 0; act < 3; ++act)
    for (int out = 0; out < 3; ++out) { /* bias and activations in each output dtype */
      test_rng rng = test_rng_make(seed, ++index);
      gemm_case c = random_case(&rng);
      const flashc_dtype outs[] = {FLASHC_DTYPE_FP16, FLASHC_DTYPE_BF16, FLASHC_DTYPE_FP32};
      c.out_dtype = outs[out];
      c.activation = (flashc_activation)act;
      c.bias = 1;
      bound_cost(&c);
      run_case(c, &rng);
    }
  for (int t = 0; t < 4; ++t) { /* padded leading dimensions, batched */
    test_rng rng = test_rng_make(seed, ++index);
    gemm_case c = random_case(&rng);
    c.padded_ld = 1, c.batch = 2;
    bound_cost(&c);
    run_case(c, &rng);
  }
  { /* stride_d = 0 means packed D */
    test_rng rng = test_rng_make(seed, ++index);
    gemm_case c = random_case(&rng);
    c.batch = 3, c.packed_stride_d = 1, c.padded_ld = 0, c.c_mode = 1;
    bound_cost(&c);
    c.batch = 3;
    if ((double)c.m * c.n * c.k > 4e6) c.k = 7;
    run_case(c, &rng);
  }
  for (int i = 0; i < 150; ++i) { /* random mixtures */
    test_rng rng = test_rng_make(seed, ++index);
    gemm_case c = random_case(&rng);
    bound_cost(&c);
    run_case(c, &rng);
  }
  flashc_destroy(g_handle);
  return test_summary();
}
