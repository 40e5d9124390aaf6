/*
 * cpu_attn_paged_split.c — paged KV, split-KV and the public combine on the CPU backend.
 *
 *  1. Paged KV (random page permutation, page sizes 1, 5, 16, 64, cache_seqlens incl. 0,
 *     seqused_k instead, padded page strides, page_table_batch_stride, varlen q, splits)
 *     equals the same problem on contiguous KV with seqused_k, bit for bit or within one
 *     rounding of the output, and both pass the oracle's tolerance rule. Unused pages and
 *     rows beyond each sequence's length are poison (NaN): reading them shows.
 *  2. num_splits 2, 3, 7 (and 0 = automatic) equals num_splits 1 within fp32 rounding, with
 *     masks that leave some splits without keys.
 *  3. flashc_attn_combine on partials computed here (fp32 forwards over key slices, each with
 *     its own o and lse; rows that see no key of a slice have lse = -inf), plus an extra split
 *     that is -inf everywhere with garbage o, reproduces the unsplit result; in the default
 *     (split, batch, heads, seqlen) lse layout and in FA3's (split, batch, seqlen, heads) via
 *     strides; fp32/bf16/fp16 outputs; rows whose splits are all -inf give o = 0, lse = -inf.
 */
#include "attn_common.h"

static flashc_handle_t g_handle;

/* Two library outputs of the same problem: equal except for the rounding of the output
 * (one unit in the last place of dtype at the larger magnitude, plus rel_tol·max|a| for
 * fp32 accumulation-order differences). Counts bit-identical elements. NaN never matches. */
static int compare_runs(const char* name, const void* a, const void* b, flashc_dtype dtype, int64_t count,
                        const unsigned char* mask, double rel_tol, char* summary, size_t cap) {
  double max_abs = 0.0, max_diff = 0.0;
  int64_t compared = 0, identical = 0, bad = 0, first_bad = -1;
  size_t es = test_dtype_size(dtype);
  for (int64_t i = 0; i < count; ++i)
    if (mask[i] == ORACLE_COMPARE || mask[i] == ORACLE_EXACT) {
      double x = test_load(a, i, dtype);
      if (isfinite(x) && fabs(x) > max_abs) max_abs = fabs(x);
    }
  for (int64_t i = 0; i < count; ++i) {
    if (mask[i] != ORACLE_COMPARE && mask[i] != ORACLE_EXACT) continue;
    ++compared;
    double x = test_load(a, i, dtype), y = test_load(b, i, dtype);
    if (memcmp((const char*)a + i * es, (const char*)b + i * es, es) == 0 && !isnan(x)) {
      ++identical;
      continue;
    }
    double diff = fabs(x - y);
    double larger = fabs(x) > fabs(y) ? fabs(x) : fabs(y);
    double allowed = 2.0 * test_unit_roundoff(dtype) * larger + rel_tol * max_abs;
    if (isnan(x) || isnan(y) || !(diff <= allowed) || (isinf(x) || isinf(y))) {
      if (first_bad < 0) first_bad = i;
      ++bad;
    }
    if (diff > max_diff || isnan(diff)) max_diff = diff;
  }
  snprintf(summary, cap, "%s %lld/%lld bit-identical, max diff %.2e", name, (long long)identical, (long long)compared,
           max_diff);
  if (bad) {
    printf("  %s: %lld elements differ beyond rounding; first at %lld: %.8g vs %.8g\n", name, (long long)bad,
           (long long)first_bad, test_load(a, first_bad, dtype), test_load(b, first_bad, dtype));
    return 0;
  }
  return 1;
}

/* Oracle check of a forward output (o, lse) of params p. */
static int oracle_check(const flashc_attn_fwd_params* p, const void* o, int64_t o_count, const float* lse,
                        int64_t lse_count, unsigned char* o_mask_out, char* summary, size_t cap) {
  double* o_ref = malloc(sizeof(double) * (size_t)o_count);
  double* o_same = malloc(sizeof(double) * (size_t)o_count);
  unsigned char* o_mask = malloc((size_t)o_count);
  unsigned char* scratch = malloc((size_t)(o_count > lse_count ? o_count : lse_count) + 1);
  double* l_ref = malloc(sizeof(double) * (size_t)(lse_count + 1));
  double* l_same = malloc(sizeof(double) * (size_t)(lse_count + 1));
  unsigned char* l_mask = malloc((size_t)lse_count + 1);
  unsigned char* scratch2 = malloc((size_t)lse_count + 1);
  if (!o_ref || !o_same || !o_mask || !scratch || !l_ref || !l_same || !l_mask || !scratch2) test_fatal("out of memory");
  flashc_attn_fwd_params q = *p;
  q.lse = (float*)lse;
  int ok = oracle_attn_fwd(&q, ORACLE_FP64, o_ref, o_mask, o_count, l_ref, l_mask, lse_count) == 0 &&
           oracle_attn_fwd(&q, ORACLE_SAME, o_same, scratch, o_count, l_same, scratch2, lse_count) == 0;
  test_check_result ro, rl;
  memset(&rl, 0, sizeof rl);
  flashc_dtype out_dtype = p->dtype == FLASHC_DTYPE_E4M3 ? p->out_dtype : p->dtype;
  ok = ok && test_check_output("o", o, out_dtype, o_count, o_ref, o_same, o_mask, -1.0, &ro);
  format_check(summary, cap, "oracle o", &ro);
  if (ok && lse) {
    double max_lse = 1.0;
    for (int64_t i = 0; i < lse_count; ++i)
      if (l_mask[i] == ORACLE_COMPARE && fabs(l_ref[i]) > max_lse) max_lse = fabs(l_ref[i]);
    ok = test_check_output("lse", lse, FLASHC_DTYPE_FP32, lse_count, l_ref, l_same, l_mask, 16.0 * ldexp(1.0, -24) * max_lse, &rl);
    size_t used = strlen(summary);
    format_check(summary + used, cap - used, ", lse", &rl);
  }
  if (o_mask_out) memcpy(o_mask_out, o_mask, (size_t)o_count);
  free(o_ref), free(o_same), free(o_mask), free(scratch), free(l_ref), free(l_same), free(l_mask), free(scratch2);
  return ok;
}

/* ------------------------------------------------------------------------------------ */
/* 1. paged KV                                                                           */
/* ------------------------------------------------------------------------------------ */

typedef struct paged_case {
  flashc_dtype dtype;
  int batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim, head_dim_v;
  int page_size;
  int lengths_from; /* 0: cache_seqlens, 1: seqused_k, 2: neither (seqlen_k) */
  int causal, window_left, window_right;
  float softcap;
  int num_splits;
  int padded_pages;  /* explicit k/v page strides with gaps */
  int table_padding; /* page_table_batch_stride > max_pages */
  int varlen_q;
} paged_case;

static int run_paged(paged_case c, test_rng* rng) {
  int hq = c.heads_q, hkv = c.heads_kv, d = c.head_dim, dv = c.head_dim_v, ps = c.page_size;
  flashc_dtype out_dtype = c.dtype == FLASHC_DTYPE_E4M3 ? FLASHC_DTYPE_BF16 : c.dtype;
  int max_pages = (c.seqlen_k + ps - 1) / ps + test_rng_int(rng, 0, 2);
  int capacity = max_pages * ps;
  /* per-sequence KV lengths */
  int32_t* kv_len = calloc((size_t)c.batch, sizeof(int32_t));
  for (int b = 0; b < c.batch; ++b) {
    kv_len[b] = c.lengths_from == 2 ? c.seqlen_k : test_rng_int(rng, 0, c.seqlen_k);
    if (b == 0 && c.lengths_from != 2) kv_len[b] = test_rng_int(rng, c.seqlen_k, capacity); /* may exceed seqlen_k */
  }
  if (c.batch > 2 && c.lengths_from != 2) kv_len[2] = 0; /* a sequence with an empty cache */
  int kv_max = 0;
  for (int b = 0; b < c.batch; ++b) kv_max = kv_len[b] > kv_max ? kv_len[b] : kv_max;
  int seqlen_k_param = c.lengths_from == 2 ? c.seqlen_k : (kv_max > c.seqlen_k ? kv_max : c.seqlen_k);
  if (seqlen_k_param > capacity) seqlen_k_param = capacity;

  /* q side: fixed or varlen */
  seq_lengths s = seq_lengths_make(rng, c.batch, c.seqlen_q, 1, c.varlen_q, 0, 0, 0, 0);
  int q_batches = c.varlen_q ? 1 : c.batch, q_rows = c.varlen_q ? (s.total_q ? s.total_q : 1) : c.seqlen_q;
  tensor4 q = tensor4_make(LAYOUT_PACKED, rng, c.dtype, q_batches, q_rows, hq, d);
  for (int b = 0; b < c.batch; ++b) tensor4_fill_rows(&q, rng, c.varlen_q ? 0 : b, c.varlen_q ? s.cu_q[b] : 0, s.used_q[b], 1.0);

  /* contiguous KV: (batch, kv_rows, heads_kv, d), rows beyond each length poison */
  int kv_rows = seqlen_k_param > kv_max ? seqlen_k_param : kv_max;
  if (kv_rows < 1) kv_rows = 1;
  tensor4 k = tensor4_make(LAYOUT_PACKED, rng, c.dtype, c.batch, kv_rows, hkv, d);
  tensor4 v = tensor4_make(LAYOUT_PACKED, rng, c.dtype, c.batch, kv_rows, hkv, dv);
  for (int b = 0; b < c.batch; ++b) {
    tensor4_fill_rows(&k, rng, b, 0, kv_len[b], 1.0);
    tensor4_fill_rows(&v, rng, b, 0, kv_len[b], 1.0);
  }
  /* the cache: pages in a random permutation, extra pages poison */
  int num_pages = c.batch * max_pages + test_rng_int(rng, 1, 5);
  int64_t k_row = (int64_t)hkv * d, v_row = (int64_t)hkv * dv;
  int64_t k_page = (int64_t)ps * k_row + (c.padded_pages ? test_rng_int(rng, 1, 9) : 0);
  int64_t v_page = (int64_t)ps * v_row + (c.padded_pages ? test_rng_int(rng, 1, 9) : 0);
  size_t es = test_dtype_size(c.dtype);
  void* k_cache = test_alloc((size_t)(num_pages * k_page + 7) * es);
  void* v_cache = test_alloc((size_t)(num_pages * v_page + 7) * es);
  int* permutation = calloc((size_t)num_pages, sizeof(int));
  for (int i = 0; i < num_pages; ++i) permutation[i] = i;
  for (int i = num_pages - 1; i > 0; --i) {
    int j = test_rng_int(rng, 0, i), t = permutation[i];
    permutation[i] = permutation[j], permutation[j] = t;
  }
  int64_t table_stride = max_pages + (c.table_padding ? test_rng_int(rng, 1, 3) : 0);
  int32_t* page_table = calloc((size_t)(c.batch * table_stride), sizeof(int32_t));
  int next = 0;
  for (int b = 0; b < c.batch; ++b)
    for (int pg = 0; pg < table_stride; ++pg) {
      int used = pg < (kv_len[b] + ps - 1) / ps;
      /* used entries: distinct pages; unused ones point at arbitrary (poisoned or foreign) pages */
      page_table[b * table_stride + pg] = used ? permutation[next++] : permutation[test_rng_int(rng, 0, num_pages - 1)];
    }
  for (int b = 0; b < c.batch; ++b)
    for (int j = 0; j < kv_len[b]; ++j) {
      int32_t page = page_table[b * table_stride + j / ps];
      for (int h = 0; h < hkv; ++h) {
        int64_t src_k = tensor4_offset(&k, b, j, h), src_v = tensor4_offset(&v, b, j, h);
        int64_t dst_k = page * k_page + (j % ps) * k_row + (int64_t)h * d;
        int64_t dst_v = page * v_page + (j % ps) * v_row + (int64_t)h * dv;
        memcpy((char*)k_cache + dst_k * es, (char*)k.data + src_k * es, (size_t)d * es);
        memcpy((char*)v_cache + dst_v * es, (char*)v.data + src_v * es, (size_t)dv * es);
      }
    }
  float* descales[3] = {NULL, NULL, NULL};
  if (c.dtype == FLASHC_DTYPE_E4M3)
    for (int t = 0; t < 3; ++t) {
      descales[t] = test_alloc(sizeof(float) * (size_t)(c.batch * hkv));
      for (int i = 0; i < c.batch * hkv; ++i) descales[t][i] = (float)(0.5 + test_rng_uniform(rng));
    }

  tensor4 o_paged = tensor4_make(LAYOUT_PACKED, rng, out_dtype, q_batches, q_rows, hq, dv);
  tensor4 o_contig = tensor4_make(LAYOUT_PACKED, rng, out_dtype, q_batches, q_rows, hq, dv);
  int64_t lse_count = (int64_t)q_batches * hq * q_rows + 5;
  float* lse_paged = test_alloc(sizeof(float) * (size_t)lse_count);
  float* lse_contig = test_alloc(sizeof(float) * (size_t)lse_count);

  flashc_attn_fwd_params p;
  flashc_attn_fwd_params_init(&p);
  p.dtype = c.dtype, p.out_dtype = out_dtype;
  p.batch = c.batch, p.seqlen_q = c.seqlen_q, p.seqlen_k = seqlen_k_param;
  p.heads_q = hq, p.heads_kv = hkv, p.head_dim = d, p.head_dim_v = dv;
  p.q = q.data;
  p.causal = c.causal, p.window_left = c.window_left, p.window_right = c.window_right, p.softcap = c.softcap;
  p.num_splits = c.num_splits;
  if (c.varlen_q) p.cu_seqlens_q = s.cu_q, p.total_q = s.total_q;
  p.q_descale = descales[0], p.k_descale = descales[1], p.v_descale = descales[2];

  /* contiguous: lengths through seqused_k (or seqlen_k) */
  flashc_attn_fwd_params pc = p;
  pc.seqlen_k = kv_rows;
  if (c.lengths_from == 2) pc.seqlen_k = seqlen_k_param;
  pc.k = k.data, pc.v = v.data, pc.o = o_contig.data, pc.lse = lse_contig;
  pc.k_batch_stride = k.batch_stride, pc.v_batch_stride = v.batch_stride; /* rows = kv_rows */
  if (c.lengths_from != 2) pc.seqused_k = kv_len;
  pc.num_splits = 1;
  /* paged */
  flashc_attn_fwd_params pp = p;
  pp.k = k_cache, pp.v = v_cache, pp.o = o_paged.data, pp.lse = lse_paged;
  pp.page_table = page_table, pp.page_size = ps, pp.max_pages = max_pages, pp.num_pages = num_pages;
  pp.page_table_batch_stride = c.table_padding ? table_stride : 0;
  if (c.padded_pages) pp.k_batch_stride = k_page, pp.v_batch_stride = v_page, pp.k_row_stride = k_row,
                      pp.k_head_stride = d, pp.v_row_stride = v_row, pp.v_head_stride = dv;
  if (c.lengths_from == 0) pp.cache_seqlens = kv_len;
  if (c.lengths_from == 1) pp.seqused_k = kv_len;

  char lens[96];
  format_ints(lens, sizeof lens, kv_len, c.batch);
  char description[320];
  snprintf(description, sizeof description,
           "paged %s b%d sq%d sk%d h%d/%d d%d/%d page %d x %d (of %d)%s%s kv [%s] via %s causal %d window (%d,%d)%s "
           "splits %d%s",
           test_dtype_name(c.dtype), c.batch, c.seqlen_q, seqlen_k_param, hq, hkv, d, dv, ps, max_pages, num_pages,
           c.padded_pages ? " padded-pages" : "", c.table_padding ? " table-stride" : "", lens,
           c.lengths_from == 0 ? "cache_seqlens" : c.lengths_from == 1 ? "seqused_k" : "seqlen_k", c.causal,
           c.window_left, c.window_right, c.softcap > 0 ? " softcap" : "", c.num_splits, c.varlen_q ? " varlen-q" : "");

  int pass = attn_run_fwd(g_handle, &pc) == FLASHC_STATUS_SUCCESS;
  pass = attn_run_fwd(g_handle, &pp) == FLASHC_STATUS_SUCCESS && pass;
  char s1[160] = "", s2[160] = "", s3[160] = "";
  if (pass) {
    unsigned char* mask = malloc((size_t)o_paged.count);
    pass = oracle_check(&pp, o_paged.data, o_paged.count, lse_paged, lse_count, mask, s1, sizeof s1);
    /* The contiguous run is unsplit: a split paged run also differs by the splits' fp32
     * accumulation order and their combine, bounded as in part 2 (2^-18 of the largest). */
    const double rel_tol = c.num_splits == 1 ? 1e-6 : ldexp(1.0, -18);
    pass = compare_runs("o", o_paged.data, o_contig.data, out_dtype, o_paged.count, mask, rel_tol, s2, sizeof s2) &&
           pass;
    /* lse: the oracle mask of lse */
    unsigned char* lmask = malloc((size_t)lse_count);
    double* scratch = malloc(sizeof(double) * (size_t)(o_paged.count + lse_count));
    flashc_attn_fwd_params pl = pp;
    pl.lse = lse_paged;
    oracle_attn_fwd(&pl, ORACLE_FP64, scratch, mask, o_paged.count, scratch + o_paged.count, lmask, lse_count);
    pass = compare_runs("lse", lse_paged, lse_contig, FLASHC_DTYPE_FP32, lse_count, lmask, rel_tol, s3, sizeof s3) &&
           pass;
    free(mask), free(lmask), free(scratch);
  }
  test_case_result(pass, "%s | %s | paged vs contiguous: %s, %s", description, s1, s2, s3);

  free(kv_len), free(permutation), free(page_table);
  tensor4_free(&q), tensor4_free(&k), tensor4_free(&v), tensor4_free(&o_paged), tensor4_free(&o_contig);
  test_free(k_cache), test_free(v_cache), test_free(lse_paged), test_free(lse_contig);
  for (int t = 0; t < 3; ++t)
    if (descales[t]) test_free(descales[t]);
  seq_lengths_free(&s);
  return pass;
}

/* ------------------------------------------------------------------------------------ */
/* 2. num_splits > 1 against num_splits = 1                                              */
/* ------------------------------------------------------------------------------------ */

static int run_splits(flashc_dtype dtype, int batch, int sq, int sk, int hq, int hkv, int d, int causal, int wl, int wr,
                      int varlen, const int* splits, int split_count, test_rng* rng) {
  flashc_dtype out_dtype = dtype == FLASHC_DTYPE_E4M3 ? FLASHC_DTYPE_BF16 : dtype;
  seq_lengths s = seq_lengths_make(rng, batch, sq, sk, varlen, varlen, varlen, 0, 0);
  int qb = varlen ? 1 : batch, kb = varlen ? 1 : batch;
  int qr = varlen ? (s.total_q ? s.total_q : 1) : sq, kr = varlen ? (s.total_k ? s.total_k : 1) : sk;
  tensor4 q = tensor4_make(LAYOUT_PACKED, rng, dtype, qb, qr, hq, d);
  tensor4 k = tensor4_make(LAYOUT_PACKED, rng, dtype, kb, kr, hkv, d);
  tensor4 v = tensor4_make(LAYOUT_PACKED, rng, dtype, kb, kr, hkv, d);
  for (int b = 0; b < batch; ++b) {
    tensor4_fill_rows(&q, rng, varlen ? 0 : b, varlen ? s.cu_q[b] : 0, s.used_q[b], 1.0);
    tensor4_fill_rows(&k, rng, varlen ? 0 : b, varlen ? s.cu_k[b] : 0, s.used_k[b], 1.0);
    tensor4_fill_rows(&v, rng, varlen ? 0 : b, varlen ? s.cu_k[b] : 0, s.used_k[b], 1.0);
  }
  float* descale = NULL;
  if (dtype == FLASHC_DTYPE_E4M3) {
    descale = test_alloc(sizeof(float) * (size_t)(batch * hkv));
    for (int i = 0; i < batch * hkv; ++i) descale[i] = (float)(0.5 + test_rng_uniform(rng));
  }
  int64_t lse_count = (int64_t)qb * hq * qr + 3;
  tensor4 o1 = tensor4_make(LAYOUT_PACKED, rng, out_dtype, qb, qr, hq, d);
  float* lse1 = test_alloc(sizeof(float) * (size_t)lse_count);
  flashc_attn_fwd_params p;
  flashc_attn_fwd_params_init(&p);
  p.dtype = dtype, p.out_dtype = out_dtype;
  p.batch = batch, p.seqlen_q = sq, p.seqlen_k = sk, p.heads_q = hq, p.heads_kv = hkv, p.head_dim = d;
  p.q = q.data, p.k = k.data, p.v = v.data, p.o = o1.data, p.lse = lse1;
  p.causal = causal, p.window_left = wl, p.window_right = wr;
  if (varlen) p.cu_seqlens_q = s.cu_q, p.cu_seqlens_k = s.cu_k, p.total_q = s.total_q, p.total_k = s.total_k;
  p.q_descale = p.k_descale = p.v_descale = descale;
  p.num_splits = 1;
  int base_ok = attn_run_fwd(g_handle, &p) == FLASHC_STATUS_SUCCESS;
  unsigned char* mask = malloc((size_t)o1.count);
  unsigned char* lmask = malloc((size_t)lse_count);
  double* scratch = malloc(sizeof(double) * (size_t)(o1.count + lse_count));
  oracle_attn_fwd(&p, ORACLE_FP64, scratch, mask, o1.count, scratch + o1.count, lmask, lse_count);
  char s0[160] = "";
  if (base_ok) base_ok = oracle_check(&p, o1.data, o1.count, lse1, lse_count, NULL, s0, sizeof s0);
  int all_ok = base_ok;
  for (int i = 0; i < split_count; ++i) {
    tensor4 on = tensor4_make(LAYOUT_PACKED, rng, out_dtype, qb, qr, hq, d);
    float* lsen = test_alloc(sizeof(float) * (size_t)lse_count);
    flashc_attn_fwd_params pn = p;
    pn.o = on.data, pn.lse = lsen, pn.num_splits = splits[i];
    int ok = attn_run_fwd(g_handle, &pn) == FLASHC_STATUS_SUCCESS;
    char so[128] = "", sl[128] = "";
    if (ok) {
      /* fp32 accumulation-order differences (extra rescaling by exp(lse_split - lse), other
       * summation order): 2^-18 (64 fp32 ulps) of the output's magnitude, about the fp32
       * kernel's own error against fp64 on these shapes */
      ok = compare_runs("o", on.data, o1.data, out_dtype, o1.count, mask, ldexp(1.0, -18), so, sizeof so);
      ok = compare_runs("lse", lsen, lse1, FLASHC_DTYPE_FP32, lse_count, lmask, ldexp(1.0, -18), sl, sizeof sl) && ok;
    }
    all_ok = all_ok && ok;
    test_case_result(ok && base_ok, "splits %s b%d sq%d sk%d h%d/%d d%d causal %d window (%d,%d)%s num_splits %d vs 1: %s, %s%s%s",
                     test_dtype_name(dtype), batch, sq, sk, hq, hkv, d, causal, wl, wr, varlen ? " varlen" : "", splits[i],
                     so, sl, i == 0 ? " | unsplit " : "", i == 0 ? s0 : "");
    tensor4_free(&on);
    test_free(lsen);
  }
  free(mask), free(lmask), free(scratch);
  tensor4_free(&q), tensor4_free(&k), tensor4_free(&v), tensor4_free(&o1);
  test_free(lse1);
  if (descale) test_free(descale);
  seq_lengths_free(&s);
  return all_ok;
}

/* ------------------------------------------------------------------------------------ */
/* 3. the public combine on partials computed over key slices                            */
/* ------------------------------------------------------------------------------------ */

static int run_combine(int batch, int sq, int sk, int hq, int hkv, int d, int mask_kind, int slices, int fa3_layout,
                       flashc_dtype out_dtype, int with_lse, int padded_out, test_rng* rng) {
  /* mask_kind 0: none, 1: causal, 2: window (-1, wr) */
  int wr = mask_kind == 2 ? test_rng_int(rng, 0, 7) : (mask_kind == 1 ? 0 : -1);
  tensor4 q = tensor4_make(LAYOUT_PACKED, rng, FLASHC_DTYPE_FP32, batch, sq, hq, d);
  tensor4 k = tensor4_make(LAYOUT_PACKED, rng, FLASHC_DTYPE_FP32, batch, sk, hkv, d);
  tensor4 v = tensor4_make(LAYOUT_PACKED, rng, FLASHC_DTYPE_FP32, batch, sk, hkv, d);
  for (int b = 0; b < batch; ++b) {
    tensor4_fill_rows(&q, rng, b, 0, sq, 1.0);
    tensor4_fill_rows(&k, rng, b, 0, sk, 1.0);
    tensor4_fill_rows(&v, rng, b, 0, sk, 1.0);
  }
  /* the full forward (the target) */
  tensor4 o_full = tensor4_make(LAYOUT_PACKED, rng, FLASHC_DTYPE_FP32, batch, sq, hq, d);
  int64_t lse_n = (int64_t)batch * hq * sq;
  float* lse_full = test_alloc(sizeof(float) * (size_t)lse_n);
  flashc_attn_fwd_params full;
  flashc_attn_fwd_params_init(&full);
  full.dtype = full.out_dtype = FLASHC_DTYPE_FP32;
  full.batch = batch, full.seqlen_q = sq, full.seqlen_k = sk, full.heads_q = hq, full.heads_kv = hkv, full.head_dim = d;
  full.q = q.data, full.k = k.data, full.v = v.data, full.o = o_full.data, full.lse = lse_full;
  full.softmax_scale = 1.0f / sqrtf((float)d); /* the slices use the same float */
  full.causal = mask_kind == 1;
  full.window_right = mask_kind == 2 ? wr : -1;
  int ok = attn_run_fwd(g_handle, &full) == FLASHC_STATUS_SUCCESS;

  /* slices [bounds[s], bounds[s+1]) of the keys, each non-empty; one extra split of garbage */
  int splits = slices + 1;
  int* bounds = calloc((size_t)slices + 1, sizeof(int));
  bounds[0] = 0, bounds[slices] = sk;
  for (int s = 1; s < slices; ++s) bounds[s] = bounds[s - 1] + 1 + test_rng_int(rng, 0, (sk - bounds[s - 1] - (slices - s)) / 2);
  int64_t o_part_split = (int64_t)batch * sq * hq * d;
  float* o_partial = test_alloc(sizeof(float) * (size_t)(splits * o_part_split));
  float* lse_default = test_alloc(sizeof(float) * (size_t)(splits * lse_n)); /* (split, batch, heads, seqlen) */
  for (int s = 0; s < slices && ok; ++s) {
    int k0 = bounds[s], k1 = bounds[s + 1];
    flashc_attn_fwd_params p = full;
    p.seqlen_k = k1 - k0;
    p.k = (const float*)k.data + (int64_t)k0 * k.row_stride;
    p.v = (const float*)v.data + (int64_t)k0 * v.row_stride;
    p.k_batch_stride = k.batch_stride, p.k_row_stride = k.row_stride, p.k_head_stride = k.head_stride;
    p.v_batch_stride = v.batch_stride, p.v_row_stride = v.row_stride, p.v_head_stride = v.head_stride;
    /* same visible keys: the diagonal of the slice moves by seqlen_k - k1 */
    p.causal = 0;
    p.window_left = -1;
    p.window_right = mask_kind == 0 ? -1 : (mask_kind == 1 ? 0 : wr) + (sk - k1);
    p.o = o_partial + s * o_part_split;
    p.lse = lse_default + s * lse_n;
    ok = attn_run_fwd(g_handle, &p) == FLASHC_STATUS_SUCCESS && ok;
  }
  /* the garbage split: lse -inf everywhere, o finite nonsense */
  for (int64_t i = 0; i < o_part_split; ++i) o_partial[slices * o_part_split + i] = (float)(1e3 * test_rng_normal(rng));
  for (int64_t i = 0; i < lse_n; ++i) lse_default[slices * lse_n + i] = -INFINITY;
  int64_t minus_inf_rows = 0;
  for (int64_t i = 0; i < (int64_t)slices * lse_n; ++i) minus_inf_rows += lse_default[i] == -INFINITY;
  /* swap the garbage split into a random position */
  int garbage_at = test_rng_int(rng, 0, slices);
  if (garbage_at != slices) {
    for (int64_t i = 0; i < o_part_split; ++i) {
      float t = o_partial[garbage_at * o_part_split + i];
      o_partial[garbage_at * o_part_split + i] = o_partial[slices * o_part_split + i];
      o_partial[slices * o_part_split + i] = t;
    }
    for (int64_t i = 0; i < lse_n; ++i) {
      float t = lse_default[garbage_at * lse_n + i];
      lse_default[garbage_at * lse_n + i] = lse_default[slices * lse_n + i];
      lse_default[slices * lse_n + i] = t;
    }
  }
  /* FA3's (split, batch, seqlen, heads) layout */
  float* lse_fa3 = NULL;
  if (fa3_layout) {
    lse_fa3 = test_alloc(sizeof(float) * (size_t)(splits * lse_n));
    for (int s = 0; s < splits; ++s)
      for (int b = 0; b < batch; ++b)
        for (int h = 0; h < hq; ++h)
          for (int i = 0; i < sq; ++i)
            lse_fa3[(((int64_t)s * batch + b) * sq + i) * hq + h] = lse_default[(((int64_t)s * batch + b) * hq + h) * sq + i];
  }
  /* the combine */
  tensor4 o = tensor4_make(padded_out ? LAYOUT_PADDED : LAYOUT_PACKED, rng, out_dtype, batch, sq, hq, d);
  int64_t lse_hs = sq + (padded_out ? 3 : 0), lse_bs = (int64_t)hq * lse_hs + (padded_out ? 2 : 0);
  int64_t lse_count = (int64_t)(batch - 1) * lse_bs + (int64_t)(hq - 1) * lse_hs + sq + 5;
  float* lse = with_lse ? test_alloc(sizeof(float) * (size_t)lse_count) : NULL;
  flashc_attn_combine_params cp;
  flashc_attn_combine_params_init(&cp);
  cp.out_dtype = out_dtype;
  cp.num_splits = splits, cp.batch = batch, cp.seqlen = sq, cp.heads = hq, cp.head_dim_v = d;
  cp.o_partial = o_partial;
  cp.lse_partial = fa3_layout ? lse_fa3 : lse_default;
  if (fa3_layout) {
    cp.lse_partial_split_stride = (int64_t)batch * sq * hq;
    cp.lse_partial_batch_stride = (int64_t)sq * hq;
    cp.lse_partial_row_stride = hq;
    cp.lse_partial_head_stride = 1;
  }
  cp.o = o.data, cp.lse = lse;
  if (padded_out) {
    cp.o_batch_stride = o.batch_stride, cp.o_row_stride = o.row_stride, cp.o_head_stride = o.head_stride;
    if (lse) cp.lse_batch_stride = lse_bs, cp.lse_head_stride = lse_hs;
  }
  char s_full[160] = "", s_oracle[160] = "", s_lse[160] = "", s_olse[160] = "";
  if (ok) {
    flashc_status status = flashc_attn_combine(g_handle, &cp, NULL);
    if (status != FLASHC_STATUS_SUCCESS) {
      test_print_status("flashc_attn_combine", status);
      ok = 0;
    }
  }
  if (ok) {
    /* against the oracle's combine of the same partials */
    double* ref = malloc(sizeof(double) * (size_t)o.count);
    double* same = malloc(sizeof(double) * (size_t)o.count);
    unsigned char* mask = malloc((size_t)o.count);
    unsigned char* mask2 = malloc((size_t)o.count);
    double* lref = malloc(sizeof(double) * (size_t)lse_count);
    double* lsame = malloc(sizeof(double) * (size_t)lse_count);
    unsigned char* lmask = malloc((size_t)lse_count);
    unsigned char* lmask2 = malloc((size_t)lse_count);
    oracle_attn_combine(&cp, ORACLE_FP64, ref, mask, o.count, lse ? lref : NULL, lmask, lse_count);
    oracle_attn_combine(&cp, ORACLE_SAME, same, mask2, o.count, lse ? lsame : NULL, lmask2, lse_count);
    test_check_result r;
    ok = test_check_output("combine o", o.data, out_dtype, o.count, ref, same, mask, -1.0, &r);
    format_check(s_oracle, sizeof s_oracle, "oracle o", &r);
    if (lse) {
      double max_lse = 1.0;
      for (int64_t i = 0; i < lse_count; ++i)
        if (lmask[i] == ORACLE_COMPARE && fabs(lref[i]) > max_lse) max_lse = fabs(lref[i]);
      ok = test_check_output("combine lse", lse, FLASHC_DTYPE_FP32, lse_count, lref, lsame, lmask,
                             16.0 * ldexp(1.0, -24) * max_lse, &r) && ok;
      format_check(s_olse, sizeof s_olse, ", lse", &r);
    }
    /* against the unsplit forward: o_full rounded to out_dtype, at the combine's offsets */
    void* expected = test_alloc((size_t)o.count * test_dtype_size(out_dtype));
    for (int b = 0; b < batch; ++b)
      for (int i = 0; i < sq; ++i)
        for (int h = 0; h < hq; ++h)
          for (int c = 0; c < d; ++c)
            test_store(expected, tensor4_offset(&o, b, i, h) + c, out_dtype,
                       test_load(o_full.data, tensor4_offset(&o_full, b, i, h) + c, FLASHC_DTYPE_FP32));
    ok = compare_runs("vs unsplit o", o.data, expected, out_dtype, o.count, mask, ldexp(1.0, -18), s_full, sizeof s_full) && ok;
    if (lse) {
      float* expected_lse = test_alloc(sizeof(float) * (size_t)lse_count);
      for (int b = 0; b < batch; ++b)
        for (int h = 0; h < hq; ++h)
          for (int i = 0; i < sq; ++i)
            expected_lse[b * lse_bs + h * lse_hs + i] = lse_full[((int64_t)b * hq + h) * sq + i];
      ok = compare_runs("lse", lse, expected_lse, FLASHC_DTYPE_FP32, lse_count, lmask, ldexp(1.0, -18), s_lse, sizeof s_lse) && ok;
      test_free(expected_lse);
    }
    test_free(expected);
    free(ref), free(same), free(mask), free(mask2), free(lref), free(lsame), free(lmask), free(lmask2);
  }
  char bounds_text[96];
  format_ints(bounds_text, sizeof bounds_text, bounds, slices + 1);
  test_case_result(ok, "combine b%d sq%d sk%d h%d/%d d%d mask %s slices [%s] + -inf split at %d (%lld -inf partial rows) %s %s%s%s | %s%s | %s %s",
                   batch, sq, sk, hq, hkv, d, mask_kind == 0 ? "none" : mask_kind == 1 ? "causal" : "window", bounds_text,
                   garbage_at, (long long)minus_inf_rows, fa3_layout ? "fa3-lse-layout" : "default-lse-layout",
                   test_dtype_name(out_dtype), with_lse ? " lse" : "", padded_out ? " padded-out" : "", s_oracle, s_olse,
                   s_full, s_lse);
  free(bounds);
  tensor4_free(&q), tensor4_free(&k), tensor4_free(&v), tensor4_free(&o_full), tensor4_free(&o);
  test_free(lse_full), test_free(o_partial), test_free(lse_default);
  if (lse_fa3) test_free(lse_fa3);
  if (lse) test_free(lse);
  return ok;
}

int main(void) {
  uint64_t seed = test_seed();
  flashc_status status = flashc_create(&g_handle, FLASHC_DEVICE_CPU);
  if (status != FLASHC_STATUS_SUCCESS) {
    test_print_status("flashc_create(CPU)", status);
    return TEST_EXIT_FAIL;
  }
  uint64_t index = 0;

  /* 1. paged */
  static const int page_sizes[] = {1, 16, 64, 5};
  const flashc_dtype dtypes[] = {FLASHC_DTYPE_BF16, FLASHC_DTYPE_FP16, FLASHC_DTYPE_FP32, FLASHC_DTYPE_E4M3};
  for (int i = 0; i < 4; ++i)
    for (int variant = 0; variant < 4; ++variant) {
      test_rng rng = test_rng_make(seed, ++index);
      paged_case c;
      memset(&c, 0, sizeof c);
      c.dtype = variant == 3 ? dtypes[test_rng_int(&rng, 0, 3)] : dtypes[variant];
      c.batch = 3;
      c.seqlen_q = test_rng_pick(&rng, (const int[]){1, 1, 3, 17, 64}, 5);
      c.seqlen_k = page_sizes[i] == 1 ? test_rng_int(&rng, 1, 70) : test_rng_int(&rng, 1, 200);
      c.heads_kv = test_rng_int(&rng, 1, 2);
      c.heads_q = c.heads_kv * test_rng_pick(&rng, (const int[]){1, 2, 4}, 3);
      c.head_dim = test_rng_pick(&rng, (const int[]){32, 64, 128}, 3);
      c.head_dim_v = c.head_dim;
      c.page_size = page_sizes[i];
      c.lengths_from = variant % 3;
      c.causal = variant == 1;
      c.window_left = variant == 2 ? test_rng_int(&rng, 0, 40) : -1;
      c.window_right = variant == 2 ? test_rng_int(&rng, 0, 5) : -1;
      c.softcap = variant == 3 ? 12.0f : 0.0f;
      c.num_splits = variant == 3 ? 3 : 1;
      c.padded_pages = i % 2 == 1 || variant == 2;
      c.table_padding = variant >= 2;
      c.varlen_q = variant == 1 && i >= 2;
      run_paged(c, &rng);
    }

  /* 2. splits */
  static const int split_list[] = {2, 3, 7, 0, 256};
  struct {
    flashc_dtype dtype;
    int batch, sq, sk, hq, hkv, d, causal, wl, wr, varlen;
  } split_cases[] = {
      {FLASHC_DTYPE_FP32, 2, 37, 301, 4, 2, 64, 0, -1, -1, 0},  {FLASHC_DTYPE_FP32, 2, 64, 200, 2, 1, 32, 1, -1, -1, 0},
      {FLASHC_DTYPE_FP32, 1, 50, 5, 2, 2, 32, 1, -1, -1, 0},    /* more splits than keys, masked rows */
      {FLASHC_DTYPE_BF16, 2, 1, 513, 8, 2, 128, 0, -1, -1, 0},  /* decoding */
      {FLASHC_DTYPE_FP16, 1, 113, 203, 4, 4, 64, 0, 20, 3, 0},  /* local: many empty splits per row */
      {FLASHC_DTYPE_FP32, 4, 40, 90, 2, 1, 64, 1, -1, -1, 1},   /* varlen with empty sequences */
      {FLASHC_DTYPE_E4M3, 2, 16, 150, 4, 2, 64, 0, -1, -1, 0},
  };
  for (size_t i = 0; i < sizeof split_cases / sizeof split_cases[0]; ++i) {
    test_rng rng = test_rng_make(seed, ++index);
    run_splits(split_cases[i].dtype, split_cases[i].batch, split_cases[i].sq, split_cases[i].sk, split_cases[i].hq,
               split_cases[i].hkv, split_cases[i].d, split_cases[i].causal, split_cases[i].wl, split_cases[i].wr,
               split_cases[i].varlen, split_list, 5, &rng);
  }

  /* 3. combine */
  for (int variant = 0; variant < 30; ++variant) {
    test_rng rng = test_rng_make(seed, ++index);
    int mask_kind = variant % 3;
    int sq = test_rng_pick(&rng, (const int[]){1, 7, 40, 113}, 4);
    int sk = test_rng_int(&rng, 4, 160);
    if (variant == 1) sq = sk + 9; /* causal with seqlen_q > seqlen_k: rows with every split -inf */
    const flashc_dtype outs[] = {FLASHC_DTYPE_FP32, FLASHC_DTYPE_BF16, FLASHC_DTYPE_FP16};
    run_combine(test_rng_int(&rng, 1, 3), sq, sk, 4, 2, test_rng_pick(&rng, (const int[]){32, 64, 40}, 3), mask_kind,
                test_rng_int(&rng, 2, 4), variant % 2, outs[variant % 3], variant % 4 != 3, variant % 5 == 2, &rng);
  }
  flashc_destroy(g_handle);
  return test_summary();
}
