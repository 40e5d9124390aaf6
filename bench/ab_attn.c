/*
 * ab_attn.c — same-process A/B of attention-forward builds: loads several libflashc.so
 * files (dlopen, RTLD_LOCAL: each keeps its own kernels) and times each on the same device
 * buffers, case by case, in interleaved rounds whose variant order rotates, so clock and
 * thermal drift fall on every variant alike. For deciding whether a kernel change pays
 * (bench/ab_attn.sh wraps it for prebuilt archives); the peers (cuDNN, FA2) are
 * bench_attn.py's job.
 *
 *   ab_attn [--rounds N] [--iters N] [--chain N] [--dtype bf16|fp16] [--varlen] [--seqused]
 *           --case d[/d_v],seqlen,batch,heads[,causal[,heads_kv[,seqlen_q[,num_splits[,window]]]]]] ... NAME=LIBRARY ...
 *
 * d/d_v gives V and O their own head dim (d_v = d without it), e.g. --case 192/128,4096,4,16,1.
 * seqlen is the key length (and the query length unless seqlen_q is given); heads_kv (0 =
 * heads) makes it GQA/MQA, e.g. a decode step with pack-GQA: --case 128,8192,32,32,0,4,1.
 * num_splits (default 1; 0 = automatic) is split-KV: --case 128,8192,1,32,0,4,1,0 against
 * --case 128,8192,1,32,0,4,1,1 times one decode step split and unsplit. window ≥ 0 (default −1)
 * makes it a sliding window of that many keys back and none ahead (window_left, window_right =
 * 0), e.g. --case 64,4096,4,32,0,32,4096,1,256.
 *
 * Each timed call follows an L2 flush (a 256 MB memset outside the events). With --chain N a
 * sample is N calls back to back between the events (one flush before them), timed per call:
 * what a stream of attention layers sees, where a programmatic dependent launch lets each call
 * start while the previous one finishes (launch_programmatic.cuh). Per variant and
 * case it prints the best time's TFLOP/s and the median, and the ratio of the median to the
 * first variant's median. The median, not the best: the H200 starts a process at a higher
 * clock than it holds under load, so the very first calls (the first variant's, in round 0)
 * set bests ~10 % above anything later (2026-11-30: main 670 vs 597 median at d128 16k, every
 * other variant ≤ 630); with --rounds 10 (100 calls) medians repeat within ~1 %. Inputs are
 * uniform in [-1, 1).
 *
 * --seqused gives every case seqused_k: sequence b uses the first [seqlen / 2, seqlen] of its
 * seqlen keys (the same draw as --varlen's lengths), as a KV cache does at a decode step (FLOPs
 * counted over the used keys), e.g. --seqused --case 128,8192,32,32,0,4,1,0.
 *
 * --varlen makes every case (self-attention: seqlen_q = seqlen) a packed batch through
 * cu_seqlens: `batch` sequences of lengths drawn uniformly from [seqlen / 2, seqlen] (the same
 * draw for every variant and run, seeded by the case's index), seqlen_q = seqlen_k = the longest.
 */
#define _GNU_SOURCE /* strndup, dlopen flags */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "flashc.h"

#define BENCH_PROGRAM "ab_attn"
#include "bench_util.h"

#define MAX_VARIANTS 8
#define MAX_CASES 16
#define MAX_SAMPLES 4096
#define FLUSH_BYTES (256u << 20) /* > twice the H200's 60 MB L2 */

typedef struct variant {
  const char* name;
  void* library;
  flashc_status (*create)(flashc_handle_t*, int);
  flashc_status (*destroy)(flashc_handle_t);
  void (*params_init)(flashc_attn_fwd_params*);
  flashc_status (*workspace_size)(flashc_handle_t, const flashc_attn_fwd_params*, size_t*);
  flashc_status (*forward)(flashc_handle_t, const flashc_attn_fwd_params*, void*, size_t, void*);
  const char* (*last_error)(void);
  flashc_handle_t handle;
} variant;

typedef struct attn_case {
  int d, d_v, seqlen, batch, heads, causal, heads_kv, seqlen_q, num_splits, window;
} attn_case;

/* Parses --case's text into c (d or d/d_v first, then the comma-separated sizes); 0 when it is
 * not of that form. */
static int parse_case(const char* text, attn_case* c) {
  c->causal = 0, c->heads_kv = 0, c->seqlen_q = 0, c->num_splits = 1, c->window = -1;
  char* rest = NULL;
  c->d = (int)strtol(text, &rest, 10);
  c->d_v = c->d;
  if (*rest == '/') c->d_v = (int)strtol(rest + 1, &rest, 10);
  if (*rest != ',') return 0;
  if (sscanf(rest + 1, "%d,%d,%d,%d,%d,%d,%d,%d", &c->seqlen, &c->batch, &c->heads, &c->causal, &c->heads_kv,
             &c->seqlen_q, &c->num_splits, &c->window) < 3)
    return 0;
  if (c->heads_kv <= 0) c->heads_kv = c->heads;
  if (c->seqlen_q <= 0) c->seqlen_q = c->seqlen;
  return 1;
}

static void* symbol(void* library, const char* name) {
  void* address = dlsym(library, name);
  if (!address) die("missing symbol", name);
  return address;
}

static void load_variant(variant* v, const char* spec) {
  const char* equals = strchr(spec, '=');
  if (!equals) die("expected NAME=LIBRARY, got", spec);
  v->name = strndup(spec, (size_t)(equals - spec));
  v->library = dlopen(equals + 1, RTLD_NOW | RTLD_LOCAL);
  if (!v->library) die("dlopen", dlerror());
  v->create = (flashc_status(*)(flashc_handle_t*, int))symbol(v->library, "flashc_create");
  v->destroy = (flashc_status(*)(flashc_handle_t))symbol(v->library, "flashc_destroy");
  v->params_init = (void (*)(flashc_attn_fwd_params*))symbol(v->library, "flashc_attn_fwd_params_init");
  v->workspace_size = (flashc_status(*)(flashc_handle_t, const flashc_attn_fwd_params*, size_t*))symbol(
      v->library, "flashc_attn_fwd_workspace_size");
  v->forward = (flashc_status(*)(flashc_handle_t, const flashc_attn_fwd_params*, void*, size_t, void*))symbol(
      v->library, "flashc_attn_fwd");
  v->last_error = (const char* (*)(void))symbol(v->library, "flashc_last_error");
  if (v->create(&v->handle, 0) != FLASHC_STATUS_SUCCESS) die("flashc_create", v->last_error());
}

/* (query, key) pairs a problem of these lengths computes: causal is bottom-right aligned, so
 * query i sees seqlen_k − seqlen_q + i + 1 keys (at most seqlen_k), and a window (window ≥ 0)
 * at most window + 1 of them. */
static double visible_pairs(int seqlen_q, int seqlen_k, int causal, int window) {
  double pairs = 0;
  for (int i = 0; i < seqlen_q; ++i) {
    int visible = causal || window >= 0 ? seqlen_k - seqlen_q + i + 1 : seqlen_k;
    if (window >= 0 && visible > window + 1) visible = window + 1;
    pairs += visible < 0 ? 0 : visible > seqlen_k ? seqlen_k : visible;
  }
  return pairs;
}

/* --varlen's sequence boundaries for case `index`: cu[0] = 0, cu[b + 1] − cu[b] uniform in
 * [seqlen / 2, seqlen]; returns the longest. */
static int draw_varlen(int32_t* cu, int batch, int seqlen, unsigned index) {
  uint32_t state = 0x9E3779B9u * (index + 1u);
  const int shortest = seqlen / 2 > 0 ? seqlen / 2 : 1;
  int longest = 0;
  cu[0] = 0;
  for (int b = 0; b < batch; ++b) {
    state = state * 1664525u + 1013904223u;
    const int length = shortest + (int)((state >> 8) % (uint32_t)(seqlen - shortest + 1));
    cu[b + 1] = cu[b] + length;
    if (length > longest) longest = length;
  }
  return longest;
}

static int compare_float(const void* a, const void* b) {
  const float x = *(const float*)a, y = *(const float*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  int rounds = 10, iters = 10, chain = 1, bf16 = 1, varlen = 0, seqused = 0, variant_count = 0, case_count = 0;
  variant variants[MAX_VARIANTS];
  attn_case cases[MAX_CASES];
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--chain") && i + 1 < argc) chain = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--dtype") && i + 1 < argc) bf16 = strcmp(argv[++i], "fp16") != 0;
    else if (!strcmp(argv[i], "--varlen")) varlen = 1;
    else if (!strcmp(argv[i], "--seqused")) seqused = 1;
    else if (!strcmp(argv[i], "--case") && i + 1 < argc) {
      attn_case* c = &cases[case_count];
      if (case_count == MAX_CASES || !parse_case(argv[++i], c))
        die("--case takes d[/d_v],seqlen,batch,heads[,causal[,heads_kv[,seqlen_q[,num_splits[,window]]]]]", argv[i]);
      if (c->d <= 0 || c->d_v <= 0 || c->seqlen <= 0 || c->batch <= 0 || c->heads <= 0 || c->heads % c->heads_kv != 0)
        die("--case: positive sizes, heads a multiple of heads_kv", argv[i]);
      ++case_count;
    } else if (strchr(argv[i], '=') && variant_count < MAX_VARIANTS) {
      load_variant(&variants[variant_count++], argv[i]);
    } else {
      die("usage: ab_attn [--rounds N] [--iters N] [--chain N] [--dtype bf16|fp16] [--varlen] [--seqused] --case d[/d_v],seqlen,batch,heads[,causal] ... "
          "NAME=LIBRARY ...", NULL);
    }
  }
  if (variant_count == 0 || case_count == 0 || rounds < 1 || iters < 1 || chain < 1 || rounds * iters > MAX_SAMPLES)
    die("need at least one --case and one NAME=LIBRARY", NULL);
  if (varlen && seqused) die("--varlen and --seqused are separate measurements", NULL);

  void* flush = NULL;
  check_cuda(cudaMalloc(&flush, FLUSH_BYTES), "cudaMalloc (flush)");
  cudaEvent_t start, stop;
  check_cuda(cudaEventCreate(&start), "cudaEventCreate");
  check_cuda(cudaEventCreate(&stop), "cudaEventCreate");
  struct cudaDeviceProp properties;
  check_cuda(cudaGetDeviceProperties(&properties, 0), "cudaGetDeviceProperties");
  printf("# %s; %s; %d rounds x %d samples per variant and case of %d back-to-back call(s), L2 flushed before each "
         "sample\n", properties.name, bf16 ? "bf16" : "fp16", rounds, iters, chain);
  printf("%-36s", "case (TFLOP/s best / median)");
  for (int v = 0; v < variant_count; ++v) printf(" %17s", variants[v].name);
  for (int v = 1; v < variant_count; ++v) printf(" %8s/%s", variants[v].name, variants[0].name);
  printf("\n");

  static float samples[MAX_VARIANTS][MAX_SAMPLES];
  for (int c = 0; c < case_count; ++c) {
    const attn_case* k = &cases[c];
    /* rows of Q and of K/V in all: batch × the lengths, or the packed total with --varlen */
    size_t q_rows = (size_t)k->batch * k->seqlen_q, kv_rows = (size_t)k->batch * k->seqlen;
    int32_t* cu_host = NULL;
    int32_t* cu_seqlens = NULL;
    int32_t* used_host = NULL;
    int32_t* seqused_k = NULL;
    int longest = 0;
    if (seqused) { /* the used key lengths: --varlen's draw, as differences of its boundaries */
      int32_t* cu = (int32_t*)malloc((size_t)(k->batch + 1) * sizeof(int32_t));
      draw_varlen(cu, k->batch, k->seqlen, (unsigned)c);
      used_host = (int32_t*)malloc((size_t)k->batch * sizeof(int32_t));
      for (int b = 0; b < k->batch; ++b) used_host[b] = cu[b + 1] - cu[b];
      free(cu);
      check_cuda(cudaMalloc((void**)&seqused_k, (size_t)k->batch * sizeof(int32_t)), "cudaMalloc seqused_k");
      check_cuda(cudaMemcpy(seqused_k, used_host, (size_t)k->batch * sizeof(int32_t), cudaMemcpyHostToDevice),
                 "cudaMemcpy seqused_k");
    }
    if (varlen) {
      if (k->seqlen_q != k->seqlen || k->num_splits != 1) die("--varlen takes self-attention cases without splits", NULL);
      cu_host = (int32_t*)malloc((size_t)(k->batch + 1) * sizeof(int32_t));
      longest = draw_varlen(cu_host, k->batch, k->seqlen, (unsigned)c);
      q_rows = kv_rows = (size_t)cu_host[k->batch];
      check_cuda(cudaMalloc((void**)&cu_seqlens, (size_t)(k->batch + 1) * sizeof(int32_t)), "cudaMalloc cu_seqlens");
      check_cuda(cudaMemcpy(cu_seqlens, cu_host, (size_t)(k->batch + 1) * sizeof(int32_t), cudaMemcpyHostToDevice),
                 "cudaMemcpy cu_seqlens");
    }
    const size_t q_elements = q_rows * k->heads * k->d;
    const size_t o_elements = q_rows * k->heads * k->d_v;
    const size_t kv_elements = kv_rows * k->heads_kv * k->d;
    const size_t v_elements = kv_rows * k->heads_kv * k->d_v;
    size_t most = q_elements > kv_elements ? q_elements : kv_elements;
    if (v_elements > most) most = v_elements;
    uint16_t* host = (uint16_t*)malloc(most * 2);
    void *q, *kk, *vv, *o, *workspace = NULL;
    float* lse;
    check_cuda(cudaMalloc(&q, q_elements * 2), "cudaMalloc q");
    check_cuda(cudaMalloc(&kk, kv_elements * 2), "cudaMalloc k");
    check_cuda(cudaMalloc(&vv, v_elements * 2), "cudaMalloc v");
    check_cuda(cudaMalloc(&o, o_elements * 2), "cudaMalloc o");
    check_cuda(cudaMalloc((void**)&lse, q_rows * k->heads * 4), "cudaMalloc lse");
    void* tensors[3] = {q, kk, vv};
    const size_t counts[3] = {q_elements, kv_elements, v_elements};
    for (int t = 0; t < 3; ++t) {
      fill_random(host, counts[t], bf16, 1000u * c + t);
      check_cuda(cudaMemcpy(tensors[t], host, counts[t] * 2, cudaMemcpyHostToDevice), "cudaMemcpy");
    }
    free(host);
    flashc_attn_fwd_params params[MAX_VARIANTS];
    size_t workspace_bytes = 0;
    for (int v = 0; v < variant_count; ++v) {
      flashc_attn_fwd_params* p = &params[v];
      variants[v].params_init(p);
      p->dtype = bf16 ? FLASHC_DTYPE_BF16 : FLASHC_DTYPE_FP16;
      p->batch = k->batch;
      p->seqlen_q = k->seqlen_q;
      p->seqlen_k = k->seqlen;
      p->heads_q = k->heads;
      p->heads_kv = k->heads_kv;
      p->head_dim = k->d;
      p->head_dim_v = k->d_v;
      p->q = q, p->k = kk, p->v = vv, p->o = o, p->lse = lse;
      p->causal = k->causal;
      if (k->window >= 0) p->window_left = k->window, p->window_right = 0;
      p->num_splits = k->num_splits;
      if (varlen) {
        p->cu_seqlens_q = p->cu_seqlens_k = cu_seqlens;
        p->seqlen_q = p->seqlen_k = longest;
      }
      if (seqused) p->seqused_k = seqused_k;
      size_t bytes = 0;
      if (variants[v].workspace_size(variants[v].handle, p, &bytes) != FLASHC_STATUS_SUCCESS)
        die("workspace size", variants[v].last_error());
      if (bytes > workspace_bytes) workspace_bytes = bytes;
    }
    if (workspace_bytes) check_cuda(cudaMalloc(&workspace, workspace_bytes), "cudaMalloc workspace");
    for (int v = 0; v < variant_count; ++v) /* warm-up (also loads each library's module) */
      for (int w = 0; w < 3; ++w)
        if (variants[v].forward(variants[v].handle, &params[v], workspace, workspace_bytes, NULL) != FLASHC_STATUS_SUCCESS)
          die(variants[v].name, variants[v].last_error());
    check_cuda(cudaDeviceSynchronize(), "warm-up");

    for (int r = 0; r < rounds; ++r)
      for (int i = 0; i < variant_count; ++i) {
        const int v = (i + r) % variant_count;
        for (int it = 0; it < iters; ++it) {
          check_cuda(cudaMemsetAsync(flush, it & 0xFF, FLUSH_BYTES, NULL), "flush");
          check_cuda(cudaEventRecord(start, NULL), "event");
          for (int call = 0; call < chain; ++call)
            if (variants[v].forward(variants[v].handle, &params[v], workspace, workspace_bytes, NULL) !=
                FLASHC_STATUS_SUCCESS)
              die(variants[v].name, variants[v].last_error());
          check_cuda(cudaEventRecord(stop, NULL), "event");
          check_cuda(cudaEventSynchronize(stop), "event sync");
          check_cuda(cudaEventElapsedTime(&samples[v][r * iters + it], start, stop), "elapsed");
          samples[v][r * iters + it] /= (float)chain;
        }
      }
    /* FLOPs: 2 · (d + d_v) per visible (query, key) pair (S and P·V), per sequence. */
    double pairs = 0;
    if (varlen) {
      for (int b = 0; b < k->batch; ++b) {
        const int length = cu_host[b + 1] - cu_host[b];
        pairs += visible_pairs(length, length, k->causal, k->window);
      }
    } else if (seqused) {
      for (int b = 0; b < k->batch; ++b) pairs += visible_pairs(k->seqlen_q, used_host[b], k->causal, k->window);
    } else {
      pairs = k->batch * visible_pairs(k->seqlen_q, k->seqlen, k->causal, k->window);
    }
    const double flops = 2.0 * pairs * (k->d + k->d_v) * k->heads;
    char dims[24], label[64];
    if (k->d_v != k->d) snprintf(dims, sizeof dims, "%d/%d", k->d, k->d_v);
    else snprintf(dims, sizeof dims, "%d", k->d);
    snprintf(label, sizeof label, "d%s s%d b%d h%d%s", dims, k->seqlen, k->batch, k->heads, k->causal ? " causal" : "");
    if (k->window >= 0) snprintf(label + strlen(label), sizeof label - strlen(label), " window%d", k->window);
    if (k->heads_kv != k->heads || k->seqlen_q != k->seqlen)
      snprintf(label + strlen(label), sizeof label - strlen(label), " kv%d q%d", k->heads_kv, k->seqlen_q);
    if (k->num_splits != 1)
      snprintf(label + strlen(label), sizeof label - strlen(label), " split%d", k->num_splits);
    if (varlen) snprintf(label + strlen(label), sizeof label - strlen(label), " varlen");
    if (seqused) snprintf(label + strlen(label), sizeof label - strlen(label), " seqused");
    printf("%-36s", label);
    double median0 = 0;
    double median[MAX_VARIANTS];
    for (int v = 0; v < variant_count; ++v) {
      const int n = rounds * iters;
      qsort(samples[v], (size_t)n, sizeof(float), compare_float);
      const double best = flops / (samples[v][0] * 1e-3) / 1e12;
      median[v] = flops / (samples[v][n / 2] * 1e-3) / 1e12;
      if (v == 0) median0 = median[v];
      printf("    %6.1f / %6.1f", best, median[v]);
    }
    for (int v = 1; v < variant_count; ++v) printf(" %17.3f", median[v] / median0);
    printf("\n");
    fflush(stdout);
    cudaFree(q), cudaFree(kk), cudaFree(vv), cudaFree(o), cudaFree(lse);
    if (cu_seqlens) cudaFree(cu_seqlens);
    if (seqused_k) cudaFree(seqused_k);
    free(cu_host);
    free(used_host);
    if (workspace) cudaFree(workspace);
  }
  for (int v = 0; v < variant_count; ++v) variants[v].destroy(variants[v].handle);
  cudaFree(flush);
  return 0;
}
