/*
 * gpu_gemm_portable.c — the portable GEMM (cp.async + mma.sync, algo = FLASHC_GEMM_ALGO_PORTABLE)
 * on a CUDA handle against the independent fp64 oracle (tests/oracle.h) under the DESIGN §6
 * rule: all four A/B layouts with row- and column-major C/D, m/n/k from {1, 7, 13, 127, 129,
 * 300, 515} plus sizes that fill several tiles with tails in every dimension (both tile
 * shapes of the heuristic), padded leading dimensions (multiples of 8 for A and B, any for
 * C/D), alpha/beta with C separate or aliasing D, strided batches with stride-0 broadcast of
 * A, B or C, bias, ReLU/GELU, fp16/bf16 inputs, fp16/bf16/fp32 outputs, scale_a/scale_b.
 * D is poisoned (0xFF = NaN) before each run and every element of its buffer is checked:
 * written inside the matrices, untouched in the padding. Also: a forced portable run that
 * the path cannot take (lda not a multiple of 8) must fail with NOT_SUPPORTED, and the same
 * problem with algo AUTO must still succeed (fallback).
 * Stream-K (gemm_portable_stream_k.cuh): a third of the random cases and a section of their
 * own force it (fc_cuda_context.gemm_portable_stream_k = 1: the 128×256 tile on any problem,
 * its few tiles split by k-slices over every SM — up to a dozen pieces per tile, empty runs,
 * runs crossing a tile's end), a third turn it off; the section covers every layout (B
 * row-major and batches have no tail and run whole tiles on the large tile). The plain
 * epilogue (no C, bias or activation, 16-bit D, leading dimensions multiples of 8) has a
 * section of its own in every layout.
 *
 *   ./build/tests/gpu/gpu_gemm_portable [random cases] [--layouts-only]   (FLASHC_TEST_SEED=n reproduces)
 * Exit 77 without a CUDA device.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "flashc.h"
#include "gpu_test_util.h"
#include "host/handle.h"
#include "oracle.h"


static flashc_handle_t g_handle;

typedef struct gemm_case {
  int m, n, k, batch;
  flashc_dtype in_dtype, out_dtype;
  flashc_layout a_layout, b_layout, cd_layout;
  float alpha, beta;
  int c_mode;    /* 0: no C, 1: separate C, 2: C aliases D */
  int broadcast; /* 0: none, 1: A stride 0, 2: B stride 0, 3: C stride 0 */
  int bias;
  flashc_activation activation;
  int padded_ld;
  int scales;
  int stream_k; /* fc_cuda_context.gemm_portable_stream_k: 0 cost model, 1 forced, -1 off */
} gemm_case;

/* A host operand (logical elements random, padding poison) and its device copy. */
typedef struct operand {
  void* host;
  void* device;
  int64_t ld, stride, count;
} operand;

static operand operand_make(test_rng* rng, flashc_dtype dtype, flashc_layout layout, int rows, int cols, int batches,
                            int broadcast, int pad, int ld_multiple, int fill) {
  operand o;
  int64_t packed = layout == FLASHC_ROW_MAJOR ? cols : rows;
  int64_t outer = layout == FLASHC_ROW_MAJOR ? rows : cols;
  o.ld = packed + pad;
  o.ld = (o.ld + ld_multiple - 1) / ld_multiple * ld_multiple;
  int64_t span = (outer - 1) * o.ld + packed;
  o.stride = broadcast ? 0 : (span + ld_multiple - 1) / ld_multiple * ld_multiple + (pad ? ld_multiple : 0);
  int copies = broadcast ? 1 : batches;
  o.count = (int64_t)(copies - 1) * o.stride + span + 11;
  size_t bytes = (size_t)o.count * test_dtype_size(dtype);
  o.host = test_alloc(bytes);
  if (fill)
    for (int b = 0; b < copies; ++b)
      for (int i = 0; i < rows; ++i)
        for (int j = 0; j < cols; ++j) {
          int64_t offset = (int64_t)b * o.stride + (layout == FLASHC_ROW_MAJOR ? i * o.ld + j : j * o.ld + i);
          double value = test_rng_normal(rng);
          if (test_rng_uniform(rng) < 1.0 / 300.0) value *= 4.0 + 8.0 * test_rng_uniform(rng);
          test_store(o.host, offset, dtype, value);
        }
  CUDA_CHECK(cudaMalloc(&o.device, bytes));
  CUDA_CHECK(cudaMemcpy(o.device, o.host, bytes, cudaMemcpyHostToDevice));
  return o;
}

static void operand_free(operand* o) {
  if (o->host) test_free(o->host);
  if (o->device) CUDA_CHECK(cudaFree(o->device));
}

static const char* layout_name(flashc_layout l) { return l == FLASHC_ROW_MAJOR ? "R" : "C"; }

static int run_case(gemm_case c, test_rng* rng) {
  const int m = c.m, n = c.n, k = c.k;
  const int ab_multiple = 8; /* the portable path's 16-byte rule for A and B */
  operand a = operand_make(rng, c.in_dtype, c.a_layout, m, k, c.batch, c.broadcast == 1,
                           c.padded_ld ? test_rng_int(rng, 1, 9) : 0, ab_multiple, 1);
  operand b = operand_make(rng, c.in_dtype, c.b_layout, k, n, c.batch, c.broadcast == 2,
                           c.padded_ld ? test_rng_int(rng, 1, 9) : 0, ab_multiple, 1);
  const int pad_cd = c.padded_ld ? test_rng_int(rng, 1, 5) : 0;
  operand d = operand_make(rng, c.out_dtype, c.cd_layout, m, n, c.batch, 0, pad_cd, 1, 0);
  operand cm = {NULL, NULL, 0, 0, 0};
  if (c.c_mode == 1) cm = operand_make(rng, c.out_dtype, c.cd_layout, m, n, c.batch, c.broadcast == 3, pad_cd, 1, 1);
  if (c.c_mode == 2) { /* C aliases D: D starts with C's values */
    for (int bt = 0; bt < c.batch; ++bt)
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j)
          test_store(d.host, bt * d.stride + (c.cd_layout == FLASHC_ROW_MAJOR ? i * d.ld + j : j * d.ld + i),
                     c.out_dtype, test_rng_normal(rng));
    CUDA_CHECK(cudaMemcpy(d.device, d.host, (size_t)d.count * test_dtype_size(c.out_dtype), cudaMemcpyHostToDevice));
  }
  void* bias_host = NULL;
  void* bias_device = NULL;
  const int bias_count = n; /* bias is indexed by the column of D (the user's orientation) */
  if (c.bias) {
    size_t bytes = (size_t)(bias_count + 3) * test_dtype_size(c.out_dtype);
    bias_host = test_alloc(bytes);
    for (int j = 0; j < bias_count; ++j) test_store(bias_host, j, c.out_dtype, test_rng_normal(rng));
    CUDA_CHECK(cudaMalloc(&bias_device, bytes));
    CUDA_CHECK(cudaMemcpy(bias_device, bias_host, bytes, cudaMemcpyHostToDevice));
  }
  float scales_host[2] = {(float)(0.25 + test_rng_uniform(rng)), (float)(0.5 + test_rng_uniform(rng))};
  float* scales_device = NULL;
  if (c.scales) {
    CUDA_CHECK(cudaMalloc((void**)&scales_device, sizeof scales_host));
    CUDA_CHECK(cudaMemcpy(scales_device, scales_host, sizeof scales_host, cudaMemcpyHostToDevice));
  }

  flashc_gemm_params p;
  flashc_gemm_params_init(&p);
  p.m = m, p.n = n, p.k = k, p.batch_count = c.batch;
  p.a_dtype = p.b_dtype = c.in_dtype;
  p.d_dtype = c.out_dtype;
  p.a_layout = c.a_layout, p.b_layout = c.b_layout, p.cd_layout = c.cd_layout;
  p.a = a.host, p.b = b.host, p.d = d.host;
  p.c = c.c_mode == 1 ? cm.host : (c.c_mode == 2 ? d.host : NULL);
  p.bias = bias_host;
  p.activation = c.activation;
  p.lda = a.ld, p.ldb = b.ld, p.ldd = d.ld, p.ldc = c.c_mode == 1 ? cm.ld : (c.c_mode == 2 ? d.ld : 0);
  p.stride_a = a.stride, p.stride_b = b.stride, p.stride_d = d.stride;
  p.stride_c = c.c_mode == 1 ? cm.stride : (c.c_mode == 2 ? d.stride : 0);
  p.alpha = c.alpha;
  p.beta = c.c_mode ? c.beta : 0.0f;
  if (c.scales) p.scale_a = &scales_host[0], p.scale_b = &scales_host[1];
  p.algo = FLASHC_GEMM_ALGO_PORTABLE;

  char description[320];
  snprintf(description, sizeof description, "portable %s->%s m%d n%d k%d batch %d A%s B%s CD%s alpha %.3g beta %.3g%s%s%s%s%s%s%s",
           test_dtype_name(c.in_dtype), test_dtype_name(c.out_dtype), m, n, k, c.batch, layout_name(c.a_layout),
           layout_name(c.b_layout), layout_name(c.cd_layout), (double)p.alpha, (double)p.beta,
           c.c_mode == 2 ? " C=D" : (c.c_mode == 1 ? " C" : ""),
           c.broadcast == 1 ? " bcast-A" : c.broadcast == 2 ? " bcast-B" : c.broadcast == 3 && c.c_mode == 1 ? " bcast-C" : "",
           c.bias ? " bias" : "", c.activation == FLASHC_ACTIVATION_RELU ? " relu" : c.activation == FLASHC_ACTIVATION_GELU ? " gelu" : "",
           c.padded_ld ? " padded-ld" : "", c.scales ? " scales" : "",
           c.stream_k > 0 ? " stream-K forced" : c.stream_k < 0 ? " stream-K off" : "");

  double* ref = malloc(sizeof(double) * (size_t)d.count);
  double* same = malloc(sizeof(double) * (size_t)d.count);
  unsigned char* mask = malloc((size_t)d.count);
  unsigned char* mask2 = malloc((size_t)d.count);
  int pass = oracle_gemm(&p, ORACLE_FP64, ref, mask, d.count) == 0 && oracle_gemm(&p, ORACLE_SAME, same, mask2, d.count) == 0;

  /* The same problem on device pointers. */
  flashc_gemm_params pd = p;
  pd.a = a.device, pd.b = b.device, pd.d = d.device;
  pd.c = c.c_mode == 1 ? cm.device : (c.c_mode == 2 ? d.device : NULL);
  pd.bias = bias_device;
  if (c.scales) pd.scale_a = scales_device, pd.scale_b = scales_device + 1;
  size_t bytes = 0;
  g_handle->cuda.gemm_portable_stream_k = c.stream_k; /* the size query and the run see the same plan */
  flashc_status status = flashc_gemm_workspace_size(g_handle, &pd, &bytes);
  void* workspace = NULL;
  if (status == FLASHC_STATUS_SUCCESS && bytes) CUDA_CHECK(cudaMalloc(&workspace, bytes));
  if (status == FLASHC_STATUS_SUCCESS) status = flashc_gemm(g_handle, &pd, workspace, bytes, NULL);
  if (status == FLASHC_STATUS_SUCCESS) CUDA_CHECK(cudaDeviceSynchronize());
  g_handle->cuda.gemm_portable_stream_k = 0;
  char summary[128] = "";
  if (status != FLASHC_STATUS_SUCCESS) {
    test_print_status("flashc_gemm", status);
    pass = 0;
  } else if (pass) {
    CUDA_CHECK(cudaMemcpy(d.host, d.device, (size_t)d.count * test_dtype_size(c.out_dtype), cudaMemcpyDeviceToHost));
    test_check_result r;
    pass = test_check_output("d", d.host, c.out_dtype, d.count, ref, same, mask, -1.0, &r);
    snprintf(summary, sizeof summary, "d %.2e/%.2e l2 %.1e", r.max_error, r.bound, r.rel_l2);
  }
  test_case_result(pass, "%s | %s", description, summary);
  free(ref), free(same), free(mask), free(mask2);
  if (workspace) CUDA_CHECK(cudaFree(workspace));
  operand_free(&a), operand_free(&b), operand_free(&d);
  if (cm.host) operand_free(&cm);
  if (bias_host) {
    test_free(bias_host);
    CUDA_CHECK(cudaFree(bias_device));
  }
  if (scales_device) CUDA_CHECK(cudaFree(scales_device));
  return pass;
}

static const int sizes[] = {1, 7, 13, 127, 129, 300, 515};
#define SIZE_COUNT ((int)(sizeof sizes / sizeof sizes[0]))

static gemm_case random_case(test_rng* rng) {
  gemm_case c;
  memset(&c, 0, sizeof c);
  c.m = test_rng_pick(rng, sizes, SIZE_COUNT), c.n = test_rng_pick(rng, sizes, SIZE_COUNT),
  c.k = test_rng_pick(rng, sizes, SIZE_COUNT);
  c.batch = test_rng_uniform(rng) < 0.3 ? test_rng_int(rng, 2, 3) : 1;
  c.in_dtype = test_rng_int(rng, 0, 1) ? FLASHC_DTYPE_BF16 : FLASHC_DTYPE_FP16;
  const flashc_dtype outs[] = {FLASHC_DTYPE_FP16, FLASHC_DTYPE_BF16, FLASHC_DTYPE_FP32};
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
  c.scales = test_rng_uniform(rng) < 0.2;
  return c;
}

/* keeps the oracle's cost bounded (two modes, naive loops) */
static void bound_cost(gemm_case* c, double limit) {
  while ((double)c->m * c->n * c->k * c->batch > limit) {
    if (c->batch > 1) --c->batch;
    else if (c->k >= c->m && c->k >= c->n) c->k = c->k / 2 + 1;
    else if (c->m >= c->n) c->m = c->m / 2 + 1;
    else c->n = c->n / 2 + 1;
  }
}

/* Each of `count` shapes (m, n, k; one batch) in the four A/B layouts, the rest of the case
 * drawn; stream_k as gemm_case.stream_k. */
static void run_shapes_in_ab_layouts(const int (*shapes)[3], int count, int stream_k, uint64_t seed, uint64_t* index) {
  for (int s = 0; s < count; ++s)
    for (int layouts = 0; layouts < 4; ++layouts) {
      test_rng rng = test_rng_make(seed, ++*index);
      gemm_case c = random_case(&rng);
      c.m = shapes[s][0], c.n = shapes[s][1], c.k = shapes[s][2], c.batch = 1;
      c.a_layout = (flashc_layout)(layouts & 1);
      c.b_layout = (flashc_layout)((layouts >> 1) & 1);
      c.stream_k = stream_k;
      run_case(c, &rng);
    }
}

/* A forced portable run must refuse what the path cannot take, and AUTO must still run it. */
static void refusal_case(void) {
  const int m = 33, n = 40, k = 21; /* row-major A with lda = k = 21: rows not 16-byte aligned */
  void *a, *b, *d;
  CUDA_CHECK(cudaMalloc(&a, (size_t)m * k * 2));
  CUDA_CHECK(cudaMalloc(&b, (size_t)k * n * 2));
  CUDA_CHECK(cudaMalloc(&d, (size_t)m * n * 2));
  CUDA_CHECK(cudaMemset(a, 0x3c, (size_t)m * k * 2)); /* fp16 ~1.06 */
  CUDA_CHECK(cudaMemset(b, 0x3c, (size_t)k * n * 2));
  flashc_gemm_params p;
  flashc_gemm_params_init(&p);
  p.m = m, p.n = n, p.k = k;
  p.a_dtype = p.b_dtype = p.d_dtype = FLASHC_DTYPE_FP16;
  p.a = a, p.b = b, p.d = d;
  p.algo = FLASHC_GEMM_ALGO_PORTABLE;
  flashc_status forced = flashc_gemm(g_handle, &p, NULL, 0, NULL);
  const char* message = flashc_last_error();
  int pass = forced == FLASHC_STATUS_NOT_SUPPORTED && message && strstr(message, "portable");
  p.algo = FLASHC_GEMM_ALGO_AUTO;
  flashc_status automatic = flashc_gemm(g_handle, &p, NULL, 0, NULL);
  CUDA_CHECK(cudaDeviceSynchronize());
  pass = pass && automatic == FLASHC_STATUS_SUCCESS;
  test_case_result(pass, "portable refuses lda %% 8 != 0 (%s: %s); AUTO runs it (%s)", test_status_name(forced),
                   message ? message : "", test_status_name(automatic));
  CUDA_CHECK(cudaFree(a));
  CUDA_CHECK(cudaFree(b));
  CUDA_CHECK(cudaFree(d));
}

int main(int argc, char** argv) {
  int device_count = 0;
  if (cudaGetDeviceCount(&device_count) != cudaSuccess || device_count == 0) {
    printf("no CUDA device: skipped\n");
    return TEST_EXIT_SKIP;
  }
  struct cudaDeviceProp properties;
  CUDA_CHECK(cudaGetDeviceProperties(&properties, 0));
  if (properties.major < 8) {
    printf("compute capability %d.%d < 8.0: the portable path does not run here; skipped\n", properties.major,
           properties.minor);
    return TEST_EXIT_SKIP;
  }
  const int random_cases = argc > 1 ? atoi(argv[1]) : 40;
  const int layouts_only = argc > 2 && !strcmp(argv[2], "--layouts-only"); /* short run, e.g. under compute-sanitizer */
  uint64_t seed = test_seed();
  flashc_status status = flashc_create(&g_handle, 0);
  if (status != FLASHC_STATUS_SUCCESS) {
    test_print_status("flashc_create(0)", status);
    return TEST_EXIT_FAIL;
  }
  uint64_t index = 0;
  /* every A/B/CD layout combination in both input dtypes */
  for (int layouts = 0; layouts < 8; ++layouts)
    for (int t = 0; t < 2; ++t) {
      test_rng rng = test_rng_make(seed, ++index);
      gemm_case c = random_case(&rng);
      c.a_layout = (flashc_layout)(layouts & 1);
      c.b_layout = (flashc_layout)((layouts >> 1) & 1);
      c.cd_layout = (flashc_layout)((layouts >> 2) & 1);
      c.in_dtype = t ? FLASHC_DTYPE_BF16 : FLASHC_DTYPE_FP16;
      bound_cost(&c, 2e7);
      if (t) c.stream_k = 1; /* also under the sanitizers (--layouts-only) */
      run_case(c, &rng);
    }
  /* every size in each position */
  for (int i = 0; i < SIZE_COUNT && !layouts_only; ++i)
    for (int which = 0; which < 3; ++which) {
      test_rng rng = test_rng_make(seed, ++index);
      gemm_case c = random_case(&rng);
      if (which == 0) c.m = sizes[i];
      if (which == 1) c.n = sizes[i];
      if (which == 2) c.k = sizes[i];
      bound_cost(&c, 2e7);
      run_case(c, &rng);
    }
  /* several tiles with tails in every dimension: the large tile (many tiles) and the small */
  {
    const int shapes[][3] = {{1000, 1100, 333}, {2049, 1300, 77}, {255, 257, 1031}, {130, 5000, 24}};
    if (!layouts_only) run_shapes_in_ab_layouts(shapes, 4, 0, seed, &index);
  }
  /* C aliasing D; broadcasts over batches; bias and activations in each output dtype */
  for (int layout = 0; layout < 2 && !layouts_only; ++layout) {
    test_rng rng = test_rng_make(seed, ++index);
    gemm_case c = random_case(&rng);
    c.c_mode = 2, c.cd_layout = (flashc_layout)layout, c.beta = -0.75f, c.batch = 2;
    bound_cost(&c, 2e7);
    c.batch = 2;
    run_case(c, &rng);
  }
  for (int bc = 1; bc <= 3 && !layouts_only; ++bc) {
    test_rng rng = test_rng_make(seed, ++index);
    gemm_case c = random_case(&rng);
    c.batch = 3, c.broadcast = bc, c.c_mode = 1;
    bound_cost(&c, 2e7);
    c.batch = 3;
    if ((double)c.m * c.n * c.k > 6e6) c.k = 13;
    run_case(c, &rng);
  }
  for (int act = 0; act < 3 && !layouts_only; ++act)
    for (int out = 0; out < 3; ++out) {
      test_rng rng = test_rng_make(seed, ++index);
      gemm_case c = random_case(&rng);
      const flashc_dtype outs[] = {FLASHC_DTYPE_FP16, FLASHC_DTYPE_BF16, FLASHC_DTYPE_FP32};
      c.out_dtype = outs[out];
      c.activation = (flashc_activation)act;
      c.bias = 1;
      bound_cost(&c, 2e7);
      run_case(c, &rng);
    }
  /* stream-K forced: every layout, slices per tile from 1 to 17 (runs of 0–2 slices: tiles in
   * up to a dozen pieces), tails in m and n, C / bias / activations as drawn; and one problem
   * whose large tiles fill more than a wave of SMs (whole tiles plus the tail) */
  {
    const int shapes[][3] = {{300, 515, 333}, {515, 300, 1031}, {129, 1300, 77}, {257, 513, 7}};
    if (!layouts_only) run_shapes_in_ab_layouts(shapes, 4, 1, seed, &index);
    int sms = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    for (int model = 0; model < 2 && !layouts_only; ++model) {
      test_rng rng = test_rng_make(seed, ++index);
      gemm_case c = random_case(&rng);
      /* sms + sms/2 large tiles (rows of 8 tiles), the last row and column partial */
      c.m = ((sms + sms / 2 + 7) / 8) * 128 - 45, c.n = 8 * 256 - 99, c.k = 200, c.batch = 1;
      c.b_layout = FLASHC_COL_MAJOR;
      c.stream_k = model ? 0 : 1;
      run_case(c, &rng);
    }
  }
  /* the plain epilogue (gemm_portable_epilogue.cuh): no C, bias or activation, 16-bit D with
   * leading dimensions that are multiples of 8 — interior tiles take the plain loop, the edge
   * tiles of the same problem the general one; every layout, both 16-bit outputs, alpha and
   * scales, half of them with stream-K forced */
  for (int layouts = 0; layouts < 8 && !layouts_only; ++layouts)
    for (int out = 0; out < 2; ++out) {
      test_rng rng = test_rng_make(seed, ++index);
      gemm_case c = random_case(&rng);
      c.m = 392, c.n = 520, c.k = 200, c.batch = 1;
      c.a_layout = (flashc_layout)(layouts & 1);
      c.b_layout = (flashc_layout)((layouts >> 1) & 1);
      c.cd_layout = (flashc_layout)((layouts >> 2) & 1);
      c.out_dtype = out ? FLASHC_DTYPE_BF16 : FLASHC_DTYPE_FP16;
      c.c_mode = 0, c.bias = 0, c.activation = FLASHC_ACTIVATION_NONE, c.padded_ld = 0;
      c.stream_k = out ? 1 : 0;
      run_case(c, &rng);
    }
  /* the general epilogue with C read in quads, rows ahead (gemm_portable_write_tile): every output dtype × C in its own buffer
   * or aliasing D × no activation, ReLU, GELU, with a bias; 260 × 516 leaves a last tile row
   * of 4 rows (threads with fewer rows than they read ahead) and a last tile column of 4;
   * column-major D turns 260 into the kernel's columns and the bias into a per-row one */
  for (int out = 0; out < 3 && !layouts_only; ++out)
    for (int mode = 1; mode <= 2; ++mode)
      for (int act = 0; act < 3; ++act) {
        test_rng rng = test_rng_make(seed, ++index);
        gemm_case c = random_case(&rng);
        const flashc_dtype outs[] = {FLASHC_DTYPE_FP16, FLASHC_DTYPE_BF16, FLASHC_DTYPE_FP32};
        c.m = 260, c.n = 516, c.k = 136, c.batch = 1, c.broadcast = 0;
        c.out_dtype = outs[out];
        c.cd_layout = (flashc_layout)((out + mode + act) % 2);
        c.c_mode = mode, c.bias = 1, c.activation = (flashc_activation)act, c.padded_ld = 0;
        c.stream_k = act == 1 ? 1 : 0;
        run_case(c, &rng);
      }
  refusal_case();
  for (int i = 0; i < random_cases; ++i) {
    test_rng rng = test_rng_make(seed, ++index);
    gemm_case c = random_case(&rng);
    bound_cost(&c, 2e7);
    c.stream_k = i % 3 == 1 ? 1 : i % 3 == 2 ? -1 : 0;
    run_case(c, &rng);
  }
  flashc_destroy(g_handle);
  return test_summary();
}
