/*
 * gpu_attn_fwd.c — flashc_attn_fwd on a CUDA handle (the Hopper forward kernel) against the
 * independent fp64 oracle of tests/oracle.c under the DESIGN §6 rule, per output tensor (O and
 * LSE): ref64 = the oracle in fp64 on the same rounded inputs, out_same = the oracle in the
 * kernel's precision (fp32 math, P rounded to the input dtype before P·V),
 *     max|out − ref64| ≤ 2·max|out_same − ref64| + atol,
 * relative L2 reported, NaN never passes. O, LSE and a guard before and after each of them
 * are poisoned (0xFF = NaN) before every run: every element the API says is written must be
 * written, everything else must keep its poison. Inputs hold poison wherever the kernel must
 * not read (stride padding, rows beyond seqused, guards), so such a read shows up as NaN.
 *
 * The grid, in the spirit of FA3's tests, over the axes
 *   dtype {fp16, bf16} × heads {MHA, GQA, MQA} × feature {none, causal, local window, softcap,
 *   softcap + mask} × head dim {64, 96, 128, 192, 256, 192/128} × seqlen pair {(1,1), (1,239),
 *   (113,203), (128,217), (108,256), (256,512), (1023,1024), (2048,2048), random odd} ×
 *   lengths {fixed, fixed + seqused, varlen, varlen with empty sequences, varlen + seqused} ×
 *   layout {packed, padded strides, heads-major, packed QKV in one buffer}
 * is sampled in three parts:
 *   1. a pairwise covering array drawn afresh from the run's seed: every pair of values of any
 *      two axes appears in at least one case (so every seqlen pair with every head dim, every
 *      mask with every layout, ...), about 60 cases;
 *   2. N random cases (argument, default 300): every axis uniform, plus one-sided varlen,
 *      seqlen_q > seqlen_k (rows that see no key: O = 0, LSE = −inf exactly), explicit
 *      softmax_scale, pack_gqa hints, num_splits = 0 and 2..9, lse = NULL, caller-owned workspace,
 *      a non-default stream;
 *   2b-2d. unmasked d64 cases for the 3- and 4-consumer instances, and uniform cases (no mask,
 *      fixed lengths, unsplit; d64/d128/d256) with the stream-K tail forced on a handle that
 *      plans with 2-7 SMs, so tiles split into pieces across up to 7 CTAs;
 *   2e-2f. masked cases for the one-consumer instances (and d128 windows), and causal d128 cases on 2-3 SMs whose
 *      CTAs take several tiles each from the dynamic scheduler's counter;
 *   2g. uniform cases of d64/d96/d128 with stream-K forced off on 2-7 SMs (the drawn count, or
 *      the first of 2, 3, 5, 7 that leaves a partial last round): that round takes its tiles
 *      from the same counter;
 *   2h. unmasked d128 cases of a · 160 + b · 128 keys, whose last b key blocks run 128 wide,
 *      half with the stream-K tail forced;
 *   3. split-KV (FlashAttention-3's decoding path; split_case): num_splits 2..16 and 0
 *      (automatic) with every head dim, causal, local + softcap, rows without keys, more
 *      splits than key blocks (empty splits: LSE = −inf partials the combine skips), varlen
 *      with empty sequences, seqused_q/seqused_k, paged KV, pack-GQA decode steps
 *      (seqlen_q = 1), padded and heads-major layouts, lse = NULL; checked like every other
 *      case (O and LSE poisoned first, LSE compared);
 *   4. paged KV (page sizes 64, 16 with a pack-GQA decode step, 256: run against the oracle)
 *      and what the GPU must refuse with a NOT_SUPPORTED-family status and a message, writing
 *      nothing: a page size that fits no key-block width (24), e4m3, fp32,
 *      other head dims (32, 80, 160,
 *      512, d_v ≠ d except 192/128), strides or pointers not 16-byte aligned (for those,
 *      FLASHC_STATUS_MISALIGNED is accepted too: it is the status flashc.h documents for "not
 *      aligned as required"). A case the kernel should take that returns NOT_SUPPORTED fails.
 * The CPU oracle is the slow part: each case's work is bounded (batch and heads shrink for
 * long sequences), and the oracle runs on OpenMP threads for a window of cases at a time while
 * the GPU runs stay serial and in order.
 *
 *   ./gpu_attn_fwd [N] [--quick] [--no-fixed] [--no-refusals]
 *     N            random cases (default 300)
 *     --quick      a small representative subset (short sequences, no random cases), for
 *                  compute-sanitizer (tests/gpu/sanitize_attn.sh)
 *   FLASHC_TEST_SEED=<n>       reproduces a run (the seed is printed first and last)
 *   FLASHC_TEST_BACKEND=cpu    the same harness against a CPU handle with host buffers (the
 *                              refusal checks of part 4 do not apply: the CPU backend takes
 *                              those problems, so they run as ordinary cases against the
 *                              oracle, which also shows that they are valid arguments)
 * Exits 77 (skip) without a CUDA device (or not sm_90) unless FLASHC_TEST_BACKEND=cpu.
 * One line per case (FAIL lines carry every parameter), the failures again at the end, and
 * a last line "N cases, F failed (seed S)".
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "attn_common.h"
#include "host/handle.h"

/* ---------------------------------------------------------------------------------------- */
/* Backend: device memory, or host memory standing in for it (FLASHC_TEST_BACKEND=cpu)       */
/* ---------------------------------------------------------------------------------------- */

static int g_cpu = 0;
static cudaStream_t g_stream = NULL;
static char g_current[1536] = ""; /* the case on the device, for a fatal CUDA error */

static void cuda_fatal(const char* what, cudaError_t e) {
  printf("FAIL %s\n  CUDA error in %s: %s (the context is unusable; stopping)\n", g_current, what,
         cudaGetErrorString(e));
  printf("%d cases, %d failed (seed %llu)\n", test_case_count() + 1, test_failed_count() + 1,
         (unsigned long long)test_seed());
  fflush(stdout);
  exit(TEST_EXIT_FAIL);
}

#define CUDA_CHECK(call)                     \
  do {                                       \
    cudaError_t e_ = (call);                 \
    if (e_ != cudaSuccess) cuda_fatal(#call, e_); \
  } while (0)

static void* dev_alloc(size_t bytes) {
  if (g_cpu) return test_alloc(bytes);
  void* p = NULL;
  CUDA_CHECK(cudaMalloc(&p, bytes ? bytes : 16));
  return p;
}

static void dev_free(void* p) {
  if (!p) return;
  if (g_cpu) test_free(p);
  else CUDA_CHECK(cudaFree(p));
}

static void dev_upload(void* dst, const void* src, size_t bytes) {
  if (g_cpu) memcpy(dst, src, bytes);
  else CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
}

static void dev_download(void* dst, const void* src, size_t bytes) {
  if (g_cpu) memcpy(dst, src, bytes);
  else CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
}

static double now_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---------------------------------------------------------------------------------------- */
/* Cases                                                                                     */
/* ---------------------------------------------------------------------------------------- */

enum { HEADS_MHA = 0, HEADS_GQA = 1, HEADS_MQA = 2, HEADS_COUNT = 3 };
static const char* const heads_names[HEADS_COUNT] = {"mha", "gqa", "mqa"};
enum { FEAT_NONE = 0, FEAT_CAUSAL, FEAT_LOCAL, FEAT_SOFTCAP, FEAT_SOFTCAP_MASK, FEAT_COUNT };
enum { LEN_FIXED = 0, LEN_FIXED_USED, LEN_VARLEN, LEN_VARLEN_EMPTY, LEN_VARLEN_USED, LEN_COUNT };
static const char* const len_names[LEN_COUNT] = {"fixed", "fixed+seqused", "varlen", "varlen+empty", "varlen+seqused"};

#define DIM_COUNT 6
static const int supported_dims[DIM_COUNT][2] = {{64, 64}, {96, 96}, {128, 128}, {192, 192}, {256, 256}, {192, 128}};
#define PAIR_COUNT 8
static const int named_pairs[PAIR_COUNT][2] = {{1, 1},     {1, 239},   {113, 203},   {128, 217},
                                               {108, 256}, {256, 512}, {1023, 1024}, {2048, 2048}};
#define WIDE_TILE_CASES 6 /* long unmasked d64 cases (part 2b) */
#define FOUR_CONSUMER_CASES 8 /* shorter unmasked d64 cases (part 2c) */
#define ONE_CONSUMER_CASES 12 /* masked d64/d128 cases that see few keys per row (part 2e) */
#define STREAM_K_CASES 24 /* uniform cases with the stream-K tail forced on a few SMs (part 2d) */
#define TICKET_CASES 12 /* causal d128 cases whose CTAs take tiles from the dynamic counter (part 2f) */
#define DYNAMIC_UNIFORM_CASES 12 /* uniform cases whose last partial round takes the dynamic counter (part 2g) */
#define NARROW_TAIL_CASES 12 /* unmasked d128 cases whose last key blocks run narrow (part 2h) */
#define QUICK_COUNTER_CASES 4       /* --quick: parts 2f and 2g, alternating, ... */
#define QUICK_COUNTER_BUDGET 2e8    /* ... each cut to this cost (fit_budget) for the sanitizers */
#define QUICK_PAIR_COUNT 5 /* the first five: short enough for compute-sanitizer */

/* What the case expects of the backend. */
enum { EXPECT_OK = 0, EXPECT_REFUSE = 1 };
/* Why a refusal is expected (also selects how the case is built). */
enum {
  REFUSE_NONE = 0,
  REFUSE_PAGED,
  REFUSE_E4M3,
  REFUSE_FP32,
  REFUSE_HEAD_DIM,
  REFUSE_MISALIGNED,
  REFUSE_COUNT
};
static const char* const refuse_names[REFUSE_COUNT] = {"", "paged-kv", "e4m3", "fp32", "head-dim", "misaligned"};
/* Misalignment: a stride that is not a multiple of 8 elements, or a shifted base pointer. */
enum { MIS_NONE = 0, MIS_STRIDE, MIS_POINTER };
static const char* const tensor_names[4] = {"q", "k", "v", "o"};
static const char* const stride_names[3] = {"head", "row", "batch"};

typedef struct gcase {
  int index;
  int expect, refuse;
  flashc_dtype dtype;
  int heads_kind;
  int feature;
  int len_mode;
  int layout;
  int batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim, head_dim_v;
  int causal, window_left, window_right;
  float softcap, softmax_scale;
  float key_ramp; /* > 0: key row r of used rows scaled by 1 + key_ramp·r/used (the row maxima keep rising) */
  int varlen_q, varlen_k, empty, seqused_q, seqused_k;
  int with_lse;
  int num_splits, pack_gqa;
  int own_workspace, use_stream;
  int mis_kind, mis_tensor, mis_stride, mis_shift; /* misalignment (MIS_*, tensor 0..3, stride 0..2) */
  int page_size;                                     /* paged KV (0: not paged) */
  int stream_k_sms; /* > 0: the stream-K tail forced on a handle that plans with this many SMs (part 2d) */
  int plan_sms;     /* > 0: a handle that plans with this many SMs (parts 2e, 2f, 2g) */
  int stream_k_off; /* the stream-K tail forced off (part 2g: uniform tiles from the dynamic counter) */
  test_rng rng;                                      /* the data of this case */
} gcase;

static double case_cost(const gcase* c) {
  return (double)c->batch * c->heads_q * (double)c->seqlen_q * (double)c->seqlen_k * (c->head_dim + c->head_dim_v);
}

/* Shrinks batch, then heads (keeping MHA/GQA/MQA), until the oracle's work fits the budget. */
static void fit_budget(gcase* c, double budget) {
  int min_batch = c->len_mode == LEN_VARLEN_EMPTY ? 3 : (c->varlen_q || c->varlen_k) ? 2 : 1;
  while (case_cost(c) > budget) {
    if (c->batch > min_batch) --c->batch;
    else if (c->heads_kind == HEADS_MHA && c->heads_q > 1) c->heads_q = --c->heads_kv;
    else if (c->heads_kind == HEADS_GQA && c->heads_q > 2 * c->heads_kv) c->heads_q -= c->heads_kv;
    else if (c->heads_kind == HEADS_GQA && c->heads_kv > 2) c->heads_q = 2 * --c->heads_kv;
    else if (c->heads_kind == HEADS_MQA && c->heads_q > 2) --c->heads_q;
    else break;
  }
}

static void set_heads(gcase* c, test_rng* rng) {
  switch (c->heads_kind) {
    case HEADS_MHA: c->heads_q = c->heads_kv = test_rng_int(rng, 1, 4); break;
    case HEADS_GQA: {
      static const int ratios[] = {2, 3, 4, 8}; /* powers of two can be packed (pack_gqa) */
      c->heads_kv = test_rng_int(rng, 2, 3);
      c->heads_q = c->heads_kv * test_rng_pick(rng, ratios, 4);
      break;
    }
    default: c->heads_kv = 1, c->heads_q = test_rng_int(rng, 2, 8); break;
  }
}

/* A window (left, right): FA3 draws both from [0, seqlen_k); some one-sided, some tiny. */
static void set_window(gcase* c, test_rng* rng) {
  int sk = c->seqlen_k;
  double u = test_rng_uniform(rng);
  if (u < 0.2) { /* small windows: many rows see few or no keys */
    c->window_left = test_rng_int(rng, 0, 8);
    c->window_right = test_rng_int(rng, 0, 8);
  } else {
    c->window_left = test_rng_int(rng, 0, sk);
    c->window_right = test_rng_int(rng, 0, sk);
  }
  double side = test_rng_uniform(rng);
  if (side < 0.15) c->window_left = -1;
  else if (side < 0.3) c->window_right = -1;
}

static void set_feature(gcase* c, test_rng* rng) {
  static const float caps[] = {5.0f, 15.0f, 30.0f, 50.0f};
  c->causal = 0, c->window_left = c->window_right = -1, c->softcap = 0.0f;
  if (c->feature == FEAT_SOFTCAP || c->feature == FEAT_SOFTCAP_MASK) c->softcap = caps[test_rng_int(rng, 0, 3)];
  int mask = c->feature;
  if (c->feature == FEAT_SOFTCAP_MASK) mask = test_rng_int(rng, 0, 1) ? FEAT_CAUSAL : FEAT_LOCAL;
  if (mask == FEAT_CAUSAL) c->causal = 1;
  if (mask == FEAT_LOCAL) set_window(c, rng);
}

static void set_lengths(gcase* c, test_rng* rng) {
  c->varlen_q = c->varlen_k = c->empty = c->seqused_q = c->seqused_k = 0;
  switch (c->len_mode) {
    case LEN_FIXED: c->batch = test_rng_int(rng, 1, 3); break;
    case LEN_FIXED_USED:
      c->batch = test_rng_int(rng, 1, 3);
      c->seqused_k = 1;
      c->seqused_q = test_rng_int(rng, 0, 1);
      break;
    case LEN_VARLEN: c->batch = test_rng_int(rng, 2, 5), c->varlen_q = c->varlen_k = 1; break;
    case LEN_VARLEN_EMPTY: c->batch = test_rng_int(rng, 3, 6), c->varlen_q = c->varlen_k = c->empty = 1; break;
    default:
      c->batch = test_rng_int(rng, 2, 5);
      c->varlen_q = c->varlen_k = 1;
      c->empty = test_rng_int(rng, 0, 1);
      c->seqused_q = test_rng_int(rng, 0, 1);
      c->seqused_k = !c->seqused_q || test_rng_int(rng, 0, 1);
      if (c->empty) c->batch = test_rng_int(rng, 3, 5);
      break;
  }
}

/* The knobs every case draws: lse, pack_gqa, scale, key ramp, workspace, stream, num_splits. */
static void set_knobs(gcase* c, test_rng* rng, int extras) {
  static const int packs[] = {-1, -1, 0, 1};
  c->with_lse = test_rng_uniform(rng) < 0.85;
  c->pack_gqa = test_rng_pick(rng, packs, 4);
  c->softmax_scale = extras && test_rng_uniform(rng) < 0.2 ? (float)(0.03 + 0.2 * test_rng_uniform(rng)) : 0.0f;
  /* Keys growing along the sequence make the row maxima rise block after block by more and by
   * less than the kernel's rescale threshold (attn_fwd_softmax.cuh); plain N(0,1) data almost
   * never moves a maximum after the first key block. */
  c->key_ramp = test_rng_uniform(rng) < 0.3 ? (float)(2.0 + 6.0 * test_rng_uniform(rng)) : 0.0f;
  c->own_workspace = test_rng_int(rng, 0, 1);
  c->use_stream = test_rng_int(rng, 0, 1);
  /* 0 = let flashc choose; 2..9: split-KV (the partials' combine) on any case */
  const double split_draw = extras ? test_rng_uniform(rng) : 1.0;
  c->num_splits = split_draw < 0.08 ? 0 : split_draw < 0.2 ? test_rng_int(rng, 2, 9) : 1;
}

/* The common part of a part-2 case: its index, every knob (set_knobs with extras), and the
 * oracle's work cut to `budget`. fit_budget draws nothing, so a caller's own draws after it
 * come from the same random stream as they did after set_knobs. */
static void number_and_knob(gcase* c, test_rng* rng, int n, double budget) {
  c->index = n;
  set_knobs(c, rng, 1);
  fit_budget(c, budget);
}

static int random_odd(test_rng* rng, int lo, int hi) { return test_rng_int(rng, lo, hi) | 1; }

/* ---------------------------------------------------------------------------------------- */
/* Part 1: a pairwise covering array over the axes (AETG-style greedy), drawn from the seed    */
/* ---------------------------------------------------------------------------------------- */

enum { AX_DTYPE = 0, AX_HEADS, AX_FEATURE, AX_DIM, AX_PAIR, AX_LEN, AX_LAYOUT, AX_COUNT };
#define AX_MAX_VALUES 10

typedef struct covering {
  int sizes[AX_COUNT];
  int pair_values; /* named pairs in the array (the last value of AX_PAIR is "random odd") */
  unsigned char covered[AX_COUNT][AX_COUNT][AX_MAX_VALUES][AX_MAX_VALUES];
} covering;

/* Constraint: packed QKV needs seqlen_q == seqlen_k and d == d_v. -1 = unassigned. */
static int row_valid(const covering* cv, const int* row) {
  if (row[AX_LAYOUT] == LAYOUT_QKV) {
    if (row[AX_DIM] >= 0 && supported_dims[row[AX_DIM]][0] != supported_dims[row[AX_DIM]][1]) return 0;
    if (row[AX_PAIR] >= 0 && row[AX_PAIR] < cv->pair_values &&
        named_pairs[row[AX_PAIR]][0] != named_pairs[row[AX_PAIR]][1])
      return 0;
  }
  return 1;
}

static int new_pairs(const covering* cv, const int* row) {
  int count = 0;
  for (int a = 0; a < AX_COUNT; ++a)
    for (int b = a + 1; b < AX_COUNT; ++b)
      if (row[a] >= 0 && row[b] >= 0 && !cv->covered[a][b][row[a]][row[b]]) ++count;
  return count;
}

/* Fills `rows` (capacity max_rows) until every valid pair is covered; returns the count. */
static int covering_build(covering* cv, test_rng* rng, int (*rows)[AX_COUNT], int max_rows) {
  /* mark invalid pairs covered */
  for (int a = 0; a < AX_COUNT; ++a)
    for (int b = a + 1; b < AX_COUNT; ++b)
      for (int va = 0; va < cv->sizes[a]; ++va)
        for (int vb = 0; vb < cv->sizes[b]; ++vb) {
          int row[AX_COUNT];
          for (int i = 0; i < AX_COUNT; ++i) row[i] = -1;
          row[a] = va, row[b] = vb;
          cv->covered[a][b][va][vb] = !row_valid(cv, row);
        }
  int count = 0;
  while (count < max_rows) {
    int uncovered = 0;
    for (int a = 0; a < AX_COUNT; ++a)
      for (int b = a + 1; b < AX_COUNT; ++b)
        for (int va = 0; va < cv->sizes[a]; ++va)
          for (int vb = 0; vb < cv->sizes[b]; ++vb) uncovered += !cv->covered[a][b][va][vb];
    if (!uncovered) break;
    int best[AX_COUNT], best_score = -1;
    for (int candidate = 0; candidate < 40; ++candidate) {
      int row[AX_COUNT];
      for (int i = 0; i < AX_COUNT; ++i) row[i] = -1;
      /* start from a random uncovered pair */
      int pick = test_rng_int(rng, 0, uncovered - 1);
      for (int a = 0; a < AX_COUNT && row[0] == -1 && pick >= 0; ++a)
        for (int b = a + 1; b < AX_COUNT && pick >= 0; ++b)
          for (int va = 0; va < cv->sizes[a] && pick >= 0; ++va)
            for (int vb = 0; vb < cv->sizes[b] && pick >= 0; ++vb)
              if (!cv->covered[a][b][va][vb] && pick-- == 0) row[a] = va, row[b] = vb;
      int order[AX_COUNT];
      for (int i = 0; i < AX_COUNT; ++i) order[i] = i;
      for (int i = AX_COUNT - 1; i > 0; --i) {
        int j = test_rng_int(rng, 0, i), t = order[i];
        order[i] = order[j], order[j] = t;
      }
      for (int oi = 0; oi < AX_COUNT; ++oi) {
        int axis = order[oi];
        if (row[axis] >= 0) continue;
        int best_value = -1, best_gain = -1, ties = 0;
        for (int v = 0; v < cv->sizes[axis]; ++v) {
          row[axis] = v;
          if (!row_valid(cv, row)) continue;
          int gain = new_pairs(cv, row);
          if (gain > best_gain) best_gain = gain, best_value = v, ties = 1;
          else if (gain == best_gain && test_rng_int(rng, 0, ties++) == 0) best_value = v;
        }
        row[axis] = best_value;
      }
      int score = new_pairs(cv, row);
      if (score > best_score) {
        best_score = score;
        memcpy(best, row, sizeof best);
      }
    }
    for (int a = 0; a < AX_COUNT; ++a)
      for (int b = a + 1; b < AX_COUNT; ++b) cv->covered[a][b][best[a]][best[b]] = 1;
    memcpy(rows[count++], best, sizeof best);
  }
  return count;
}

/* A case from one row of the covering array (or from random axis values). */
static gcase case_from_axes(const int* row, int pair_values, int quick, test_rng* rng) {
  gcase c;
  memset(&c, 0, sizeof c);
  c.dtype = row[AX_DTYPE] ? FLASHC_DTYPE_BF16 : FLASHC_DTYPE_FP16;
  c.heads_kind = row[AX_HEADS];
  c.feature = row[AX_FEATURE];
  c.head_dim = supported_dims[row[AX_DIM]][0];
  c.head_dim_v = supported_dims[row[AX_DIM]][1];
  if (row[AX_PAIR] < pair_values) {
    c.seqlen_q = named_pairs[row[AX_PAIR]][0];
    c.seqlen_k = named_pairs[row[AX_PAIR]][1];
  } else if (quick) {
    c.seqlen_q = random_odd(rng, 1, 161), c.seqlen_k = random_odd(rng, 1, 257);
  } else {
    int long_q = test_rng_uniform(rng) < 0.25, long_k = test_rng_uniform(rng) < 0.25;
    c.seqlen_q = random_odd(rng, 1, long_q ? 1200 : 400);
    c.seqlen_k = random_odd(rng, 1, long_k ? 1200 : 400);
  }
  c.len_mode = row[AX_LEN];
  c.layout = row[AX_LAYOUT];
  if (c.layout == LAYOUT_QKV) c.seqlen_k = c.seqlen_q;
  set_heads(&c, rng);
  set_lengths(&c, rng);
  set_feature(&c, rng);
  return c;
}

/* ---------------------------------------------------------------------------------------- */
/* Part 2: random cases                                                                      */
/* ---------------------------------------------------------------------------------------- */

static gcase random_case(test_rng* rng) {
  int row[AX_COUNT];
  row[AX_DTYPE] = test_rng_int(rng, 0, 1);
  row[AX_HEADS] = test_rng_int(rng, 0, HEADS_COUNT - 1);
  row[AX_FEATURE] = test_rng_int(rng, 0, FEAT_COUNT - 1);
  row[AX_DIM] = test_rng_int(rng, 0, DIM_COUNT - 1);
  row[AX_PAIR] = test_rng_uniform(rng) < 0.3 ? test_rng_int(rng, 0, PAIR_COUNT - 1) : PAIR_COUNT;
  row[AX_LEN] = test_rng_int(rng, 0, LEN_COUNT - 1);
  row[AX_LAYOUT] = test_rng_int(rng, 0, LAYOUT_COUNT - 1);
  gcase c = case_from_axes(row, PAIR_COUNT, 0, rng);
  if (c.layout == LAYOUT_QKV && (c.seqlen_q != c.seqlen_k || c.head_dim != c.head_dim_v)) c.layout = LAYOUT_PADDED;
  /* extras the covering array leaves to chance */
  if (test_rng_uniform(rng) < 0.15 && c.layout != LAYOUT_QKV) { /* seqlen_q > seqlen_k: rows without keys */
    int longer = c.seqlen_q > c.seqlen_k ? c.seqlen_q : c.seqlen_k, shorter = c.seqlen_q + c.seqlen_k - longer;
    if (longer == shorter) longer += test_rng_int(rng, 1, 40);
    c.seqlen_q = longer, c.seqlen_k = shorter;
    if (c.window_left != -1 || c.window_right != -1) set_window(&c, rng);
  }
  if ((c.len_mode == LEN_VARLEN || c.len_mode == LEN_VARLEN_USED) && c.layout != LAYOUT_QKV &&
      test_rng_uniform(rng) < 0.25) { /* one-sided varlen */
    if (test_rng_int(rng, 0, 1)) c.varlen_q = 0;
    else c.varlen_k = 0;
  }
  if (c.feature == FEAT_NONE && test_rng_uniform(rng) < 0.2) c.softcap = 10.0f; /* softcap alone, other value */
  return c;
}

/* ---------------------------------------------------------------------------------------- */
/* Part 4: problems the first GPU version must refuse                                        */
/* ---------------------------------------------------------------------------------------- */

/* The base of parts 3 and 4: a packed, fixed-length GQA d128 problem (2 × 77 query rows, 4
 * query heads on 2 KV heads, LSE on, no mask, unsplit), fp16 for odd variants, else bf16. */
static gcase gqa_d128_case(int variant, int seqlen_k) {
  gcase c;
  memset(&c, 0, sizeof c);
  c.dtype = variant % 2 ? FLASHC_DTYPE_FP16 : FLASHC_DTYPE_BF16;
  c.heads_kind = HEADS_GQA;
  c.heads_kv = 2, c.heads_q = 4;
  c.head_dim = c.head_dim_v = 128;
  c.batch = 2;
  c.seqlen_q = 77, c.seqlen_k = seqlen_k;
  c.len_mode = LEN_FIXED;
  c.layout = LAYOUT_PACKED;
  c.feature = FEAT_NONE;
  c.window_left = c.window_right = -1;
  c.with_lse = 1;
  c.num_splits = 1;
  c.pack_gqa = -1;
  return c;
}

static gcase refusal_case(int refuse, int variant, test_rng* rng) {
  gcase c = gqa_d128_case(variant, 150);
  c.expect = EXPECT_REFUSE;
  c.refuse = refuse;
  c.feature = variant % 3 == 1 ? FEAT_CAUSAL : FEAT_NONE;
  c.causal = c.feature == FEAT_CAUSAL;
  switch (refuse) {
    case REFUSE_PAGED: {
      /* 64 and 16 fit d128's 128-key blocks (whole blocks in a page, whole pages in a block),
       * 256 holds two blocks; 24 fits no built width, so the GPU must refuse it */
      static const int page_sizes[] = {64, 16, 256, 24};
      c.page_size = page_sizes[variant];
      if (c.page_size != 24) c.expect = EXPECT_OK;
      if (variant == 1) c.seqlen_q = 1, c.seqlen_k = 333, c.heads_q = 16; /* a decode step, pack-GQA ratio 8 */
      break;
    }
    case REFUSE_E4M3: c.dtype = FLASHC_DTYPE_E4M3; break;
    case REFUSE_FP32: c.dtype = FLASHC_DTYPE_FP32; break;
    case REFUSE_HEAD_DIM: {
      static const int dims[][2] = {{32, 32}, {80, 80}, {160, 160}, {512, 512}, {128, 64}, {64, 128}, {40, 40}};
      c.head_dim = dims[variant][0], c.head_dim_v = dims[variant][1];
      if (variant == 1) c.len_mode = LEN_VARLEN, c.varlen_q = c.varlen_k = 1, c.batch = 3;
      break;
    }
    case REFUSE_MISALIGNED:
      /* variants 0..11: strides (tensor = variant / 3, stride = variant % 3), 12..15 pointers */
      if (variant < 12) {
        c.mis_kind = MIS_STRIDE, c.mis_tensor = variant / 3, c.mis_stride = variant % 3;
        c.layout = LAYOUT_PADDED;
      } else {
        c.mis_kind = MIS_POINTER, c.mis_tensor = variant - 12;
        static const int shifts[] = {1, 2, 4, 3};
        c.mis_shift = shifts[variant - 12];
      }
      break;
  }
  (void)rng;
  return c;
}

/* ---------------------------------------------------------------------------------------- */
/* Part 3: split-KV                                                                          */
/* ---------------------------------------------------------------------------------------- */

#define SPLIT_CASES 21
#define SPLIT_QUICK_CASES 20 /* the last one is long (d64's 3-consumer instance) */

/* Split-KV case `variant` (0 .. SPLIT_CASES − 1): a GQA d128 problem of 1000 keys (8 key
 * blocks of 128 or 7 of 160) unless the variant changes it; each variant one feature that
 * the split tile mapping, the fp32 partials or the combine could get wrong. */
static gcase split_case(int variant, test_rng* rng) {
  gcase c = gqa_d128_case(variant, 1000);
  c.expect = EXPECT_OK;
  c.num_splits = 3;
  c.own_workspace = variant % 3 == 0;
  c.use_stream = variant % 4 == 1;
  switch (variant) {
    case 0: c.num_splits = 2; break;
    case 1: c.causal = 1, c.feature = FEAT_CAUSAL; break;
    case 2: /* automatic: a decode step of one KV-head group leaves the SMs idle, so flashc splits */
      c.num_splits = 0, c.batch = 1, c.seqlen_q = 1, c.seqlen_k = 2049, c.heads_q = 16;
      break;
    case 3: c.num_splits = 16, c.seqlen_k = 150; break; /* 2 key blocks: 14 empty splits */
    case 4: /* local + softcap: some rows see no key of some splits */
      c.feature = FEAT_SOFTCAP_MASK, c.softcap = 30.0f, c.window_left = 100, c.window_right = 20;
      c.num_splits = 5;
      break;
    case 5: /* more query rows than keys, causal: rows that see no key in any split */
      c.causal = 1, c.feature = FEAT_CAUSAL, c.seqlen_q = 300, c.seqlen_k = 170, c.num_splits = 2;
      break;
    case 6: /* varlen with empty sequences */
      c.len_mode = LEN_VARLEN_EMPTY, c.varlen_q = c.varlen_k = c.empty = 1, c.batch = 4, c.num_splits = 4;
      break;
    case 7: /* varlen + seqused_q: rows past seqused_q must keep their poison */
      c.len_mode = LEN_VARLEN_USED, c.varlen_q = c.varlen_k = 1, c.seqused_q = c.seqused_k = 1, c.batch = 3;
      c.causal = 1, c.feature = FEAT_CAUSAL;
      break;
    case 8: c.len_mode = LEN_FIXED_USED, c.seqused_q = c.seqused_k = 1; break;
    case 9: c.page_size = 64; break; /* paged: whole key blocks inside a page */
    case 10: /* paged decode step, pack-GQA ratio 8, 16-row pages (whole pages inside a block) */
      c.page_size = 16, c.seqlen_q = 1, c.seqlen_k = 333, c.heads_q = 16, c.num_splits = 5;
      break;
    case 11: /* pack-GQA decode step: 8 query heads per KV head share one tile */
      c.seqlen_q = 1, c.seqlen_k = 3001, c.heads_kv = 4, c.heads_q = 32, c.pack_gqa = 1, c.num_splits = 7;
      break;
    case 12: /* MQA decode, automatic */
      c.heads_kind = HEADS_MQA, c.heads_kv = 1, c.heads_q = 8, c.seqlen_q = 1, c.seqlen_k = 1500, c.num_splits = 0;
      break;
    case 13: c.head_dim = c.head_dim_v = 64; break;
    case 14: c.head_dim = c.head_dim_v = 96, c.num_splits = 4; break;
    case 15: c.head_dim = c.head_dim_v = 192, c.causal = 1, c.feature = FEAT_CAUSAL; break;
    case 16: c.head_dim = c.head_dim_v = 256, c.num_splits = 2; break;
    case 17: c.head_dim = 192, c.head_dim_v = 128, c.num_splits = 6; break;
    case 18: c.layout = LAYOUT_PADDED, c.with_lse = 0, c.num_splits = 4; break; /* strides; lse = NULL */
    case 19: c.layout = LAYOUT_HEADS_MAJOR, c.num_splits = 9, c.seqlen_q = 130; break;
    default: /* long unmasked d64: the 3-consumer (192-row) instance */
      c.head_dim = c.head_dim_v = 64, c.seqlen_q = 3073, c.seqlen_k = 3329, c.batch = 1, c.heads_q = 2, c.heads_kv = 1;
      c.heads_kind = HEADS_GQA, c.num_splits = 2;
      break;
  }
  (void)rng;
  return c;
}

/* ---------------------------------------------------------------------------------------- */
/* Building a case: mirrored buffers (host copy for the oracle, device copy for the run)     */
/* ---------------------------------------------------------------------------------------- */

enum { FRONT_GUARD = 64, BACK_GUARD = 40, MAX_MIRRORS = 16 };

typedef struct mirror {
  void* host;
  void* dev;
  size_t bytes;
} mirror;

typedef struct prepared {
  gcase c;
  seq_lengths s;
  int have_s;
  mirror m[MAX_MIRRORS];
  int mirrors;
  int o_mirror, lse_mirror; /* indices of the output buffers */
  tensor4 q, k, v, o;
  float* lse;
  int64_t lse_count;
  int64_t lse_strides[2]; /* actual (batch, head) strides of lse */
  flashc_attn_fwd_params p; /* host pointers */
  double *o_ref, *o_same, *lse_ref, *lse_same;
  unsigned char *o_mask, *o_mask_same, *lse_mask, *lse_mask_same;
  double q_norm_max, k_norm_max; /* the largest row 2-norms of the used Q and K rows (lse_score_error) */
  int oracle_failed;
  char desc[1400];
} prepared;

static void* mirror_new(prepared* pr, size_t bytes, int* index) {
  if (pr->mirrors >= MAX_MIRRORS) test_fatal("too many buffers in one case");
  mirror* m = &pr->m[pr->mirrors];
  m->bytes = bytes ? bytes : 16;
  m->host = test_alloc(m->bytes); /* poisoned */
  m->dev = NULL;
  if (index) *index = pr->mirrors;
  ++pr->mirrors;
  return m->host;
}

/* The device address of a host address inside one of the case's buffers (NULL stays NULL). */
static void* to_dev(const prepared* pr, const void* host) {
  if (!host) return NULL;
  for (int i = 0; i < pr->mirrors; ++i) {
    const char* base = (const char*)pr->m[i].host;
    if ((const char*)host >= base && (const char*)host < base + pr->m[i].bytes)
      return (char*)pr->m[i].dev + ((const char*)host - base);
  }
  test_fatal("pointer %p is in none of the case's buffers", host);
}

static int64_t round8(int64_t x) { return (x + 7) / 8 * 8; }

/*
 * A (batches, rows, heads, columns) tensor in its own buffer: FRONT_GUARD poisoned elements
 * (+ shift) before element 0, BACK_GUARD after the span. Padded gaps are multiples of 8
 * elements; mis_stride (0 head, 1 row, 2 batch; -1 none) adds an odd gap to one stride.
 */
static tensor4 tensor_new(prepared* pr, int layout, test_rng* rng, flashc_dtype dtype, int batches, int rows, int heads,
                          int columns, int mis_stride, int shift, int* mirror_index) {
  tensor4 t;
  memset(&t, 0, sizeof t);
  t.dtype = dtype;
  t.batches = batches, t.rows = rows, t.heads = heads, t.columns = columns;
  if (layout == LAYOUT_PADDED) {
    int odd = 2 * test_rng_int(rng, 0, 2) + 1; /* 1, 3, 5 */
    t.head_stride = round8(columns) + 8 * test_rng_int(rng, 0, 2) + (mis_stride == 0 ? odd : 0);
    t.row_stride = round8((int64_t)heads * t.head_stride) + 8 * test_rng_int(rng, 1, 3) + (mis_stride == 1 ? odd : 0);
    t.batch_stride = round8((int64_t)rows * t.row_stride) + 8 * test_rng_int(rng, 0, 3) + (mis_stride == 2 ? odd : 0);
  } else {
    int64_t bs, rs, hs;
    layout_strides(layout, rng, rows, heads, columns, &bs, &rs, &hs);
    t.batch_stride = bs, t.row_stride = rs, t.head_stride = hs;
  }
  t.explicit_strides = layout != LAYOUT_PACKED;
  int64_t span = tensor4_span(batches, rows, heads, columns, t.batch_stride, t.row_stride, t.head_stride);
  size_t elem = test_dtype_size(dtype);
  t.buffer = mirror_new(pr, (size_t)(FRONT_GUARD + shift + span + BACK_GUARD) * elem, mirror_index);
  t.data = (char*)t.buffer + (size_t)(FRONT_GUARD + shift) * elem;
  t.count = span + BACK_GUARD;
  return t;
}

static void describe(prepared* pr) {
  const gcase* c = &pr->c;
  const seq_lengths* s = &pr->s;
  char window[64] = "";
  if (c->window_left != -1 || c->window_right != -1) snprintf(window, sizeof window, " window(%d,%d)", c->window_left, c->window_right);
  char lens[400] = "";
  if (pr->have_s && (c->varlen_q || c->varlen_k || c->seqused_q || c->seqused_k)) {
    char a[96], b[96], uq[96], uk[96];
    format_ints(a, sizeof a, s->len_q, s->batch);
    format_ints(b, sizeof b, s->len_k, s->batch);
    format_ints(uq, sizeof uq, s->used_q, s->batch);
    format_ints(uk, sizeof uk, s->used_k, s->batch);
    snprintf(lens, sizeof lens, " %s%s[q %s | k %s]%s%s%s%s", c->varlen_q ? "varlen-q " : "", c->varlen_k ? "varlen-k " : "",
             a, b, c->seqused_q ? " seqused_q " : "", c->seqused_q ? uq : "", c->seqused_k ? " seqused_k " : "",
             c->seqused_k ? uk : "");
  }
  char strides[300] = "";
  if (c->layout != LAYOUT_PACKED || c->mis_kind) {
    const tensor4* ts[4] = {&pr->q, &pr->k, &pr->v, &pr->o};
    size_t used = 0;
    for (int i = 0; i < 4 && used < sizeof strides; ++i)
      used += (size_t)snprintf(strides + used, sizeof strides - used, " %s(%lld,%lld,%lld)", tensor_names[i],
                               (long long)ts[i]->batch_stride, (long long)ts[i]->row_stride, (long long)ts[i]->head_stride);
    if (pr->lse && used < sizeof strides)
      snprintf(strides + used, sizeof strides - used, " lse(%lld,%lld)", (long long)pr->lse_strides[0],
               (long long)pr->lse_strides[1]);
  }
  char mis[80] = "";
  if (c->mis_kind == MIS_STRIDE) snprintf(mis, sizeof mis, " misaligned %s_%s_stride", tensor_names[c->mis_tensor], stride_names[c->mis_stride]);
  if (c->mis_kind == MIS_POINTER) snprintf(mis, sizeof mis, " misaligned %s+%d elements", tensor_names[c->mis_tensor], c->mis_shift);
  char extra[96] = "";
  if (c->page_size) snprintf(extra, sizeof extra, " paged(page_size %d)", c->page_size);
  if (c->stream_k_sms)
    snprintf(extra + strlen(extra), sizeof extra - strlen(extra), " stream-K forced on %d SMs", c->stream_k_sms);
  if (c->plan_sms) snprintf(extra + strlen(extra), sizeof extra - strlen(extra), " planned on %d SMs", c->plan_sms);
  char features[128];
  snprintf(features, sizeof features, "%s%s", c->causal ? "causal" : (c->window_left != -1 || c->window_right != -1 ? "local" : "nomask"), window);
  if (c->softcap > 0) snprintf(features + strlen(features), sizeof features - strlen(features), " softcap %g", c->softcap);
  if (c->softmax_scale > 0) snprintf(features + strlen(features), sizeof features - strlen(features), " scale %g", c->softmax_scale);
  if (c->key_ramp > 0) snprintf(features + strlen(features), sizeof features - strlen(features), " key-ramp %g", c->key_ramp);
  snprintf(pr->desc, sizeof pr->desc, "#%d %s%s%s%s b%d sq%d sk%d h%d/%d(%s) d%d/%d %s | %s%s%s%s | %s%s | splits %d pack_gqa %d %s %s%s",
           c->index, c->expect == EXPECT_REFUSE ? "refuse:" : "", c->expect == EXPECT_REFUSE ? refuse_names[c->refuse] : "",
           c->expect == EXPECT_REFUSE ? " " : "", test_dtype_name(c->dtype), c->batch, c->seqlen_q, c->seqlen_k, c->heads_q,
           c->heads_kv, heads_names[c->heads_kind], c->head_dim, c->head_dim_v, features, len_names[c->len_mode], lens, extra, mis,
           layout_names[c->layout], strides, c->num_splits, c->pack_gqa, c->with_lse ? "lse" : "no-lse",
           c->own_workspace ? "own-workspace" : "handle-workspace", c->use_stream ? " stream" : "");
}

/* Builds the inputs (random where read, poison elsewhere), poisoned outputs and the params. */
/* Scales key row r of rows [0, used) by 1 + ramp·r/used (see gcase.key_ramp). */
static void key_ramp_rows(tensor4* t, int b, int64_t row0, int used, float ramp) {
  for (int r = 0; r < used; ++r) {
    double factor = 1.0 + ramp * (double)r / used;
    for (int h = 0; h < t->heads; ++h) {
      int64_t offset = tensor4_offset(t, b, row0 + r, h);
      for (int col = 0; col < t->columns; ++col)
        test_store(t->data, offset + col, t->dtype, factor * test_load(t->data, offset + col, t->dtype));
    }
  }
}

static void prepare_data(prepared* pr) {
  gcase* c = &pr->c;
  test_rng rng = c->rng;
  int hq = c->heads_q, hkv = c->heads_kv, d = c->head_dim, dv = c->head_dim_v;
  flashc_dtype out_dtype = c->dtype == FLASHC_DTYPE_E4M3 ? FLASHC_DTYPE_BF16 : c->dtype;
  int paged = c->page_size > 0;

  pr->s = seq_lengths_make(&rng, c->batch, c->seqlen_q, c->seqlen_k, c->varlen_q, c->varlen_k, c->empty, c->seqused_q,
                           c->seqused_k);
  pr->have_s = 1;
  seq_lengths* s = &pr->s;
  if (c->layout == LAYOUT_QKV && c->varlen_q) { /* one buffer: k and v share q's sequences */
    for (int b = 0; b < c->batch; ++b) {
      s->len_k[b] = s->len_q[b];
      s->cu_k[b + 1] = s->cu_q[b + 1];
      s->used_k[b] = c->seqused_k ? test_rng_int(&rng, 0, s->len_k[b]) : s->len_k[b];
      if (s->seqused_k) s->seqused_k[b] = s->used_k[b];
    }
    s->total_k = s->total_q;
  }
  int q_batches = c->varlen_q ? 1 : c->batch, k_batches = c->varlen_k ? 1 : c->batch;
  int q_rows = c->varlen_q ? (s->total_q > 0 ? s->total_q : 1) : c->seqlen_q;
  int k_rows = c->varlen_k ? (s->total_k > 0 ? s->total_k : 1) : c->seqlen_k;
  int max_pages = 0, num_pages = 0;
  if (paged) {
    max_pages = (c->seqlen_k + c->page_size - 1) / c->page_size;
    num_pages = c->batch * max_pages + 3;
    k_batches = num_pages, k_rows = c->page_size;
  }

  int mis_stride[4] = {-1, -1, -1, -1}, shift[4] = {0, 0, 0, 0};
  if (c->mis_kind == MIS_STRIDE) mis_stride[c->mis_tensor] = c->mis_stride;
  if (c->mis_kind == MIS_POINTER) shift[c->mis_tensor] = c->mis_shift;
  int k_layout = paged ? LAYOUT_PACKED : c->layout;
  if (c->layout == LAYOUT_QKV) {
    /* one (batch, seqlen, heads_q + 2 heads_kv, d) buffer; q, k, v are views into it */
    int heads_all = hq + 2 * hkv;
    int64_t row_stride = (int64_t)heads_all * d, batch_stride = (int64_t)q_rows * row_stride;
    int64_t span = (int64_t)q_batches * batch_stride;
    size_t elem = test_dtype_size(c->dtype);
    char* buffer = mirror_new(pr, (size_t)(FRONT_GUARD + span + BACK_GUARD) * elem, NULL);
    tensor4* views[3] = {&pr->q, &pr->k, &pr->v};
    int heads_of[3] = {hq, hkv, hkv};
    int64_t head_offset[3] = {0, hq, hq + hkv};
    for (int t = 0; t < 3; ++t) {
      tensor4* view = views[t];
      memset(view, 0, sizeof *view);
      view->dtype = c->dtype;
      view->batches = q_batches, view->rows = q_rows, view->heads = heads_of[t], view->columns = d;
      view->batch_stride = batch_stride, view->row_stride = row_stride, view->head_stride = d;
      view->explicit_strides = 1;
      view->buffer = buffer;
      view->data = buffer + (size_t)(FRONT_GUARD + head_offset[t] * d) * elem;
      view->count = span + BACK_GUARD - head_offset[t] * d;
    }
    pr->o = tensor_new(pr, LAYOUT_PACKED, &rng, out_dtype, q_batches, q_rows, hq, dv, -1, 0, &pr->o_mirror);
  } else {
    pr->q = tensor_new(pr, c->layout, &rng, c->dtype, q_batches, q_rows, hq, d, mis_stride[0], shift[0], NULL);
    pr->k = tensor_new(pr, k_layout, &rng, c->dtype, k_batches, k_rows, hkv, d, mis_stride[1], shift[1], NULL);
    pr->v = tensor_new(pr, k_layout, &rng, c->dtype, k_batches, k_rows, hkv, dv, mis_stride[2], shift[2], NULL);
    pr->o = tensor_new(pr, c->layout, &rng, out_dtype, q_batches, q_rows, hq, dv, mis_stride[3], shift[3], &pr->o_mirror);
  }
  /* used rows random, the rest stays poison */
  for (int b = 0; b < c->batch; ++b) {
    int qb = c->varlen_q ? 0 : b;
    int64_t q0 = c->varlen_q ? s->cu_q[b] : 0;
    tensor4_fill_rows(&pr->q, &rng, qb, q0, s->used_q[b], 1.0);
    if (!paged) {
      int kb = c->varlen_k ? 0 : b;
      int64_t k0 = c->varlen_k ? s->cu_k[b] : 0;
      tensor4_fill_rows(&pr->k, &rng, kb, k0, s->used_k[b], 1.0);
      tensor4_fill_rows(&pr->v, &rng, kb, k0, s->used_k[b], 1.0);
      if (c->key_ramp > 0) key_ramp_rows(&pr->k, kb, k0, s->used_k[b], c->key_ramp);
      pr->k_norm_max = fmax(pr->k_norm_max, tensor4_max_row_norm(&pr->k, kb, k0, s->used_k[b]));
    }
    pr->q_norm_max = fmax(pr->q_norm_max, tensor4_max_row_norm(&pr->q, qb, q0, s->used_q[b]));
  }
  int32_t* page_table = NULL;
  if (paged) { /* every page random; the table a permutation of the pages */
    for (int pg = 0; pg < num_pages; ++pg) {
      tensor4_fill_rows(&pr->k, &rng, pg, 0, c->page_size, 1.0);
      tensor4_fill_rows(&pr->v, &rng, pg, 0, c->page_size, 1.0);
      pr->k_norm_max = fmax(pr->k_norm_max, tensor4_max_row_norm(&pr->k, pg, 0, c->page_size));
    }
    page_table = mirror_new(pr, sizeof(int32_t) * (size_t)c->batch * max_pages, NULL);
    int* perm = malloc(sizeof(int) * (size_t)num_pages);
    if (!perm) test_fatal("out of memory");
    for (int i = 0; i < num_pages; ++i) perm[i] = i;
    for (int i = num_pages - 1; i > 0; --i) {
      int j = test_rng_int(&rng, 0, i), t = perm[i];
      perm[i] = perm[j], perm[j] = t;
    }
    for (int i = 0; i < c->batch * max_pages; ++i) page_table[i] = perm[i];
    free(perm);
  }
  /* lse: (batch, heads_q, seqlen_q) or (heads_q, total_q), rows contiguous; padded strides
   * (any gap: lse needs only 4-byte alignment) with the padded layout */
  pr->lse = NULL;
  int64_t lse_head_stride = 0, lse_batch_stride = 0;
  if (c->with_lse) {
    int pad = c->layout == LAYOUT_PADDED;
    int64_t hs = q_rows + (pad ? test_rng_int(&rng, 1, 5) : 0);
    int64_t bs = (int64_t)hq * hs + (pad ? test_rng_int(&rng, 0, 5) : 0);
    pr->lse_count = (int64_t)(q_batches - 1) * bs + (int64_t)(hq - 1) * hs + q_rows + BACK_GUARD;
    float* buffer = mirror_new(pr, sizeof(float) * (size_t)(FRONT_GUARD + pr->lse_count), &pr->lse_mirror);
    pr->lse = buffer + FRONT_GUARD;
    pr->lse_strides[0] = c->varlen_q ? 0 : bs, pr->lse_strides[1] = hs;
    if (pad) lse_head_stride = hs, lse_batch_stride = c->varlen_q ? 0 : bs;
  } else {
    pr->lse_mirror = -1;
  }
  /* fp8 descales (refusal cases only) */
  float* descales[3] = {NULL, NULL, NULL};
  if (c->dtype == FLASHC_DTYPE_E4M3)
    for (int t = 0; t < 3; ++t) {
      descales[t] = mirror_new(pr, sizeof(float) * (size_t)c->batch * hkv, NULL);
      for (int i = 0; i < c->batch * hkv; ++i) descales[t][i] = (float)(0.25 + test_rng_uniform(&rng));
    }
  /* varlen arrays travel to the device too */
  int32_t *cu_q = NULL, *cu_k = NULL, *used_q = NULL, *used_k = NULL;
  size_t cu_bytes = sizeof(int32_t) * (size_t)(c->batch + 1), used_bytes = sizeof(int32_t) * (size_t)c->batch;
  if (c->varlen_q) cu_q = mirror_new(pr, cu_bytes, NULL), memcpy(cu_q, s->cu_q, cu_bytes);
  if (c->varlen_k) cu_k = mirror_new(pr, cu_bytes, NULL), memcpy(cu_k, s->cu_k, cu_bytes);
  if (s->seqused_q) used_q = mirror_new(pr, used_bytes, NULL), memcpy(used_q, s->seqused_q, used_bytes);
  if (s->seqused_k) used_k = mirror_new(pr, used_bytes, NULL), memcpy(used_k, s->seqused_k, used_bytes);

  flashc_attn_fwd_params* p = &pr->p;
  flashc_attn_fwd_params_init(p);
  p->dtype = c->dtype;
  p->out_dtype = FLASHC_DTYPE_AUTO;
  p->batch = c->batch;
  p->seqlen_q = c->seqlen_q;
  p->seqlen_k = c->seqlen_k;
  p->heads_q = hq;
  p->heads_kv = hkv;
  p->head_dim = d;
  p->head_dim_v = dv;
  p->q = pr->q.data, p->k = pr->k.data, p->v = pr->v.data, p->o = pr->o.data, p->lse = pr->lse;
  const tensor4* q = &pr->q;
  const tensor4* k = &pr->k;
  const tensor4* v = &pr->v;
  const tensor4* o = &pr->o;
  if (q->explicit_strides) p->q_batch_stride = q->batch_stride, p->q_row_stride = q->row_stride, p->q_head_stride = q->head_stride;
  if (k->explicit_strides) p->k_batch_stride = k->batch_stride, p->k_row_stride = k->row_stride, p->k_head_stride = k->head_stride;
  if (v->explicit_strides) p->v_batch_stride = v->batch_stride, p->v_row_stride = v->row_stride, p->v_head_stride = v->head_stride;
  if (o->explicit_strides) p->o_batch_stride = o->batch_stride, p->o_row_stride = o->row_stride, p->o_head_stride = o->head_stride;
  p->lse_batch_stride = lse_batch_stride;
  p->lse_head_stride = lse_head_stride;
  p->softmax_scale = c->softmax_scale;
  p->causal = c->causal;
  p->window_left = c->window_left;
  p->window_right = c->window_right;
  p->softcap = c->softcap;
  if (c->varlen_q) p->cu_seqlens_q = cu_q, p->total_q = s->total_q;
  if (c->varlen_k) p->cu_seqlens_k = cu_k, p->total_k = s->total_k;
  p->seqused_q = used_q;
  p->seqused_k = used_k;
  p->num_splits = c->num_splits;
  p->pack_gqa = c->pack_gqa;
  if (paged) {
    p->page_table = page_table;
    p->max_pages = max_pages;
    p->page_size = c->page_size;
    p->num_pages = num_pages;
  }
  p->q_descale = descales[0], p->k_descale = descales[1], p->v_descale = descales[2];
  describe(pr);
}

static void* xmalloc(size_t bytes) {
  void* pointer = malloc(bytes ? bytes : 1);
  if (!pointer) test_fatal("out of memory (%zu bytes)", bytes);
  return pointer;
}

static void alloc_oracle(prepared* pr) {
  int64_t oc = pr->o.count, lc = pr->lse ? pr->lse_count : 1;
  pr->o_ref = xmalloc(sizeof(double) * (size_t)oc);
  pr->o_same = xmalloc(sizeof(double) * (size_t)oc);
  pr->o_mask = xmalloc((size_t)oc);
  pr->o_mask_same = xmalloc((size_t)oc);
  pr->lse_ref = xmalloc(sizeof(double) * (size_t)lc);
  pr->lse_same = xmalloc(sizeof(double) * (size_t)lc);
  pr->lse_mask = xmalloc((size_t)lc);
  pr->lse_mask_same = xmalloc((size_t)lc);
}

static void run_oracle(prepared* pr, int mode) {
  int failed;
  if (mode == ORACLE_FP64)
    failed = oracle_attn_fwd(&pr->p, ORACLE_FP64, pr->o_ref, pr->o_mask, pr->o.count, pr->lse ? pr->lse_ref : NULL,
                             pr->lse_mask, pr->lse_count) != 0;
  else
    failed = oracle_attn_fwd(&pr->p, ORACLE_SAME, pr->o_same, pr->o_mask_same, pr->o.count, pr->lse ? pr->lse_same : NULL,
                             pr->lse_mask_same, pr->lse_count) != 0;
  if (failed) pr->oracle_failed = 1; /* each mode writes only its own flag value: 1 */
}

static void free_prepared(prepared* pr) {
  for (int i = 0; i < pr->mirrors; ++i) {
    test_free(pr->m[i].host);
    dev_free(pr->m[i].dev);
  }
  free(pr->o_ref), free(pr->o_same), free(pr->o_mask), free(pr->o_mask_same);
  free(pr->lse_ref), free(pr->lse_same), free(pr->lse_mask), free(pr->lse_mask_same);
  if (pr->have_s) seq_lengths_free(&pr->s);
  memset(pr, 0, sizeof *pr);
}

/* ---------------------------------------------------------------------------------------- */
/* Running and checking a case                                                               */
/* ---------------------------------------------------------------------------------------- */

static char** g_failures = NULL;
static int g_failure_count = 0, g_failure_cap = 0;

static void remember_failure(const char* line) {
  if (g_failure_count == g_failure_cap) {
    g_failure_cap = g_failure_cap ? 2 * g_failure_cap : 16;
    g_failures = realloc(g_failures, sizeof(char*) * (size_t)g_failure_cap);
    if (!g_failures) test_fatal("out of memory");
  }
  size_t n = strlen(line) + 1;
  g_failures[g_failure_count] = xmalloc(n);
  memcpy(g_failures[g_failure_count++], line, n);
}

static void report(int pass, const prepared* pr, const char* results) {
  char line[2048];
  snprintf(line, sizeof line, "attn_fwd %s | %s", pr->desc, results);
  test_case_result(pass, "%s", line);
  if (!pass) remember_failure(line);
}

/* Bytes [from, to) of a host buffer are all poison (0xFF). */
static int64_t count_clobbered(const void* base, size_t from, size_t to) {
  int64_t bad = 0;
  for (size_t i = from; i < to; ++i) bad += ((const unsigned char*)base)[i] != 0xFF;
  return bad;
}

static int is_refusal_status(flashc_status status, const gcase* c) {
  if ((int)status / 10 == 2) return 1; /* 2x: the NOT_SUPPORTED family */
  return c->refuse == REFUSE_MISALIGNED && status == FLASHC_STATUS_MISALIGNED;
}

/* Few SMs, primes: more tiles than SMs and a partial last round for most draws (parts 2d, 2g). */
static const int FEW_SMS[] = {2, 3, 5, 7};

/* Part 2d's cases on the GPU, and those for which the launcher planned the stream-K tail. */
static int g_stream_k_cases = 0, g_stream_k_planned = 0;
/* Part 2g's cases on the GPU, and those for which the launcher planned the dynamic counter. */
static int g_dynamic_cases = 0, g_dynamic_planned = 0;

/* The LSE's share of the scores' own error. The kernel's S = Q·Kᵀ accumulates in the tensor
 * cores' fp32 accumulator, which adds with truncation (gpu_gemm.c's header: Fasi et al.), up to
 * one ulp of a partial sum per 16-wide k step; the oracle's same-precision scores round to
 * nearest once per product, so "2 x same" need not cover it. Each partial sum of q·k is at most
 * Σ|q_c k_c| ≤ |q|·|k|, so a score errs by at most scale · 2^-23 · (d/16 + 1) · |q|·|k|, and the
 * LSE, a smooth maximum of its row's scores (a softcap only flattens them), by at most its row's
 * largest score error. Only long rows of large scores come near it (the key ramp). H200, seed
 * 653327157764, case #396 (bf16 d64 causal, varlen, 3719 keys): LSE error 1.04e-4 against a
 * bound of 1.03e-4 without this term, 1.93e-4 with it. The fault model it must not hide: a
 * missing or repeated key block moves the LSE by that block's share of the row's weight, e.g.
 * 3.5e-2 for 128 of 3719 equal keys. */
static double lse_score_error(const prepared* pr) {
  const gcase* c = &pr->c;
  double scale = c->softmax_scale > 0 ? (double)c->softmax_scale : 1.0 / sqrt((double)c->head_dim);
  return scale * ldexp(1.0, -23) * (c->head_dim / 16 + 1) * pr->q_norm_max * pr->k_norm_max;
}

static int run_case(flashc_handle_t handle, prepared* pr, double* backend_seconds) {
  const gcase* c = &pr->c;
  snprintf(g_current, sizeof g_current, "attn_fwd %s", pr->desc);
  for (int i = 0; i < pr->mirrors; ++i) {
    pr->m[i].dev = dev_alloc(pr->m[i].bytes);
    dev_upload(pr->m[i].dev, pr->m[i].host, pr->m[i].bytes);
  }
  flashc_attn_fwd_params d = pr->p;
  d.q = to_dev(pr, pr->p.q), d.k = to_dev(pr, pr->p.k), d.v = to_dev(pr, pr->p.v);
  d.o = to_dev(pr, pr->p.o), d.lse = to_dev(pr, pr->p.lse);
  d.cu_seqlens_q = to_dev(pr, pr->p.cu_seqlens_q), d.cu_seqlens_k = to_dev(pr, pr->p.cu_seqlens_k);
  d.seqused_q = to_dev(pr, pr->p.seqused_q), d.seqused_k = to_dev(pr, pr->p.seqused_k);
  d.page_table = to_dev(pr, pr->p.page_table);
  d.q_descale = to_dev(pr, pr->p.q_descale), d.k_descale = to_dev(pr, pr->p.k_descale);
  d.v_descale = to_dev(pr, pr->p.v_descale);
  void* stream = c->use_stream && !g_cpu ? (void*)g_stream : NULL;

  char results[512] = "";
  int pass = 1;
  void* workspace = NULL;
  size_t workspace_bytes = 0;
  flashc_status status = FLASHC_STATUS_SUCCESS;
  double t0 = now_seconds();
  /* Parts 2d-2g: every call of the case on a handle that plans with its few SMs (2d: the
   * tail forced on, 2g: off). */
  const int handle_sms = handle->cuda.sm_count, forced_tail = c->stream_k_sms && !g_cpu;
  const int forced_sms = g_cpu ? 0 : c->stream_k_sms ? c->stream_k_sms : c->plan_sms;
  const int forced_no_tail = c->stream_k_off && !g_cpu;
  if (forced_sms) handle->cuda.sm_count = forced_sms;
  if (forced_tail) handle->cuda.attn_stream_k = 1;
  if (forced_no_tail) handle->cuda.attn_stream_k = -1;
  if (forced_no_tail) {
    /* Part 2g is about the counter: of its few SM counts, the drawn one first, plan on the
     * first that leaves a partial last round (the counter is then the plan's only workspace).
     * Small draws (fit_budget shrinks most to one sequence of a few heads) often fill whole
     * rounds of the drawn count: a seed once planned the counter for 2 of 12. A draw that fills
     * whole rounds on every count keeps the drawn one and runs round robin. */
    const int candidates[5] = {c->plan_sms, FEW_SMS[0], FEW_SMS[1], FEW_SMS[2], FEW_SMS[3]};
    for (int i = 0; i < 5; ++i) {
      size_t bytes = 0;
      handle->cuda.sm_count = candidates[i];
      if (flashc_attn_fwd_workspace_size(handle, &d, &bytes) == FLASHC_STATUS_SUCCESS && bytes > 0) {
        if (candidates[i] != c->plan_sms)
          printf("  part 2g: planned on %d SMs instead of %d (a partial last round)\n", candidates[i], c->plan_sms);
        break;
      }
      handle->cuda.sm_count = c->plan_sms;
    }
  }
  if (c->own_workspace && c->expect == EXPECT_OK) {
    status = flashc_attn_fwd_workspace_size(handle, &d, &workspace_bytes);
    if (status != FLASHC_STATUS_SUCCESS) {
      snprintf(results, sizeof results, "flashc_attn_fwd_workspace_size: %s: %s", flashc_status_name(status), flashc_last_error());
      pass = 0;
    } else if (workspace_bytes) {
      workspace = dev_alloc(workspace_bytes);
    }
  }
  if (pass && forced_tail) {
    /* Did the launcher plan the tail? It adds its slots to the workspace (attn_fwd_launch.cu). */
    size_t with_tail = 0, without_tail = 0;
    flashc_status q1 = flashc_attn_fwd_workspace_size(handle, &d, &with_tail);
    handle->cuda.attn_stream_k = -1;
    flashc_status q2 = flashc_attn_fwd_workspace_size(handle, &d, &without_tail);
    handle->cuda.attn_stream_k = 1;
    ++g_stream_k_cases;
    if (q1 == FLASHC_STATUS_SUCCESS && q2 == FLASHC_STATUS_SUCCESS && with_tail > without_tail) ++g_stream_k_planned;
  }
  if (pass && forced_no_tail) {
    /* Did the launcher take the dynamic counter? Unsplit and without the tail, the counter is
     * the plan's only workspace (attn_fwd_launch.cu). */
    size_t bytes = 0;
    ++g_dynamic_cases;
    if (flashc_attn_fwd_workspace_size(handle, &d, &bytes) == FLASHC_STATUS_SUCCESS && bytes > 0) ++g_dynamic_planned;
  }
  if (pass) {
    status = flashc_attn_fwd(handle, &d, workspace, workspace_bytes, stream);
    if (!g_cpu) {
      CUDA_CHECK(cudaStreamSynchronize((cudaStream_t)stream));
      CUDA_CHECK(cudaGetLastError());
    }
  }
  handle->cuda.sm_count = handle_sms;
  if (forced_tail || forced_no_tail) handle->cuda.attn_stream_k = 0;
  *backend_seconds += now_seconds() - t0;
  int oi = pr->o_mirror, li = pr->lse_mirror;
  if (pass) {
    dev_download(pr->m[oi].host, pr->m[oi].dev, pr->m[oi].bytes);
    if (li >= 0) dev_download(pr->m[li].host, pr->m[li].dev, pr->m[li].bytes);
  }
  if (!pass) {
    /* the workspace query failed: reported above */
  } else if (c->expect == EXPECT_REFUSE) {
    int64_t clobbered = count_clobbered(pr->m[oi].host, 0, pr->m[oi].bytes);
    if (li >= 0) clobbered += count_clobbered(pr->m[li].host, 0, pr->m[li].bytes);
    const char* message = flashc_last_error();
    if (status == FLASHC_STATUS_SUCCESS) {
      snprintf(results, sizeof results, "expected a NOT_SUPPORTED status, got SUCCESS (%lld output bytes written)", (long long)clobbered);
      pass = 0;
    } else if (!is_refusal_status(status, c)) {
      snprintf(results, sizeof results, "expected a NOT_SUPPORTED status, got %s: %s", flashc_status_name(status), message);
      pass = 0;
    } else if (!message || !*message) {
      snprintf(results, sizeof results, "%s without a message", flashc_status_name(status));
      pass = 0;
    } else if (clobbered) {
      snprintf(results, sizeof results, "%s but %lld output bytes written: %s", flashc_status_name(status), (long long)clobbered, message);
      pass = 0;
    } else {
      snprintf(results, sizeof results, "%s: %s", flashc_status_name(status), message);
    }
  } else if (status != FLASHC_STATUS_SUCCESS) {
    snprintf(results, sizeof results, "flashc_attn_fwd returned %s: %s", flashc_status_name(status), flashc_last_error());
    pass = 0;
  } else if (pr->oracle_failed) {
    snprintf(results, sizeof results, "oracle failed (test bug)");
    pass = 0;
  } else {
    flashc_dtype out_dtype = pr->o.dtype;
    size_t o_front = (size_t)((char*)pr->o.data - (char*)pr->o.buffer);
    int64_t front = count_clobbered(pr->o.buffer, 0, o_front);
    if (front) printf("  o: %lld bytes of the front guard written\n", (long long)front);
    test_check_result ro, rl;
    int ok_o = test_check_output("o", pr->o.data, out_dtype, pr->o.count, pr->o_ref, pr->o_same, pr->o_mask, -1.0, &ro) && !front;
    format_check(results, sizeof results, "o", &ro);
    int ok_l = 1;
    if (pr->lse) {
      int64_t lfront = count_clobbered(pr->m[li].host, 0, FRONT_GUARD * sizeof(float));
      if (lfront) printf("  lse: %lld bytes of the front guard written\n", (long long)lfront);
      double max_lse = 1.0;
      for (int64_t i = 0; i < pr->lse_count; ++i)
        if (pr->lse_mask[i] == ORACLE_COMPARE && fabs(pr->lse_ref[i]) > max_lse) max_lse = fabs(pr->lse_ref[i]);
      /* lse is fp32: 16 units of fp32 roundoff at its magnitude on top of 2x same (as cpu_attn_fwd),
       * plus the scores' own error (lse_score_error) */
      ok_l = test_check_output("lse", pr->lse, FLASHC_DTYPE_FP32, pr->lse_count, pr->lse_ref, pr->lse_same, pr->lse_mask,
                               16.0 * ldexp(1.0, -24) * max_lse + lse_score_error(pr), &rl) &&
             !lfront;
      size_t used = strlen(results);
      format_check(results + used, sizeof results - used, " | lse", &rl);
    }
    pass = ok_o && ok_l;
  }
  report(pass, pr, results);
  dev_free(workspace);
  return pass;
}

/* ---------------------------------------------------------------------------------------- */
/* Main                                                                                      */
/* ---------------------------------------------------------------------------------------- */

typedef struct task {
  int index, mode;
  double cost;
} task;

static int task_by_cost(const void* a, const void* b) {
  double ca = ((const task*)a)->cost, cb = ((const task*)b)->cost;
  return ca < cb ? 1 : ca > cb ? -1 : 0;
}

/* Parts 2b/2c: a random case made unmasked d64 with seqlen_q in [q_lo, q_hi] and seqlen_k in
 * [k_lo, k_hi] (odd; packed QKV keeps them equal), everything else as drawn. */
static gcase unmasked_d64_case(uint64_t seed, int n, int q_lo, int q_hi, int k_lo, int k_hi) {
  test_rng case_rng = test_rng_make(seed, (uint64_t)n + 1);
  gcase c = random_case(&case_rng);
  c.head_dim = c.head_dim_v = 64;
  c.causal = 0, c.window_left = c.window_right = -1;
  if (c.feature != FEAT_SOFTCAP) c.softcap = 0.0f;
  c.feature = c.softcap > 0 ? FEAT_SOFTCAP : FEAT_NONE;
  c.seqlen_q = random_odd(&case_rng, q_lo, q_hi);
  c.seqlen_k = c.layout == LAYOUT_QKV ? c.seqlen_q : random_odd(&case_rng, k_lo, k_hi);
  number_and_knob(&c, &case_rng, n, 1.5e9);
  c.rng = case_rng;
  return c;
}

/* Part 2e: a random case made a masked d64 one (causal, or a local window; softcap kept where
 * drawn) whose rows attend to at most 4096 keys (up to 4096 keys, or a window of at most ~2k
 * over up to 8k), on a handle that plans with 1–3 SMs: the launcher runs those on its
 * one-consumer instances (64-row tiles, three CTAs per SM; attn_fwd_launch.cu,
 * consumers_for_problem) when they have two tiles per SM: the 64-key one up to 1024 attended
 * keys (`narrow`), the 80-key one above. A third of the time it is a d128 one with a window of
 * at most 1201 keys instead: once d128's one-consumer instance, now its 2-consumer 128-key
 * blocks (MASKED_NARROW_MAX_ATTENDED_KEYS) with both window edges inside a tile. Varlen,
 * paging, splits and the rest as drawn. */
static gcase one_consumer_case(uint64_t seed, int n, int narrow) {
  test_rng case_rng = test_rng_make(seed, (uint64_t)n + 1);
  gcase c = random_case(&case_rng);
  c.head_dim = c.head_dim_v = 64;
  const int softcap = c.feature == FEAT_SOFTCAP || c.feature == FEAT_SOFTCAP_MASK;
  c.feature = softcap ? FEAT_SOFTCAP_MASK : (test_rng_int(&case_rng, 0, 1) ? FEAT_CAUSAL : FEAT_LOCAL);
  c.seqlen_k = narrow ? random_odd(&case_rng, 1, 1023) : random_odd(&case_rng, 1025, 4095);
  c.seqlen_q = c.layout == LAYOUT_QKV ? c.seqlen_k : random_odd(&case_rng, 1, 2048);
  set_feature(&c, &case_rng);
  if (!narrow && c.window_left >= 0 && test_rng_int(&case_rng, 0, 1)) {
    /* A sliding window over a longer sequence: the span (not seqlen_k) picks the instance. */
    c.seqlen_k = random_odd(&case_rng, 4097, 8191);
    if (c.layout == LAYOUT_QKV) c.seqlen_q = c.seqlen_k;
    c.window_left = test_rng_int(&case_rng, 0, 2000);
    c.window_right = test_rng_int(&case_rng, 0, 64);
  }
  if (test_rng_int(&case_rng, 0, 2) == 0) {
    /* d128 windows of at most 1201 attended keys, none causal (128-key blocks). */
    c.head_dim = c.head_dim_v = 128;
    c.causal = 0;
    c.window_left = test_rng_int(&case_rng, 0, 1000);
    c.window_right = test_rng_int(&case_rng, 0, 200);
  }
  number_and_knob(&c, &case_rng, n, 1.5e9);
  c.plan_sms = test_rng_int(&case_rng, 1, 3);
  c.rng = case_rng;
  return c;
}

/* A random case made uniform (no mask, fixed lengths: tiles of equal cost) with a head dim from
 * `dims`, 1-3 sequences of 300-1200 queries and 200-1500 keys; softcap kept where drawn. The
 * caller finishes it (parts 2d and 2g). */
static gcase uniform_case(test_rng* case_rng, const int* dims, int dim_count) {
  gcase c = random_case(case_rng);
  c.head_dim = c.head_dim_v = test_rng_pick(case_rng, dims, dim_count);
  c.causal = 0, c.window_left = c.window_right = -1;
  if (c.feature != FEAT_SOFTCAP) c.softcap = 0.0f;
  c.feature = c.softcap > 0 ? FEAT_SOFTCAP : FEAT_NONE;
  c.len_mode = LEN_FIXED;
  c.varlen_q = c.varlen_k = c.empty = c.seqused_q = c.seqused_k = 0;
  c.batch = test_rng_int(case_rng, 1, 3);
  c.seqlen_q = test_rng_int(case_rng, 300, 1200);
  c.seqlen_k = test_rng_int(case_rng, 200, 1500);
  return c;
}

/* A query length near `seqlen_q` whose last 128-row tile holds 1-64 rows: the 2-consumer
 * instances' second consumer has none there and only follows the key loop
 * (attn_fwd_follow_key_loop) — in the stream-K pieces and the counter's tiles too (parts 2d,
 * 2g; with pack-GQA the packed rows decide, which other draws cover). */
static int last_tile_half_empty(test_rng* case_rng, int seqlen_q) {
  return 128 * (seqlen_q / 128) + test_rng_int(case_rng, 1, 64);
}

/* Part 2d: a uniform case (the tiles the stream-K tail takes, attn_fwd_stream_k.cuh) with
 * d64/d128/d256, unsplit, run with stream-K forced on a handle that plans with 2, 3, 5 or 7
 * SMs: the last partial round's tiles split into pieces across up to 7 CTAs (a piece as short
 * as one key block), so publishing, waiting and merging all run; the key ramp makes the merged
 * row maxima differ. */
static gcase stream_k_case(uint64_t seed, int n) {
  static const int dims[] = {64, 128, 256};
  test_rng case_rng = test_rng_make(seed, (uint64_t)n + 1);
  gcase c = uniform_case(&case_rng, dims, 3);
  /* d128's tail kernel is its 160-key one (ATTN_FWD_STREAM_K_INSTANCES), which the launcher
   * picks for a key count just under a multiple of 160 from 2k on. */
  if (c.head_dim == 128) c.seqlen_k = 160 * test_rng_int(&case_rng, 13, 16) - test_rng_int(&case_rng, 0, 15);
  if (n % 2) c.seqlen_q = last_tile_half_empty(&case_rng, c.seqlen_q);
  if (c.layout == LAYOUT_QKV) c.seqlen_q = c.seqlen_k;
  number_and_knob(&c, &case_rng, n, 1e9);
  c.num_splits = 1;
  c.stream_k_sms = test_rng_pick(&case_rng, FEW_SMS, 4);
  c.rng = case_rng;
  return c;
}

/* Part 2g: a uniform case of head dim ≤ 128, unsplit, with stream-K forced off on a handle that
 * plans with 2, 3, 5 or 7 SMs: a partial last round without the tail takes its tiles from the
 * dynamic scheduler's counter (tile_plan::dynamic, attn_fwd_launch.cu) — on d128's 128-key
 * instance with its two Q buffers and job slots too. */
static gcase dynamic_uniform_case(uint64_t seed, int n) {
  static const int dims[] = {64, 96, 128}; /* DYNAMIC_UNIFORM_MAX_HEAD_DIM */
  test_rng case_rng = test_rng_make(seed, (uint64_t)n + 1);
  gcase c = uniform_case(&case_rng, dims, 3);
  if (n % 2) c.seqlen_q = last_tile_half_empty(&case_rng, c.seqlen_q);
  if (c.layout == LAYOUT_QKV) c.seqlen_q = c.seqlen_k;
  number_and_knob(&c, &case_rng, n, 1e9);
  c.num_splits = 1;
  c.plan_sms = test_rng_pick(&case_rng, FEW_SMS, 4);
  c.stream_k_off = 1;
  c.rng = case_rng;
  return c;
}

/* Part 2h: a uniform d128 case whose key length is a · 160 + b · 128 with b = 1..4 narrow blocks
 * and a = 24..30 (so the launcher picks the 160-key instance): its key loop ends in narrow
 * blocks, without a padded or masked one (attn_fwd_tile::NARROW_TAIL, attn_fwd_key_map_of);
 * every other case with the stream-K tail forced on 2-7 SMs, so pieces begin and end among the
 * narrow blocks too (those run the narrow stream-K kernel, ATTN_FWD_KIND_STREAM_K_NARROW; part
 * 2d's d128 lengths, 160 · k − j with j < 16, have no narrow blocks and run the other). */
static gcase narrow_tail_case(uint64_t seed, int n) {
  static const int dims[] = {128};
  test_rng case_rng = test_rng_make(seed, (uint64_t)n + 1);
  gcase c = uniform_case(&case_rng, dims, 1);
  const int narrow = test_rng_int(&case_rng, 1, 4);
  c.seqlen_k = 160 * test_rng_int(&case_rng, 24, 30) + 128 * narrow;
  if (c.layout == LAYOUT_QKV) c.seqlen_q = c.seqlen_k;
  number_and_knob(&c, &case_rng, n, 1e9);
  c.num_splits = 1;
  if (n % 2) c.stream_k_sms = test_rng_pick(&case_rng, FEW_SMS, 4);
  c.rng = case_rng;
  return c;
}

/* Part 2f: a random case made a causal d128 one (softcap kept where drawn) on a handle that
 * plans with 2 or 3 SMs: the 2-consumer instance with its two Q buffers and job slots, each CTA
 * taking several tiles from the dynamic scheduler's counter (attn_fwd_scheduler.cuh) — the
 * other parts run causal d128 with at most one tile per CTA. */
static gcase ticket_case(uint64_t seed, int n) {
  test_rng case_rng = test_rng_make(seed, (uint64_t)n + 1);
  gcase c = random_case(&case_rng);
  c.head_dim = c.head_dim_v = 128;
  const int softcap = c.feature == FEAT_SOFTCAP || c.feature == FEAT_SOFTCAP_MASK;
  c.feature = softcap ? FEAT_SOFTCAP_MASK : FEAT_CAUSAL;
  c.seqlen_k = test_rng_int(&case_rng, 300, 1500);
  c.seqlen_q = c.layout == LAYOUT_QKV ? c.seqlen_k : test_rng_int(&case_rng, 256, 1500);
  set_feature(&c, &case_rng);
  c.causal = 1, c.window_left = c.window_right = -1; /* (a softcap draw's mask may have been a window) */
  number_and_knob(&c, &case_rng, n, 1e9);
  c.plan_sms = test_rng_int(&case_rng, 2, 3);
  c.rng = case_rng;
  return c;
}

int main(int argc, char** argv) {
  int random_cases = 300, quick = 0, fixed = 1, refusals = 1;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--quick")) quick = 1;
    else if (!strcmp(argv[i], "--no-fixed")) fixed = 0;
    else if (!strcmp(argv[i], "--no-refusals")) refusals = 0;
    else if (argv[i][0] >= '0' && argv[i][0] <= '9') random_cases = atoi(argv[i]);
    else {
      printf("usage: %s [random cases] [--quick] [--no-fixed] [--no-refusals]\n", argv[0]);
      return TEST_EXIT_FAIL;
    }
  }
  if (quick) random_cases = 0;
  const char* backend = getenv("FLASHC_TEST_BACKEND");
  g_cpu = backend && !strcmp(backend, "cpu");
  if (backend && *backend && !g_cpu && strcmp(backend, "cuda") && strcmp(backend, "gpu")) {
    printf("gpu_attn_fwd: FLASHC_TEST_BACKEND=%s is neither cpu nor cuda\n", backend);
    return TEST_EXIT_FAIL;
  }

  flashc_handle_t handle = NULL;
  if (g_cpu) {
    flashc_status status = flashc_create(&handle, FLASHC_DEVICE_CPU);
    if (status != FLASHC_STATUS_SUCCESS) {
      test_print_status("flashc_create(CPU)", status);
      return TEST_EXIT_FAIL;
    }
  } else {
    int device_count = 0;
    if (cudaGetDeviceCount(&device_count) != cudaSuccess || device_count == 0) {
      printf("gpu_attn_fwd: no CUDA device, skipped (FLASHC_TEST_BACKEND=cpu runs the harness on the CPU backend)\n");
      return TEST_EXIT_SKIP;
    }
    flashc_status status = flashc_create(&handle, 0);
    if (status != FLASHC_STATUS_SUCCESS) {
      test_print_status("flashc_create(0)", status);
      return TEST_EXIT_SKIP;
    }
    flashc_device_info info;
    flashc_device_info_init(&info);
    if (flashc_get_device_info(handle, &info) == FLASHC_STATUS_SUCCESS && info.cc_major != 9) {
      printf("gpu_attn_fwd: %s is sm_%d%d; the attention forward kernel is Hopper-only (sm_90), skipped\n", info.name,
             info.cc_major, info.cc_minor);
      flashc_destroy(handle);
      return TEST_EXIT_SKIP;
    }
    CUDA_CHECK(cudaStreamCreate(&g_stream));
  }
  const uint64_t seed = test_seed();
  int threads = 1;
#ifdef _OPENMP
  threads = omp_get_max_threads();
#endif
  printf("gpu_attn_fwd: backend %s (%s); %d oracle threads; kernels: %s\n", g_cpu ? "cpu" : "cuda",
         g_cpu ? "FLASHC_TEST_BACKEND=cpu" : "device 0", threads, flashc_handle_kernels(handle));
  fflush(stdout);

  /* ---- the case list (serial, deterministic from the seed) ---- */
  int capacity = 64 + random_cases + WIDE_TILE_CASES + FOUR_CONSUMER_CASES + ONE_CONSUMER_CASES + STREAM_K_CASES + TICKET_CASES + DYNAMIC_UNIFORM_CASES + NARROW_TAIL_CASES +
                 SPLIT_CASES + 400;
  gcase* cases = xmalloc(sizeof(gcase) * (size_t)capacity);
  int n = 0;
  const double budget_short = quick ? 3e7 : 3e8, budget_long = 4.5e9;
  if (fixed) {
    covering* cv = calloc(1, sizeof(covering));
    if (!cv) test_fatal("out of memory");
    int pair_values = quick ? QUICK_PAIR_COUNT : PAIR_COUNT;
    int sizes[AX_COUNT] = {2, HEADS_COUNT, FEAT_COUNT, DIM_COUNT, pair_values + 1, LEN_COUNT, LAYOUT_COUNT};
    memcpy(cv->sizes, sizes, sizeof sizes);
    cv->pair_values = pair_values;
    int(*rows)[AX_COUNT] = xmalloc(sizeof(int[AX_COUNT]) * 400);
    test_rng rng = test_rng_make(seed, 0x9a1c0ull);
    int count = covering_build(cv, &rng, rows, 400);
    for (int r = 0; r < count; ++r) {
      gcase* c = &cases[n];
      test_rng case_rng = test_rng_make(seed, (uint64_t)n + 1);
      *c = case_from_axes(rows[r], pair_values, quick, &case_rng);
      c->index = n;
      set_knobs(c, &case_rng, 0);
      fit_budget(c, (double)c->seqlen_q * c->seqlen_k >= 1e6 ? budget_long : budget_short);
      c->rng = case_rng;
      ++n;
    }
    printf("part 1: %d cases cover every pair of axis values\n", count);
    free(rows);
    free(cv);
  }
  int first_random = n;
  for (int i = 0; i < random_cases; ++i) {
    gcase* c = &cases[n];
    test_rng case_rng = test_rng_make(seed, (uint64_t)n + 1);
    *c = random_case(&case_rng);
    number_and_knob(c, &case_rng, n, (double)c->seqlen_q * c->seqlen_k >= 1e6 ? 1.5e9 : budget_short);
    c->rng = case_rng;
    ++n;
  }
  if (random_cases) printf("part 2: %d random cases\n", n - first_random);
  /* d64 problems that the launcher gives its other instances (attn_fwd_launch.cu,
   * consumers_for_problem): unmasked long ones (seqlen_q and seqlen_k >= 3072) the 3-consumer
   * (192-row) one, shorter ones (seqlen_k < 2048 and seqlen_q >= 256, or both in 2048-3071) the
   * 4-consumer (256-row) one,
   * masked ones that see few keys per row the one-consumer (64-row) ones; the covering array and the
   * random cases do not reach each of them reliably. */
  int first_wide = n;
  if (random_cases) {
    /* even: the 3-consumer instance (from 3072 rows); odd: the 4-consumer one's band of 2048-3071 */
    for (int i = 0; i < WIDE_TILE_CASES; ++i, ++n)
      cases[n] = i % 2 ? unmasked_d64_case(seed, n, 2048, 3071, 2048, 3071) : unmasked_d64_case(seed, n, 3072, 3700, 3072, 3700);
    printf("part 2b: %d long unmasked d64 cases\n", n - first_wide);
    const int first_four = n;
    for (int i = 0; i < FOUR_CONSUMER_CASES; ++i, ++n) cases[n] = unmasked_d64_case(seed, n, 256, 2047, 1, 2047);
    printf("part 2c: %d shorter unmasked d64 cases\n", n - first_four);
    const int first_stream_k = n;
    for (int i = 0; i < STREAM_K_CASES; ++i, ++n) cases[n] = stream_k_case(seed, n);
    printf("part 2d: %d uniform cases with the stream-K tail forced on 2-7 SMs\n", n - first_stream_k);
    const int first_one = n;
    for (int i = 0; i < ONE_CONSUMER_CASES; ++i, ++n) cases[n] = one_consumer_case(seed, n, i % 2);
    printf("part 2e: %d masked d64/d128 cases that see few keys per row\n", n - first_one);
    const int first_ticket = n;
    for (int i = 0; i < TICKET_CASES; ++i, ++n) cases[n] = ticket_case(seed, n);
    printf("part 2f: %d causal d128 cases taking tiles from the dynamic counter on 2-3 SMs\n", n - first_ticket);
    const int first_dynamic = n;
    for (int i = 0; i < DYNAMIC_UNIFORM_CASES; ++i, ++n) cases[n] = dynamic_uniform_case(seed, n);
    printf("part 2g: %d uniform cases taking a partial last round from the dynamic counter on 2-7 SMs\n",
           n - first_dynamic);
    const int first_narrow = n;
    for (int i = 0; i < NARROW_TAIL_CASES; ++i, ++n) cases[n] = narrow_tail_case(seed, n);
    printf("part 2h: %d unmasked d128 cases ending in narrow key blocks\n", n - first_narrow);
  } else if (quick) {
    /* Two small cases each of parts 2f and 2g, so that the sanitizers (--quick) see CTAs take
     * several tiles from the dynamic counter, masked and uniform, on d128's two Q buffers too. */
    const int first_counter = n;
    for (int i = 0; i < QUICK_COUNTER_CASES; ++i, ++n) {
      cases[n] = i % 2 ? dynamic_uniform_case(seed, n) : ticket_case(seed, n);
      fit_budget(&cases[n], QUICK_COUNTER_BUDGET);
    }
    printf("parts 2f/2g (quick): %d cases taking tiles from the dynamic counter on few SMs\n", n - first_counter);
  }
  int first_split = n;
  for (int v = 0; v < (quick ? SPLIT_QUICK_CASES : SPLIT_CASES); ++v) {
    test_rng case_rng = test_rng_make(seed, (uint64_t)n + 1);
    gcase c = split_case(v, &case_rng);
    c.index = n;
    c.rng = case_rng;
    cases[n++] = c;
  }
  printf("part 3: %d split-KV cases\n", n - first_split);
  int first_refusal = n;
  if (refusals) {
    static const int variants[REFUSE_COUNT] = {0, 4, 2, 2, 7, 16};
    for (int r = 1; r < REFUSE_COUNT; ++r)
      for (int v = 0; v < variants[r]; ++v) {
        test_rng case_rng = test_rng_make(seed, (uint64_t)n + 1);
        gcase c = refusal_case(r, v, &case_rng);
        if (g_cpu) c.expect = EXPECT_OK; /* the CPU backend takes all of these: check them against the oracle */
        c.index = n;
        c.rng = case_rng;
        cases[n++] = c;
      }
    printf("part 4: %d cases the first GPU version must refuse%s\n", n - first_refusal,
           g_cpu ? " (on the CPU backend: run as ordinary cases against the oracle)" : "");
  }
  fflush(stdout);

  /* ---- prepare (parallel), oracle (parallel, longest first), run (serial) per window ---- */
  double t_start = now_seconds(), oracle_seconds = 0.0, backend_seconds = 0.0;
  int window = quick ? n : (threads * 4 > 16 ? threads * 4 : 16);
  prepared* prep = calloc((size_t)window, sizeof(prepared));
  task* tasks = xmalloc(sizeof(task) * 2 * (size_t)window);
  if (!prep) test_fatal("out of memory");
  for (int start = 0; start < n; start += window) {
    int end = start + window < n ? start + window : n;
    double t0 = now_seconds();
#pragma omp parallel for schedule(dynamic, 1)
    for (int i = start; i < end; ++i) {
      prepared* pr = &prep[i - start];
      memset(pr, 0, sizeof *pr);
      pr->c = cases[i];
      prepare_data(pr);
      if (pr->c.expect == EXPECT_OK) alloc_oracle(pr);
    }
    int ntasks = 0;
    for (int i = start; i < end; ++i) {
      const prepared* pr = &prep[i - start];
      if (pr->c.expect != EXPECT_OK) continue;
      for (int mode = 0; mode < 2; ++mode) {
        tasks[ntasks].index = i - start, tasks[ntasks].mode = mode;
        tasks[ntasks].cost = case_cost(&pr->c);
        ++ntasks;
      }
    }
    qsort(tasks, (size_t)ntasks, sizeof(task), task_by_cost);
#pragma omp parallel for schedule(dynamic, 1)
    for (int t = 0; t < ntasks; ++t)
      run_oracle(&prep[tasks[t].index], tasks[t].mode == 0 ? ORACLE_FP64 : ORACLE_SAME);
    oracle_seconds += now_seconds() - t0;
    for (int i = start; i < end; ++i) {
      run_case(handle, &prep[i - start], &backend_seconds);
      free_prepared(&prep[i - start]);
    }
  }
  double total = now_seconds() - t_start;
  free(prep);
  free(tasks);
  free(cases);
  if (!g_cpu) CUDA_CHECK(cudaStreamDestroy(g_stream));
  flashc_destroy(handle);

  if (g_failure_count) {
    printf("\nfailures (%d):\n", g_failure_count);
    for (int i = 0; i < g_failure_count; ++i) printf("FAIL %s\n", g_failures[i]);
  }
  for (int i = 0; i < g_failure_count; ++i) free(g_failures[i]);
  free(g_failures);
  printf("time: %.1f s (inputs + oracle %.1f s on %d threads, flashc_attn_fwd %.1f s on %s)\n", total, oracle_seconds,
         threads, backend_seconds, g_cpu ? "the CPU backend" : "the GPU");
  int stream_k_unplanned = 0;
  if (g_stream_k_cases) {
    /* Some draws are too small to leave a partial round on their few SMs (11-19 of 24 planned
     * in the 16th session's runs); a launcher that never plans the tail fails here. */
    printf("part 2d: the stream-K tail was planned for %d of %d cases\n", g_stream_k_planned, g_stream_k_cases);
    stream_k_unplanned = g_stream_k_planned * 4 < g_stream_k_cases;
    if (stream_k_unplanned) printf("FAIL part 2d: fewer than a quarter of its cases planned the stream-K tail\n");
  }
  int dynamic_unplanned = 0;
  if (g_dynamic_cases >= DYNAMIC_UNIFORM_CASES) { /* (not --quick's two: too few for the quarter) */
    /* Likewise part 2g: draws whose tiles fill whole rounds of their few SMs run round robin. */
    printf("part 2g: the dynamic counter was planned for %d of %d cases\n", g_dynamic_planned, g_dynamic_cases);
    dynamic_unplanned = g_dynamic_planned * 4 < g_dynamic_cases;
    if (dynamic_unplanned) printf("FAIL part 2g: fewer than a quarter of its cases planned the dynamic counter\n");
  }
  const int plan_failures = stream_k_unplanned + dynamic_unplanned;
  printf("%d cases, %d failed (seed %llu)\n", test_case_count() + plan_failures, test_failed_count() + plan_failures,
         (unsigned long long)seed);
  fflush(stdout);
  return test_failed_count() || plan_failures ? TEST_EXIT_FAIL : TEST_EXIT_PASS;
}
