/*
 * gpu_smoke.c — the device handle on a real GPU. Exits 77 (skip) when flashc reports no
 * CUDA device (no GPU, or a build without CUDA).
 *
 * Checks: flashc_create on device 0, device info (name, compute capability, SMs, memory),
 * the kernel list of the handle is non-empty, and argument validation on the device handle
 * with cudaMalloc'd buffers: a device pointer misaligned by 2 bytes -> MISALIGNED, a NULL q
 * -> NULL_POINTER, a stride that is not a multiple of 16 bytes -> MISALIGNED, and nothing
 * written to the (poisoned) output on failure. When the build has the attention forward or
 * the GEMM for the GPU, a bf16 forward and GEMMs in every layout combination (fp16, bf16,
 * e4m3 with scales; C, bias, GELU/RELU; batches) are checked against the fp64 oracle under
 * the DESIGN §6 rule, like the CPU backend; a NOT_SUPPORTED_* status there is reported and
 * not counted as a failure.
 *
 * Built with the CUDA runtime when FLASHC_WITH_CUDA is ON (FLASHC_TEST_WITH_CUDA defined).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flashc.h"
#include "oracle.h"

#ifdef FLASHC_TEST_WITH_CUDA
#include <cuda_runtime_api.h>

static int cuda_ok(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return 1;
  printf("  %s: %s\n", what, cudaGetErrorString(error));
  return 0;
}

static void* device_alloc_poisoned(size_t bytes) {
  void* pointer = NULL;
  if (!cuda_ok(cudaMalloc(&pointer, bytes), "cudaMalloc")) test_fatal("cudaMalloc of %zu bytes failed", bytes);
  cuda_ok(cudaMemset(pointer, 0xFF, bytes), "cudaMemset");
  return pointer;
}

static int device_all_poison(const void* device, size_t bytes) {
  unsigned char* host = malloc(bytes);
  if (!host) test_fatal("out of memory");
  int ok = cuda_ok(cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
  for (size_t i = 0; ok && i < bytes; ++i)
    if (host[i] != 0xFFu) ok = 0;
  free(host);
  return ok;
}

static void upload(void* device, const void* host, size_t bytes) {
  if (!cuda_ok(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy")) test_fatal("upload failed");
}

static void download(void* host, const void* device, size_t bytes) {
  if (!cuda_ok(cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy")) test_fatal("download failed");
}

static int is_not_supported(flashc_status s) {
  return s == FLASHC_STATUS_NOT_SUPPORTED || s == FLASHC_STATUS_NOT_SUPPORTED_DTYPE ||
         s == FLASHC_STATUS_NOT_SUPPORTED_HEAD_DIM || s == FLASHC_STATUS_NOT_SUPPORTED_ARCH;
}

/* Validation on the device handle. */
static void check_validation(flashc_handle_t gpu) {
  const int batch = 2, sq = 128, sk = 128, hq = 4, hkv = 2, d = 128;
  size_t q_bytes = (size_t)batch * sq * hq * d * 2, kv_bytes = (size_t)batch * sk * hkv * d * 2;
  void* q = device_alloc_poisoned(q_bytes + 64);
  void* k = device_alloc_poisoned(kv_bytes + 64);
  void* v = device_alloc_poisoned(kv_bytes + 64);
  void* o = device_alloc_poisoned(q_bytes + 64);
  flashc_attn_fwd_params p;
  flashc_attn_fwd_params_init(&p);
  p.dtype = p.out_dtype = FLASHC_DTYPE_BF16;
  p.batch = batch, p.seqlen_q = sq, p.seqlen_k = sk, p.heads_q = hq, p.heads_kv = hkv, p.head_dim = d;
  p.q = q, p.k = k, p.v = v, p.o = o;

  struct {
    const char* name;
    flashc_status expected;
    const char* word;
  } rows[3] = {{"q pointer + 2 bytes", FLASHC_STATUS_MISALIGNED, "q"},
               {"q NULL", FLASHC_STATUS_NULL_POINTER, "q"},
               {"q_row_stride not a multiple of 16 bytes", FLASHC_STATUS_MISALIGNED, "q_row_stride"}};
  for (int i = 0; i < 3; ++i) {
    flashc_attn_fwd_params m = p;
    if (i == 0) m.q = (const char*)q + 2;
    if (i == 1) m.q = NULL;
    if (i == 2) m.q_row_stride = hq * d + 4, m.q_head_stride = d, m.q_batch_stride = (int64_t)sq * (hq * d + 4);
    if (i == 2) m.seqlen_q = sq / 2; /* stays inside the allocation */
    flashc_status s = flashc_attn_fwd(gpu, &m, NULL, 0, NULL);
    cudaDeviceSynchronize();
    const char* message = flashc_last_error();
    int untouched = device_all_poison(o, q_bytes + 64);
    test_case_result(s == rows[i].expected && message[0] && strstr(message, rows[i].word) && untouched,
                     "gpu validation: %s -> %s \"%s\"%s", rows[i].name, flashc_status_name(s), message,
                     untouched ? "" : " (o was written!)");
  }
  cudaFree(q), cudaFree(k), cudaFree(v), cudaFree(o);
}

/* One small bf16 forward on the GPU against the fp64 oracle (if the build has the kernel). */
static void check_attn_fwd(flashc_handle_t gpu, test_rng* rng) {
  const int batch = 2, sq = 197, sk = 257, hq = 8, hkv = 2, d = 128;
  int64_t nq = (int64_t)batch * sq * hq * d, nk = (int64_t)batch * sk * hkv * d, nl = (int64_t)batch * hq * sq;
  uint16_t* q = test_alloc((size_t)nq * 2);
  uint16_t* k = test_alloc((size_t)nk * 2);
  uint16_t* v = test_alloc((size_t)nk * 2);
  uint16_t* o = test_alloc((size_t)nq * 2);
  float* lse = test_alloc((size_t)nl * 4);
  test_fill_random(rng, q, nq, FLASHC_DTYPE_BF16, 1.0);
  test_fill_random(rng, k, nk, FLASHC_DTYPE_BF16, 1.0);
  test_fill_random(rng, v, nk, FLASHC_DTYPE_BF16, 1.0);
  void* dq = device_alloc_poisoned((size_t)nq * 2);
  void* dk = device_alloc_poisoned((size_t)nk * 2);
  void* dv = device_alloc_poisoned((size_t)nk * 2);
  void* dout = device_alloc_poisoned((size_t)nq * 2);
  void* dlse = device_alloc_poisoned((size_t)nl * 4);
  upload(dq, q, (size_t)nq * 2), upload(dk, k, (size_t)nk * 2), upload(dv, v, (size_t)nk * 2);
  flashc_attn_fwd_params p;
  flashc_attn_fwd_params_init(&p);
  p.dtype = p.out_dtype = FLASHC_DTYPE_BF16;
  p.batch = batch, p.seqlen_q = sq, p.seqlen_k = sk, p.heads_q = hq, p.heads_kv = hkv, p.head_dim = d;
  p.causal = 1;
  p.q = dq, p.k = dk, p.v = dv, p.o = dout, p.lse = dlse;
  flashc_status s = flashc_attn_fwd(gpu, &p, NULL, 0, NULL);
  if (is_not_supported(s)) {
    printf("note: attention forward not available on this GPU build: %s \"%s\"\n", flashc_status_name(s), flashc_last_error());
  } else {
    cudaError_t sync = cudaDeviceSynchronize();
    download(o, dout, (size_t)nq * 2);
    download(lse, dlse, (size_t)nl * 4);
    flashc_attn_fwd_params ph = p; /* the same problem on the host copies, for the oracle */
    ph.q = q, ph.k = k, ph.v = v, ph.o = o, ph.lse = lse;
    double* ref = malloc(sizeof(double) * (size_t)(2 * nq + 2 * nl));
    unsigned char* mask = malloc((size_t)(2 * nq + 2 * nl));
    if (!ref || !mask) test_fatal("out of memory");
    oracle_attn_fwd(&ph, ORACLE_FP64, ref, mask, nq, ref + 2 * nq, mask + 2 * nq, nl);
    oracle_attn_fwd(&ph, ORACLE_SAME, ref + nq, mask + nq, nq, ref + 2 * nq + nl, mask + 2 * nq + nl, nl);
    test_check_result ro, rl;
    int ok_o = test_check_output("o", o, FLASHC_DTYPE_BF16, nq, ref, ref + nq, mask, -1.0, &ro);
    double max_lse = 1.0;
    for (int64_t i = 0; i < nl; ++i)
      if (mask[2 * nq + i] == ORACLE_COMPARE && fabs(ref[2 * nq + i]) > max_lse) max_lse = fabs(ref[2 * nq + i]);
    int ok_l = test_check_output("lse", lse, FLASHC_DTYPE_FP32, nl, ref + 2 * nq, ref + 2 * nq + nl, mask + 2 * nq,
                                 16.0 * ldexp(1.0, -24) * max_lse, &rl);
    test_case_result(s == FLASHC_STATUS_SUCCESS && sync == cudaSuccess && ok_o && ok_l,
                     "gpu attn_fwd bf16 b%d sq%d sk%d h%d/%d d%d causal vs oracle: %s | o %.2e/%.2e l2 %.1e | lse %.2e/%.2e",
                     batch, sq, sk, hq, hkv, d, flashc_status_name(s), ro.max_error, ro.bound, ro.rel_l2, rl.max_error,
                     rl.bound);
    free(ref), free(mask);
  }
  cudaFree(dq), cudaFree(dk), cudaFree(dv), cudaFree(dout), cudaFree(dlse);
  test_free(q), test_free(k), test_free(v), test_free(o), test_free(lse);
}

/* GEMMs on the GPU against the fp64 oracle (if the build has the kernels): every layout
 * combination, a few dtypes, odd sizes, alpha/beta with C, bias and GELU. */
static void check_gemm(flashc_handle_t gpu, test_rng* rng) {
  struct {
    int m, n, k, batch;
    flashc_dtype in, out;
    int layouts;
    float beta;
    flashc_activation act;
  } cases[] = {
      {256, 192, 320, 1, FLASHC_DTYPE_BF16, FLASHC_DTYPE_FP32, 0, 0.0f, FLASHC_ACTIVATION_NONE},
      {257, 129, 300, 2, FLASHC_DTYPE_BF16, FLASHC_DTYPE_BF16, 1, 0.5f, FLASHC_ACTIVATION_NONE},
      {128, 256, 64, 1, FLASHC_DTYPE_FP16, FLASHC_DTYPE_FP16, 2, 1.0f, FLASHC_ACTIVATION_GELU},
      {300, 127, 129, 1, FLASHC_DTYPE_FP16, FLASHC_DTYPE_FP32, 3, 0.0f, FLASHC_ACTIVATION_RELU},
      {512, 512, 512, 1, FLASHC_DTYPE_BF16, FLASHC_DTYPE_BF16, 4, -1.0f, FLASHC_ACTIVATION_NONE},
      {1, 7, 13, 3, FLASHC_DTYPE_BF16, FLASHC_DTYPE_FP32, 5, 0.0f, FLASHC_ACTIVATION_NONE},
      {384, 256, 1024, 1, FLASHC_DTYPE_E4M3, FLASHC_DTYPE_BF16, 6, 0.0f, FLASHC_ACTIVATION_NONE},
      {129, 300, 7, 2, FLASHC_DTYPE_FP16, FLASHC_DTYPE_BF16, 7, 0.25f, FLASHC_ACTIVATION_NONE},
  };
  for (size_t t = 0; t < sizeof cases / sizeof cases[0]; ++t) {
    int m = cases[t].m, n = cases[t].n, k = cases[t].k, batch = cases[t].batch;
    flashc_dtype in = cases[t].in, out = cases[t].out;
    size_t ie = test_dtype_size(in), oe = test_dtype_size(out);
    int64_t na = (int64_t)batch * m * k, nb = (int64_t)batch * k * n, nd = (int64_t)batch * m * n;
    void* a = test_alloc((size_t)na * ie);
    void* b = test_alloc((size_t)nb * ie);
    void* c = test_alloc((size_t)nd * oe);
    void* bias = test_alloc((size_t)n * oe);
    void* d = test_alloc((size_t)nd * oe);
    double scale = in == FLASHC_DTYPE_E4M3 ? 8.0 : 1.0;
    test_fill_random(rng, a, na, in, scale);
    test_fill_random(rng, b, nb, in, scale);
    test_fill_random(rng, c, nd, out, 1.0);
    test_fill_random(rng, bias, n, out, 1.0);
    void* da = device_alloc_poisoned((size_t)na * ie);
    void* db = device_alloc_poisoned((size_t)nb * ie);
    void* dc = device_alloc_poisoned((size_t)nd * oe);
    void* dbias = device_alloc_poisoned((size_t)n * oe);
    void* dd = device_alloc_poisoned((size_t)nd * oe);
    float* dscales = device_alloc_poisoned(2 * sizeof(float));
    float scales[2] = {0.03f, 0.05f};
    upload(da, a, (size_t)na * ie), upload(db, b, (size_t)nb * ie), upload(dc, c, (size_t)nd * oe);
    upload(dbias, bias, (size_t)n * oe), upload(dscales, scales, sizeof scales);
    flashc_gemm_params p;
    flashc_gemm_params_init(&p);
    p.m = m, p.n = n, p.k = k, p.batch_count = batch;
    p.a_dtype = p.b_dtype = in, p.d_dtype = out;
    p.a_layout = (flashc_layout)(cases[t].layouts & 1);
    p.b_layout = (flashc_layout)((cases[t].layouts >> 1) & 1);
    p.cd_layout = (flashc_layout)((cases[t].layouts >> 2) & 1);
    p.a = da, p.b = db, p.d = dd;
    p.stride_a = (int64_t)m * k, p.stride_b = (int64_t)k * n, p.stride_c = p.stride_d = (int64_t)m * n;
    p.beta = cases[t].beta;
    p.c = p.beta != 0.0f ? dc : NULL;
    p.activation = cases[t].act;
    if (t % 3 == 2) p.bias = dbias;
    if (in == FLASHC_DTYPE_E4M3) p.scale_a = dscales, p.scale_b = dscales + 1;
    flashc_status s = flashc_gemm(gpu, &p, NULL, 0, NULL);
    char what[160];
    snprintf(what, sizeof what, "gpu gemm %s->%s %dx%dx%d batch %d A%c B%c CD%c beta %g%s%s", test_dtype_name(in),
             test_dtype_name(out), m, n, k, batch, p.a_layout ? 'C' : 'R', p.b_layout ? 'C' : 'R',
             p.cd_layout ? 'C' : 'R', (double)p.beta, p.bias ? " bias" : "",
             p.activation == FLASHC_ACTIVATION_GELU ? " gelu" : p.activation == FLASHC_ACTIVATION_RELU ? " relu" : "");
    if (is_not_supported(s)) {
      printf("note: %s not available on this GPU build: %s \"%s\"\n", what, flashc_status_name(s), flashc_last_error());
    } else {
      cudaError_t sync = cudaDeviceSynchronize();
      download(d, dd, (size_t)nd * oe);
      flashc_gemm_params ph = p; /* host copies for the oracle */
      ph.a = a, ph.b = b, ph.d = d, ph.c = p.c ? c : NULL, ph.bias = p.bias ? bias : NULL;
      if (in == FLASHC_DTYPE_E4M3) ph.scale_a = &scales[0], ph.scale_b = &scales[1];
      double* ref = malloc(sizeof(double) * (size_t)nd * 2);
      unsigned char* mask = malloc((size_t)nd * 2);
      if (!ref || !mask) test_fatal("out of memory");
      oracle_gemm(&ph, ORACLE_FP64, ref, mask, nd);
      oracle_gemm(&ph, ORACLE_SAME, ref + nd, mask + nd, nd);
      test_check_result r;
      int ok = test_check_output("d", d, out, nd, ref, ref + nd, mask, -1.0, &r);
      test_case_result(s == FLASHC_STATUS_SUCCESS && sync == cudaSuccess && ok, "%s vs oracle: %s | d %.2e/%.2e l2 %.1e",
                       what, flashc_status_name(s), r.max_error, r.bound, r.rel_l2);
      free(ref), free(mask);
    }
    cudaFree(da), cudaFree(db), cudaFree(dc), cudaFree(dbias), cudaFree(dd), cudaFree(dscales);
    test_free(a), test_free(b), test_free(c), test_free(bias), test_free(d);
  }
}
#endif

int main(void) {
  uint64_t seed = test_seed();
  (void)seed;
  int count = 0;
  flashc_status status = flashc_get_device_count(&count);
  if (status != FLASHC_STATUS_SUCCESS || count == 0) {
    printf("SKIP no CUDA device visible to flashc (%s, %d devices; %s)\n", flashc_status_name(status), count,
           flashc_build_info());
    return TEST_EXIT_SKIP;
  }
#ifndef FLASHC_TEST_WITH_CUDA
  printf("SKIP %d CUDA device(s), but this test was built without the CUDA runtime\n", count);
  return TEST_EXIT_SKIP;
#else
  flashc_handle_t gpu = NULL;
  status = flashc_create(&gpu, 0);
  test_case_result(status == FLASHC_STATUS_SUCCESS && gpu, "flashc_create(device 0): %s %s", flashc_status_name(status),
                   status ? flashc_last_error() : "");
  if (!gpu) return test_summary();
  flashc_device_info info;
  flashc_device_info_init(&info);
  status = flashc_get_device_info(gpu, &info);
  test_case_result(status == FLASHC_STATUS_SUCCESS && info.backend == FLASHC_BACKEND_CUDA && info.device == 0 &&
                       info.name[0] && info.cc_major >= 5 && info.sm_count > 0 && info.global_memory_bytes > 0,
                   "device info: \"%s\" cc %d.%d, %d SMs, %.1f GiB, %zu KiB shared/block, %zu MiB L2", info.name,
                   info.cc_major, info.cc_minor, info.sm_count, (double)info.global_memory_bytes / (1 << 30),
                   info.shared_memory_per_block_optin / 1024, info.l2_cache_bytes >> 20);
  const char* kernels = flashc_handle_kernels(gpu);
  test_case_result(kernels && kernels[0], "kernels: \"%s\"", kernels ? kernels : "(null)");
  check_validation(gpu);
  test_rng rng = test_rng_make(seed, 1);
  check_attn_fwd(gpu, &rng);
  check_gemm(gpu, &rng);
  test_case_result(flashc_destroy(gpu) == FLASHC_STATUS_SUCCESS, "flashc_destroy(device handle)");
  return test_summary();
#endif
}
