/*
 * gpu_gemm.c — flashc_gemm on a CUDA handle against the CPU reference (fc_ref_gemm, fp64 and
 * same-precision modes; the DESIGN §6 rule through test_check_output): random shapes with m, n,
 * k from {1, 7, 13, 127, 129, 1000, 2048 + tails, random}, all four A/B layouts for row- and
 * column-major C/D, padded leading dimensions, alpha/beta, C aliasing D exactly (a quarter of
 * the beta != 0 cases), strided and broadcast batches, bias, ReLU/GELU, fp16/bf16/e4m3 inputs,
 * fp16/bf16/fp32 outputs, algo AUTO and HOPPER (a forced Hopper run on a problem TMA cannot take
 * must fail with NOT_SUPPORTED), k % 8 != 0 (the fallback), and every Hopper tile width: random
 * case i forces the 16-bit tile width {heuristic, 256, 128, 64}[i % 4] on the handle (e4m3:
 * {heuristic, 144, 128, 112})
 * (fc_cuda_context.gemm_hopper_block_n; no random draw, so a seed replays the same cases; the
 * fixed layout cases give each layout every width), or FLASHC_TEST_GEMM_TILE_N=256|128|64|0
 * forces one width for every case (256 replays runs made before the tile heuristic); stream-K
 * likewise rotates {cost model, forced on, off}[i % 3] (fc_cuda_context.gemm_hopper_stream_k;
 * FLASHC_TEST_GEMM_STREAM_K=1|-1|0 forces one), and fixed cases force it on shapes that split
 * tiles into many pieces. The 256-wide 16-bit tile's two instantiations (one or two WGMMA
 * chains per k-step, fc_cuda_context.gemm_hopper_chains) are each forced on every layout, and
 * two chains on the paths the launcher's rule never sends them. The tile order's group
 * (fc_cuda_context.gemm_hopper_group_m) is forced to 1–3 tile rows in a quarter of the random
 * cases and in the stream-K cases, so groups that end inside the tile rows, and a last group
 * of fewer rows, are covered. Outputs are
 * poisoned (0xFF = NaN) before each run and every element of the D buffer is checked (written
 * inside the matrix, untouched in the padding).
 *
 * e4m3: the fp8 tensor core accumulates a k-tile (128 wide) in an e8m13 format, truncating,
 * before the kernel promotes the tile's sum into fp32 (ptx_wgmma.cuh). The test emulates that
 * accumulator, lossiest reading of the documented behaviour: at each 32-wide wgmma k-step the
 * running in-tile sum and the step's 32 exact products are aligned to the largest of their
 * exponents and truncated toward zero to 13 bits below it, added exactly, and the sum truncated
 * to 14 significant bits; the tile's sum is then added into an fp32 accumulator (round to
 * nearest), as the kernel does. e4m3 cases add 2 · max |emulated − exact| · |alpha · scales| ·
 * the activation's steepest slope — a property of the hardware, not slack for the kernel. (The
 * earlier per-addend model, 2^-12 · (Σ|a·b| + Σ over k-steps of |in-tile sum|), failed by 1.11×
 * on the H200: seed 435159375374, e4m3->fp32 m 300 n 264 k 384 batch 50, an output of 1905
 * off by 2.94, because an addend's truncation is relative to the largest addend, not itself.)
 * fp32 output from fp16/bf16: tensor cores add into their fp32 accumulator with truncation
 * (round toward zero), not round-to-nearest (Fasi, Higham, Mikaitis, Pranesh, "Numerical
 * behavior of NVIDIA tensor cores", PeerJ Comput. Sci. 2021, measured on V100/T4/A100; assumed
 * for Hopper's WGMMA), so each addition may err by one ulp of the new partial sum. These cases
 * add 2^-23 · max (Σ over 16-wide k steps of |partial sum| + Σ|a·b|) · |alpha · scales| · the
 * activation's steepest slope. Without it, a k = 2096 fp32-output case failed by 1.18× on the
 * H200 (2026-11-29), and a simulated truncating accumulator fails the plain rule in ~5 % of
 * such cases; real indexing or pipeline bugs give errors of the size of whole partial sums.
 *
 * Build: cmake -DFLASHC_BUILD_TESTS=ON; run: ./build/tests/gpu/gpu_gemm [random cases] [--no-fixed | --layouts-only]
 * (FLASHC_TEST_SEED=n reproduces a run). Exit 77 without a CUDA device.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "cpu/reference.h"
#include "flashc.h"
#include "host/handle.h"
#include "host/problem.h"
#include "host/validate.h"
#include "gpu_test_util.h"
#include "oracle.h"


typedef struct gemm_case {
  int m, n, k, batch;
  flashc_dtype in, out;
  flashc_layout a_layout, b_layout, cd_layout;
  int pad_a, pad_b, pad_cd; /* extra leading-dimension elements */
  int broadcast_a, broadcast_b, broadcast_c;
  float alpha, beta;
  int bias, use_scales;
  flashc_activation act;
  int algo;
  int tile_n; /* Hopper tile width forced on the handle (e4m3: 256 → 144, 64 → 112); 0 = the heuristic */
  int alias_cd; /* C is D's own buffer (beta != 0; same layout, ld and batch stride) */
  int stream_k; /* Hopper stream-K forced on the handle: 1 on, -1 off, 0 the cost model */
  int chains;   /* WGMMA chains of the 16-bit 256-wide tile forced on the handle (1, 2); 0 the rule */
  int group_m;  /* tile rows per group of the Hopper tile order forced on the handle; 0 the rule */
} gemm_case;

/* The 16-bit mma / wgmma k-step of the fp32-output accumulation term (top of the file). */
#define FP16_MMA_K_STEP 16

/* The e4m3 tensor-core accumulator emulated (top of the file): the kernel's k-tile, after which
 * it promotes into fp32; the wgmma k-step, whose products are aligned together; the bits an
 * addend keeps below the largest addend's leading bit (e8m13). */
enum { E4M3_K_TILE = 128, E4M3_K_STEP = 32, E4M3_KEPT_FRACTION_BITS = 13 };

/* x truncated toward zero to a multiple of quantum (a power of two). */
static double truncate_to_quantum(double x, double quantum) { return trunc(x / quantum) * quantum; }

/* |emulated − exact| of one output's e4m3 dot product, before alpha and the scales. */
static double e4m3_accumulation_error(const double* a_row, const double* b_row, int64_t k) {
  double exact = 0.0, products[E4M3_K_STEP];
  float promoted = 0.0f;
  for (int64_t tile_start = 0; tile_start < k; tile_start += E4M3_K_TILE) {
    double in_tile = 0.0;
    const int64_t tile_end = tile_start + E4M3_K_TILE < k ? tile_start + E4M3_K_TILE : k;
    for (int64_t step_start = tile_start; step_start < tile_end; step_start += E4M3_K_STEP) {
      const int count = (int)(tile_end - step_start < E4M3_K_STEP ? tile_end - step_start : E4M3_K_STEP);
      double largest = fabs(in_tile);
      for (int i = 0; i < count; ++i) {
        products[i] = a_row[step_start + i] * b_row[step_start + i]; /* exact: 4-bit significands */
        exact += products[i];
        if (fabs(products[i]) > largest) largest = fabs(products[i]);
      }
      if (largest == 0.0) continue;
      const double quantum = ldexp(1.0, ilogb(largest) - E4M3_KEPT_FRACTION_BITS);
      double sum = truncate_to_quantum(in_tile, quantum); /* exact in double: < 2^20 quanta */
      for (int i = 0; i < count; ++i) sum += truncate_to_quantum(products[i], quantum);
      in_tile = sum == 0.0 ? 0.0 : truncate_to_quantum(sum, ldexp(1.0, ilogb(sum) - E4M3_KEPT_FRACTION_BITS));
    }
    promoted = (float)((double)promoted + in_tile); /* the kernel's fp32 FADD */
  }
  return fabs((double)promoted - exact);
}

static int64_t span_of(flashc_layout layout, int64_t ld, int64_t rows, int64_t cols) {
  return layout == FLASHC_ROW_MAJOR ? ld * (rows - 1) + cols : ld * (cols - 1) + rows;
}

/* What the Hopper family accepts (mirrors fc_gemm_hopper_check on an sm_90 device). */
static int hopper_can_take(const fc_gemm_problem* p) {
  int64_t ab = (int64_t)flashc_dtype_size(p->ab_dtype), db = (int64_t)flashc_dtype_size(p->d_dtype);
  if (p->ab_dtype == FLASHC_DTYPE_E4M3 && (p->a_layout != FLASHC_ROW_MAJOR || p->b_layout != FLASHC_COL_MAJOR))
    return 0;
  if ((p->lda * ab) % 16 || (p->ldb * ab) % 16) return 0;
  if (p->batch_count > 1 && ((p->stride_a * ab) % 16 || (p->stride_b * ab) % 16)) return 0;
  (void)db; /* any D and C: the epilogue falls back to direct stores */
  return 1;
}

static const char* layout_char(flashc_layout l) { return l == FLASHC_ROW_MAJOR ? "r" : "c"; }

/* A forced-Hopper case with K-major operands (A row-major, B column-major: what e4m3 needs)
 * and a row-major D, per-tensor scales for e4m3; the fixed cases below add their epilogue. */
static gemm_case hopper_k_major_case(flashc_dtype in, flashc_dtype out, int m, int n, int k, int batch, float alpha) {
  gemm_case gc;
  memset(&gc, 0, sizeof gc);
  gc.in = in;
  gc.out = out;
  gc.a_layout = FLASHC_ROW_MAJOR;
  gc.b_layout = FLASHC_COL_MAJOR;
  gc.cd_layout = FLASHC_ROW_MAJOR;
  gc.m = m;
  gc.n = n;
  gc.k = k;
  gc.batch = batch;
  gc.alpha = alpha;
  gc.use_scales = in == FLASHC_DTYPE_E4M3;
  gc.algo = FLASHC_GEMM_ALGO_HOPPER;
  return gc;
}

/* The epilogue of a fixed case: C scaled by beta (0: none), a bias per column, an activation. */
static void set_epilogue(gemm_case* gc, float beta, int bias, flashc_activation act) {
  gc->beta = beta;
  gc->bias = bias;
  gc->act = act;
}

/* Runs one case; returns 1 on pass. */
static int run_case(flashc_handle_t handle, test_rng* rng, const gemm_case* gc) {
  /* e4m3 has widths 128, 144 and 112: the rotation's 256 stands for 144 there, 64 for 112. */
  const int forced_block_n =
      gc->in == FLASHC_DTYPE_E4M3 ? (gc->tile_n == 256 ? 144 : gc->tile_n == 64 ? 112 : gc->tile_n) : gc->tile_n;
  char name[256];
  snprintf(name, sizeof name,
           "%s->%s m%d n%d k%d b%d %s%s%s pad%d,%d,%d bc%d%d%d a%.2g b%.2g bias%d act%d algo%d tile%d sk%d ch%d g%d%s",
           test_dtype_name(gc->in), test_dtype_name(gc->out), gc->m, gc->n, gc->k, gc->batch,
           layout_char(gc->a_layout), layout_char(gc->b_layout), layout_char(gc->cd_layout), gc->pad_a, gc->pad_b,
           gc->pad_cd, gc->broadcast_a, gc->broadcast_b, gc->broadcast_c, gc->alpha, gc->beta, gc->bias, (int)gc->act,
           gc->algo, forced_block_n, gc->stream_k, gc->chains, gc->group_m, gc->alias_cd ? " c=d" : "");
  const int64_t m = gc->m, n = gc->n, k = gc->k;
  const int64_t lda = (gc->a_layout == FLASHC_ROW_MAJOR ? k : m) + gc->pad_a;
  const int64_t ldb = (gc->b_layout == FLASHC_ROW_MAJOR ? n : k) + gc->pad_b;
  const int64_t ldcd = (gc->cd_layout == FLASHC_ROW_MAJOR ? n : m) + gc->pad_cd;
  const int64_t span_a = span_of(gc->a_layout, lda, m, k), span_b = span_of(gc->b_layout, ldb, k, n);
  const int64_t span_cd = span_of(gc->cd_layout, ldcd, m, n);
  /* Batch strides: the span rounded up to 8 elements (16 bytes for 16-bit) unless broadcast. */
  const int64_t stride_a = gc->broadcast_a ? 0 : (span_a + 7) / 8 * 8;
  const int64_t stride_b = gc->broadcast_b ? 0 : (span_b + 7) / 8 * 8;
  const int64_t stride_c = gc->broadcast_c && !gc->alias_cd ? 0 : (span_cd + 7) / 8 * 8;
  const int64_t stride_d = (span_cd + 7) / 8 * 8;
  const int64_t count_a = stride_a * (gc->batch - 1) + span_a, count_b = stride_b * (gc->batch - 1) + span_b;
  const int64_t count_c = stride_c * (gc->batch - 1) + span_cd, count_d = stride_d * (gc->batch - 1) + span_cd;
  const size_t in_bytes = test_dtype_size(gc->in), out_bytes = test_dtype_size(gc->out);

  void* a = test_alloc((size_t)count_a * in_bytes);
  void* b = test_alloc((size_t)count_b * in_bytes);
  void* c = gc->beta != 0.0f ? test_alloc((size_t)count_c * out_bytes) : NULL;
  void* bias = gc->bias ? test_alloc((size_t)n * out_bytes) : NULL;
  void* d = test_alloc((size_t)count_d * out_bytes);
  double scale = gc->in == FLASHC_DTYPE_E4M3 ? 2.0 : 1.0;
  test_fill_random(rng, a, count_a, gc->in, scale);
  test_fill_random(rng, b, count_b, gc->in, scale);
  if (c) test_fill_random(rng, c, count_c, gc->out, 1.0);
  if (bias) test_fill_random(rng, bias, n, gc->out, 1.0);
  float scales[2] = {1.0f, 1.0f};
  if (gc->use_scales) {
    scales[0] = (float)(0.25 + test_rng_uniform(rng));
    scales[1] = (float)(0.25 + test_rng_uniform(rng));
  }

  void *da = NULL, *db = NULL, *dc = NULL, *dbias = NULL, *dd = NULL;
  float* dscales = NULL;
  da = test_device_copy(a, (size_t)count_a * in_bytes);
  db = test_device_copy(b, (size_t)count_b * in_bytes);
  dscales = test_device_copy(scales, sizeof scales);
  CUDA_CHECK(cudaMalloc(&dd, (size_t)count_d * out_bytes));
  if (c && !gc->alias_cd) dc = test_device_copy(c, (size_t)count_c * out_bytes);
  if (bias) dbias = test_device_copy(bias, (size_t)n * out_bytes);
  CUDA_CHECK(cudaMemset(dd, 0xFF, (size_t)count_d * out_bytes)); /* poison */
  if (gc->alias_cd && c) { /* D starts as C inside the matrices, poison in the padding */
    unsigned char* start = (unsigned char*)test_alloc((size_t)count_d * out_bytes);
    memset(start, 0xFF, (size_t)count_d * out_bytes);
    for (int bi = 0; bi < gc->batch; ++bi)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          const int64_t at = bi * stride_d + (gc->cd_layout == FLASHC_ROW_MAJOR ? i * ldcd + j : j * ldcd + i);
          memcpy(start + at * (int64_t)out_bytes, (const unsigned char*)c + at * (int64_t)out_bytes, out_bytes);
        }
    CUDA_CHECK(cudaMemcpy(dd, start, (size_t)count_d * out_bytes, cudaMemcpyHostToDevice));
    test_free(start);
    dc = dd;
  }

  flashc_gemm_params p;
  flashc_gemm_params_init(&p);
  p.m = gc->m;
  p.n = gc->n;
  p.k = gc->k;
  p.batch_count = gc->batch;
  p.a_dtype = p.b_dtype = gc->in;
  p.d_dtype = gc->out;
  p.a_layout = gc->a_layout;
  p.b_layout = gc->b_layout;
  p.cd_layout = gc->cd_layout;
  p.lda = lda;
  p.ldb = ldb;
  p.ldc = c ? ldcd : 0;
  p.ldd = ldcd;
  p.stride_a = stride_a;
  p.stride_b = stride_b;
  p.stride_c = stride_c;
  p.stride_d = stride_d;
  p.alpha = gc->alpha;
  p.beta = gc->beta;
  p.activation = gc->act;
  p.algo = gc->algo;

  /* The reference runs on the host copies (CPU-backend problem). */
  p.a = a;
  p.b = b;
  p.c = c;
  p.d = d;
  p.bias = bias;
  p.scale_a = gc->use_scales ? &scales[0] : NULL;
  p.scale_b = gc->use_scales ? &scales[1] : NULL;
  fc_gemm_problem ref_problem;
  flashc_status status = fc_gemm_problem_make(&p, FLASHC_BACKEND_CPU, &ref_problem);
  if (status != FLASHC_STATUS_SUCCESS) test_fatal("reference problem: %s", flashc_last_error());
  double* ref64 = (double*)malloc((size_t)count_d * sizeof(double));
  double* same = (double*)malloc((size_t)count_d * sizeof(double));
  unsigned char* mask = (unsigned char*)malloc((size_t)count_d);
  if (!ref64 || !same || !mask) test_fatal("out of host memory");
  for (int64_t i = 0; i < count_d; ++i) ref64[i] = same[i] = 0.0;
  memset(mask, ORACLE_UNTOUCHED, (size_t)count_d);
  for (int bi = 0; bi < gc->batch; ++bi)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) mask[bi * stride_d + (gc->cd_layout == FLASHC_ROW_MAJOR ? i * ldcd + j : j * ldcd + i)] = ORACLE_COMPARE;
  if (fc_ref_gemm(&ref_problem, FC_REF_FP64, ref64) != FLASHC_STATUS_SUCCESS ||
      fc_ref_gemm(&ref_problem, FC_REF_SAME_PRECISION, same) != FLASHC_STATUS_SUCCESS)
    test_fatal("fc_ref_gemm: %s", flashc_last_error());

  /* The error terms below need every product a_ik·b_kj: A and Bᵀ of each batch are decoded
   * once into doubles (decoding per product made a large fp32-output case take a minute),
   * and the rows go to OpenMP threads. */
  double extra_atol = 0.0;
  if (gc->in == FLASHC_DTYPE_E4M3 || gc->out == FLASHC_DTYPE_FP32) {
    const int e4m3 = gc->in == FLASHC_DTYPE_E4M3;
    double* A = (double*)malloc((size_t)m * (size_t)k * sizeof(double));
    double* Bt = (double*)malloc((size_t)n * (size_t)k * sizeof(double));
    if (!A || !Bt) test_fatal("out of host memory");
    double max_error = 0.0; /* the accumulation's largest allowed error, before alpha and the scales */
    for (int bi = 0; bi < gc->batch; ++bi) {
      for (int64_t i = 0; i < m; ++i)
        for (int64_t kk = 0; kk < k; ++kk)
          A[i * k + kk] = test_load(a, bi * stride_a + (gc->a_layout == FLASHC_ROW_MAJOR ? i * lda + kk : kk * lda + i), gc->in);
      for (int64_t j = 0; j < n; ++j)
        for (int64_t kk = 0; kk < k; ++kk)
          Bt[j * k + kk] = test_load(b, bi * stride_b + (gc->b_layout == FLASHC_ROW_MAJOR ? kk * ldb + j : j * ldb + kk), gc->in);
#pragma omp parallel for schedule(dynamic, 4) reduction(max : max_error)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          const double* a_row = A + i * k;
          const double* b_row = Bt + j * k;
          /* (top of the file) e4m3: twice the emulated accumulator's error, FA's factor for a
           * same-precision run; fp32 output: one ulp of 24 bits of every product and of the
           * running sum after each k-step. */
          double error;
          if (e4m3) {
            error = 2.0 * e4m3_accumulation_error(a_row, b_row, k);
          } else {
            double term = 0.0, partial = 0.0;
            for (int64_t kk = 0; kk < k; ++kk) {
              const double product = a_row[kk] * b_row[kk];
              partial += product;
              term += fabs(product);
              if ((kk + 1) % FP16_MMA_K_STEP == 0 || kk + 1 == k) term += fabs(partial);
            }
            error = ldexp(1.0, -23) * term;
          }
          if (error > max_error) max_error = error;
        }
    }
    free(A), free(Bt);
    const double steepest_slope = gc->act == FLASHC_ACTIVATION_GELU ? 1.13 : 1.0; /* max GELU'(x) ≈ 1.129 */
    extra_atol = max_error * fabs(gc->alpha) * scales[0] * scales[1] * steepest_slope;
  }

  /* The device run. */
  p.a = da;
  p.b = db;
  p.c = dc;
  p.d = dd;
  p.bias = dbias;
  p.scale_a = gc->use_scales ? &dscales[0] : NULL;
  p.scale_b = gc->use_scales ? &dscales[1] : NULL;
  fc_gemm_problem device_problem;
  status = fc_gemm_problem_make(&p, FLASHC_BACKEND_CUDA, &device_problem);
  int expect_refusal = 0;
  if (status == FLASHC_STATUS_SUCCESS && gc->algo == FLASHC_GEMM_ALGO_HOPPER && !hopper_can_take(&device_problem))
    expect_refusal = 1;
  handle->cuda.gemm_hopper_block_n = forced_block_n;
  handle->cuda.gemm_hopper_stream_k = gc->stream_k;
  handle->cuda.gemm_hopper_chains = gc->chains;
  handle->cuda.gemm_hopper_group_m = gc->group_m;
  status = flashc_gemm(handle, &p, NULL, 0, NULL);
  handle->cuda.gemm_hopper_block_n = 0;
  handle->cuda.gemm_hopper_stream_k = 0;
  handle->cuda.gemm_hopper_chains = 0;
  handle->cuda.gemm_hopper_group_m = 0;
  int pass;
  if (expect_refusal) {
    pass = status == FLASHC_STATUS_NOT_SUPPORTED || status == FLASHC_STATUS_NOT_SUPPORTED_DTYPE;
    if (!pass) printf("  expected NOT_SUPPORTED for a forced Hopper run, got %s\n", flashc_status_name(status));
    test_case_result(pass, "%s (refused: %s)", name, pass ? flashc_last_error() : "no");
  } else if (status != FLASHC_STATUS_SUCCESS) {
    test_print_status("flashc_gemm", status);
    test_case_result(0, "%s", name);
    pass = 0;
  } else {
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemcpy(d, dd, (size_t)count_d * out_bytes, cudaMemcpyDeviceToHost));
    double atol = (gc->out == FLASHC_DTYPE_FP32 ? 32.0 : 2.0) * test_unit_roundoff(gc->out);
    double max_ref = 0.0;
    for (int64_t i = 0; i < count_d; ++i)
      if (mask[i] == ORACLE_COMPARE && fabs(ref64[i]) > max_ref) max_ref = fabs(ref64[i]);
    atol = atol * max_ref + extra_atol + 1e-30;
    test_check_result result;
    pass = test_check_output("d", d, gc->out, count_d, ref64, same, mask, atol, &result);
    test_case_result(pass, "%s err %.2e bound %.2e", name, result.max_error, result.bound);
  }

  free(ref64);
  free(same);
  free(mask);
  cudaFree(da);
  cudaFree(db);
  if (dc != dd) cudaFree(dc);
  cudaFree(dbias);
  cudaFree(dd);
  cudaFree(dscales);
  test_free(a);
  test_free(b);
  test_free(c);
  test_free(bias);
  test_free(d);
  return pass;
}

static int pick_dim(test_rng* rng) {
  static const int fixed[] = {1, 7, 13, 127, 129, 1000};
  int r = test_rng_int(rng, 0, 9);
  if (r < 6) return fixed[r];
  if (r == 6) return 2048 + test_rng_int(rng, 0, 70);
  return test_rng_int(rng, 1, 400);
}

static gemm_case random_case(test_rng* rng) {
  gemm_case gc;
  memset(&gc, 0, sizeof gc);
  static const flashc_dtype ins[] = {FLASHC_DTYPE_FP16, FLASHC_DTYPE_BF16, FLASHC_DTYPE_E4M3};
  static const flashc_dtype outs[] = {FLASHC_DTYPE_FP16, FLASHC_DTYPE_BF16, FLASHC_DTYPE_FP32};
  gc.in = ins[test_rng_int(rng, 0, 2)];
  gc.out = outs[test_rng_int(rng, 0, 2)];
  gc.cd_layout = test_rng_int(rng, 0, 1) ? FLASHC_COL_MAJOR : FLASHC_ROW_MAJOR;
  if (gc.in == FLASHC_DTYPE_E4M3 && test_rng_int(rng, 0, 3) != 0) {
    /* mostly the layouts the Hopper FP8 path takes: K-major operands after normalization */
    if (gc.cd_layout == FLASHC_ROW_MAJOR) {
      gc.a_layout = FLASHC_ROW_MAJOR;
      gc.b_layout = FLASHC_COL_MAJOR;
    } else {
      gc.a_layout = FLASHC_ROW_MAJOR; /* swapped: B' = Aᵀ ... both flipped stay K-major */
      gc.b_layout = FLASHC_COL_MAJOR;
    }
  } else {
    gc.a_layout = test_rng_int(rng, 0, 1) ? FLASHC_COL_MAJOR : FLASHC_ROW_MAJOR;
    gc.b_layout = test_rng_int(rng, 0, 1) ? FLASHC_COL_MAJOR : FLASHC_ROW_MAJOR;
  }
  /* Sizes: keep the CPU reference affordable. */
  const double budget = gc.in == FLASHC_DTYPE_E4M3 ? 3e8 : 1.2e9;
  for (int attempt = 0; attempt < 100; ++attempt) {
    gc.m = pick_dim(rng);
    gc.n = pick_dim(rng);
    gc.k = pick_dim(rng);
    if ((double)gc.m * gc.n * gc.k <= budget) break;
  }
  if ((double)gc.m * gc.n * gc.k > budget) gc.k = 64;
  /* k % 8 == 0 most of the time so that the Hopper path gets most cases */
  if (test_rng_int(rng, 0, 3) != 0 && gc.k % 8 != 0) gc.k = (gc.k + 7) / 8 * 8;
  gc.batch = test_rng_int(rng, 0, 3) == 0 ? test_rng_int(rng, 2, 4) : 1;
  if ((double)gc.m * gc.n * gc.k * gc.batch > budget) gc.batch = 1;
  if (gc.batch > 1) {
    gc.broadcast_a = test_rng_int(rng, 0, 3) == 0;
    gc.broadcast_b = test_rng_int(rng, 0, 3) == 0;
    gc.broadcast_c = test_rng_int(rng, 0, 3) == 0;
  }
  static const int pads[] = {0, 0, 0, 8, 16, 3};
  gc.pad_a = pads[test_rng_int(rng, 0, 5)];
  gc.pad_b = pads[test_rng_int(rng, 0, 5)];
  gc.pad_cd = pads[test_rng_int(rng, 0, 5)];
  static const float alphas[] = {1.0f, 0.5f, -1.25f};
  gc.alpha = alphas[test_rng_int(rng, 0, 2)];
  static const float betas[] = {0.0f, 0.0f, 1.0f, -0.5f};
  gc.beta = betas[test_rng_int(rng, 0, 3)];
  gc.alias_cd = gc.beta != 0.0f && test_rng_int(rng, 0, 3) == 0; /* documented: C may alias D exactly */
  if (gc.alias_cd) gc.broadcast_c = 0;
  gc.bias = test_rng_int(rng, 0, 2) == 0;
  gc.act = (flashc_activation)test_rng_int(rng, 0, 2);
  gc.use_scales = gc.in == FLASHC_DTYPE_E4M3 || test_rng_int(rng, 0, 3) == 0;
  gc.algo = test_rng_int(rng, 0, 1) ? FLASHC_GEMM_ALGO_HOPPER : FLASHC_GEMM_ALGO_AUTO;
  return gc;
}

int main(int argc, char** argv) {
  int device_count = 0;
  if (cudaGetDeviceCount(&device_count) != cudaSuccess || device_count == 0) {
    printf("gpu_gemm: no CUDA device, skipped\n");
    return TEST_EXIT_SKIP;
  }
  flashc_handle_t handle = NULL;
  flashc_status status = flashc_create(&handle, 0);
  if (status != FLASHC_STATUS_SUCCESS) {
    test_print_status("flashc_create", status);
    return TEST_EXIT_SKIP;
  }
  const uint64_t seed = test_seed();
  const int random_cases = argc > 1 ? atoi(argv[1]) : 240;
  const int fixed_cases = !(argc > 2 && !strcmp(argv[2], "--no-fixed"));
  /* --layouts-only: the fixed cases without the three large-tail ones (a short run under
   * compute-sanitizer, as bench/ab_gemm.sh --sanitize makes it). */
  const int short_run = argc > 2 && !strcmp(argv[2], "--layouts-only");
  uint64_t stream = 0;
  /* Tile widths in rotation (or one forced by FLASHC_TEST_GEMM_TILE_N). */
  static const int tile_rotation[4] = {0, 256, 128, 64};
  const char* tile_env = getenv("FLASHC_TEST_GEMM_TILE_N");
  const int tile_forced = tile_env != NULL;
  const int tile_fixed = tile_forced ? atoi(tile_env) : 0;
  int tile_turn = 0;
#define NEXT_TILE_N() (tile_forced ? tile_fixed : tile_rotation[tile_turn++ % 4])
  /* Stream-K in rotation too (3 and 4 are coprime: every width meets every mode). */
  static const int stream_k_rotation[3] = {0, 1, -1};
  const char* stream_k_env = getenv("FLASHC_TEST_GEMM_STREAM_K");

  /* Fixed cases first: every layout × dtype at a tile-aligned size and at tails, large K. */
  static const flashc_dtype ins16[] = {FLASHC_DTYPE_FP16, FLASHC_DTYPE_BF16};
  for (int t = 0; t < 2 * fixed_cases; ++t)
    for (int cd = 0; cd < 2; ++cd)
      for (int al = 0; al < 2; ++al)
        for (int bl = 0; bl < 2; ++bl) {
          gemm_case gc;
          memset(&gc, 0, sizeof gc);
          gc.in = ins16[t];
          gc.out = ins16[t];
          gc.cd_layout = (flashc_layout)cd;
          gc.a_layout = (flashc_layout)al;
          gc.b_layout = (flashc_layout)bl;
          gc.m = (al + bl) % 2 ? 256 : 129;
          gc.n = cd ? 520 : 256;
          gc.k = 2048 + 8 * (al + 2 * bl);
          gc.batch = 1;
          gc.alpha = 1.0f;
          gc.algo = FLASHC_GEMM_ALGO_HOPPER;
          gc.tile_n = tile_forced ? tile_fixed : tile_rotation[(2 * al + bl + cd + 2 * t) % 4];
          test_rng rng = test_rng_make(seed, stream++);
          run_case(handle, &rng, &gc);
        }
  if (fixed_cases) {
    /* large tails in every dimension, one per 16-bit dtype, and e4m3 at long K */
    gemm_case gc;
    test_rng rng;
    memset(&gc, 0, sizeof gc);
    if (!short_run) {
      gc.in = FLASHC_DTYPE_BF16;
      gc.out = FLASHC_DTYPE_BF16;
      gc.m = 2049;
      gc.n = 2056;
      gc.k = 1000;
      gc.batch = 1;
      gc.alpha = 1.0f;
      set_epilogue(&gc, 0.5f, 1, FLASHC_ACTIVATION_GELU);
      gc.algo = FLASHC_GEMM_ALGO_AUTO;
      gc.tile_n = tile_fixed; /* the heuristic unless forced */
      rng = test_rng_make(seed, stream++);
      run_case(handle, &rng, &gc);
      gc.in = FLASHC_DTYPE_FP16;
      gc.out = FLASHC_DTYPE_FP32;
      gc.a_layout = FLASHC_COL_MAJOR;
      gc.b_layout = FLASHC_ROW_MAJOR;
      gc.cd_layout = FLASHC_COL_MAJOR;
      gc.act = FLASHC_ACTIVATION_RELU;
      rng = test_rng_make(seed, stream++);
      run_case(handle, &rng, &gc);
      gc = hopper_k_major_case(FLASHC_DTYPE_E4M3, FLASHC_DTYPE_BF16, 300, 260, 4096, 1, 1.0f);
      set_epilogue(&gc, 0.5f, 1, FLASHC_ACTIVATION_RELU);
      gc.tile_n = tile_fixed;
      rng = test_rng_make(seed, stream++);
      run_case(handle, &rng, &gc);
    }

    /* e4m3 144-wide tiles through the general epilogue (C, bias, GELU; a partial last fp32
     * chunk of 16 columns) and a tail tile column (300 = 2 × 144 + 12). */
    gc = hopper_k_major_case(FLASHC_DTYPE_E4M3, FLASHC_DTYPE_FP32, 200, 300, 512, 3, 0.5f);
    set_epilogue(&gc, 0.25f, 1, FLASHC_ACTIVATION_GELU);
    gc.tile_n = 256; /* → 144 for e4m3 */
    rng = test_rng_make(seed, stream++);
    run_case(handle, &rng, &gc);
    gc.out = FLASHC_DTYPE_BF16; /* and the plain whole-row TMA chunk (288 bytes) with a tail */
    set_epilogue(&gc, 0.0f, 0, FLASHC_ACTIVATION_NONE);
    gc.n = 296;
    rng = test_rng_make(seed, stream++);
    run_case(handle, &rng, &gc);
    gc.out = FLASHC_DTYPE_FP32; /* fp32 D in plain 192-byte chunks (three per row, two buffers) */
    rng = test_rng_make(seed, stream++);
    run_case(handle, &rng, &gc);

    /* e4m3 112-wide tiles: the plain whole-row TMA chunk (224 bytes: seven stmatrix.x4 per
     * warp) with a tail column (250 = 2 × 112 + 26) and a tail row block; fp32 D in 64-byte
     * chunks; the general epilogue with a partial last fp32 chunk (112 = 64 + 48). */
    gc = hopper_k_major_case(FLASHC_DTYPE_E4M3, FLASHC_DTYPE_BF16, 700, 250, 640, 2, 1.0f);
    gc.tile_n = 64; /* → 112 for e4m3 */
    rng = test_rng_make(seed, stream++);
    run_case(handle, &rng, &gc);
    gc.out = FLASHC_DTYPE_FP16;
    gc.n = 224;
    rng = test_rng_make(seed, stream++);
    run_case(handle, &rng, &gc);
    gc.out = FLASHC_DTYPE_FP32;
    gc.n = 250;
    rng = test_rng_make(seed, stream++);
    run_case(handle, &rng, &gc);
    set_epilogue(&gc, 0.5f, 1, FLASHC_ACTIVATION_GELU);
    rng = test_rng_make(seed, stream++);
    run_case(handle, &rng, &gc);

    /* e4m3 128-wide tiles into a 16-bit D: a tile's two 128-byte spans leave in one store round
     * (gemm_hopper_d_chunks_per_round). 320 columns = 2 × 128 + 64 (a last tile column whose round
     * has one span), 300 rows (a tail row block), batches of 3 × 3 tiles, 180 in all (more than
     * SMs: each CTA's staging is reused round after round); a padded D (ldd 328); a column-major
     * D (the kernel's N is the 320 rows). (They also checked the rejected span-pair store,
     * docs/patches/gemm-e4m3-span-pair-d-store.patch.) */
    gc = hopper_k_major_case(FLASHC_DTYPE_E4M3, FLASHC_DTYPE_BF16, 300, 320, 128, 20, 1.0f);
    gc.tile_n = 128;
    rng = test_rng_make(seed, stream++);
    run_case(handle, &rng, &gc);
    gc = hopper_k_major_case(FLASHC_DTYPE_E4M3, FLASHC_DTYPE_FP16, 300, 320, 384, 1, 0.5f);
    gc.tile_n = 128;
    gc.pad_cd = 8;
    rng = test_rng_make(seed, stream++);
    run_case(handle, &rng, &gc);
    gc = hopper_k_major_case(FLASHC_DTYPE_E4M3, FLASHC_DTYPE_BF16, 320, 200, 256, 2, 1.0f);
    gc.tile_n = 128;
    gc.cd_layout = FLASHC_COL_MAJOR;
    rng = test_rng_make(seed, stream++);
    run_case(handle, &rng, &gc);

    /* Several tiles per CTA with a plain epilogue into a TMA-stored D (batches of 3 × 3
     * tiles, more tiles than SMs): each tile is stored while the next tile's first k-tile
     * runs (gemm_hopper_kernel.cuh, the overlapped loops). K of 1, 2 and 3 k-tiles, so a
     * tile's last k-tile falls on either partial buffer of the e4m3 stream. */
    static const struct {
      flashc_dtype in, out;
      int k;
    } multi[] = {{FLASHC_DTYPE_BF16, FLASHC_DTYPE_BF16, 136}, {FLASHC_DTYPE_FP16, FLASHC_DTYPE_FP16, 64},
                 {FLASHC_DTYPE_E4M3, FLASHC_DTYPE_BF16, 128}, {FLASHC_DTYPE_E4M3, FLASHC_DTYPE_FP16, 256},
                 {FLASHC_DTYPE_E4M3, FLASHC_DTYPE_FP32, 384}};
    for (size_t i = 0; i < sizeof multi / sizeof multi[0]; ++i) {
      const int n = multi[i].in == FLASHC_DTYPE_E4M3 ? 264 : 520; /* 3 tiles wide at 128 / 256 columns */
      gc = hopper_k_major_case(multi[i].in, multi[i].out, 300, n, multi[i].k, 50, 0.75f);
      gc.tile_n = tile_forced ? tile_fixed : 256;
      rng = test_rng_make(seed, stream++);
      run_case(handle, &rng, &gc);
      if (multi[i].in == FLASHC_DTYPE_E4M3 && !tile_forced) {
        /* and on the 112-wide tile: 16-bit D leaves the 144- and 112-wide tiles in one
         * whole-row chunk per tile through one buffer, so each tile's store waits for the
         * previous tile's to have read it. */
        gc.tile_n = 64;
        rng = test_rng_make(seed, stream++);
        run_case(handle, &rng, &gc);
      }
    }

    /* The general epilogue (gemm_hopper_store_general) in every form: each output dtype × D
     * row-major (bias per column) and column-major (the kernel's bias per row) × no activation,
     * ReLU, GELU × C (beta 1 aliasing D, -0.5 in its own buffer, or none with a bias). 196 ×
     * 520: whole 256-wide tiles with C read ahead in quads, a last tile column of 8, and a last
     * tile row whose second warpgroup has 4 rows (row-major: threads with 1 row and with none;
     * column-major D, 520 kernel rows: a first warpgroup of 8 rows, the second idle); a padded
     * leading dimension of 3 in a third of the cases sends every quad through the element path. */
    static const float epilogue_betas[3] = {1.0f, -0.5f, 0.0f};
    for (int out = 0; out < 3; ++out)
      for (int cd = 0; cd < 2; ++cd)
        for (int act = 0; act < 3; ++act)
          for (int b = 0; b < 3; ++b) {
            static const flashc_dtype epilogue_outs[3] = {FLASHC_DTYPE_BF16, FLASHC_DTYPE_FP16, FLASHC_DTYPE_FP32};
            gc = hopper_k_major_case(FLASHC_DTYPE_BF16, epilogue_outs[out], 196, 520, 136, 1, 0.75f);
            gc.cd_layout = cd ? FLASHC_COL_MAJOR : FLASHC_ROW_MAJOR;
            set_epilogue(&gc, epilogue_betas[b], b != 0, (flashc_activation)act);
            gc.alias_cd = b == 0;
            gc.pad_cd = (out + cd + act + b) % 3 == 0 ? 3 : 0;
            gc.tile_n = tile_forced ? tile_fixed : 256;
            rng = test_rng_make(seed, stream++);
            run_case(handle, &rng, &gc);
          }

    /* C, bias and activations finished in registers (gemm_hopper_finish_pack) with several
     * tiles per CTA: batches of 3 × 3 tiles (more tiles than SMs), so a fused tile is stored
     * while the next tile's first k-tile runs, from both exits of the overlapped loop. 16-bit
     * D stored by TMA; 520 columns leave a last tile column of 8 and 328 rows a last tile row
     * whose second warpgroup has 8 (row-major D) — column-major D turns the 328 rows into the
     * kernel's columns and the bias into a per-row one; C aliasing D, in its own buffer,
     * broadcast across the batch, or absent; stream-K forced in one of each four. K = 136 is
     * 3 k-tiles, fewer than GEMM_HOPPER_FUSED_C_PREFETCH_K_TILES (no C prefetch); the last
     * four cases run K = 520, 9 k-tiles, so that C is prefetched into L2 before each tile's
     * end (also reached by the 2049 × 2056 × 1000 case above and the random cases). */
    for (int i = 0; i < 12; ++i) {
      const int prefetched = i >= 8;
      static const flashc_activation fused_acts[4] = {FLASHC_ACTIVATION_GELU, FLASHC_ACTIVATION_RELU,
                                                      FLASHC_ACTIVATION_NONE, FLASHC_ACTIVATION_GELU};
      static const float fused_betas[4] = {1.0f, -0.5f, 0.5f, 0.0f};
      gc = hopper_k_major_case(i % 2 ? FLASHC_DTYPE_FP16 : FLASHC_DTYPE_BF16, i % 2 ? FLASHC_DTYPE_FP16 : FLASHC_DTYPE_BF16,
                               328, 520, prefetched ? 520 : 136, prefetched ? 16 : 30, 0.75f);
      gc.cd_layout = i / 4 == 1 ? FLASHC_COL_MAJOR : FLASHC_ROW_MAJOR;
      set_epilogue(&gc, fused_betas[i % 4], i % 4 != 2, fused_acts[i % 4]);
      gc.alias_cd = i % 4 == 0;
      gc.broadcast_c = i % 4 == 2;
      gc.stream_k = i % 4 == 1 ? 1 : 0;
      gc.tile_n = tile_forced ? tile_fixed : 256;
      rng = test_rng_make(seed, stream++);
      run_case(handle, &rng, &gc);
    }

    /* The 256-wide 16-bit tile on one and on two WGMMA chains per k-step (gemm_hopper_config.cuh)
     * in every layout: 304 × 520 × (200…224) is 3 × 3 tiles, fewer than SMs, so with two chains
     * each CTA's tile ends in halves (gemm_hopper_finish_in_halves): 4 k-tiles, the last
     * partial; a last tile row whose second warpgroup has no rows (304 = 2 · 128 + 48, its
     * stores return early) and a last tile column of 8 (the first half stores one chunk, the
     * second none). Then two chains where the rule never puts them, to keep every path of that
     * instantiation correct: C + bias + GELU finished in registers, an fp32 D (the
     * non-overlapped loop), a column-major D with a bias per row, and stream-K (split units
     * never end in halves). */
    for (int t = 0; t < 2; ++t)
      for (int al = 0; al < 2; ++al)
        for (int bl = 0; bl < 2; ++bl)
          for (int chains = 1; chains <= 2; ++chains) {
            memset(&gc, 0, sizeof gc);
            gc.in = gc.out = ins16[t];
            gc.a_layout = (flashc_layout)al;
            gc.b_layout = (flashc_layout)bl;
            gc.m = 304;
            gc.n = 520;
            gc.k = 200 + 8 * (al + 2 * bl);
            gc.batch = 1;
            gc.alpha = 0.5f;
            gc.algo = FLASHC_GEMM_ALGO_HOPPER;
            gc.tile_n = tile_forced ? tile_fixed : 256;
            gc.chains = chains;
            rng = test_rng_make(seed, stream++);
            run_case(handle, &rng, &gc);
          }
    for (int i = 0; i < 4; ++i) {
      gc = hopper_k_major_case(i % 2 ? FLASHC_DTYPE_FP16 : FLASHC_DTYPE_BF16, i == 1 ? FLASHC_DTYPE_FP32 : FLASHC_DTYPE_BF16,
                               300, 520, 520, i == 3 ? 20 : 1, 0.75f);
      if (i == 0) set_epilogue(&gc, 0.5f, 1, FLASHC_ACTIVATION_GELU);
      if (i == 2) {
        gc.cd_layout = FLASHC_COL_MAJOR;
        set_epilogue(&gc, 0.0f, 1, FLASHC_ACTIVATION_RELU);
      }
      gc.stream_k = i == 3 ? 1 : 0;
      gc.tile_n = tile_forced ? tile_fixed : 256;
      gc.chains = 2;
      rng = test_rng_make(seed, stream++);
      run_case(handle, &rng, &gc);
    }

    /* Stream-K forced (gemm_hopper_scheduler.cuh): split tiles summed through the workspace.
     * Few tiles and long K split each tile into ~20 pieces (one head waits for ~20 CTAs);
     * fewer k-tiles than CTAs leave some runs empty; batches of 3 × 3 tiles past one round
     * mix whole tiles and split ones in a CTA; every store path (TMA with the overlapped
     * loop, general with C / bias / GELU, fp32) and e4m3's promotion loop. */
    static const struct {
      flashc_dtype in, out;
      int m, n, k, batch, tile_n;
      float beta;
    } split[] = {{FLASHC_DTYPE_BF16, FLASHC_DTYPE_BF16, 300, 500, 3000, 1, 256, 0.0f},
                 {FLASHC_DTYPE_FP16, FLASHC_DTYPE_FP32, 700, 300, 1000, 1, 128, 0.5f},
                 {FLASHC_DTYPE_FP16, FLASHC_DTYPE_FP16, 130, 300, 200, 1, 256, 0.0f},
                 {FLASHC_DTYPE_BF16, FLASHC_DTYPE_BF16, 300, 520, 512, 20, 256, 0.0f},
                 {FLASHC_DTYPE_BF16, FLASHC_DTYPE_FP16, 300, 520, 512, 20, 256, 1.0f},
                 {FLASHC_DTYPE_E4M3, FLASHC_DTYPE_BF16, 300, 300, 4096, 1, 128, 0.0f},
                 {FLASHC_DTYPE_E4M3, FLASHC_DTYPE_FP32, 300, 264, 512, 20, 128, 0.25f},
                 {FLASHC_DTYPE_E4M3, FLASHC_DTYPE_BF16, 300, 250, 4096, 1, 64, 0.0f}}; /* 64 → 112 for e4m3 */
    for (size_t i = 0; i < sizeof split / sizeof split[0]; ++i) {
      gc = hopper_k_major_case(split[i].in, split[i].out, split[i].m, split[i].n, split[i].k, split[i].batch, 1.0f);
      if (split[i].beta != 0.0f) set_epilogue(&gc, split[i].beta, 1, FLASHC_ACTIVATION_GELU);
      gc.tile_n = tile_forced ? tile_fixed : split[i].tile_n;
      gc.stream_k = 1;
      gc.group_m = (int)(i % 3); /* the rule's group, then groups of 1 and 2 tile rows */
      rng = test_rng_make(seed, stream++);
      run_case(handle, &rng, &gc);
    }
  }
  for (int i = 0; i < random_cases; ++i) {
    test_rng rng = test_rng_make(seed, stream++);
    gemm_case gc = random_case(&rng);
    gc.tile_n = NEXT_TILE_N();
    gc.stream_k = stream_k_env ? atoi(stream_k_env) : stream_k_rotation[i % 3];
    gc.group_m = i % 4 == 3 ? 1 + (i / 4) % 3 : 0; /* a quarter with groups of 1–3 tile rows */
    run_case(handle, &rng, &gc);
  }
  flashc_destroy(handle);
  printf("gpu_gemm: %d cases, %d failed (seed %llu)\n", test_case_count(), test_failed_count(),
         (unsigned long long)seed);
  return test_summary();
}
