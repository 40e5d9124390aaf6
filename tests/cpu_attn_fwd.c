/*
 * cpu_attn_fwd.c — the CPU backend's attention forward (flashc_attn_fwd on a CPU handle)
 * against the independent fp64 oracle (oracle.c) under the DESIGN §6 tolerance rule, on
 * many random shapes: fp16/bf16/fp32/e4m3 (random descales), the seqlen pairs of FA3's tests
 * including seqlen_q > seqlen_k and (1023, 1024), causal and local windows (bottom-right
 * aligned), windows that fully mask rows (O = 0, LSE = -inf exactly), softcap, GQA/MQA,
 * head dims 32..256 and d_v != d, varlen with empty sequences, seqused_q/seqused_k, strided
 * layouts (padded, heads-major, packed QKV), lse on and off, num_splits. Outputs are
 * poisoned: every element that must be written is checked, everything else must be
 * untouched. Inputs that must not be read (padding, rows beyond seqused) are poison (NaN).
 *
 *   FLASHC_TEST_SEED=<n> ./cpu_attn_fwd        reproduce a run
 */
#include "attn_common.h"

enum { MASK_NONE = 0, MASK_CAUSAL = 1, MASK_LOCAL = 2, MASK_FULL_ROWS = 3 };
static const char* const mask_names[] = {"none", "causal", "local", "full-rows"};

typedef struct attn_case {
  flashc_dtype dtype, out_dtype;
  int batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim, head_dim_v;
  int mask, window_left, window_right;
  float softcap, softmax_scale;
  int varlen_q, varlen_k, empty, seqused_q, seqused_k;
  int layout;
  int with_lse;
  int num_splits;
  int default_heads_kv, default_head_dim_v; /* pass 0 for heads_kv / head_dim_v */
  int descale_layout;                       /* 0 default strides, 1 padded batch stride, 2 transposed */
} attn_case;

static const flashc_dtype all_dtypes[4] = {FLASHC_DTYPE_FP16, FLASHC_DTYPE_BF16, FLASHC_DTYPE_FP32, FLASHC_DTYPE_E4M3};

/* A random case of modest size; callers override fields, then normalize(). */
static attn_case random_case(test_rng* rng) {
  attn_case c;
  memset(&c, 0, sizeof c);
  c.dtype = all_dtypes[test_rng_int(rng, 0, 3)];
  c.batch = test_rng_int(rng, 1, 3);
  static const int lengths[] = {1, 2, 3, 7, 16, 31, 64, 65, 113, 128, 150, 203, 257, 300, 511};
  c.seqlen_q = test_rng_pick(rng, lengths, 15);
  c.seqlen_k = test_rng_pick(rng, lengths, 15);
  static const int ratios[] = {1, 1, 2, 4, 3};
  int ratio = test_rng_pick(rng, ratios, 5);
  c.heads_kv = test_rng_int(rng, 1, 2);
  c.heads_q = c.heads_kv * ratio;
  static const int dims[] = {32, 64, 96, 128, 8, 40, 72};
  c.head_dim = test_rng_pick(rng, dims, 7);
  c.head_dim_v = test_rng_uniform(rng) < 0.8 ? c.head_dim : test_rng_pick(rng, dims, 7);
  c.mask = test_rng_int(rng, 0, 3);
  c.softcap = test_rng_uniform(rng) < 0.25 ? (float)(2.0 + 30.0 * test_rng_uniform(rng)) : 0.0f;
  c.softmax_scale = test_rng_uniform(rng) < 0.3 ? (float)(0.05 + 0.3 * test_rng_uniform(rng)) : 0.0f;
  double u = test_rng_uniform(rng);
  c.varlen_q = c.varlen_k = u < 0.3;
  c.empty = c.varlen_q && test_rng_uniform(rng) < 0.5;
  c.seqused_q = test_rng_uniform(rng) < 0.15;
  c.seqused_k = test_rng_uniform(rng) < 0.15;
  c.layout = test_rng_int(rng, 0, LAYOUT_COUNT - 1);
  c.with_lse = test_rng_uniform(rng) < 0.8;
  static const int splits[] = {1, 1, 1, 1, 0, 2, 3};
  c.num_splits = test_rng_pick(rng, splits, 7);
  c.default_heads_kv = test_rng_uniform(rng) < 0.5;
  c.default_head_dim_v = test_rng_uniform(rng) < 0.5;
  c.descale_layout = test_rng_int(rng, 0, 2);
  c.window_left = c.window_right = -1;
  return c;
}

/* Resolves the mask windows and makes the fields consistent; keeps the cost bounded. */
static void normalize(attn_case* c, test_rng* rng, double flop_budget) {
  if (c->dtype == FLASHC_DTYPE_E4M3 && c->out_dtype != FLASHC_DTYPE_FP16) c->out_dtype = FLASHC_DTYPE_BF16;
  if (c->dtype != FLASHC_DTYPE_E4M3) c->out_dtype = c->dtype;
  switch (c->mask) {
    case MASK_NONE: c->window_left = c->window_right = -1; break;
    case MASK_CAUSAL: c->window_left = c->window_right = -1; break;
    case MASK_LOCAL:
      if (c->window_left < -1 || c->window_right < -1 || (c->window_left == -1 && c->window_right == -1)) {
        c->window_left = test_rng_uniform(rng) < 0.2 ? -1 : test_rng_int(rng, 0, c->seqlen_k);
        c->window_right = test_rng_uniform(rng) < 0.2 && c->window_left >= 0 ? -1 : test_rng_int(rng, 0, c->seqlen_k / 2 + 1);
      }
      break;
    case MASK_FULL_ROWS:
      /* rows i with i + seqlen_k - seqlen_q + window_right < 0 see no key */
      if (c->seqlen_q <= c->seqlen_k + 1) c->seqlen_q = c->seqlen_k + 2 + test_rng_int(rng, 0, 20);
      c->window_right = test_rng_int(rng, 0, (c->seqlen_q - c->seqlen_k) / 2);
      c->window_left = test_rng_uniform(rng) < 0.5 ? -1 : test_rng_int(rng, 0, 8);
      break;
  }
  if (c->layout == LAYOUT_QKV &&
      (c->seqlen_q != c->seqlen_k || c->head_dim != c->head_dim_v || c->varlen_q || c->varlen_k))
    c->layout = LAYOUT_PADDED;
  if (c->default_heads_kv && c->heads_kv != c->heads_q) c->default_heads_kv = 0;
  if (c->default_head_dim_v && c->head_dim_v != c->head_dim) c->default_head_dim_v = 0;
  /* cost: the oracle runs twice over the full score matrix */
  for (;;) {
    double flops = 4.0 * c->batch * c->heads_q * (double)c->seqlen_q * c->seqlen_k * (c->head_dim + c->head_dim_v);
    if (flops <= flop_budget) break;
    if (c->batch > 1 && !(c->varlen_q || c->varlen_k) && (c->heads_q == c->heads_kv || c->batch > 2)) --c->batch;
    else if (c->heads_q > c->heads_kv) c->heads_q -= c->heads_kv;
    else if (c->heads_kv > 1) c->heads_q = --c->heads_kv;
    else if (c->batch > 1) --c->batch;
    else break;
  }
}

static void describe(const attn_case* c, const seq_lengths* s, char* out, size_t cap) {
  char window[48] = "";
  if (c->mask == MASK_LOCAL || c->mask == MASK_FULL_ROWS) snprintf(window, sizeof window, "(%d,%d)", c->window_left, c->window_right);
  char lens[160] = "";
  if (c->varlen_q || c->varlen_k || c->seqused_q || c->seqused_k) {
    char a[64], b[64], uq[64], uk[64];
    format_ints(a, sizeof a, s->len_q, s->batch);
    format_ints(b, sizeof b, s->len_k, s->batch);
    format_ints(uq, sizeof uq, s->used_q, s->batch);
    format_ints(uk, sizeof uk, s->used_k, s->batch);
    snprintf(lens, sizeof lens, " %s%s[q %s k %s]%s%s%s%s", c->varlen_q ? "varlen-q " : "", c->varlen_k ? "varlen-k " : "", a, b,
             c->seqused_q ? " used_q " : "", c->seqused_q ? uq : "", c->seqused_k ? " used_k " : "", c->seqused_k ? uk : "");
  }
  snprintf(out, cap, "%s->%s b%d sq%d sk%d h%d/%d d%d/%d mask %s%s%s%s%s %s%s splits %d", test_dtype_name(c->dtype),
           test_dtype_name(c->out_dtype), c->batch, c->seqlen_q, c->seqlen_k, c->heads_q, c->heads_kv, c->head_dim,
           c->head_dim_v, mask_names[c->mask], window, c->softcap > 0 ? " softcap" : "",
           c->softmax_scale > 0 ? " scale" : "", lens, layout_names[c->layout], c->with_lse ? " lse" : "", c->num_splits);
}

static int run_case(flashc_handle_t handle, attn_case c, test_rng* rng) {
  normalize(&c, rng, c.seqlen_q >= 1000 ? 2.0e9 : 6.0e8);
  seq_lengths s = seq_lengths_make(rng, c.batch, c.seqlen_q, c.seqlen_k, c.varlen_q, c.varlen_k, c.empty, c.seqused_q,
                                   c.seqused_k);
  char description[512];
  describe(&c, &s, description, sizeof description);

  int hq = c.heads_q, hkv = c.heads_kv, d = c.head_dim, dv = c.head_dim_v;
  int q_batches = c.varlen_q ? 1 : c.batch, k_batches = c.varlen_k ? 1 : c.batch;
  int q_rows = c.varlen_q ? (s.total_q > 0 ? s.total_q : 1) : c.seqlen_q;
  int k_rows = c.varlen_k ? (s.total_k > 0 ? s.total_k : 1) : c.seqlen_k;
  tensor4 q, k, v, o;
  void* qkv_buffer = NULL;
  if (c.layout == LAYOUT_QKV) {
    /* one (batch, seqlen, heads_q + 2 heads_kv, d) buffer; q, k, v are views into it */
    int heads_all = hq + 2 * hkv;
    int64_t row_stride = (int64_t)heads_all * d, batch_stride = (int64_t)q_rows * row_stride;
    int64_t count = (int64_t)q_batches * batch_stride + 31;
    qkv_buffer = test_alloc((size_t)count * test_dtype_size(c.dtype));
    tensor4* views[3] = {&q, &k, &v};
    int heads_of[3] = {hq, hkv, hkv};
    int64_t head_offset[3] = {0, hq, hq + hkv};
    for (int t = 0; t < 3; ++t) {
      tensor4* view = views[t];
      memset(view, 0, sizeof *view);
      view->dtype = c.dtype;
      view->batches = q_batches, view->rows = q_rows, view->heads = heads_of[t], view->columns = d;
      view->batch_stride = batch_stride, view->row_stride = row_stride, view->head_stride = d;
      view->explicit_strides = 1;
      view->data = (char*)qkv_buffer + (size_t)(head_offset[t] * d) * test_dtype_size(c.dtype);
      view->count = count - head_offset[t] * d;
    }
    o = tensor4_make(LAYOUT_PACKED, rng, c.out_dtype, q_batches, q_rows, hq, dv);
  } else {
    q = tensor4_make(c.layout, rng, c.dtype, q_batches, q_rows, hq, d);
    k = tensor4_make(c.layout, rng, c.dtype, k_batches, k_rows, hkv, d);
    v = tensor4_make(c.layout, rng, c.dtype, k_batches, k_rows, hkv, dv);
    o = tensor4_make(c.layout, rng, c.out_dtype, q_batches, q_rows, hq, dv);
  }
  /* used rows random, the rest stays poison */
  for (int b = 0; b < c.batch; ++b) {
    int qb = c.varlen_q ? 0 : b, kb = c.varlen_k ? 0 : b;
    int64_t q0 = c.varlen_q ? s.cu_q[b] : 0, k0 = c.varlen_k ? s.cu_k[b] : 0;
    tensor4_fill_rows(&q, rng, qb, q0, s.used_q[b], 1.0);
    tensor4_fill_rows(&k, rng, kb, k0, s.used_k[b], 1.0);
    tensor4_fill_rows(&v, rng, kb, k0, s.used_k[b], 1.0);
  }
  /* lse: (batch, heads_q, seqlen_q) or (heads_q, total_q), rows contiguous */
  int64_t lse_head_stride = 0, lse_batch_stride = 0, lse_count = 0;
  float* lse = NULL;
  if (c.with_lse) {
    int64_t hs = q_rows + (c.layout == LAYOUT_PADDED ? test_rng_int(rng, 1, 5) : 0);
    int64_t bs = (int64_t)hq * hs + (c.layout == LAYOUT_PADDED ? test_rng_int(rng, 0, 5) : 0);
    lse_count = (int64_t)(q_batches - 1) * bs + (int64_t)(hq - 1) * hs + q_rows + 13;
    lse = test_alloc((size_t)lse_count * sizeof(float));
    if (c.layout == LAYOUT_PADDED) lse_head_stride = hs, lse_batch_stride = c.varlen_q ? 0 : bs;
  }
  /* fp8 descales */
  float* descales[3] = {NULL, NULL, NULL};
  int64_t descale_bs = 0, descale_hs = 0;
  if (c.dtype == FLASHC_DTYPE_E4M3) {
    int64_t bs = hkv, hs = 1;
    if (c.descale_layout == 1) bs = hkv + 3;
    if (c.descale_layout == 2) bs = 1, hs = c.batch;
    int64_t count = (int64_t)(c.batch - 1) * bs + (int64_t)(hkv - 1) * hs + 1;
    for (int t = 0; t < 3; ++t) {
      descales[t] = test_alloc((size_t)count * sizeof(float));
      for (int64_t i = 0; i < count; ++i) descales[t][i] = (float)(0.25 + 1.75 * test_rng_uniform(rng));
    }
    if (c.descale_layout) descale_bs = bs, descale_hs = hs;
  }

  flashc_attn_fwd_params p;
  flashc_attn_fwd_params_init(&p);
  p.dtype = c.dtype;
  p.out_dtype = c.out_dtype;
  p.batch = c.batch;
  p.seqlen_q = c.seqlen_q;
  p.seqlen_k = c.seqlen_k;
  p.heads_q = hq;
  p.heads_kv = c.default_heads_kv ? 0 : hkv;
  p.head_dim = d;
  p.head_dim_v = c.default_head_dim_v ? 0 : dv;
  p.q = q.data, p.k = k.data, p.v = v.data, p.o = o.data, p.lse = lse;
  if (q.explicit_strides) p.q_batch_stride = q.batch_stride, p.q_row_stride = q.row_stride, p.q_head_stride = q.head_stride;
  if (k.explicit_strides) p.k_batch_stride = k.batch_stride, p.k_row_stride = k.row_stride, p.k_head_stride = k.head_stride;
  if (v.explicit_strides) p.v_batch_stride = v.batch_stride, p.v_row_stride = v.row_stride, p.v_head_stride = v.head_stride;
  if (o.explicit_strides) p.o_batch_stride = o.batch_stride, p.o_row_stride = o.row_stride, p.o_head_stride = o.head_stride;
  p.lse_batch_stride = lse_batch_stride;
  p.lse_head_stride = lse_head_stride;
  p.softmax_scale = c.softmax_scale;
  p.causal = c.mask == MASK_CAUSAL;
  p.window_left = c.window_left;
  p.window_right = c.window_right;
  p.softcap = c.softcap;
  if (c.varlen_q) p.cu_seqlens_q = s.cu_q, p.total_q = s.total_q;
  if (c.varlen_k) p.cu_seqlens_k = s.cu_k, p.total_k = s.total_k;
  p.seqused_q = s.seqused_q;
  p.seqused_k = s.seqused_k;
  p.num_splits = c.num_splits;
  p.q_descale = descales[0], p.k_descale = descales[1], p.v_descale = descales[2];
  p.descale_batch_stride = descale_bs, p.descale_head_stride = descale_hs;

  /* oracle first (it reads only inputs) */
  double* o_ref = malloc(sizeof(double) * (size_t)o.count);
  double* o_same = malloc(sizeof(double) * (size_t)o.count);
  unsigned char* o_mask = malloc((size_t)o.count);
  double* lse_ref = lse ? malloc(sizeof(double) * (size_t)lse_count) : NULL;
  double* lse_same = lse ? malloc(sizeof(double) * (size_t)lse_count) : NULL;
  unsigned char* lse_mask = lse ? malloc((size_t)lse_count) : NULL;
  unsigned char* scratch_mask = malloc((size_t)(o.count > lse_count ? o.count : lse_count) + 1);
  unsigned char* scratch_mask2 = malloc((size_t)lse_count + 1);
  if (!o_ref || !o_same || !o_mask || !scratch_mask || !scratch_mask2 || (lse && (!lse_ref || !lse_same || !lse_mask)))
    test_fatal("out of memory");
  int oracle_ok = oracle_attn_fwd(&p, ORACLE_FP64, o_ref, o_mask, o.count, lse_ref, lse_mask, lse_count) == 0 &&
                  oracle_attn_fwd(&p, ORACLE_SAME, o_same, scratch_mask, o.count, lse_same, scratch_mask2, lse_count) == 0;

  int pass = oracle_ok;
  char results[256] = "";
  if (attn_run_fwd(handle, &p) != FLASHC_STATUS_SUCCESS) {
    pass = 0;
  } else if (oracle_ok) {
    test_check_result ro, rl;
    int ok_o = test_check_output("o", o.data, c.out_dtype, o.count, o_ref, o_same, o_mask, -1.0, &ro);
    format_check(results, sizeof results, "o", &ro);
    int ok_l = 1;
    if (lse) {
      double max_lse = 1.0;
      for (int64_t i = 0; i < lse_count; ++i)
        if (lse_mask[i] == ORACLE_COMPARE && fabs(lse_ref[i]) > max_lse) max_lse = fabs(lse_ref[i]);
      /* lse is fp32: a few units in the last place at its magnitude on top of 2x same */
      ok_l = test_check_output("lse", lse, FLASHC_DTYPE_FP32, lse_count, lse_ref, lse_same, lse_mask,
                               16.0 * ldexp(1.0, -24) * max_lse, &rl);
      size_t used = strlen(results);
      format_check(results + used, sizeof results - used, " | lse", &rl);
    }
    pass = ok_o && ok_l;
  }
  test_case_result(pass, "fwd %s | %s", description, results);
  if (!pass) printf("  reproduce: FLASHC_TEST_SEED=%llu\n", (unsigned long long)test_seed());

  free(o_ref), free(o_same), free(o_mask), free(lse_ref), free(lse_same), free(lse_mask), free(scratch_mask),
      free(scratch_mask2);
  if (qkv_buffer) test_free(qkv_buffer);
  else tensor4_free(&q), tensor4_free(&k), tensor4_free(&v);
  tensor4_free(&o);
  if (lse) test_free(lse);
  for (int t = 0; t < 3; ++t)
    if (descales[t]) test_free(descales[t]);
  seq_lengths_free(&s);
  return pass;
}

int main(void) {
  uint64_t seed = test_seed();
  flashc_handle_t handle = NULL;
  flashc_status status = flashc_create(&handle, FLASHC_DEVICE_CPU);
  if (status != FLASHC_STATUS_SUCCESS) {
    test_print_status("flashc_create(CPU)", status);
    return TEST_EXIT_FAIL;
  }
  uint64_t case_index = 0;
#define NEW_CASE() \
  test_rng rng = test_rng_make(seed, ++case_index); \
  attn_case c = random_case(&rng)

  /* 1. FA3's seqlen pairs, each with every mask */
  static const int pairs[][2] = {{1, 1}, {1, 239}, {3, 3}, {113, 203}, {128, 217}, {108, 256}, {339, 113}, {1023, 1024}};
  for (int i = 0; i < 8; ++i) {
    for (int mask = 0; mask < 4; ++mask) {
      if (pairs[i][0] >= 1000 && mask >= 2) continue;
      NEW_CASE();
      c.seqlen_q = pairs[i][0], c.seqlen_k = pairs[i][1];
      c.mask = mask;
      c.varlen_q = c.varlen_k = 0, c.seqused_q = c.seqused_k = 0;
      if (pairs[i][0] >= 1000) {
        c.batch = 1, c.heads_kv = 1, c.heads_q = 2, c.head_dim = c.head_dim_v = 64;
        c.dtype = mask ? FLASHC_DTYPE_BF16 : FLASHC_DTYPE_FP16;
      }
      run_case(handle, c, &rng);
    }
  }
  /* 2. every head dim in every dtype, d_v != d */
  static const int dims[][2] = {{32, 32}, {64, 64}, {96, 96}, {128, 128}, {192, 192}, {256, 256}, {192, 128}, {64, 128}};
  for (int i = 0; i < 8; ++i)
    for (int t = 0; t < 4; ++t) {
      NEW_CASE();
      c.dtype = all_dtypes[t];
      c.head_dim = dims[i][0], c.head_dim_v = dims[i][1];
      c.seqlen_q = test_rng_int(&rng, 1, 97), c.seqlen_k = test_rng_int(&rng, 1, 140);
      run_case(handle, c, &rng);
    }
  /* extremes of the CPU backend's head dims (1..512) */
  static const int extreme_dims[][2] = {{1, 1}, {512, 512}, {512, 8}, {3, 5}, {2, 512}};
  for (int i = 0; i < 5; ++i) {
    NEW_CASE();
    c.head_dim = extreme_dims[i][0], c.head_dim_v = extreme_dims[i][1];
    c.seqlen_q = test_rng_int(&rng, 1, 40), c.seqlen_k = test_rng_int(&rng, 1, 70);
    run_case(handle, c, &rng);
  }
  /* 3. GQA / MQA ratios */
  static const int heads[][2] = {{4, 4}, {4, 2}, {8, 2}, {6, 1}, {3, 1}, {1, 1}};
  for (int i = 0; i < 6; ++i) {
    NEW_CASE();
    c.heads_q = heads[i][0], c.heads_kv = heads[i][1];
    c.seqlen_q = test_rng_int(&rng, 1, 80), c.seqlen_k = test_rng_int(&rng, 1, 120);
    c.batch = 2, c.head_dim = c.head_dim_v = 64;
    run_case(handle, c, &rng);
  }
  /* 4. varlen: empty sequences, seqused_q / seqused_k, one-sided varlen */
  for (int variant = 0; variant < 10; ++variant) {
    NEW_CASE();
    c.batch = test_rng_int(&rng, 3, 5);
    c.varlen_q = c.varlen_k = 1;
    c.empty = variant % 2 == 0;
    c.seqused_q = variant == 2 || variant == 5 || variant == 7;
    c.seqused_k = variant == 3 || variant == 5 || variant == 8;
    if (variant == 6) c.varlen_k = 0; /* q varlen only */
    if (variant == 9) c.varlen_q = 0; /* k varlen only */
    c.mask = variant % 4;
    c.seqlen_q = test_rng_int(&rng, 1, 90), c.seqlen_k = test_rng_int(&rng, 1, 130);
    run_case(handle, c, &rng);
  }
  { /* many sequences */
    NEW_CASE();
    c.batch = 17, c.varlen_q = c.varlen_k = 1, c.empty = 1, c.seqused_k = 1;
    c.heads_q = c.heads_kv = 1, c.seqlen_q = 40, c.seqlen_k = 60, c.head_dim = c.head_dim_v = 32;
    run_case(handle, c, &rng);
  }
  for (int variant = 0; variant < 2; ++variant) { /* seqused without varlen */
    NEW_CASE();
    c.varlen_q = c.varlen_k = 0;
    c.seqused_q = variant == 0, c.seqused_k = 1;
    c.batch = 3;
    run_case(handle, c, &rng);
  }
  /* 5. layouts in every dtype */
  for (int layout = 1; layout < LAYOUT_COUNT; ++layout)
    for (int t = 0; t < 4; ++t) {
      NEW_CASE();
      c.layout = layout;
      c.dtype = all_dtypes[t];
      if (layout == LAYOUT_QKV) c.seqlen_k = c.seqlen_q, c.head_dim_v = c.head_dim, c.varlen_q = c.varlen_k = 0;
      run_case(handle, c, &rng);
    }
  /* 6. softcap, fully masked rows, explicit scale, fp8 descale layouts and fp16 output */
  for (int t = 0; t < 4; ++t) {
    NEW_CASE();
    c.dtype = all_dtypes[t];
    c.softcap = 5.0f + 10.0f * (float)t;
    run_case(handle, c, &rng);
  }
  for (int t = 0; t < 4; ++t) {
    NEW_CASE();
    c.dtype = all_dtypes[t];
    c.mask = MASK_FULL_ROWS;
    c.with_lse = 1;
    c.seqlen_k = test_rng_int(&rng, 1, 60);
    c.seqlen_q = c.seqlen_k + test_rng_int(&rng, 3, 60);
    run_case(handle, c, &rng);
  }
  for (int variant = 0; variant < 3; ++variant) {
    NEW_CASE();
    c.dtype = FLASHC_DTYPE_E4M3;
    c.out_dtype = variant == 2 ? FLASHC_DTYPE_FP16 : FLASHC_DTYPE_BF16;
    c.descale_layout = variant;
    c.heads_kv = 2, c.heads_q = 4, c.batch = 2;
    run_case(handle, c, &rng);
  }
  /* 7. random mixtures */
  for (int i = 0; i < 300; ++i) {
    NEW_CASE();
    run_case(handle, c, &rng);
  }
#undef NEW_CASE
  flashc_destroy(handle);
  return test_summary();
}
