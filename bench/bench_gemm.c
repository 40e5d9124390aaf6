/*
 * bench_gemm.c — flashc_gemm vs cuBLASLt, same buffers, same process, same GPU (DESIGN §7).
 *
 * Shapes: squares 1024…8192 (16384 with --full) and the LLM shapes tokens 512…16384 ×
 * (N, K) ∈ {(4096, 4096), (14336, 4096), (4096, 14336), (28672, 8192), (8192, 28672)}, fp16
 * and bf16; e4m3 (bf16 out, per-tensor scales) at 4096³ and 8192³ against cuBLASLt FP8 (with --full
 * also at 1024³, 2048³, 6144³, 16384³ and the LLM shapes at 4096 and 8192 tokens).
 * Layout: D (M×N) row-major = A (M×K row-major) · B (K×N column-major, i.e. an N×K weight
 * matrix) — the "TN" GEMM of a linear layer, the one layout both libraries (and FP8) take.
 * Method: random non-zero inputs, inputs rotated among several copies so the working set
 * exceeds the L2 (≥ 200 MB per rotation cycle, every launch on the next copy), flashc and
 * cuBLASLt launches alternating (5 warm-up rounds, then ≥ 25 timed rounds), each launch between
 * two CUDA events; the medians. FLOPs = 2·M·N·K.
 * Output: a progress line per shape on stderr; a table on stdout (shape, dtype, flashc
 * TFLOP/s, cuBLASLt TFLOP/s, ratio) and the geometric mean of the ratio over 4096³, 8192³
 * and the LLM shapes at ≥ 4096 tokens.
 *   ./bench_gemm [--quick] [--full] [--algo hopper|portable|auto] [--only DTYPE] [--min-m M] [--max-m M]
 *                [--tile-n 256|128|64, e4m3 128|144|112] [--json FILE] [--runs N]
 *                [--stream-k auto|on|off] [--group-m G] [--ab-tile-n W] [--ab-stream-k auto|on|off]
 *                [--ab-group-m G] [--shape MxNxK[:bf16|fp16|e4m3]]...
 * --shape times the given shapes instead of the sweep (bf16 unless a dtype is named; repeatable),
 * e.g. shapes whose stream-K tail is a few tiles spread thin: --shape 2176x4096x4096.
 * --tile-n forces the Hopper tile width (16-bit or e4m3) on the handle (fc_cuda_context.gemm_hopper_block_n)
 * instead of the heuristic, to compare widths on the same shapes; --min-m / --max-m keep shapes with M ≥ / ≤ M.
 * --stream-k forces the stream-K schedule of the Hopper path and the portable path's stream-K tail on or
 * off (fc_cuda_context.gemm_hopper_stream_k, .gemm_portable_stream_k). --group-m forces the Hopper
 * tile order's group of G tile rows (fc_cuda_context.gemm_hopper_group_m; 0 = the launcher's).
 * --ab-tile-n / --ab-stream-k / --ab-group-m time flashc a second time per shape with those settings (variant B,
 * alternating launch by launch with variant A, on the same buffers) and add the columns B and B/A.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>
#include <cuda_runtime.h>

#include "flashc.h"
#include "host/handle.h" /* --tile-n: the handle's forced Hopper tile width */

#define CUDA_OK(call)                                                                                  \
  do {                                                                                                 \
    cudaError_t e_ = (call);                                                                           \
    if (e_ != cudaSuccess) {                                                                           \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));            \
      exit(1);                                                                                         \
    }                                                                                                  \
  } while (0)
#define LT_OK(call)                                                                                    \
  do {                                                                                                 \
    cublasStatus_t s_ = (call);                                                                        \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                                 \
      fprintf(stderr, "%s:%d %s: cublas status %d\n", __FILE__, __LINE__, #call, (int)s_);            \
      exit(1);                                                                                         \
    }                                                                                                  \
  } while (0)

#define WARMUP_RUNS 5
#define ROTATION_BYTES (200ull << 20)
#define CUBLAS_WORKSPACE_BYTES (64ull << 20)
/* Heuristic results to try, in order, until cuBLASLt accepts one. */
#define LT_ALGO_CANDIDATES 8
#define PATTERN_BYTES (16ull << 20)

typedef struct shape {
  int m, n, k;
  flashc_dtype dtype;
  int in_geomean;
  const char* label;
} shape;

typedef struct result {
  shape s;
  double flashc_tflops, cublas_tflops, flashc_b_tflops;
} result;

static unsigned char* host_pattern;

/* Random non-zero values of `dtype` (magnitudes 2^-3 … 2^1, random sign) in a host pattern,
 * copied over the device buffer. */
static void make_pattern(flashc_dtype dtype) {
  if (!host_pattern) host_pattern = (unsigned char*)malloc(PATTERN_BYTES);
  uint64_t state = 0x9E3779B97F4A7C15ull ^ (uint64_t)dtype;
  size_t element = flashc_dtype_size(dtype);
  for (size_t i = 0; i < PATTERN_BYTES / element; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    uint32_t r = (uint32_t)(state >> 33);
    int sign = r & 1, exponent = (int)((r >> 1) % 5) - 3;
    uint32_t mantissa = (r >> 4) & 0x7;
    if (dtype == FLASHC_DTYPE_BF16) {
      uint16_t v = (uint16_t)((sign << 15) | ((127 + exponent) << 7) | (mantissa << 4));
      memcpy(host_pattern + 2 * i, &v, 2);
    } else if (dtype == FLASHC_DTYPE_FP16) {
      uint16_t v = (uint16_t)((sign << 15) | ((15 + exponent) << 10) | (mantissa << 7));
      memcpy(host_pattern + 2 * i, &v, 2);
    } else {
      uint8_t v = (uint8_t)((sign << 7) | ((7 + exponent) << 3) | mantissa);
      host_pattern[i] = v;
    }
  }
}

static void fill_device(void* dst, size_t bytes) {
  for (size_t offset = 0; offset < bytes; offset += PATTERN_BYTES) {
    size_t chunk = bytes - offset < PATTERN_BYTES ? bytes - offset : PATTERN_BYTES;
    CUDA_OK(cudaMemcpy((char*)dst + offset, host_pattern, chunk, cudaMemcpyHostToDevice));
  }
}

static int compare_float(const void* a, const void* b) {
  float x = *(const float*)a, y = *(const float*)b;
  return x < y ? -1 : x > y;
}

static cudaDataType_t cuda_type(flashc_dtype dtype) {
  return dtype == FLASHC_DTYPE_FP16 ? CUDA_R_16F : dtype == FLASHC_DTYPE_BF16 ? CUDA_R_16BF : CUDA_R_8F_E4M3;
}

/* Median milliseconds of `runs` timed runs of one library. which: 0 flashc, 1 cublas. */
typedef struct bench_ctx {
  flashc_handle_t handle;
  int algo;
  cublasLtHandle_t lt;
  void* lt_workspace;
  cudaStream_t stream;
  int runs;
  int tile_n[2], stream_k[2], group_m[2]; /* flashc variants A and B (the handle's forced settings) */
  int ab;                     /* time variant B too */
} bench_ctx;

static double run_shape(bench_ctx* ctx, const shape* s, double* cublas_ms, double* flashc_b_ms) {
  const flashc_dtype in = s->dtype;
  const flashc_dtype out = in == FLASHC_DTYPE_E4M3 ? FLASHC_DTYPE_BF16 : in;
  const size_t in_bytes = flashc_dtype_size(in), out_bytes = flashc_dtype_size(out);
  const size_t a_bytes = (size_t)s->m * s->k * in_bytes, b_bytes = (size_t)s->k * s->n * in_bytes;
  const size_t d_bytes = (size_t)s->m * s->n * out_bytes;
  int rotations = (int)((ROTATION_BYTES + a_bytes + b_bytes - 1) / (a_bytes + b_bytes));
  if (rotations < 1) rotations = 1;
  if (rotations > 16) rotations = 16;
  char *a = NULL, *b = NULL, *d = NULL, *c = NULL;
  float* scales = NULL;
  CUDA_OK(cudaMalloc((void**)&a, a_bytes * rotations));
  CUDA_OK(cudaMalloc((void**)&b, b_bytes * rotations));
  CUDA_OK(cudaMalloc((void**)&d, d_bytes));
  /* FP8: one of the cuBLASLt variants below gives C its own (unused, beta = 0) buffer. */
  char* c_own = NULL;
  if (in == FLASHC_DTYPE_E4M3) CUDA_OK(cudaMalloc((void**)&c_own, d_bytes));
  c = d;
  /* scale_a and scale_b, each in its own 256-byte slot (cuBLASLt refuses FP8 scales closer
     together: see its setup below). */
  enum { SCALE_SLOT_FLOATS = 64 };
  CUDA_OK(cudaMalloc((void**)&scales, 2 * SCALE_SLOT_FLOATS * sizeof(float)));
  {
    float host_scales[2 * SCALE_SLOT_FLOATS];
    for (int i = 0; i < 2 * SCALE_SLOT_FLOATS; ++i) host_scales[i] = 1.0f;
    CUDA_OK(cudaMemcpy(scales, host_scales, sizeof host_scales, cudaMemcpyHostToDevice));
  }
  make_pattern(in);
  fill_device(a, a_bytes * rotations);
  fill_device(b, b_bytes * rotations);

  const int total = WARMUP_RUNS + ctx->runs;
  cudaEvent_t* events = (cudaEvent_t*)malloc(sizeof(cudaEvent_t) * (3 * total + 1)); /* up to 3 players alternating */
  for (int i = 0; i <= 3 * total; ++i) CUDA_OK(cudaEventCreate(&events[i]));
  float* times = (float*)malloc(sizeof(float) * ctx->runs);
  double medians[3] = {NAN, NAN, NAN}; /* flashc A, cuBLASLt, flashc B */

  /* flashc */
  flashc_gemm_params p;
  flashc_gemm_params_init(&p);
  p.m = s->m;
  p.n = s->n;
  p.k = s->k;
  p.a_dtype = p.b_dtype = in;
  p.d_dtype = out;
  p.a_layout = FLASHC_ROW_MAJOR;
  p.b_layout = FLASHC_COL_MAJOR;
  p.cd_layout = FLASHC_ROW_MAJOR;
  p.d = d;
  p.algo = ctx->algo;
  if (in == FLASHC_DTYPE_E4M3) {
    p.scale_a = &scales[0];
    p.scale_b = &scales[SCALE_SLOT_FLOATS];
  }
  /* cuBLASLt: column-major Dᵀ (n×m) = op(B)ᵀ… : A_lt = B (k×n, ld k) transposed, B_lt = A (k×m, ld k).
     FP8 takes torch._scaled_mm's setup for a 16-bit D: C = D (beta = 0), per-tensor A and B
     scales, no D scale (cuBLASLt 13.1 has no algorithm with one for a bf16 D, and says so with
     CUBLASLT_LOG_MASK=1), FAST_ACCUM off; a separate C buffer is the fallback. The variant used
     is reported. The scale pointers must be 16-byte aligned, it seems: with them 4 bytes apart
     (B's scale at +4) every heuristic choice was refused at run time, CUBLAS_STATUS_NOT_SUPPORTED
     and nothing logged (29th–34th sessions); in slots of their own every one runs (35th). */
  cublasLtMatmulDesc_t op = NULL;
  cublasLtMatrixLayout_t la = NULL, lb = NULL, ld = NULL;
  cublasLtMatmulPreference_t preference;
  LT_OK(cublasLtMatmulPreferenceCreate(&preference));
  size_t workspace_bytes = CUBLAS_WORKSPACE_BYTES;
  LT_OK(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                                             sizeof workspace_bytes));
  LT_OK(cublasLtMatrixLayoutCreate(&la, cuda_type(in), s->k, s->n, s->k));
  LT_OK(cublasLtMatrixLayoutCreate(&lb, cuda_type(in), s->k, s->m, s->k));
  LT_OK(cublasLtMatrixLayoutCreate(&ld, cuda_type(out), s->n, s->m, s->n));
  typedef struct lt_variant {
    const char* what;
    int c_mode;     /* 1: C = D, 2: C its own buffer */
    int fast_accum; /* -1: attribute not set */
  } lt_variant;
  static const lt_variant variants_16bit[] = {{"C = D", 1, -1}};
  static const lt_variant variants_fp8[] = {
      {"torch._scaled_mm setup: C = D, FAST_ACCUM 0", 1, 0},
      {"C separate, FAST_ACCUM 0", 2, 0},
  };
  const lt_variant* variants = in == FLASHC_DTYPE_E4M3 ? variants_fp8 : variants_16bit;
  const int variant_count = in == FLASHC_DTYPE_E4M3 ? (int)(sizeof variants_fp8 / sizeof variants_fp8[0]) : 1;
  cublasLtMatmulHeuristicResult_t heuristics[LT_ALGO_CANDIDATES];
  const float alpha = 1.0f, beta = 0.0f;
  int chosen = -1, found = 0, variant_used = -1;
  cublasStatus_t first_refusal = CUBLAS_STATUS_SUCCESS;
  for (int v = 0; v < variant_count && chosen < 0; ++v) {
    if (op) cublasLtMatmulDescDestroy(op);
    LT_OK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t transa = CUBLAS_OP_T, transb = CUBLAS_OP_N;
    LT_OK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof transa));
    LT_OK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof transb));
    if (in == FLASHC_DTYPE_E4M3) {
      const float* sa = &scales[SCALE_SLOT_FLOATS]; /* cuBLASLt's A is our B */
      const float* sb = &scales[0];
      LT_OK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa, sizeof sa));
      LT_OK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb, sizeof sb));
      if (variants[v].fast_accum >= 0) {
        const int8_t fast = (int8_t)variants[v].fast_accum;
        LT_OK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof fast));
      }
    }
    c = variants[v].c_mode == 1 ? d : c_own;
    /* A heuristic choice can still be refused at run time, so ask for several and keep the
       first that runs (the index is reported). */
    found = 0;
    if (cublasLtMatmulAlgoGetHeuristic(ctx->lt, op, la, lb, ld, ld, preference, LT_ALGO_CANDIDATES, heuristics,
                                       &found) != CUBLAS_STATUS_SUCCESS)
      found = 0;
    for (int candidate = 0; candidate < found && chosen < 0; ++candidate) {
      cublasStatus_t trial = cublasLtMatmul(ctx->lt, op, &alpha, b, la, a, lb, &beta, c, ld, d, ld,
                                            &heuristics[candidate].algo, ctx->lt_workspace, CUBLAS_WORKSPACE_BYTES,
                                            ctx->stream);
      if (trial == CUBLAS_STATUS_SUCCESS) chosen = candidate, variant_used = v;
      else if (first_refusal == CUBLAS_STATUS_SUCCESS) first_refusal = trial;
    }
    if (in == FLASHC_DTYPE_E4M3)
      fprintf(stderr, "cuBLASLt e4m3 %dx%dx%d variant \"%s\": %d heuristic choices, %s\n", s->m, s->n, s->k,
              variants[v].what, found, chosen >= 0 ? "runs" : "all refused");
  }
  CUDA_OK(cudaStreamSynchronize(ctx->stream));
  if (!found && chosen < 0) {
    fprintf(stderr, "cuBLASLt found no algorithm for %s %dx%dx%d\n", flashc_dtype_name(in), s->m, s->n, s->k);
  }
  if (chosen < 0)
    fprintf(stderr, "cuBLASLt %s %dx%dx%d: every variant and heuristic choice refused at run time (first status %d)\n",
            flashc_dtype_name(in), s->m, s->n, s->k, (int)first_refusal);
  else if (chosen > 0)
    fprintf(stderr, "cuBLASLt %s %dx%dx%d: heuristic choice 0 refused (status %d), using choice %d\n",
            flashc_dtype_name(in), s->m, s->n, s->k, (int)first_refusal, chosen);
  if (variant_used >= 0 && in == FLASHC_DTYPE_E4M3)
    fprintf(stderr, "cuBLASLt e4m3 %dx%dx%d: timing variant \"%s\"\n", s->m, s->n, s->k, variants[variant_used].what);
  cublasLtMatmulHeuristicResult_t heuristic;
  memset(&heuristic, 0, sizeof heuristic);
  if (chosen >= 0) heuristic = heuristics[chosen];

  /* The players, alternating launch by launch: flashc (variant A), flashc variant B with --ab-*,
   * cuBLASLt (when it accepted the problem), so all of them see the same clocks and temperature
   * (timed one block after another, the second block ran ~10 % slower on large shapes under
   * the H200's power limit: stream-K on/off read 0.89 that way and 0.98 alternating at bf16
   * 8192³, 13th session).
   * Every launch reads the next copy of the inputs (with B on A's copy, B found it in L2 and ran
   * 3–4 % faster than the identical A at 2048³). medians[1] stays NaN when cuBLASLt refused the
   * problem or failed at run time: no ratio. */
  enum { PLAYER_FLASHC_A, PLAYER_FLASHC_B, PLAYER_CUBLAS };
  int players[3], player_count = 0;
  players[player_count++] = PLAYER_FLASHC_A;
  if (ctx->ab) players[player_count++] = PLAYER_FLASHC_B;
  if (chosen >= 0) players[player_count++] = PLAYER_CUBLAS;
  int lt_failed = 0;
  const int launches = total * player_count;
  for (int i = 0; i < launches; ++i) {
    const int player = players[i % player_count];
    const char* ai = a + (size_t)(i % rotations) * a_bytes;
    const char* bi = b + (size_t)(i % rotations) * b_bytes;
    CUDA_OK(cudaEventRecord(events[i], ctx->stream));
    if (player != PLAYER_CUBLAS) {
      const int variant = player == PLAYER_FLASHC_B;
      ctx->handle->cuda.gemm_hopper_block_n = ctx->tile_n[variant];
      ctx->handle->cuda.gemm_hopper_stream_k = ctx->stream_k[variant];
      ctx->handle->cuda.gemm_portable_stream_k = ctx->stream_k[variant];
      ctx->handle->cuda.gemm_hopper_group_m = ctx->group_m[variant];
      p.a = ai;
      p.b = bi;
      flashc_status status = flashc_gemm(ctx->handle, &p, NULL, 0, ctx->stream);
      if (status != FLASHC_STATUS_SUCCESS) {
        fprintf(stderr, "flashc_gemm: %s: %s\n", flashc_status_name(status), flashc_last_error());
        exit(1);
      }
    } else if (!lt_failed) {
      cublasStatus_t lt_status = cublasLtMatmul(ctx->lt, op, &alpha, bi, la, ai, lb, &beta, c, ld, d, ld,
                                                &heuristic.algo, ctx->lt_workspace, CUBLAS_WORKSPACE_BYTES,
                                                ctx->stream);
      if (lt_status != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "cublasLtMatmul: status %d for %s %dx%dx%d: no cuBLASLt number\n", (int)lt_status,
                flashc_dtype_name(in), s->m, s->n, s->k);
        lt_failed = 1;
      }
    }
  }
  CUDA_OK(cudaEventRecord(events[launches], ctx->stream));
  CUDA_OK(cudaEventSynchronize(events[launches]));
  CUDA_OK(cudaGetLastError());
  for (int slot = 0; slot < player_count; ++slot) {
    const int player = players[slot];
    if (player == PLAYER_CUBLAS && lt_failed) continue;
    for (int i = 0; i < ctx->runs; ++i) {
      const int launch = (WARMUP_RUNS + i) * player_count + slot;
      CUDA_OK(cudaEventElapsedTime(&times[i], events[launch], events[launch + 1]));
    }
    qsort(times, (size_t)ctx->runs, sizeof(float), compare_float);
    medians[player == PLAYER_FLASHC_A ? 0 : player == PLAYER_CUBLAS ? 1 : 2] = times[ctx->runs / 2];
  }

  cublasLtMatmulPreferenceDestroy(preference);
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(ld);
  cublasLtMatmulDescDestroy(op);
  for (int i = 0; i <= 3 * total; ++i) cudaEventDestroy(events[i]);
  free(events);
  free(times);
  cudaFree(a);
  cudaFree(b);
  cudaFree(d);
  if (c_own) cudaFree(c_own);
  cudaFree(scales);
  *cublas_ms = medians[1];
  *flashc_b_ms = medians[2];
  return medians[0];
}

/* --stream-k / --ab-stream-k: on → 1, off → -1, auto → 0 (fc_cuda_context.gemm_hopper_stream_k and
 * .gemm_portable_stream_k). */
/* "MxNxK" or "MxNxK:dtype" (bf16, fp16, e4m3) into *s; 0 if it is not one. */
static int parse_shape(const char* text, shape* s) {
  char dtype[8] = "bf16";
  int m = 0, n = 0, k = 0;
  const int fields = sscanf(text, "%dx%dx%d:%7s", &m, &n, &k, dtype);
  if (fields < 3 || m <= 0 || n <= 0 || k <= 0) return 0;
  static const flashc_dtype inputs[] = {FLASHC_DTYPE_BF16, FLASHC_DTYPE_FP16, FLASHC_DTYPE_E4M3};
  for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; ++i)
    if (!strcmp(dtype, flashc_dtype_name(inputs[i]))) {
      *s = (shape){m, n, k, inputs[i], 0, "custom"};
      return 1;
    }
  return 0;
}

static int stream_k_mode(const char* text) { return !strcmp(text, "on") ? 1 : !strcmp(text, "off") ? -1 : 0; }

int main(int argc, char** argv) {
  int quick = 0, full = 0, runs = 25;
  const char* only_dtype = NULL; /* --only bf16|fp16|e4m3: time that dtype's shapes alone */
  int tile_n = 0, min_m = 0, max_m = 0;
  int stream_k = 0, ab_tile_n = -1, ab_stream_k = -2; /* B: A's setting unless given */
  int group_m = 0, ab_group_m = -1;
  const char* json_path = NULL;
  shape custom[32];
  int custom_count = 0;
  bench_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.algo = FLASHC_GEMM_ALGO_AUTO;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--quick")) quick = 1;
    else if (!strcmp(argv[i], "--full")) full = 1;
    else if (!strcmp(argv[i], "--json") && i + 1 < argc) json_path = argv[++i];
    else if (!strcmp(argv[i], "--runs") && i + 1 < argc) runs = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--only") && i + 1 < argc) only_dtype = argv[++i];
    else if (!strcmp(argv[i], "--tile-n") && i + 1 < argc) tile_n = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--ab-tile-n") && i + 1 < argc) ab_tile_n = atoi(argv[++i]), ctx.ab = 1;
    else if (!strcmp(argv[i], "--stream-k") && i + 1 < argc) stream_k = stream_k_mode(argv[++i]);
    else if (!strcmp(argv[i], "--ab-stream-k") && i + 1 < argc) ab_stream_k = stream_k_mode(argv[++i]), ctx.ab = 1;
    else if (!strcmp(argv[i], "--group-m") && i + 1 < argc) group_m = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--ab-group-m") && i + 1 < argc) ab_group_m = atoi(argv[++i]), ctx.ab = 1;
    else if (!strcmp(argv[i], "--max-m") && i + 1 < argc) max_m = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--min-m") && i + 1 < argc) min_m = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--shape") && i + 1 < argc) {
      if (custom_count == (int)(sizeof custom / sizeof custom[0])) {
        fprintf(stderr, "bench_gemm: at most %d --shape\n", custom_count);
        return 2;
      }
      if (!parse_shape(argv[++i], &custom[custom_count])) {
        fprintf(stderr, "bench_gemm: --shape wants MxNxK[:bf16|fp16|e4m3] with positive sizes, not '%s'\n", argv[i]);
        return 2;
      }
      ++custom_count;
    }
    else if (!strcmp(argv[i], "--algo") && i + 1 < argc) {
      const char* a = argv[++i];
      ctx.algo = !strcmp(a, "hopper") ? FLASHC_GEMM_ALGO_HOPPER
                 : !strcmp(a, "portable") ? FLASHC_GEMM_ALGO_PORTABLE
                                          : FLASHC_GEMM_ALGO_AUTO;
    } else {
      fprintf(stderr, "usage: %s [--quick] [--full] [--algo hopper|portable|auto] [--only bf16|fp16|e4m3] [--min-m M] [--max-m M] "
                      "[--tile-n 256|128|64, e4m3 128|144|112] [--json FILE] [--runs N] [--stream-k auto|on|off] "
                      "[--group-m G] [--ab-tile-n W] [--ab-stream-k auto|on|off] [--ab-group-m G] "
                      "[--shape MxNxK[:dtype]]...\n", argv[0]);
      return 2;
    }
  }
  if (runs < 20) runs = 20;
  ctx.runs = runs;
  int device_count = 0;
  if (cudaGetDeviceCount(&device_count) != cudaSuccess || device_count == 0) {
    fprintf(stderr, "bench_gemm: no CUDA device\n");
    return 77;
  }
  if (flashc_create(&ctx.handle, 0) != FLASHC_STATUS_SUCCESS) {
    fprintf(stderr, "flashc_create: %s\n", flashc_last_error());
    return 1;
  }
  ctx.tile_n[0] = tile_n;
  ctx.stream_k[0] = stream_k;
  ctx.tile_n[1] = ab_tile_n >= 0 ? ab_tile_n : tile_n;
  ctx.stream_k[1] = ab_stream_k >= -1 ? ab_stream_k : stream_k;
  ctx.group_m[0] = group_m;
  ctx.group_m[1] = ab_group_m >= 0 ? ab_group_m : group_m;
  if (tile_n) fprintf(stderr, "bench_gemm: Hopper 16-bit tile width forced to %d\n", tile_n);
  if (ctx.ab)
    fprintf(stderr,
            "bench_gemm: variant A tile %d stream-k %d group-m %d, variant B tile %d stream-k %d group-m %d "
            "(0 = heuristic)\n",
            ctx.tile_n[0], ctx.stream_k[0], ctx.group_m[0], ctx.tile_n[1], ctx.stream_k[1], ctx.group_m[1]);
  LT_OK(cublasLtCreate(&ctx.lt));
  CUDA_OK(cudaMalloc(&ctx.lt_workspace, CUBLAS_WORKSPACE_BYTES));
  CUDA_OK(cudaStreamCreate(&ctx.stream));

  shape shapes[128];
  int count = 0;
  static const int squares_all[] = {1024, 2048, 4096, 8192, 16384};
  static const int squares_quick[] = {2048, 4096, 8192};
  static const int tokens_all[] = {512, 1024, 2048, 4096, 8192, 16384};
  static const int tokens_quick[] = {4096};
  static const int llm_nk[5][2] = {{4096, 4096}, {14336, 4096}, {4096, 14336}, {28672, 8192}, {8192, 28672}};
  static const flashc_dtype dtypes[2] = {FLASHC_DTYPE_BF16, FLASHC_DTYPE_FP16};
  for (int t = 0; t < 2; ++t) {
    const int* squares = quick ? squares_quick : squares_all;
    int square_count = quick ? 3 : (full ? 5 : 4);
    for (int i = 0; i < square_count; ++i) {
      int s = squares[i];
      shapes[count++] = (shape){s, s, s, dtypes[t], s == 4096 || s == 8192, "square"};
    }
    const int* tokens = quick ? tokens_quick : tokens_all;
    int token_count = quick ? 1 : 6;
    for (int i = 0; i < token_count; ++i)
      for (int j = 0; j < 5; ++j)
        shapes[count++] = (shape){tokens[i], llm_nk[j][0], llm_nk[j][1], dtypes[t], tokens[i] >= 4096, "llm"};
  }
  if (ctx.algo != FLASHC_GEMM_ALGO_PORTABLE) { /* the portable path takes no e4m3 (it would refuse) */
    /* The target's two squares; with --full also the squares where the e4m3 width rule picks
     * 112 (1024³, 6144³) or 128 / 144 for other reasons, and the LLM shapes at 4096 and 8192
     * tokens (128 with stream-K, 144 where K or N is 28672-wide; gemm_hopper_launch.cu). */
    static const int e4m3_squares_full[] = {1024, 2048, 4096, 6144, 8192, 16384};
    static const int e4m3_squares[] = {4096, 8192};
    const int* squares = full ? e4m3_squares_full : e4m3_squares;
    const int square_count = full ? 6 : 2;
    for (int i = 0; i < square_count; ++i)
      shapes[count++] = (shape){squares[i], squares[i], squares[i], FLASHC_DTYPE_E4M3, 0, "square"};
    for (int i = 0; full && i < 2; ++i)
      for (int j = 0; j < 5; ++j)
        shapes[count++] = (shape){4096 << i, llm_nk[j][0], llm_nk[j][1], FLASHC_DTYPE_E4M3, 0, "llm"};
  }
  if (custom_count > 0) { /* --shape: these instead of the sweep */
    memcpy(shapes, custom, sizeof custom[0] * (size_t)custom_count);
    count = custom_count;
  }
  if (only_dtype) { /* keep the shapes of one dtype */
    int kept = 0;
    for (int i = 0; i < count; ++i)
      if (!strcmp(flashc_dtype_name(shapes[i].dtype), only_dtype)) shapes[kept++] = shapes[i];
    count = kept;
  }

  if (min_m > 0 || max_m > 0) { /* keep the shapes with min_m <= M <= max_m */
    int kept = 0;
    for (int i = 0; i < count; ++i)
      if (shapes[i].m >= min_m && (max_m <= 0 || shapes[i].m <= max_m)) shapes[kept++] = shapes[i];
    count = kept;
  }

  result* results = (result*)calloc((size_t)count, sizeof(result));
  for (int i = 0; i < count; ++i) {
    const shape* s = &shapes[i];
    double cublas_ms = 0.0, flashc_b_ms = NAN;
    double flashc_ms = run_shape(&ctx, s, &cublas_ms, &flashc_b_ms);
    double flops = 2.0 * s->m * s->n * (double)s->k;
    results[i].s = *s;
    results[i].flashc_tflops = flops / (flashc_ms * 1e-3) / 1e12;
    results[i].cublas_tflops = flops / (cublas_ms * 1e-3) / 1e12;
    results[i].flashc_b_tflops = flops / (flashc_b_ms * 1e-3) / 1e12;
    fprintf(stderr, "[%d/%d] %s %dx%dx%d: flashc %.1f, cuBLASLt %.1f TFLOP/s\n", i + 1, count,
            flashc_dtype_name(s->dtype), s->m, s->n, s->k, results[i].flashc_tflops, results[i].cublas_tflops);
  }

  printf("%-8s %-6s %6s %6s %6s %10s %10s %7s", "kind", "dtype", "M", "N", "K", "flashc", "cuBLASLt", "ratio");
  if (ctx.ab) printf(" %10s %7s %7s", "flashc_B", "B/A", "B/cuBLAS");
  printf("\n");
  double log_sum[3] = {0, 0, 0};
  int log_count[3] = {0, 0, 0};
  double log_sum_b[3] = {0, 0, 0}; /* variant B against cuBLASLt */
  for (int i = 0; i < count; ++i) {
    const result* r = &results[i];
    double ratio = r->flashc_tflops / r->cublas_tflops;
    printf("%-8s %-6s %6d %6d %6d %10.1f %10.1f %7.3f", r->s.label, flashc_dtype_name(r->s.dtype), r->s.m, r->s.n,
           r->s.k, r->flashc_tflops, r->cublas_tflops, ratio);
    if (ctx.ab)
      printf(" %10.1f %7.3f %7.3f", r->flashc_b_tflops, r->flashc_b_tflops / r->flashc_tflops,
             r->flashc_b_tflops / r->cublas_tflops);
    printf("\n");
    if (r->s.in_geomean) {
      int t = r->s.dtype == FLASHC_DTYPE_BF16 ? 0 : 1;
      log_sum[t] += log(ratio);
      log_count[t]++;
      log_sum[2] += log(ratio);
      log_count[2]++;
      const double ratio_b = r->flashc_b_tflops / r->cublas_tflops;
      log_sum_b[t] += log(ratio_b);
      log_sum_b[2] += log(ratio_b);
    }
  }
  for (int t = 0; t < 3; ++t)
    if (log_count[t])
      printf("geomean ratio (%s; 4096^3, 8192^3, LLM >= 4096 tokens; %d shapes): %.3f\n",
             t == 0 ? "bf16" : t == 1 ? "fp16" : "bf16+fp16", log_count[t], exp(log_sum[t] / log_count[t]));
  for (int t = 0; t < 3 && ctx.ab; ++t)
    if (log_count[t])
      printf("geomean ratio of variant B (%s): %.3f\n", t == 0 ? "bf16" : t == 1 ? "fp16" : "bf16+fp16",
             exp(log_sum_b[t] / log_count[t]));

  if (json_path) {
    FILE* f = fopen(json_path, "w");
    if (f) {
      fprintf(f, "[\n");
      for (int i = 0; i < count; ++i) {
        const result* r = &results[i];
        /* JSON has no NaN: a missing cuBLASLt number is null */
        char cublas_text[32] = "null", ratio_text[32] = "null";
        if (isfinite(r->cublas_tflops)) {
          snprintf(cublas_text, sizeof cublas_text, "%.2f", r->cublas_tflops);
          snprintf(ratio_text, sizeof ratio_text, "%.4f", r->flashc_tflops / r->cublas_tflops);
        }
        fprintf(f, "  {\"kind\": \"%s\", \"dtype\": \"%s\", \"m\": %d, \"n\": %d, \"k\": %d, \"flashc_tflops\": %.2f, "
                   "\"cublaslt_tflops\": %s, \"ratio\": %s}%s\n",
                r->s.label, flashc_dtype_name(r->s.dtype), r->s.m, r->s.n, r->s.k, r->flashc_tflops, cublas_text,
                ratio_text, i + 1 < count ? "," : "");
      }
      fprintf(f, "]\n");
      fclose(f);
    }
  }
  free(results);
  cudaStreamDestroy(ctx.stream);
  cudaFree(ctx.lt_workspace);
  cublasLtDestroy(ctx.lt);
  flashc_destroy(ctx.handle);
  return 0;
}
