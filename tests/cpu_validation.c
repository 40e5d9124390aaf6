/*
 * cpu_validation.c — every invalid input of the validation contract, table-driven.
 *
 * Each row starts from a valid parameter struct (a "base": forward, varlen forward, paged
 * forward, fp8 forward, split forward with a caller workspace, backward, varlen backward,
 * combine, GEMM, fp8 GEMM) with real host buffers, applies one mutation, calls the entry
 * point on a CPU handle and asserts
 *   (a) the expected status,
 *   (b) a fresh, non-empty flashc_last_error() naming the argument (as a whole word),
 *   (c) every output buffer still holds its poison bytes,
 * and, for the forward, backward and GEMM, that the workspace size query reports the same
 * status. Every base runs unmutated first and must succeed (and write its outputs), so each
 * row proves its mutation caused the failure. A few rows are valid variants that must
 * succeed (heads-major strides, unused page-table entries, num_splits = 256, ...).
 * Then the CUDA-only rules through the internal fc_attn_fwd_problem_make /
 * fc_gemm_problem_make with FLASHC_BACKEND_CUDA (alignment, fp32), on host buffers.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flashc.h"
#include "host/problem.h"
#include "host/tensor_map.h"
#include "host/validate.h"
#include "oracle.h"

/* ---------------------------------------------------------------------------------------- */
/* Buffers and bases                                                                         */
/* ---------------------------------------------------------------------------------------- */

enum {
  B_FWD,
  B_FWD_VARLEN,
  B_FWD_PAGED,
  B_FWD_FP8,
  B_FWD_SPLIT,
  B_BWD,
  B_BWD_VARLEN,
  B_COMBINE,
  B_GEMM,
  B_GEMM_FP8,
  B_COUNT
};
static const char* const base_names[B_COUNT] = {"fwd", "fwd-varlen", "fwd-paged", "fwd-fp8", "fwd-split",
                                               "bwd", "bwd-varlen", "combine", "gemm", "gemm-fp8"};

#define BATCH 2
#define SQ 5
#define SK 7
#define HQ 4
#define HKV 2
#define D 16
#define POOL_BYTES (64 * 1024)

/* inputs */
static void *g_q, *g_k, *g_v, *g_q8, *g_k8, *g_v8, *g_o_in, *g_dout, *g_a, *g_b, *g_c, *g_a8, *g_b8, *g_bias;
static float *g_lse_in, *g_o_partial, *g_lse_partial;
/* outputs (poisoned before each call) */
enum { OUT_O, OUT_LSE, OUT_DQ, OUT_DK, OUT_DV, OUT_CO, OUT_CLSE, OUT_D, OUT_COUNT };
static void* g_out[OUT_COUNT];
static const char* const out_names[OUT_COUNT] = {"o", "lse", "dq", "dk", "dv", "combine o", "combine lse", "d"};

typedef struct ctx {
  flashc_handle_t handle;
  int params_null;
  flashc_attn_fwd_params fwd;
  flashc_attn_bwd_params bwd;
  flashc_attn_combine_params comb;
  flashc_gemm_params gemm;
  void* workspace;
  size_t workspace_bytes;
  int use_query_workspace; /* allocate the size the query returns (split base) */
  int32_t cu_q[8], cu_k[8], used_q[8], used_k[8], page_table[16], cache_seqlens[8];
  float descale[3][8];
  float scale_a, scale_b;
} ctx;

static flashc_handle_t g_handle;
static void* g_workspace_pool;

static void fill_random(void* p, int64_t n, flashc_dtype dt, uint64_t stream) {
  test_rng rng = test_rng_make(test_seed(), stream);
  test_fill_random(&rng, p, n, dt, 1.0);
}

static void setup_buffers(void) {
  void** inputs[] = {&g_q, &g_k, &g_v, &g_q8, &g_k8, &g_v8, &g_o_in, &g_dout, &g_a, &g_b, &g_c, &g_a8, &g_b8, &g_bias};
  for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; ++i) *inputs[i] = test_alloc(POOL_BYTES);
  g_lse_in = test_alloc(POOL_BYTES);
  g_o_partial = test_alloc(POOL_BYTES);
  g_lse_partial = test_alloc(POOL_BYTES);
  int64_t n16 = POOL_BYTES / 2, n8 = POOL_BYTES;
  fill_random(g_q, n16, FLASHC_DTYPE_BF16, 1), fill_random(g_k, n16, FLASHC_DTYPE_BF16, 2);
  fill_random(g_v, n16, FLASHC_DTYPE_BF16, 3), fill_random(g_o_in, n16, FLASHC_DTYPE_BF16, 4);
  fill_random(g_dout, n16, FLASHC_DTYPE_BF16, 5), fill_random(g_a, n16, FLASHC_DTYPE_BF16, 6);
  fill_random(g_b, n16, FLASHC_DTYPE_BF16, 7), fill_random(g_c, n16, FLASHC_DTYPE_BF16, 8);
  fill_random(g_bias, n16, FLASHC_DTYPE_BF16, 9);
  fill_random(g_q8, n8, FLASHC_DTYPE_E4M3, 10), fill_random(g_k8, n8, FLASHC_DTYPE_E4M3, 11);
  fill_random(g_v8, n8, FLASHC_DTYPE_E4M3, 12), fill_random(g_a8, n8, FLASHC_DTYPE_E4M3, 13);
  fill_random(g_b8, n8, FLASHC_DTYPE_E4M3, 14);
  fill_random(g_o_partial, POOL_BYTES / 4, FLASHC_DTYPE_FP32, 15);
  for (int i = 0; i < POOL_BYTES / 4; ++i) g_lse_in[i] = 2.0f + (float)(i % 7) * 0.1f;
  for (int i = 0; i < POOL_BYTES / 4; ++i) g_lse_partial[i] = (float)(i % 5) * 0.3f - 0.5f;
  for (int i = 0; i < OUT_COUNT; ++i) g_out[i] = test_alloc(POOL_BYTES);
  g_workspace_pool = test_alloc(16u << 20);
}

static void poison_outputs(void) {
  for (int i = 0; i < OUT_COUNT; ++i) test_fill_poison(g_out[i], POOL_BYTES);
}

/* Returns the index of the first output buffer that is not all poison, or -1. */
static int first_touched_output(void) {
  for (int i = 0; i < OUT_COUNT; ++i) {
    const unsigned char* bytes = g_out[i];
    for (int j = 0; j < POOL_BYTES; ++j)
      if (bytes[j] != 0xFFu) return i;
  }
  return -1;
}

static void base_fwd_common(ctx* c) {
  flashc_attn_fwd_params* p = &c->fwd;
  flashc_attn_fwd_params_init(p);
  p->dtype = FLASHC_DTYPE_BF16, p->out_dtype = FLASHC_DTYPE_BF16;
  p->batch = BATCH, p->seqlen_q = SQ, p->seqlen_k = SK, p->heads_q = HQ, p->heads_kv = HKV, p->head_dim = D;
  p->head_dim_v = D;
  p->q = g_q, p->k = g_k, p->v = g_v, p->o = g_out[OUT_O], p->lse = g_out[OUT_LSE];
}

static void base_bwd_common(ctx* c) {
  flashc_attn_bwd_params* p = &c->bwd;
  flashc_attn_bwd_params_init(p);
  p->dtype = FLASHC_DTYPE_BF16;
  p->batch = BATCH, p->seqlen_q = SQ, p->seqlen_k = SK, p->heads_q = HQ, p->heads_kv = HKV, p->head_dim = D;
  p->head_dim_v = D;
  p->q = g_q, p->k = g_k, p->v = g_v, p->o = g_o_in, p->lse = g_lse_in, p->dout = g_dout;
  p->dq = g_out[OUT_DQ], p->dk = g_out[OUT_DK], p->dv = g_out[OUT_DV];
}

static void make_base(ctx* c, int base) {
  memset(c, 0, sizeof *c);
  c->handle = g_handle;
  switch (base) {
    case B_FWD: base_fwd_common(c); break;
    case B_FWD_VARLEN: {
      base_fwd_common(c);
      /* 3 sequences: q lengths 2, 2, 1 (max 3); k lengths 4, 0, 5 (max 6) */
      c->fwd.batch = 3;
      int32_t cq[] = {0, 2, 4, 5}, ck[] = {0, 4, 4, 9};
      memcpy(c->cu_q, cq, sizeof cq), memcpy(c->cu_k, ck, sizeof ck);
      c->fwd.cu_seqlens_q = c->cu_q, c->fwd.cu_seqlens_k = c->cu_k;
      c->fwd.total_q = 5, c->fwd.total_k = 9;
      c->fwd.seqlen_q = 3, c->fwd.seqlen_k = 6;
      break;
    }
    case B_FWD_PAGED: {
      base_fwd_common(c);
      /* pages of 4 rows, 3 per sequence, 7 pages; lengths 7 and 5 use 2 pages each */
      int32_t table[] = {3, 1, 6, 0, 4, 2};
      memcpy(c->page_table, table, sizeof table);
      c->cache_seqlens[0] = 7, c->cache_seqlens[1] = 5;
      c->fwd.page_table = c->page_table, c->fwd.page_size = 4, c->fwd.max_pages = 3, c->fwd.num_pages = 7;
      c->fwd.cache_seqlens = c->cache_seqlens;
      c->fwd.seqlen_k = 12;
      break;
    }
    case B_FWD_FP8:
      base_fwd_common(c);
      c->fwd.dtype = FLASHC_DTYPE_E4M3, c->fwd.out_dtype = FLASHC_DTYPE_BF16;
      c->fwd.q = g_q8, c->fwd.k = g_k8, c->fwd.v = g_v8;
      for (int t = 0; t < 3; ++t)
        for (int i = 0; i < 8; ++i) c->descale[t][i] = 0.5f + 0.125f * (float)i;
      c->fwd.q_descale = c->descale[0], c->fwd.k_descale = c->descale[1], c->fwd.v_descale = c->descale[2];
      break;
    case B_FWD_SPLIT:
      base_fwd_common(c);
      c->fwd.num_splits = 4;
      c->use_query_workspace = 1;
      break;
    case B_BWD: base_bwd_common(c); break;
    case B_BWD_VARLEN: {
      base_bwd_common(c);
      c->bwd.batch = 3;
      int32_t cq[] = {0, 2, 4, 5}, ck[] = {0, 4, 4, 9};
      memcpy(c->cu_q, cq, sizeof cq), memcpy(c->cu_k, ck, sizeof ck);
      c->bwd.cu_seqlens_q = c->cu_q, c->bwd.cu_seqlens_k = c->cu_k;
      c->bwd.total_q = 5, c->bwd.total_k = 9;
      c->bwd.seqlen_q = 3, c->bwd.seqlen_k = 6;
      break;
    }
    case B_COMBINE: {
      flashc_attn_combine_params* p = &c->comb;
      flashc_attn_combine_params_init(p);
      p->out_dtype = FLASHC_DTYPE_BF16;
      p->num_splits = 3, p->batch = BATCH, p->seqlen = SQ, p->heads = HQ, p->head_dim_v = D;
      p->o_partial = g_o_partial, p->lse_partial = g_lse_partial;
      p->o = g_out[OUT_CO], p->lse = g_out[OUT_CLSE];
      break;
    }
    case B_GEMM:
    case B_GEMM_FP8: {
      flashc_gemm_params* p = &c->gemm;
      flashc_gemm_params_init(p);
      p->m = 5, p->n = 6, p->k = 7, p->batch_count = 2;
      p->a_dtype = p->b_dtype = FLASHC_DTYPE_BF16;
      p->d_dtype = FLASHC_DTYPE_BF16;
      p->a = g_a, p->b = g_b, p->c = g_c, p->d = g_out[OUT_D], p->bias = g_bias;
      p->stride_a = 5 * 7, p->stride_b = 7 * 6, p->stride_c = 5 * 6, p->stride_d = 5 * 6;
      p->alpha = 1.0f, p->beta = 0.5f;
      if (base == B_GEMM_FP8) {
        p->a_dtype = p->b_dtype = FLASHC_DTYPE_E4M3;
        p->a = g_a8, p->b = g_b8;
        c->scale_a = 0.5f, c->scale_b = 0.25f;
        p->scale_a = &c->scale_a, p->scale_b = &c->scale_b;
      }
      break;
    }
  }
}

static int base_op(int base) {
  if (base <= B_FWD_SPLIT) return 0;
  if (base <= B_BWD_VARLEN) return 1;
  if (base == B_COMBINE) return 2;
  return 3;
}

/* Calls the entry point; *query_status gets the workspace query's status (SUCCESS if none). */
static flashc_status call(ctx* c, int base, flashc_status* query_status, int run_query) {
  int op = base_op(base);
  size_t query_bytes = 0;
  flashc_status q = FLASHC_STATUS_SUCCESS;
  if (run_query) {
    if (op == 0) q = flashc_attn_fwd_workspace_size(c->handle, c->params_null ? NULL : &c->fwd, &query_bytes);
    if (op == 1) q = flashc_attn_bwd_workspace_size(c->handle, c->params_null ? NULL : &c->bwd, &query_bytes);
    if (op == 3) q = flashc_gemm_workspace_size(c->handle, c->params_null ? NULL : &c->gemm, &query_bytes);
  }
  if (query_status) *query_status = q;
  void* workspace = c->workspace;
  size_t bytes = c->workspace_bytes;
  if (c->use_query_workspace && !workspace && !bytes) {
    /* the split base: a caller workspace of the queried size (queried on the base struct) */
    size_t need = 0;
    ctx base_ctx;
    make_base(&base_ctx, base);
    flashc_attn_fwd_workspace_size(g_handle, &base_ctx.fwd, &need);
    workspace = g_workspace_pool, bytes = need;
  }
  switch (op) {
    case 0: return flashc_attn_fwd(c->handle, c->params_null ? NULL : &c->fwd, workspace, bytes, NULL);
    case 1: return flashc_attn_bwd(c->handle, c->params_null ? NULL : &c->bwd, workspace, bytes, NULL);
    case 2: return flashc_attn_combine(c->handle, c->params_null ? NULL : &c->comb, NULL);
    default: return flashc_gemm(c->handle, c->params_null ? NULL : &c->gemm, workspace, bytes, NULL);
  }
}

/* ---------------------------------------------------------------------------------------- */
/* Messages                                                                                  */
/* ---------------------------------------------------------------------------------------- */

static int is_ident(char ch) { return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_'; }

/* `word` occurs in `text` delimited by non-identifier characters. */
static int contains_word(const char* text, const char* word, size_t length) {
  for (const char* at = text; *at; ++at) {
    if (strncmp(at, word, length) != 0) continue;
    if (at > text && is_ident(at[-1])) continue;
    if (is_ident(at[length])) continue;
    return 1;
  }
  return 0;
}

/* spec: alternatives separated by '|', each a list of words that must all appear, joined by '+'. */
static int message_matches(const char* message, const char* spec) {
  const char* alt = spec;
  while (*alt) {
    const char* alt_end = strchr(alt, '|');
    if (!alt_end) alt_end = alt + strlen(alt);
    int all = 1;
    const char* word = alt;
    while (word < alt_end) {
      const char* word_end = word;
      while (word_end < alt_end && *word_end != '+') ++word_end;
      if (!contains_word(message, word, (size_t)(word_end - word))) all = 0;
      word = word_end < alt_end ? word_end + 1 : alt_end;
    }
    if (all) return 1;
    alt = *alt_end ? alt_end + 1 : alt_end;
  }
  return 0;
}

/* Sets this thread's message to a known sentinel, so a stale message cannot pass a row. */
static void reset_message(void) { flashc_get_device_count(NULL); }

/* ---------------------------------------------------------------------------------------- */
/* The table                                                                                 */
/* ---------------------------------------------------------------------------------------- */

typedef void (*mutation)(ctx*);

typedef struct row {
  const char* name;
  int base;
  mutation mutate;
  flashc_status expected;
  flashc_status also_ok; /* a second acceptable status, or SUCCESS for none */
  const char* words;     /* the argument the message must name */
  int no_query;          /* the workspace query does not see this mutation */
} row;

#define MUT(fn, body) \
  static void fn(ctx* c) { body; }
#define S(x) FLASHC_STATUS_##x

/* common */
MUT(m_handle_null, c->handle = NULL)
MUT(m_params_null, c->params_null = 1)
/* forward */
MUT(f_q_null, c->fwd.q = NULL)
MUT(f_k_null, c->fwd.k = NULL)
MUT(f_v_null, c->fwd.v = NULL)
MUT(f_o_null, c->fwd.o = NULL)
MUT(f_size0, c->fwd.struct_size = 0)
MUT(f_size_big, c->fwd.struct_size = sizeof c->fwd + 8)
MUT(f_size_small, c->fwd.struct_size = sizeof c->fwd - 1)
MUT(f_batch0, c->fwd.batch = 0)
MUT(f_batch_neg, c->fwd.batch = -1)
MUT(f_sq0, c->fwd.seqlen_q = 0)
MUT(f_sk0, c->fwd.seqlen_k = 0)
MUT(f_sk_neg, c->fwd.seqlen_k = -7)
MUT(f_hq0, c->fwd.heads_q = 0)
MUT(f_d0, c->fwd.head_dim = 0)
MUT(f_d_neg, c->fwd.head_dim = -3)
MUT(f_hkv_neg, c->fwd.heads_kv = -1)
MUT(f_dv_neg, c->fwd.head_dim_v = -1)
MUT(f_dtype99, c->fwd.dtype = (flashc_dtype)99)
MUT(f_dtype_neg, c->fwd.dtype = (flashc_dtype)-1)
MUT(f_out99, c->fwd.out_dtype = (flashc_dtype)99)
MUT(f_heads_12_5, c->fwd.heads_q = 12; c->fwd.heads_kv = 5)
MUT(f_heads_4_3, c->fwd.heads_kv = 3)
MUT(f_d513, c->fwd.head_dim = 513; c->fwd.head_dim_v = 16)
MUT(f_dv513, c->fwd.head_dim_v = 513)
MUT(f_fp16_bf16, c->fwd.dtype = FLASHC_DTYPE_FP16; c->fwd.out_dtype = FLASHC_DTYPE_BF16)
MUT(f_fp32_bf16, c->fwd.dtype = FLASHC_DTYPE_FP32; c->fwd.out_dtype = FLASHC_DTYPE_BF16)
MUT(f_e4m3_fp32, c->fwd.out_dtype = FLASHC_DTYPE_FP32)
MUT(f_e4m3_e4m3, c->fwd.out_dtype = FLASHC_DTYPE_E4M3)
MUT(f_causal2, c->fwd.causal = 2)
MUT(f_causal_neg, c->fwd.causal = -1)
MUT(f_wl_neg2, c->fwd.window_left = -2)
MUT(f_wr_neg5, c->fwd.window_right = -5)
MUT(f_causal_wr5, c->fwd.causal = 1; c->fwd.window_right = 5)
MUT(f_scale_nan, c->fwd.softmax_scale = NAN)
MUT(f_scale_inf, c->fwd.softmax_scale = INFINITY)
MUT(f_scale_ninf, c->fwd.softmax_scale = -INFINITY)
MUT(f_softcap_neg, c->fwd.softcap = -1.0f)
MUT(f_softcap_nan, c->fwd.softcap = NAN)
MUT(f_q_row_neg, c->fwd.q_row_stride = -(HQ * D))
MUT(f_k_batch_neg, c->fwd.k_batch_stride = -5)
MUT(f_v_head_neg, c->fwd.v_head_stride = -1)
MUT(f_o_row_neg, c->fwd.o_row_stride = -1)
MUT(f_lse_head_neg, c->fwd.lse_head_stride = -1)
MUT(f_q_head_overlap, c->fwd.q_head_stride = D - 1)
MUT(f_k_head_overlap, c->fwd.k_head_stride = D / 2)
MUT(f_o_row_overlap, c->fwd.o_row_stride = HQ * D - 1; c->fwd.o_head_stride = D)
MUT(f_v_row_overlap, c->fwd.v_row_stride = HKV * D - 2; c->fwd.v_head_stride = D)
MUT(f_lse_head_overlap, c->fwd.lse_head_stride = SQ - 1)
MUT(f_heads_major_ok,
    c->fwd.q_row_stride = D; c->fwd.q_head_stride = SQ * D; c->fwd.q_batch_stride = HQ * SQ * D;
    c->fwd.k_row_stride = D; c->fwd.k_head_stride = SK * D; c->fwd.k_batch_stride = HKV * SK * D;
    c->fwd.o_row_stride = D; c->fwd.o_head_stride = SQ * D; c->fwd.o_batch_stride = HQ * SQ * D)
MUT(f_padded_ok, c->fwd.q_row_stride = HQ * D + 8; c->fwd.q_batch_stride = SQ * (HQ * D + 8); c->fwd.lse_head_stride = SQ + 3;
    c->fwd.lse_batch_stride = HQ * (SQ + 3))
MUT(f_splits_neg, c->fwd.num_splits = -1)
MUT(f_splits_257, c->fwd.num_splits = 257)
MUT(f_splits_256_ok, c->fwd.num_splits = 256)
MUT(f_splits_auto_ok, c->fwd.num_splits = 0)
MUT(f_pack_gqa2, c->fwd.pack_gqa = 2)
MUT(f_pack_gqa_neg2, c->fwd.pack_gqa = -2)
MUT(f_descale_bf16, c->descale[0][0] = 1.0f; c->fwd.q_descale = c->descale[0])
MUT(f_k_descale_bf16, c->descale[1][0] = 1.0f; c->fwd.k_descale = c->descale[1])
MUT(f_ws_null_bytes, c->workspace = NULL; c->workspace_bytes = 16)
/* varlen forward */
MUT(v_cuq0, c->cu_q[0] = 1)
MUT(v_cuq_decreasing, c->cu_q[1] = 3; c->cu_q[2] = 2)
MUT(v_cuq_end, c->fwd.total_q = 6)
MUT(v_cuq_long, c->fwd.seqlen_q = 1)
MUT(v_cuk0, c->cu_k[0] = 2)
MUT(v_cuk_decreasing, c->cu_k[1] = 5; c->cu_k[2] = 3)
MUT(v_cuk_end, c->fwd.total_k = 10)
MUT(v_cuk_long, c->fwd.seqlen_k = 4)
MUT(v_usedq_big, c->used_q[0] = 2; c->used_q[1] = 3; c->used_q[2] = 1; c->fwd.seqused_q = c->used_q)
MUT(v_usedq_neg, c->used_q[0] = 1; c->used_q[1] = -1; c->used_q[2] = 1; c->fwd.seqused_q = c->used_q)
MUT(v_usedk_big, c->used_k[0] = 4; c->used_k[1] = 1; c->used_k[2] = 5; c->fwd.seqused_k = c->used_k)
MUT(v_usedk_neg, c->used_k[0] = -2; c->used_k[1] = 0; c->used_k[2] = 5; c->fwd.seqused_k = c->used_k)
MUT(v_used_ok, c->used_q[0] = 1; c->used_q[1] = 0; c->used_q[2] = 1; c->fwd.seqused_q = c->used_q; c->used_k[0] = 0;
    c->used_k[1] = 0; c->used_k[2] = 5; c->fwd.seqused_k = c->used_k)
MUT(f_usedq_fixed_big, c->used_q[0] = SQ + 1; c->used_q[1] = 1; c->fwd.seqused_q = c->used_q)
MUT(f_usedk_fixed_neg, c->used_k[0] = 3; c->used_k[1] = -1; c->fwd.seqused_k = c->used_k)
/* paged */
MUT(p_page_size0, c->fwd.page_size = 0)
MUT(p_num_pages0, c->fwd.num_pages = 0)
MUT(p_max_pages0, c->fwd.max_pages = 0)
MUT(p_max_pages_neg, c->fwd.max_pages = -1)
MUT(p_entry_big, c->page_table[1] = 7)
MUT(p_entry_neg, c->page_table[3] = -1)
MUT(p_unused_entries_ok, c->page_table[2] = -1; c->page_table[5] = 1000)
MUT(p_capacity, c->fwd.seqlen_k = 13)
MUT(p_both_lengths, c->used_k[0] = 7; c->used_k[1] = 5; c->fwd.seqused_k = c->used_k)
MUT(p_cache_big, c->cache_seqlens[0] = 13)
MUT(p_cache_neg, c->cache_seqlens[1] = -1)
MUT(p_cu_k, c->cu_k[0] = 0; c->cu_k[1] = 7; c->cu_k[2] = 12; c->fwd.cu_seqlens_k = c->cu_k; c->fwd.total_k = 12)
MUT(p_seqused_ok, c->fwd.cache_seqlens = NULL; c->used_k[0] = 12; c->used_k[1] = 0; c->fwd.seqused_k = c->used_k)
MUT(p_no_lengths_ok, c->fwd.cache_seqlens = NULL; c->page_table[2] = 5; c->page_table[5] = 6)
/* fp8 */
MUT(e_q_descale_null, c->fwd.q_descale = NULL)
MUT(e_k_descale_null, c->fwd.k_descale = NULL)
MUT(e_v_descale_null, c->fwd.v_descale = NULL)
MUT(e_fp16_out_ok, c->fwd.out_dtype = FLASHC_DTYPE_FP16)
/* split / workspace */
MUT(w_too_small, size_t need = 0; flashc_attn_fwd_workspace_size(g_handle, &c->fwd, &need); c->workspace = g_workspace_pool;
    c->workspace_bytes = need - 1)
MUT(w_zero_bytes, c->workspace = g_workspace_pool; c->workspace_bytes = 0; c->use_query_workspace = 0)
MUT(w_null_bytes, c->workspace = NULL; c->workspace_bytes = 64; c->use_query_workspace = 0)
MUT(w_owned_ok, c->workspace = NULL; c->workspace_bytes = 0; c->use_query_workspace = 0)
/* backward */
MUT(b_q_null, c->bwd.q = NULL)
MUT(b_k_null, c->bwd.k = NULL)
MUT(b_v_null, c->bwd.v = NULL)
MUT(b_o_null, c->bwd.o = NULL)
MUT(b_lse_null, c->bwd.lse = NULL)
MUT(b_dout_null, c->bwd.dout = NULL)
MUT(b_dq_null, c->bwd.dq = NULL)
MUT(b_dk_null, c->bwd.dk = NULL)
MUT(b_dv_null, c->bwd.dv = NULL)
MUT(b_size0, c->bwd.struct_size = 0)
MUT(b_size_big, c->bwd.struct_size = sizeof c->bwd + 8)
MUT(b_batch0, c->bwd.batch = 0)
MUT(b_sq_neg, c->bwd.seqlen_q = -1)
MUT(b_hq0, c->bwd.heads_q = 0)
MUT(b_d0, c->bwd.head_dim = 0)
MUT(b_hkv_neg, c->bwd.heads_kv = -2)
MUT(b_heads, c->bwd.heads_q = 12; c->bwd.heads_kv = 5)
MUT(b_d513, c->bwd.head_dim = 513)
MUT(b_e4m3, c->bwd.dtype = FLASHC_DTYPE_E4M3)
MUT(b_dtype99, c->bwd.dtype = (flashc_dtype)99)
MUT(b_det2, c->bwd.deterministic = 2)
MUT(b_causal2, c->bwd.causal = 2)
MUT(b_wr_neg3, c->bwd.window_right = -3)
MUT(b_causal_wr5, c->bwd.causal = 1; c->bwd.window_right = 5)
MUT(b_softcap_neg, c->bwd.softcap = -2.0f)
MUT(b_scale_nan, c->bwd.softmax_scale = NAN)
MUT(b_dq_row_neg, c->bwd.dq_row_stride = -1)
MUT(b_dk_head_overlap, c->bwd.dk_head_stride = D - 1)
MUT(b_dout_row_overlap, c->bwd.dout_row_stride = HQ * D - 1; c->bwd.dout_head_stride = D)
MUT(b_det_ok, c->bwd.deterministic = 1)
MUT(bv_cuq0, c->cu_q[0] = 1)
MUT(bv_cuk_end, c->bwd.total_k = 8)
MUT(bv_usedk_big, c->used_k[0] = 5; c->used_k[1] = 0; c->used_k[2] = 5; c->bwd.seqused_k = c->used_k)
/* combine */
MUT(c_o_partial_null, c->comb.o_partial = NULL)
MUT(c_lse_partial_null, c->comb.lse_partial = NULL)
MUT(c_o_null, c->comb.o = NULL)
MUT(c_size0, c->comb.struct_size = 0)
MUT(c_splits0, c->comb.num_splits = 0)
MUT(c_seqlen0, c->comb.seqlen = 0)
MUT(c_heads0, c->comb.heads = 0)
MUT(c_batch0, c->comb.batch = 0)
MUT(c_dv_neg, c->comb.head_dim_v = -1)
MUT(c_e4m3, c->comb.out_dtype = FLASHC_DTYPE_E4M3)
MUT(c_out99, c->comb.out_dtype = (flashc_dtype)99)
MUT(c_o_row_neg, c->comb.o_row_stride = -1)
MUT(c_lse_head_neg, c->comb.lse_partial_head_stride = -1)
MUT(c_fp32_ok, c->comb.out_dtype = FLASHC_DTYPE_FP32; c->comb.lse = NULL)
/* gemm */
MUT(g_a_null, c->gemm.a = NULL)
MUT(g_b_null, c->gemm.b = NULL)
MUT(g_d_null, c->gemm.d = NULL)
MUT(g_c_null_beta, c->gemm.c = NULL)
MUT(g_c_null_beta0_ok, c->gemm.c = NULL; c->gemm.beta = 0.0f)
MUT(g_size0, c->gemm.struct_size = 0)
MUT(g_size_big, c->gemm.struct_size = sizeof c->gemm + 8)
MUT(g_m0, c->gemm.m = 0)
MUT(g_n0, c->gemm.n = 0)
MUT(g_k0, c->gemm.k = 0)
MUT(g_m_neg, c->gemm.m = -1)
MUT(g_batch0, c->gemm.batch_count = 0)
MUT(g_a_dtype99, c->gemm.a_dtype = (flashc_dtype)99; c->gemm.b_dtype = (flashc_dtype)99)
MUT(g_d_dtype99, c->gemm.d_dtype = (flashc_dtype)99)
MUT(g_a_layout99, c->gemm.a_layout = (flashc_layout)99)
MUT(g_b_layout2, c->gemm.b_layout = (flashc_layout)2)
MUT(g_cd_layout_neg, c->gemm.cd_layout = (flashc_layout)-1)
MUT(g_act99, c->gemm.activation = (flashc_activation)99)
MUT(g_ab_dtype, c->gemm.b_dtype = FLASHC_DTYPE_FP16)
MUT(g_d_e4m3, c->gemm.d_dtype = FLASHC_DTYPE_E4M3)
MUT(g_alpha_nan, c->gemm.alpha = NAN)
MUT(g_beta_nan, c->gemm.beta = NAN)
MUT(g_lda_row, c->gemm.lda = 6)                                            /* < k = 7 */
MUT(g_lda_col, c->gemm.a_layout = FLASHC_COL_MAJOR; c->gemm.lda = 4)       /* < m = 5 */
MUT(g_ldb_row, c->gemm.ldb = 5)                                            /* < n = 6 */
MUT(g_ldb_col, c->gemm.b_layout = FLASHC_COL_MAJOR; c->gemm.ldb = 6)       /* < k = 7 */
MUT(g_ldc_row, c->gemm.ldc = 5)                                            /* < n = 6 */
MUT(g_ldd_row, c->gemm.ldd = 5)                                            /* < n = 6 */
MUT(g_ldd_col, c->gemm.cd_layout = FLASHC_COL_MAJOR; c->gemm.ldd = 4)      /* < m = 5 */
MUT(g_lda_neg, c->gemm.lda = -7)
MUT(g_stride_a_neg, c->gemm.stride_a = -1)
MUT(g_stride_d_neg, c->gemm.stride_d = -30)
MUT(g_padded_ld_ok, c->gemm.lda = 9; c->gemm.ldb = 8; c->gemm.ldc = 7; c->gemm.ldd = 6; c->gemm.stride_a = 45;
    c->gemm.stride_b = 56; c->gemm.stride_c = 35; c->gemm.stride_d = 30)
MUT(g_broadcast_ok, c->gemm.stride_a = 0; c->gemm.stride_c = 0)
MUT(g_algo3, c->gemm.algo = 3)
MUT(g_algo_neg, c->gemm.algo = -1)
MUT(g_algo1_ok, c->gemm.algo = FLASHC_GEMM_ALGO_HOPPER)
MUT(g_fp32_ok, c->gemm.a_dtype = c->gemm.b_dtype = FLASHC_DTYPE_FP32; c->gemm.d_dtype = FLASHC_DTYPE_FP32;
    c->gemm.a = g_o_partial; c->gemm.b = g_o_partial; c->gemm.c = g_o_partial)
MUT(g_scale_a_null, c->gemm.scale_a = NULL)
MUT(g_scale_b_null, c->gemm.scale_b = NULL)

static const row table[] = {
    /* forward: pointers, struct size */
    {"handle NULL", B_FWD, m_handle_null, S(NULL_POINTER), 0, "handle", 0},
    {"params NULL", B_FWD, m_params_null, S(NULL_POINTER), 0, "params", 0},
    {"q NULL", B_FWD, f_q_null, S(NULL_POINTER), 0, "q", 0},
    {"k NULL", B_FWD, f_k_null, S(NULL_POINTER), 0, "k", 0},
    {"v NULL", B_FWD, f_v_null, S(NULL_POINTER), 0, "v", 0},
    {"o NULL", B_FWD, f_o_null, S(NULL_POINTER), 0, "o", 0},
    {"struct_size 0", B_FWD, f_size0, S(BAD_STRUCT_SIZE), 0, "struct_size", 0},
    {"struct_size + 8", B_FWD, f_size_big, S(BAD_STRUCT_SIZE), 0, "struct_size", 0},
    {"struct_size - 1", B_FWD, f_size_small, S(BAD_STRUCT_SIZE), 0, "struct_size", 0},
    /* sizes */
    {"batch 0", B_FWD, f_batch0, S(INVALID_VALUE), 0, "batch", 0},
    {"batch -1", B_FWD, f_batch_neg, S(INVALID_VALUE), 0, "batch", 0},
    {"seqlen_q 0", B_FWD, f_sq0, S(INVALID_VALUE), 0, "seqlen_q", 0},
    {"seqlen_k 0", B_FWD, f_sk0, S(INVALID_VALUE), 0, "seqlen_k", 0},
    {"seqlen_k -7", B_FWD, f_sk_neg, S(INVALID_VALUE), 0, "seqlen_k", 0},
    {"heads_q 0", B_FWD, f_hq0, S(INVALID_VALUE), 0, "heads_q", 0},
    {"head_dim 0", B_FWD, f_d0, S(INVALID_VALUE), 0, "head_dim", 0},
    {"head_dim -3", B_FWD, f_d_neg, S(INVALID_VALUE), 0, "head_dim", 0},
    {"heads_kv -1", B_FWD, f_hkv_neg, S(INVALID_VALUE), 0, "heads_kv", 0},
    {"head_dim_v -1", B_FWD, f_dv_neg, S(INVALID_VALUE), 0, "head_dim_v", 0},
    {"dtype 99", B_FWD, f_dtype99, S(INVALID_VALUE), 0, "dtype", 0},
    {"dtype -1", B_FWD, f_dtype_neg, S(INVALID_VALUE), 0, "dtype", 0},
    {"out_dtype 99", B_FWD, f_out99, S(INVALID_VALUE), 0, "out_dtype", 0},
    {"heads_q 12 heads_kv 5", B_FWD, f_heads_12_5, S(SHAPE_MISMATCH), 0, "heads_q+heads_kv", 0},
    {"heads_q 4 heads_kv 3", B_FWD, f_heads_4_3, S(SHAPE_MISMATCH), 0, "heads_q+heads_kv", 0},
    {"head_dim 513", B_FWD, f_d513, S(NOT_SUPPORTED_HEAD_DIM), 0, "head_dim", 0},
    {"head_dim_v 513", B_FWD, f_dv513, S(NOT_SUPPORTED_HEAD_DIM), 0, "head_dim_v", 0},
    {"fp16 in, bf16 out", B_FWD, f_fp16_bf16, S(NOT_SUPPORTED_DTYPE), 0, "out_dtype", 0},
    {"fp32 in, bf16 out", B_FWD, f_fp32_bf16, S(NOT_SUPPORTED_DTYPE), 0, "out_dtype", 0},
    {"e4m3 in, fp32 out", B_FWD_FP8, f_e4m3_fp32, S(NOT_SUPPORTED_DTYPE), 0, "out_dtype", 0},
    {"e4m3 in, e4m3 out", B_FWD_FP8, f_e4m3_e4m3, S(NOT_SUPPORTED_DTYPE), 0, "out_dtype", 0},
    /* masks, scale, softcap */
    {"causal 2", B_FWD, f_causal2, S(INVALID_VALUE), 0, "causal", 0},
    {"causal -1", B_FWD, f_causal_neg, S(INVALID_VALUE), 0, "causal", 0},
    {"window_left -2", B_FWD, f_wl_neg2, S(INVALID_VALUE), 0, "window_left", 0},
    {"window_right -5", B_FWD, f_wr_neg5, S(INVALID_VALUE), 0, "window_right", 0},
    {"causal 1 with window_right 5", B_FWD, f_causal_wr5, S(INVALID_VALUE), 0, "window_right|causal", 0},
    {"softmax_scale NaN", B_FWD, f_scale_nan, S(INVALID_VALUE), 0, "softmax_scale", 0},
    {"softmax_scale inf", B_FWD, f_scale_inf, S(INVALID_VALUE), 0, "softmax_scale", 0},
    {"softmax_scale -inf", B_FWD, f_scale_ninf, S(INVALID_VALUE), 0, "softmax_scale", 0},
    {"softcap -1", B_FWD, f_softcap_neg, S(INVALID_VALUE), 0, "softcap", 0},
    {"softcap NaN", B_FWD, f_softcap_nan, S(INVALID_VALUE), 0, "softcap", 0},
    /* strides */
    {"q_row_stride negative", B_FWD, f_q_row_neg, S(BAD_LAYOUT), 0, "q_row_stride", 0},
    {"k_batch_stride negative", B_FWD, f_k_batch_neg, S(BAD_LAYOUT), 0, "k_batch_stride", 0},
    {"v_head_stride negative", B_FWD, f_v_head_neg, S(BAD_LAYOUT), 0, "v_head_stride", 0},
    {"o_row_stride negative", B_FWD, f_o_row_neg, S(BAD_LAYOUT), 0, "o_row_stride", 0},
    {"lse_head_stride negative", B_FWD, f_lse_head_neg, S(BAD_LAYOUT), 0, "lse_head_stride", 0},
    {"q_head_stride = head_dim - 1", B_FWD, f_q_head_overlap, S(BAD_LAYOUT), 0, "q_head_stride", 0},
    {"k_head_stride = head_dim / 2", B_FWD, f_k_head_overlap, S(BAD_LAYOUT), 0, "k_head_stride", 0},
    {"o_row_stride < heads * head_dim_v", B_FWD, f_o_row_overlap, S(BAD_LAYOUT), 0, "o_row_stride", 0},
    {"v_row_stride < heads_kv * head_dim_v", B_FWD, f_v_row_overlap, S(BAD_LAYOUT), 0, "v_row_stride", 0},
    {"lse_head_stride < seqlen_q", B_FWD, f_lse_head_overlap, S(BAD_LAYOUT), 0, "lse_head_stride", 0},
    {"valid: heads-major strides", B_FWD, f_heads_major_ok, S(SUCCESS), 0, "", 0},
    {"valid: padded strides", B_FWD, f_padded_ok, S(SUCCESS), 0, "", 0},
    /* splits, pack_gqa, descales, workspace */
    {"num_splits -1", B_FWD, f_splits_neg, S(INVALID_VALUE), 0, "num_splits", 0},
    {"num_splits 257", B_FWD, f_splits_257, S(INVALID_VALUE), 0, "num_splits", 0},
    {"valid: num_splits 256 (handle workspace)", B_FWD, f_splits_256_ok, S(SUCCESS), 0, "", 0},
    {"valid: num_splits 0 (automatic)", B_FWD, f_splits_auto_ok, S(SUCCESS), 0, "", 0},
    {"pack_gqa 2", B_FWD, f_pack_gqa2, S(INVALID_VALUE), 0, "pack_gqa", 0},
    {"pack_gqa -2", B_FWD, f_pack_gqa_neg2, S(INVALID_VALUE), 0, "pack_gqa", 0},
    {"q_descale with bf16", B_FWD, f_descale_bf16, S(INVALID_VALUE), 0, "q_descale", 0},
    {"k_descale with bf16", B_FWD, f_k_descale_bf16, S(INVALID_VALUE), 0, "k_descale", 0},
    {"workspace NULL, workspace_bytes 16", B_FWD, f_ws_null_bytes, S(NULL_POINTER), 0, "workspace", 1},
    /* varlen */
    {"cu_seqlens_q[0] = 1", B_FWD_VARLEN, v_cuq0, S(INVALID_VALUE), 0, "cu_seqlens_q", 0},
    {"cu_seqlens_q decreasing", B_FWD_VARLEN, v_cuq_decreasing, S(INVALID_VALUE), 0, "cu_seqlens_q", 0},
    {"cu_seqlens_q[batch] != total_q", B_FWD_VARLEN, v_cuq_end, S(SHAPE_MISMATCH), 0, "total_q|cu_seqlens_q", 0},
    {"q sequence longer than seqlen_q", B_FWD_VARLEN, v_cuq_long, S(SHAPE_MISMATCH), 0, "seqlen_q", 0},
    {"cu_seqlens_k[0] = 2", B_FWD_VARLEN, v_cuk0, S(INVALID_VALUE), 0, "cu_seqlens_k", 0},
    {"cu_seqlens_k decreasing", B_FWD_VARLEN, v_cuk_decreasing, S(INVALID_VALUE), 0, "cu_seqlens_k", 0},
    {"cu_seqlens_k[batch] != total_k", B_FWD_VARLEN, v_cuk_end, S(SHAPE_MISMATCH), 0, "total_k|cu_seqlens_k", 0},
    {"k sequence longer than seqlen_k", B_FWD_VARLEN, v_cuk_long, S(SHAPE_MISMATCH), 0, "seqlen_k", 0},
    {"seqused_q > sequence length", B_FWD_VARLEN, v_usedq_big, S(INVALID_VALUE), 0, "seqused_q", 0},
    {"seqused_q negative", B_FWD_VARLEN, v_usedq_neg, S(INVALID_VALUE), 0, "seqused_q", 0},
    {"seqused_k > sequence length", B_FWD_VARLEN, v_usedk_big, S(INVALID_VALUE), 0, "seqused_k", 0},
    {"seqused_k negative", B_FWD_VARLEN, v_usedk_neg, S(INVALID_VALUE), 0, "seqused_k", 0},
    {"valid: seqused_q/k within lengths, zeros", B_FWD_VARLEN, v_used_ok, S(SUCCESS), 0, "", 0},
    {"seqused_q > seqlen_q (fixed length)", B_FWD, f_usedq_fixed_big, S(INVALID_VALUE), 0, "seqused_q", 0},
    {"seqused_k negative (fixed length)", B_FWD, f_usedk_fixed_neg, S(INVALID_VALUE), 0, "seqused_k", 0},
    /* paged */
    {"page_size 0", B_FWD_PAGED, p_page_size0, S(INVALID_VALUE), 0, "page_size", 0},
    {"num_pages 0", B_FWD_PAGED, p_num_pages0, S(INVALID_VALUE), 0, "num_pages", 0},
    {"max_pages 0", B_FWD_PAGED, p_max_pages0, S(INVALID_VALUE), 0, "max_pages", 0},
    {"max_pages -1", B_FWD_PAGED, p_max_pages_neg, S(INVALID_VALUE), 0, "max_pages", 0},
    {"used page_table entry = num_pages", B_FWD_PAGED, p_entry_big, S(INVALID_VALUE), 0, "page_table", 0},
    {"used page_table entry -1", B_FWD_PAGED, p_entry_neg, S(INVALID_VALUE), 0, "page_table", 0},
    {"valid: unused page_table entries out of range", B_FWD_PAGED, p_unused_entries_ok, S(SUCCESS), 0, "", 0},
    {"max_pages * page_size < seqlen_k", B_FWD_PAGED, p_capacity, S(SHAPE_MISMATCH), 0, "seqlen_k", 0},
    {"cache_seqlens and seqused_k", B_FWD_PAGED, p_both_lengths, S(INVALID_VALUE), 0, "cache_seqlens|seqused_k", 0},
    {"cache_seqlens > max_pages * page_size", B_FWD_PAGED, p_cache_big, S(INVALID_VALUE), 0, "cache_seqlens", 0},
    {"cache_seqlens negative", B_FWD_PAGED, p_cache_neg, S(INVALID_VALUE), 0, "cache_seqlens", 0},
    {"cu_seqlens_k with page_table", B_FWD_PAGED, p_cu_k, S(NOT_SUPPORTED), 0, "cu_seqlens_k|page_table", 0},
    {"valid: paged with seqused_k", B_FWD_PAGED, p_seqused_ok, S(SUCCESS), 0, "", 0},
    {"valid: paged with seqlen_k only", B_FWD_PAGED, p_no_lengths_ok, S(SUCCESS), 0, "", 0},
    /* fp8 */
    {"e4m3 without q_descale", B_FWD_FP8, e_q_descale_null, S(NULL_POINTER), 0, "q_descale", 0},
    {"e4m3 without k_descale", B_FWD_FP8, e_k_descale_null, S(NULL_POINTER), 0, "k_descale", 0},
    {"e4m3 without v_descale", B_FWD_FP8, e_v_descale_null, S(NULL_POINTER), 0, "v_descale", 0},
    {"valid: e4m3 with fp16 out", B_FWD_FP8, e_fp16_out_ok, S(SUCCESS), 0, "", 0},
    /* workspace */
    {"workspace smaller than the query", B_FWD_SPLIT, w_too_small, S(WORKSPACE_TOO_SMALL), 0, "workspace|workspace_bytes", 1},
    {"workspace non-NULL with 0 bytes", B_FWD_SPLIT, w_zero_bytes, S(WORKSPACE_TOO_SMALL), 0, "workspace|workspace_bytes", 1},
    {"workspace NULL with 64 bytes", B_FWD_SPLIT, w_null_bytes, S(NULL_POINTER), 0, "workspace", 1},
    {"valid: handle-owned workspace", B_FWD_SPLIT, w_owned_ok, S(SUCCESS), 0, "", 1},
    /* backward */
    {"handle NULL", B_BWD, m_handle_null, S(NULL_POINTER), 0, "handle", 0},
    {"params NULL", B_BWD, m_params_null, S(NULL_POINTER), 0, "params", 0},
    {"q NULL", B_BWD, b_q_null, S(NULL_POINTER), 0, "q", 0},
    {"k NULL", B_BWD, b_k_null, S(NULL_POINTER), 0, "k", 0},
    {"v NULL", B_BWD, b_v_null, S(NULL_POINTER), 0, "v", 0},
    {"o NULL", B_BWD, b_o_null, S(NULL_POINTER), 0, "o", 0},
    {"lse NULL", B_BWD, b_lse_null, S(NULL_POINTER), 0, "lse", 0},
    {"dout NULL", B_BWD, b_dout_null, S(NULL_POINTER), 0, "dout", 0},
    {"dq NULL", B_BWD, b_dq_null, S(NULL_POINTER), 0, "dq", 0},
    {"dk NULL", B_BWD, b_dk_null, S(NULL_POINTER), 0, "dk", 0},
    {"dv NULL", B_BWD, b_dv_null, S(NULL_POINTER), 0, "dv", 0},
    {"struct_size 0", B_BWD, b_size0, S(BAD_STRUCT_SIZE), 0, "struct_size", 0},
    {"struct_size + 8", B_BWD, b_size_big, S(BAD_STRUCT_SIZE), 0, "struct_size", 0},
    {"batch 0", B_BWD, b_batch0, S(INVALID_VALUE), 0, "batch", 0},
    {"seqlen_q -1", B_BWD, b_sq_neg, S(INVALID_VALUE), 0, "seqlen_q", 0},
    {"heads_q 0", B_BWD, b_hq0, S(INVALID_VALUE), 0, "heads_q", 0},
    {"head_dim 0", B_BWD, b_d0, S(INVALID_VALUE), 0, "head_dim", 0},
    {"heads_kv -2", B_BWD, b_hkv_neg, S(INVALID_VALUE), 0, "heads_kv", 0},
    {"heads_q 12 heads_kv 5", B_BWD, b_heads, S(SHAPE_MISMATCH), 0, "heads_q+heads_kv", 0},
    {"head_dim 513", B_BWD, b_d513, S(NOT_SUPPORTED_HEAD_DIM), 0, "head_dim", 0},
    {"dtype e4m3", B_BWD, b_e4m3, S(NOT_SUPPORTED_DTYPE), 0, "dtype|e4m3", 0},
    {"dtype 99", B_BWD, b_dtype99, S(INVALID_VALUE), 0, "dtype", 0},
    {"deterministic 2", B_BWD, b_det2, S(INVALID_VALUE), 0, "deterministic", 0},
    {"causal 2", B_BWD, b_causal2, S(INVALID_VALUE), 0, "causal", 0},
    {"window_right -3", B_BWD, b_wr_neg3, S(INVALID_VALUE), 0, "window_right", 0},
    {"causal 1 with window_right 5", B_BWD, b_causal_wr5, S(INVALID_VALUE), 0, "window_right|causal", 0},
    {"softcap -2", B_BWD, b_softcap_neg, S(INVALID_VALUE), 0, "softcap", 0},
    {"softmax_scale NaN", B_BWD, b_scale_nan, S(INVALID_VALUE), 0, "softmax_scale", 0},
    {"dq_row_stride negative", B_BWD, b_dq_row_neg, S(BAD_LAYOUT), 0, "dq_row_stride", 0},
    {"dk_head_stride = head_dim - 1", B_BWD, b_dk_head_overlap, S(BAD_LAYOUT), 0, "dk_head_stride", 0},
    {"dout_row_stride < heads * head_dim_v", B_BWD, b_dout_row_overlap, S(BAD_LAYOUT), 0, "dout_row_stride", 0},
    {"valid: deterministic 1", B_BWD, b_det_ok, S(SUCCESS), 0, "", 0},
    {"cu_seqlens_q[0] = 1", B_BWD_VARLEN, bv_cuq0, S(INVALID_VALUE), 0, "cu_seqlens_q", 0},
    {"cu_seqlens_k[batch] != total_k", B_BWD_VARLEN, bv_cuk_end, S(SHAPE_MISMATCH), 0, "total_k|cu_seqlens_k", 0},
    {"seqused_k > sequence length", B_BWD_VARLEN, bv_usedk_big, S(INVALID_VALUE), 0, "seqused_k", 0},
    /* combine */
    {"handle NULL", B_COMBINE, m_handle_null, S(NULL_POINTER), 0, "handle", 0},
    {"params NULL", B_COMBINE, m_params_null, S(NULL_POINTER), 0, "params", 0},
    {"o_partial NULL", B_COMBINE, c_o_partial_null, S(NULL_POINTER), 0, "o_partial", 0},
    {"lse_partial NULL", B_COMBINE, c_lse_partial_null, S(NULL_POINTER), 0, "lse_partial", 0},
    {"o NULL", B_COMBINE, c_o_null, S(NULL_POINTER), 0, "o", 0},
    {"struct_size 0", B_COMBINE, c_size0, S(BAD_STRUCT_SIZE), 0, "struct_size", 0},
    {"num_splits 0", B_COMBINE, c_splits0, S(INVALID_VALUE), 0, "num_splits", 0},
    {"seqlen 0", B_COMBINE, c_seqlen0, S(INVALID_VALUE), 0, "seqlen", 0},
    {"heads 0", B_COMBINE, c_heads0, S(INVALID_VALUE), 0, "heads", 0},
    {"batch 0", B_COMBINE, c_batch0, S(INVALID_VALUE), 0, "batch", 0},
    {"head_dim_v -1", B_COMBINE, c_dv_neg, S(INVALID_VALUE), 0, "head_dim_v", 0},
    {"out_dtype e4m3", B_COMBINE, c_e4m3, S(NOT_SUPPORTED_DTYPE), 0, "out_dtype", 0},
    {"out_dtype 99", B_COMBINE, c_out99, S(INVALID_VALUE), 0, "out_dtype", 0},
    {"o_row_stride negative", B_COMBINE, c_o_row_neg, S(BAD_LAYOUT), 0, "o_row_stride", 0},
    {"lse_partial_head_stride negative", B_COMBINE, c_lse_head_neg, S(BAD_LAYOUT), 0, "lse_partial_head_stride", 0},
    {"valid: fp32 out without lse", B_COMBINE, c_fp32_ok, S(SUCCESS), 0, "", 0},
    /* gemm */
    {"handle NULL", B_GEMM, m_handle_null, S(NULL_POINTER), 0, "handle", 0},
    {"params NULL", B_GEMM, m_params_null, S(NULL_POINTER), 0, "params", 0},
    {"a NULL", B_GEMM, g_a_null, S(NULL_POINTER), 0, "a", 0},
    {"b NULL", B_GEMM, g_b_null, S(NULL_POINTER), 0, "b", 0},
    {"d NULL", B_GEMM, g_d_null, S(NULL_POINTER), 0, "d", 0},
    {"c NULL with beta 0.5", B_GEMM, g_c_null_beta, S(NULL_POINTER), 0, "c", 0},
    {"valid: c NULL with beta 0", B_GEMM, g_c_null_beta0_ok, S(SUCCESS), 0, "", 0},
    {"struct_size 0", B_GEMM, g_size0, S(BAD_STRUCT_SIZE), 0, "struct_size", 0},
    {"struct_size + 8", B_GEMM, g_size_big, S(BAD_STRUCT_SIZE), 0, "struct_size", 0},
    {"m 0", B_GEMM, g_m0, S(INVALID_VALUE), 0, "m", 0},
    {"n 0", B_GEMM, g_n0, S(INVALID_VALUE), 0, "n", 0},
    {"k 0", B_GEMM, g_k0, S(INVALID_VALUE), 0, "k", 0},
    {"m -1", B_GEMM, g_m_neg, S(INVALID_VALUE), 0, "m", 0},
    {"batch_count 0", B_GEMM, g_batch0, S(INVALID_VALUE), 0, "batch_count", 0},
    {"a_dtype 99", B_GEMM, g_a_dtype99, S(INVALID_VALUE), 0, "a_dtype", 0},
    {"d_dtype 99", B_GEMM, g_d_dtype99, S(INVALID_VALUE), 0, "d_dtype", 0},
    {"a_layout 99", B_GEMM, g_a_layout99, S(INVALID_VALUE), 0, "a_layout", 0},
    {"b_layout 2", B_GEMM, g_b_layout2, S(INVALID_VALUE), 0, "b_layout", 0},
    {"cd_layout -1", B_GEMM, g_cd_layout_neg, S(INVALID_VALUE), 0, "cd_layout", 0},
    {"activation 99", B_GEMM, g_act99, S(INVALID_VALUE), 0, "activation", 0},
    {"a_dtype != b_dtype", B_GEMM, g_ab_dtype, S(NOT_SUPPORTED_DTYPE), 0, "a_dtype+b_dtype", 0},
    {"d_dtype e4m3", B_GEMM, g_d_e4m3, S(NOT_SUPPORTED_DTYPE), 0, "d_dtype", 0},
    {"alpha NaN", B_GEMM, g_alpha_nan, S(INVALID_VALUE), 0, "alpha", 0},
    {"beta NaN", B_GEMM, g_beta_nan, S(INVALID_VALUE), 0, "beta", 0},
    {"lda < k (row-major A)", B_GEMM, g_lda_row, S(BAD_LAYOUT), 0, "lda", 0},
    {"lda < m (column-major A)", B_GEMM, g_lda_col, S(BAD_LAYOUT), 0, "lda", 0},
    {"ldb < n (row-major B)", B_GEMM, g_ldb_row, S(BAD_LAYOUT), 0, "ldb", 0},
    {"ldb < k (column-major B)", B_GEMM, g_ldb_col, S(BAD_LAYOUT), 0, "ldb", 0},
    {"ldc < n (row-major C)", B_GEMM, g_ldc_row, S(BAD_LAYOUT), 0, "ldc", 0},
    {"ldd < n (row-major D)", B_GEMM, g_ldd_row, S(BAD_LAYOUT), 0, "ldd", 0},
    {"ldd < m (column-major D)", B_GEMM, g_ldd_col, S(BAD_LAYOUT), 0, "ldd", 0},
    {"lda negative", B_GEMM, g_lda_neg, S(BAD_LAYOUT), 0, "lda", 0},
    {"stride_a negative", B_GEMM, g_stride_a_neg, S(BAD_LAYOUT), 0, "stride_a", 0},
    {"stride_d negative", B_GEMM, g_stride_d_neg, S(BAD_LAYOUT), 0, "stride_d", 0},
    {"valid: padded leading dimensions", B_GEMM, g_padded_ld_ok, S(SUCCESS), 0, "", 0},
    {"valid: broadcast A and C", B_GEMM, g_broadcast_ok, S(SUCCESS), 0, "", 0},
    {"algo 3", B_GEMM, g_algo3, S(INVALID_VALUE), 0, "algo", 0},
    {"algo -1", B_GEMM, g_algo_neg, S(INVALID_VALUE), 0, "algo", 0},
    {"valid: algo 1 (ignored on the CPU)", B_GEMM, g_algo1_ok, S(SUCCESS), 0, "", 0},
    {"valid: fp32 inputs on the CPU", B_GEMM, g_fp32_ok, S(SUCCESS), 0, "", 0},
    {"e4m3 without scale_a", B_GEMM_FP8, g_scale_a_null, S(NULL_POINTER), 0, "scale_a", 0},
    {"e4m3 without scale_b", B_GEMM_FP8, g_scale_b_null, S(NULL_POINTER), 0, "scale_b", 0},
};

/* ---------------------------------------------------------------------------------------- */

static void run_bases(void) {
  for (int base = 0; base < B_COUNT; ++base) {
    ctx c;
    make_base(&c, base);
    poison_outputs();
    flashc_status query = FLASHC_STATUS_SUCCESS;
    flashc_status status = call(&c, base, &query, 1);
    int touched = first_touched_output();
    int pass = status == FLASHC_STATUS_SUCCESS && query == FLASHC_STATUS_SUCCESS && touched >= 0;
    test_case_result(pass, "base %-10s valid struct: %s (query %s), outputs written: %s", base_names[base],
                     flashc_status_name(status), flashc_status_name(query), touched >= 0 ? "yes" : "no");
    if (!pass) printf("  last error: \"%s\"\n", flashc_last_error());
  }
}

static void run_row(const row* r) {
  ctx c;
  make_base(&c, r->base);
  r->mutate(&c);
  poison_outputs();
  reset_message();
  char sentinel[512];
  snprintf(sentinel, sizeof sentinel, "%s", flashc_last_error());
  int op = base_op(r->base);
  int with_query = !r->no_query && op != 2;
  flashc_status query = FLASHC_STATUS_SUCCESS;
  /* the query first, then the call: the message checked is the call's */
  flashc_status status = call(&c, r->base, &query, with_query);
  char message[512];
  snprintf(message, sizeof message, "%s", flashc_last_error());
  int status_ok = status == r->expected || (r->also_ok != FLASHC_STATUS_SUCCESS && status == r->also_ok);
  int query_ok = !with_query || query == status || (r->expected == FLASHC_STATUS_SUCCESS && query == FLASHC_STATUS_SUCCESS);
  int message_ok = 1, untouched_ok = 1;
  int touched = -1;
  if (r->expected != FLASHC_STATUS_SUCCESS) {
    message_ok = message[0] != '\0' && strcmp(message, sentinel) != 0 && message_matches(message, r->words);
    touched = first_touched_output();
    untouched_ok = touched < 0;
  }
  int pass = status_ok && query_ok && message_ok && untouched_ok;
  test_case_result(pass, "%-10s %-44s -> %s%s%s \"%s\"", base_names[r->base], r->name, flashc_status_name(status),
                   with_query ? " / query " : "", with_query ? flashc_status_name(query) : "",
                   status == FLASHC_STATUS_SUCCESS ? "" : message);
  if (!status_ok)
    printf("  expected %s%s%s\n", flashc_status_name(r->expected), r->also_ok ? " or " : "",
           r->also_ok ? flashc_status_name(r->also_ok) : "");
  if (!query_ok) printf("  the workspace query returned %s, the call %s\n", flashc_status_name(query), flashc_status_name(status));
  if (!message_ok) printf("  the message must be fresh and name \"%s\"\n", r->words);
  if (!untouched_ok) printf("  output %s was written although the call failed\n", out_names[touched]);
}

/* Rows outside the parameter structs: create, device info, query pointers. */
static void run_misc(void) {
  flashc_handle_t h = (flashc_handle_t)0x1;
  reset_message();
  flashc_status s = flashc_create(&h, -2);
  test_case_result((s == FLASHC_STATUS_NO_DEVICE || s == FLASHC_STATUS_INVALID_VALUE) && message_matches(flashc_last_error(), "device"),
                   "flashc_create(device -2) -> %s \"%s\"", flashc_status_name(s), flashc_last_error());
  reset_message();
  s = flashc_create(&h, 1000);
  test_case_result(s == FLASHC_STATUS_NO_DEVICE && message_matches(flashc_last_error(), "device"),
                   "flashc_create(device 1000) -> %s \"%s\"", flashc_status_name(s), flashc_last_error());
  reset_message();
  s = flashc_create(NULL, FLASHC_DEVICE_CPU);
  test_case_result(s == FLASHC_STATUS_NULL_POINTER && message_matches(flashc_last_error(), "handle"),
                   "flashc_create(NULL, CPU) -> %s \"%s\"", flashc_status_name(s), flashc_last_error());
  flashc_device_info info;
  flashc_device_info_init(&info);
  reset_message();
  s = flashc_get_device_info(g_handle, NULL);
  test_case_result(s == FLASHC_STATUS_NULL_POINTER && message_matches(flashc_last_error(), "info"),
                   "flashc_get_device_info(handle, NULL) -> %s \"%s\"", flashc_status_name(s), flashc_last_error());
  reset_message();
  s = flashc_get_device_info(NULL, &info);
  test_case_result(s == FLASHC_STATUS_NULL_POINTER && message_matches(flashc_last_error(), "handle"),
                   "flashc_get_device_info(NULL, info) -> %s \"%s\"", flashc_status_name(s), flashc_last_error());
  info.struct_size = 3;
  reset_message();
  s = flashc_get_device_info(g_handle, &info);
  test_case_result(s == FLASHC_STATUS_BAD_STRUCT_SIZE && message_matches(flashc_last_error(), "struct_size"),
                   "flashc_get_device_info(struct_size 3) -> %s \"%s\"", flashc_status_name(s), flashc_last_error());
  /* workspace queries with a NULL result pointer */
  ctx c;
  make_base(&c, B_FWD);
  reset_message();
  s = flashc_attn_fwd_workspace_size(g_handle, &c.fwd, NULL);
  test_case_result(s == FLASHC_STATUS_NULL_POINTER && message_matches(flashc_last_error(), "workspace_bytes"),
                   "flashc_attn_fwd_workspace_size(..., NULL) -> %s \"%s\"", flashc_status_name(s), flashc_last_error());
  make_base(&c, B_BWD);
  reset_message();
  s = flashc_attn_bwd_workspace_size(g_handle, &c.bwd, NULL);
  test_case_result(s == FLASHC_STATUS_NULL_POINTER && message_matches(flashc_last_error(), "workspace_bytes"),
                   "flashc_attn_bwd_workspace_size(..., NULL) -> %s \"%s\"", flashc_status_name(s), flashc_last_error());
  make_base(&c, B_GEMM);
  reset_message();
  s = flashc_gemm_workspace_size(g_handle, &c.gemm, NULL);
  test_case_result(s == FLASHC_STATUS_NULL_POINTER && message_matches(flashc_last_error(), "workspace_bytes"),
                   "flashc_gemm_workspace_size(..., NULL) -> %s \"%s\"", flashc_status_name(s), flashc_last_error());
}

/* ---------------------------------------------------------------------------------------- */
/* CUDA-only rules, through the internal validation with FLASHC_BACKEND_CUDA                  */
/* ---------------------------------------------------------------------------------------- */

typedef struct cuda_row {
  const char* name;
  int is_gemm;
  void (*mutate)(flashc_attn_fwd_params*, flashc_gemm_params*);
  flashc_status expected;
  int success_ok; /* SUCCESS is accepted as well */
  const char* words;
} cuda_row;

static void* g_aligned; /* 64-byte aligned host memory */

#define CMUT(fn, body) \
  static void fn(flashc_attn_fwd_params* f, flashc_gemm_params* g) { (void)f, (void)g; body; }
CMUT(cu_none, (void)0)
CMUT(cu_q_plus2, f->q = (const char*)f->q + 2)
CMUT(cu_o_plus4, f->o = (char*)f->o + 4)
CMUT(cu_q_row_stride, f->q_row_stride = 8 * 128 + 4; f->q_head_stride = 128; f->q_batch_stride = 256 * (8 * 128 + 4))
CMUT(cu_k_batch_stride, f->k_batch_stride = 256 * 2 * 128 + 3)
CMUT(cu_fp32, f->dtype = FLASHC_DTYPE_FP32; f->out_dtype = FLASHC_DTYPE_FP32)
CMUT(cu_padded_ok, f->q_row_stride = 8 * 128 + 8; f->q_head_stride = 128; f->q_batch_stride = 256 * (8 * 128 + 8))
/* index arrays live in device memory for a device handle: never read by the host */
CMUT(cu_varlen_unread, f->cu_seqlens_q = (const int32_t*)(uintptr_t)0x10; f->cu_seqlens_k = (const int32_t*)(uintptr_t)0x20;
     f->total_q = 300; f->total_k = 300; f->seqused_k = (const int32_t*)(uintptr_t)0x30)
CMUT(cu_paged_unread, f->page_table = (const int32_t*)(uintptr_t)0x40; f->page_size = 64; f->max_pages = 4;
     f->num_pages = 16; f->cache_seqlens = (const int32_t*)(uintptr_t)0x50)
CMUT(gu_none, (void)0)
CMUT(gu_a_plus2, g->a = (const char*)g->a + 2)
CMUT(gu_a_plus1, g->a = (const char*)g->a + 1)
CMUT(gu_d_plus1, g->d = (char*)g->d + 1)
CMUT(gu_lda, g->lda = 64 + 1; g->stride_a = 128 * 65)
CMUT(gu_stride_b, g->stride_b = 64 * 128 + 2)
CMUT(gu_fp32, g->a_dtype = g->b_dtype = FLASHC_DTYPE_FP32)

static const cuda_row cuda_table[] = {
    {"valid bf16 d128 (aligned host buffers)", 0, cu_none, S(SUCCESS), 0, ""},
    {"q pointer + 2 bytes", 0, cu_q_plus2, S(MISALIGNED), 0, "q"},
    {"o pointer + 4 bytes", 0, cu_o_plus4, S(MISALIGNED), 0, "o"},
    {"q_row_stride not a multiple of 8 elements", 0, cu_q_row_stride, S(MISALIGNED), 0, "q_row_stride"},
    {"k_batch_stride not a multiple of 8 elements", 0, cu_k_batch_stride, S(MISALIGNED), 0, "k_batch_stride"},
    {"dtype fp32", 0, cu_fp32, S(NOT_SUPPORTED_DTYPE), 0, "dtype|fp32"},
    {"valid: padded row stride (multiple of 8)", 0, cu_padded_ok, S(SUCCESS), 0, ""},
    {"valid: varlen index arrays are not read", 0, cu_varlen_unread, S(SUCCESS), 0, ""},
    {"valid: paged index arrays are not read", 0, cu_paged_unread, S(SUCCESS), 0, ""},
    {"gemm valid bf16 128x128x64", 1, gu_none, S(SUCCESS), 0, ""},
    {"gemm a pointer + 1 byte (not element aligned)", 1, gu_a_plus1, S(MISALIGNED), 0, "a"},
    {"gemm d pointer + 1 byte (not element aligned)", 1, gu_d_plus1, S(MISALIGNED), 0, "d"},
    /* 16-byte alignment of GEMM operands is the kernels' business (a portable path may take
     * any element-aligned operand): either answer is accepted, but nothing else */
    {"gemm a pointer + 2 bytes", 1, gu_a_plus2, S(MISALIGNED), 1, "a"},
    {"gemm lda not a multiple of 8 elements", 1, gu_lda, S(MISALIGNED), 1, "lda"},
    {"gemm stride_b not a multiple of 8 elements", 1, gu_stride_b, S(MISALIGNED), 1, "stride_b"},
    {"gemm fp32 inputs", 1, gu_fp32, S(NOT_SUPPORTED_DTYPE), 0, "a_dtype|fp32"},
};

static void run_cuda_rules(void) {
  g_aligned = test_alloc(32u << 20);
  for (size_t i = 0; i < sizeof cuda_table / sizeof cuda_table[0]; ++i) {
    const cuda_row* r = &cuda_table[i];
    flashc_attn_fwd_params f;
    flashc_attn_fwd_params_init(&f);
    f.dtype = f.out_dtype = FLASHC_DTYPE_BF16;
    f.batch = 2, f.seqlen_q = 256, f.seqlen_k = 256, f.heads_q = 8, f.heads_kv = 2, f.head_dim = 128;
    char* base = g_aligned;
    f.q = base, f.k = base + (4u << 20), f.v = base + (8u << 20), f.o = base + (12u << 20);
    f.lse = (float*)(base + (16u << 20));
    flashc_gemm_params g;
    flashc_gemm_params_init(&g);
    g.m = 128, g.n = 128, g.k = 64, g.batch_count = 2;
    g.a_dtype = g.b_dtype = g.d_dtype = FLASHC_DTYPE_BF16;
    g.a = base, g.b = base + (4u << 20), g.d = base + (8u << 20);
    g.stride_a = 128 * 64, g.stride_b = 64 * 128, g.stride_d = 128 * 128;
    g.alpha = 1.0f;
    r->mutate(&f, &g);
    reset_message();
    flashc_status s;
    if (r->is_gemm) {
      fc_gemm_problem problem;
      s = fc_gemm_problem_make(&g, FLASHC_BACKEND_CUDA, &problem);
    } else {
      fc_attn_problem problem;
      s = fc_attn_fwd_problem_make(&f, FLASHC_BACKEND_CUDA, &problem);
    }
    const char* message = flashc_last_error();
    int pass = (s == r->expected && (r->expected == FLASHC_STATUS_SUCCESS || (message[0] && message_matches(message, r->words)))) ||
               (r->success_ok && s == FLASHC_STATUS_SUCCESS);
    test_case_result(pass, "cuda-rules %-44s -> %s \"%s\"", r->name, flashc_status_name(s),
                     s == FLASHC_STATUS_SUCCESS ? "" : message);
    if (!pass) printf("  expected %s naming \"%s\"\n", flashc_status_name(r->expected), r->words);
  }
  test_free(g_aligned);
}

/* The stride given to a tensor-map dimension of extent 1: a positive multiple of 16 bytes, the
 * tensor's own stride when that already is one. */
static void run_unit_extent_strides(void) {
  static const struct { int64_t stride, element_bytes, expected; } rows[] = {
      {1, 2, 8}, {0, 2, 8}, {64, 2, 64}, {7, 4, 8}, {8, 4, 8}, {9, 2, 16}, {1, 1, 16}, {3, 8, 4}};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; ++i) {
    const int64_t got = fc_tensor_map_unit_extent_stride(rows[i].stride, rows[i].element_bytes);
    test_case_result(got == rows[i].expected, "tensor-map unit-extent stride of %lld x %lld bytes: %lld (expected %lld)",
                     (long long)rows[i].stride, (long long)rows[i].element_bytes, (long long)got,
                     (long long)rows[i].expected);
  }
}

int main(void) {
  test_seed();
  flashc_status status = flashc_create(&g_handle, FLASHC_DEVICE_CPU);
  if (status != FLASHC_STATUS_SUCCESS) {
    test_print_status("flashc_create(CPU)", status);
    return TEST_EXIT_FAIL;
  }
  setup_buffers();
  run_bases();
  for (size_t i = 0; i < sizeof table / sizeof table[0]; ++i) run_row(&table[i]);
  run_misc();
  run_cuda_rules();
  run_unit_extent_strides();
  flashc_destroy(g_handle);
  return test_summary();
}
