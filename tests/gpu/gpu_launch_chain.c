/*
 * gpu_launch_chain.c — flashc's kernels back to back on one stream, the way a transformer layer
 * runs them, against the same calls with a stream synchronize after each one.
 *
 * What it guards: every GPU kernel is a programmatic dependent launch (src/kernels/common/
 * launch_programmatic.cuh): its CTAs may become resident while the previous kernel on the
 * stream still runs, and must wait (griddepcontrol.wait) before they touch global memory. A
 * kernel that read an input, wrote an output, or used the workspace before that wait would
 * race with its predecessor. The other GPU tests synchronize after each call, so they cannot
 * see such a race; this one chains the calls so that each reads what the previous one wrote
 * (q, k, v from the projections, y from the attention's o, the next round's input from y),
 * rewrites what an earlier one read (each round's projections overwrite the q, k, v the last
 * attention read), and shares ONE workspace among all of them (the attention's tile counter,
 * the GEMM's stream-K flags and partials, split-KV's partials), with every buffer poisoned
 * (NaN) before the chain.
 *
 * Pass: the chained run's outputs equal the synchronized run's bit for bit (every kernel
 * here is deterministic on one device: each output tile has one owner or a fixed merge
 * order), and they are finite (no poison read). Cases draw the attention's mask (none,
 * causal, local), split-KV (off or automatic), the GEMM family of one projection (Hopper or
 * portable), bf16 or fp16, and sizes; three rounds per case.
 *   ./build/tests/gpu/gpu_launch_chain [cases]     (FLASHC_TEST_SEED=n reproduces a run)
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

enum { CHAIN_ROUNDS = 3 };

typedef struct chain_case {
  flashc_dtype dtype;
  int batch, seqlen, heads, head_dim;
  int causal, window_left, num_splits;
  int portable_projection; /* the v projection forced onto the portable kernel */
} chain_case;

static chain_case draw_case(test_rng* rng) {
  static const int head_dims[] = {64, 128, 256};
  static const int seqlens[] = {128, 384, 512, 1000, 1024, 2048};
  chain_case c;
  c.dtype = test_rng_int(rng, 0, 1) ? FLASHC_DTYPE_BF16 : FLASHC_DTYPE_FP16;
  c.head_dim = test_rng_pick(rng, head_dims, 3);
  c.heads = test_rng_int(rng, 1, 8);
  c.seqlen = test_rng_pick(rng, seqlens, 6);
  c.batch = test_rng_int(rng, 1, 4);
  const int mask = test_rng_int(rng, 0, 2);
  c.causal = mask == 1;
  c.window_left = mask == 2 ? test_rng_int(rng, 16, 300) : -1;
  c.num_splits = test_rng_uniform(rng) < 0.3 ? 0 : 1;
  c.portable_projection = test_rng_uniform(rng) < 0.3;
  return c;
}

/* The device buffers of one case: x (tokens × hidden, the layer input), the weights (hidden ×
 * hidden, row-major: y = x · W), q, k, v, o, y, and the shared workspace. */
typedef struct chain_buffers {
  void *x, *wq, *wk, *wv, *wo, *q, *k, *v, *o, *y;
  void* workspace;
  size_t workspace_bytes;
} chain_buffers;

static void gemm_params(flashc_gemm_params* g, const chain_case* c, const void* a, const void* w, void* d, int algo) {
  flashc_gemm_params_init(g);
  const int tokens = c->batch * c->seqlen, hidden = c->heads * c->head_dim;
  g->m = tokens, g->n = hidden, g->k = hidden;
  g->a_dtype = g->b_dtype = c->dtype;
  g->a = a, g->b = w, g->d = d;
  g->algo = algo;
}

static void attn_params(flashc_attn_fwd_params* p, const chain_case* c, const chain_buffers* b) {
  flashc_attn_fwd_params_init(p);
  p->dtype = c->dtype;
  p->batch = c->batch;
  p->seqlen_q = p->seqlen_k = c->seqlen;
  p->heads_q = c->heads;
  p->head_dim = c->head_dim;
  p->q = b->q, p->k = b->k, p->v = b->v, p->o = b->o; /* (batch, seqlen, heads, d): the GEMMs' rows */
  p->causal = c->causal;
  p->window_left = c->window_left;
  p->num_splits = c->num_splits;
}

/* One round: q, k, v = input · W{q,k,v}; o = attention(q, k, v); y = o · Wo. Synchronizes after
 * each call when `synchronize`. Returns 0 and prints the call on failure. */
static int run_round(flashc_handle_t h, const chain_case* c, chain_buffers* b, const void* input, cudaStream_t stream,
                     int synchronize) {
  flashc_gemm_params g[4];
  gemm_params(&g[0], c, input, b->wq, b->q, FLASHC_GEMM_ALGO_AUTO);
  gemm_params(&g[1], c, input, b->wk, b->k, FLASHC_GEMM_ALGO_AUTO);
  gemm_params(&g[2], c, input, b->wv, b->v, c->portable_projection ? FLASHC_GEMM_ALGO_PORTABLE : FLASHC_GEMM_ALGO_AUTO);
  gemm_params(&g[3], c, b->o, b->wo, b->y, FLASHC_GEMM_ALGO_AUTO);
  flashc_attn_fwd_params p;
  attn_params(&p, c, b);
  for (int call = 0; call < 5; ++call) {
    flashc_status s = call < 3   ? flashc_gemm(h, &g[call], b->workspace, b->workspace_bytes, stream)
                      : call == 3 ? flashc_attn_fwd(h, &p, b->workspace, b->workspace_bytes, stream)
                                  : flashc_gemm(h, &g[3], b->workspace, b->workspace_bytes, stream);
    if (s != FLASHC_STATUS_SUCCESS) {
      test_print_status(call == 3 ? "flashc_attn_fwd" : "flashc_gemm", s);
      return 0;
    }
    if (synchronize) CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  return 1;
}

/* The chain: CHAIN_ROUNDS rounds, each round's input the previous round's y (the first: x);
 * every buffer poisoned first. Copies y of the last round and o to the host. */
static int run_chain(flashc_handle_t h, const chain_case* c, chain_buffers* b, size_t matrix_bytes,
                     cudaStream_t stream, int synchronize, void* y_host, void* o_host) {
  void* outputs[] = {b->q, b->k, b->v, b->o, b->y};
  for (int i = 0; i < 5; ++i) CUDA_CHECK(cudaMemset(outputs[i], 0xFF, matrix_bytes));
  CUDA_CHECK(cudaMemset(b->workspace, 0xFF, b->workspace_bytes));
  CUDA_CHECK(cudaDeviceSynchronize());
  for (int round = 0; round < CHAIN_ROUNDS; ++round)
    if (!run_round(h, c, b, round == 0 ? b->x : b->y, stream, synchronize)) return 0;
  CUDA_CHECK(cudaStreamSynchronize(stream));
  CUDA_CHECK(cudaMemcpy(y_host, b->y, matrix_bytes, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(o_host, b->o, matrix_bytes, cudaMemcpyDeviceToHost));
  return 1;
}

/* Workspace for every call of the chain (they share it). */
static size_t chain_workspace_bytes(flashc_handle_t h, const chain_case* c, chain_buffers* b) {
  static const int algos[] = {FLASHC_GEMM_ALGO_AUTO, FLASHC_GEMM_ALGO_PORTABLE};
  size_t most = 0, bytes = 0;
  flashc_gemm_params g;
  for (size_t i = 0; i < sizeof algos / sizeof algos[0]; ++i) {
    gemm_params(&g, c, b->x, b->wq, b->q, algos[i]);
    if (flashc_gemm_workspace_size(h, &g, &bytes) != FLASHC_STATUS_SUCCESS) test_fatal("gemm workspace size");
    if (bytes > most) most = bytes;
  }
  flashc_attn_fwd_params p;
  attn_params(&p, c, b);
  if (flashc_attn_fwd_workspace_size(h, &p, &bytes) != FLASHC_STATUS_SUCCESS) test_fatal("attention workspace size");
  return bytes > most ? bytes : most;
}

static int nonfinite_count(const void* data, int64_t count, flashc_dtype dtype) {
  int bad = 0;
  for (int64_t i = 0; i < count; ++i) bad += !isfinite(test_load(data, i, dtype));
  return bad;
}

static int run_case(flashc_handle_t h, int index, const chain_case* c, test_rng* rng) {
  const int64_t tokens = (int64_t)c->batch * c->seqlen, hidden = (int64_t)c->heads * c->head_dim;
  const size_t element = test_dtype_size(c->dtype);
  const size_t matrix_bytes = (size_t)(tokens * hidden) * element, weight_bytes = (size_t)(hidden * hidden) * element;
  /* Inputs of magnitude ~1 and weights scaled by 1/sqrt(hidden): every layer keeps ~unit scale. */
  void* host = test_alloc(matrix_bytes > weight_bytes ? matrix_bytes : weight_bytes);
  chain_buffers b;
  memset(&b, 0, sizeof b);
  test_fill_random(rng, host, tokens * hidden, c->dtype, 1.0);
  b.x = test_device_copy(host, matrix_bytes);
  void** weights[] = {&b.wq, &b.wk, &b.wv, &b.wo};
  for (int i = 0; i < 4; ++i) {
    test_fill_random(rng, host, hidden * hidden, c->dtype, 1.0 / sqrt((double)hidden));
    *weights[i] = test_device_copy(host, weight_bytes);
  }
  test_free(host);
  void** outputs[] = {&b.q, &b.k, &b.v, &b.o, &b.y};
  for (int i = 0; i < 5; ++i) CUDA_CHECK(cudaMalloc(outputs[i], matrix_bytes));
  b.workspace_bytes = chain_workspace_bytes(h, c, &b);
  CUDA_CHECK(cudaMalloc(&b.workspace, b.workspace_bytes ? b.workspace_bytes : 1));
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  void* y_sync = test_alloc(matrix_bytes);
  void* o_sync = test_alloc(matrix_bytes);
  void* y_chain = test_alloc(matrix_bytes);
  void* o_chain = test_alloc(matrix_bytes);
  int pass = run_chain(h, c, &b, matrix_bytes, stream, 1, y_sync, o_sync) &&
             run_chain(h, c, &b, matrix_bytes, stream, 0, y_chain, o_chain);
  int y_diff = 0, o_diff = 0, nonfinite = 0;
  if (pass) {
    y_diff = memcmp(y_sync, y_chain, matrix_bytes) != 0;
    o_diff = memcmp(o_sync, o_chain, matrix_bytes) != 0;
    nonfinite = nonfinite_count(y_sync, tokens * hidden, c->dtype) + nonfinite_count(o_sync, tokens * hidden, c->dtype);
    pass = !y_diff && !o_diff && nonfinite == 0;
  }
  test_case_result(pass, "case %d: %s batch %d seqlen %d heads %d d %d %s%s%s: chained y %s, o %s; non-finite %d",
                   index, test_dtype_name(c->dtype), c->batch, c->seqlen, c->heads, c->head_dim,
                   c->causal ? "causal" : c->window_left >= 0 ? "local" : "full",
                   c->num_splits == 0 ? ", split-KV auto" : "", c->portable_projection ? ", portable v" : "",
                   y_diff ? "DIFFERS" : "equal", o_diff ? "DIFFERS" : "equal", nonfinite);
  test_free(y_sync), test_free(o_sync), test_free(y_chain), test_free(o_chain);
  CUDA_CHECK(cudaStreamDestroy(stream));
  void* all[] = {b.x, b.wq, b.wk, b.wv, b.wo, b.q, b.k, b.v, b.o, b.y, b.workspace};
  for (int i = 0; i < 11; ++i) CUDA_CHECK(cudaFree(all[i]));
  return pass;
}

int main(int argc, char** argv) {
  int device_count = 0;
  if (cudaGetDeviceCount(&device_count) != cudaSuccess || device_count == 0) {
    printf("gpu_launch_chain: no CUDA device, skipped\n");
    return 77;
  }
  const int cases = argc > 1 ? atoi(argv[1]) : 24;
  flashc_handle_t h = NULL;
  if (flashc_create(&h, 0) != FLASHC_STATUS_SUCCESS) {
    printf("gpu_launch_chain: flashc_create failed: %s\n", flashc_last_error());
    return 1;
  }
  const uint64_t seed = test_seed();
  printf("gpu_launch_chain: seed %llu (FLASHC_TEST_SEED=%llu reproduces)\n", (unsigned long long)seed,
         (unsigned long long)seed);
  for (int i = 0; i < cases; ++i) {
    test_rng rng = test_rng_make(seed, (uint64_t)i + 1);
    const chain_case c = draw_case(&rng);
    run_case(h, i, &c, &rng);
  }
  flashc_destroy(h);
  printf("gpu_launch_chain: ");
  return test_summary();
}
