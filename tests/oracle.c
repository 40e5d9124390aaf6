/*
 * oracle.c — see oracle.h. Everything here is derived from the doc comments of flashc.h;
 * nothing is taken from src/ (the conversions too are written from the format definitions).
 */
#define _POSIX_C_SOURCE 200809L
#include "oracle.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ======================================================================================== */
/* Seed and RNG                                                                              */
/* ======================================================================================== */

static uint64_t splitmix64(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t test_seed(void) {
  static int chosen = 0;
  static uint64_t seed = 0;
  if (chosen) return seed;
  const char* env = getenv("FLASHC_TEST_SEED");
  if (env && *env) {
    seed = strtoull(env, NULL, 0);
    printf("seed %llu (from FLASHC_TEST_SEED)\n", (unsigned long long)seed);
  } else {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    uint64_t mix = (uint64_t)now.tv_sec * 1000000007ull ^ (uint64_t)now.tv_nsec ^
                   ((uint64_t)getpid() << 32) ^ (uint64_t)clock();
    seed = splitmix64(&mix) % 1000000000000ull;
    printf("seed %llu (rerun with FLASHC_TEST_SEED=%llu to reproduce)\n", (unsigned long long)seed,
           (unsigned long long)seed);
  }
  fflush(stdout);
  chosen = 1;
  return seed;
}

test_rng test_rng_make(uint64_t seed, uint64_t stream) {
  test_rng rng;
  uint64_t s = seed ^ 0x5bd1e9955bd1e995ull;
  uint64_t t = stream * 0x2545f4914f6cdd1dull + 0x1234567ull;
  rng.state = splitmix64(&s) ^ splitmix64(&t);
  return rng;
}

uint64_t test_rng_next(test_rng* rng) { return splitmix64(&rng->state); }

double test_rng_uniform(test_rng* rng) { return (double)(test_rng_next(rng) >> 11) * 0x1.0p-53; }

int test_rng_int(test_rng* rng, int lo, int hi) {
  if (hi <= lo) return lo;
  uint64_t span = (uint64_t)((int64_t)hi - lo + 1);
  return lo + (int)(test_rng_next(rng) % span);
}

double test_rng_normal(test_rng* rng) {
  double u1 = test_rng_uniform(rng), u2 = test_rng_uniform(rng);
  if (u1 < 1e-300) u1 = 1e-300;
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

int test_rng_pick(test_rng* rng, const int* values, int count) {
  return values[test_rng_int(rng, 0, count - 1)];
}

/* ======================================================================================== */
/* Formats                                                                                   */
/* ======================================================================================== */

/* A binary floating-point storage format: precision (significand bits incl. the implicit
 * one), exponent bias, the smallest normal exponent and the largest finite value. */
typedef struct fmt_desc {
  int precision;
  int exponent_bits;
  int bias;
  int min_exponent;
  double max_finite;
  int saturates; /* e4m3 "fn": no infinities, saturating conversion */
} fmt_desc;

static fmt_desc fmt_of(flashc_dtype dtype) {
  fmt_desc f;
  memset(&f, 0, sizeof f);
  switch (dtype) {
    case FLASHC_DTYPE_FP16:
      f.precision = 11, f.exponent_bits = 5, f.bias = 15, f.min_exponent = -14, f.max_finite = 65504.0;
      break;
    case FLASHC_DTYPE_BF16:
      f.precision = 8, f.exponent_bits = 8, f.bias = 127, f.min_exponent = -126;
      f.max_finite = ldexp(2.0 - ldexp(1.0, -7), 127);
      break;
    case FLASHC_DTYPE_E4M3:
      f.precision = 4, f.exponent_bits = 4, f.bias = 7, f.min_exponent = -6, f.max_finite = 448.0;
      f.saturates = 1;
      break;
    default:
      f.precision = 24, f.exponent_bits = 8, f.bias = 127, f.min_exponent = -126;
      f.max_finite = (double)FLT_MAX;
      break;
  }
  return f;
}

size_t test_dtype_size(flashc_dtype dtype) {
  switch (dtype) {
    case FLASHC_DTYPE_FP32: return 4;
    case FLASHC_DTYPE_FP16: return 2;
    case FLASHC_DTYPE_BF16: return 2;
    case FLASHC_DTYPE_E4M3: return 1;
    default: return 0;
  }
}

const char* test_dtype_name(flashc_dtype dtype) {
  switch (dtype) {
    case FLASHC_DTYPE_FP32: return "fp32";
    case FLASHC_DTYPE_FP16: return "fp16";
    case FLASHC_DTYPE_BF16: return "bf16";
    case FLASHC_DTYPE_E4M3: return "e4m3";
    default: return "?";
  }
}

double test_unit_roundoff(flashc_dtype dtype) { return ldexp(1.0, -fmt_of(dtype).precision); }

static double round_generic(double x, const fmt_desc* f) {
  if (isnan(x)) return x;
  if (isinf(x)) return f->saturates ? copysign(f->max_finite, x) : x;
  if (x == 0.0) return x;
  double magnitude = fabs(x);
  int exponent;
  frexp(magnitude, &exponent); /* magnitude = m · 2^exponent, m in [0.5, 1) */
  int e = exponent - 1;        /* magnitude = 1.xxx · 2^e */
  if (e < f->min_exponent) e = f->min_exponent;
  double quantum = ldexp(1.0, e - (f->precision - 1));
  double rounded = nearbyint(magnitude / quantum) * quantum; /* ties to even (default mode) */
  if (rounded > f->max_finite) rounded = f->saturates ? f->max_finite : INFINITY;
  return copysign(rounded, x);
}

double test_round(double x, flashc_dtype dtype) {
  if (dtype == FLASHC_DTYPE_FP32) return (double)(float)x;
  fmt_desc f = fmt_of(dtype);
  return round_generic(x, &f);
}

/* Bits of an exactly representable value (already rounded) in format f. */
static uint32_t encode_generic(double r, const fmt_desc* f, flashc_dtype dtype) {
  int total_bits = 1 + f->exponent_bits + (f->precision - 1);
  uint32_t sign = signbit(r) ? (1u << (total_bits - 1)) : 0u;
  int mantissa_bits = f->precision - 1;
  uint32_t exponent_all_ones = (1u << f->exponent_bits) - 1u;
  if (isnan(r)) {
    if (dtype == FLASHC_DTYPE_E4M3) return 0x7fu;
    return (exponent_all_ones << mantissa_bits) | (1u << (mantissa_bits - 1));
  }
  if (isinf(r)) return sign | (exponent_all_ones << mantissa_bits);
  double magnitude = fabs(r);
  if (magnitude == 0.0) return sign;
  int exponent;
  frexp(magnitude, &exponent);
  int e = exponent - 1;
  if (e < f->min_exponent) { /* subnormal: magnitude = m · 2^(min_exponent - mantissa_bits) */
    double m = magnitude / ldexp(1.0, f->min_exponent - mantissa_bits);
    return sign | (uint32_t)m;
  }
  double fraction = magnitude / ldexp(1.0, e) - 1.0; /* [0, 1) */
  uint32_t mantissa = (uint32_t)(fraction * (double)(1u << mantissa_bits));
  uint32_t biased = (uint32_t)(e + f->bias);
  return sign | (biased << mantissa_bits) | mantissa;
}

static double decode_generic(uint32_t bits, const fmt_desc* f, flashc_dtype dtype) {
  int mantissa_bits = f->precision - 1;
  int total_bits = 1 + f->exponent_bits + mantissa_bits;
  uint32_t exponent_all_ones = (1u << f->exponent_bits) - 1u;
  int negative = (bits >> (total_bits - 1)) & 1u;
  uint32_t biased = (bits >> mantissa_bits) & exponent_all_ones;
  uint32_t mantissa = bits & ((1u << mantissa_bits) - 1u);
  double value;
  if (dtype == FLASHC_DTYPE_E4M3) {
    if (biased == exponent_all_ones && mantissa == 7u) return NAN;
  } else if (biased == exponent_all_ones) {
    value = mantissa ? NAN : INFINITY;
    return negative ? -value : value;
  }
  if (biased == 0)
    value = ldexp((double)mantissa, f->min_exponent - mantissa_bits);
  else
    value = ldexp(1.0 + (double)mantissa / (double)(1u << mantissa_bits), (int)biased - f->bias);
  return negative ? -value : value;
}

double test_load(const void* base, int64_t index, flashc_dtype dtype) {
  fmt_desc f = fmt_of(dtype);
  switch (dtype) {
    case FLASHC_DTYPE_FP32: return (double)((const float*)base)[index];
    case FLASHC_DTYPE_FP16:
    case FLASHC_DTYPE_BF16: return decode_generic(((const uint16_t*)base)[index], &f, dtype);
    case FLASHC_DTYPE_E4M3: return decode_generic(((const uint8_t*)base)[index], &f, dtype);
    default: return NAN;
  }
}

void test_store(void* base, int64_t index, flashc_dtype dtype, double value) {
  fmt_desc f = fmt_of(dtype);
  double r = test_round(value, dtype);
  switch (dtype) {
    case FLASHC_DTYPE_FP32: ((float*)base)[index] = (float)r; break;
    case FLASHC_DTYPE_FP16:
    case FLASHC_DTYPE_BF16: ((uint16_t*)base)[index] = (uint16_t)encode_generic(r, &f, dtype); break;
    case FLASHC_DTYPE_E4M3: ((uint8_t*)base)[index] = (uint8_t)encode_generic(r, &f, dtype); break;
    default: break;
  }
}

int test_is_poison(const void* base, int64_t index, flashc_dtype dtype) {
  size_t size = test_dtype_size(dtype);
  const unsigned char* bytes = (const unsigned char*)base + (size_t)index * size;
  for (size_t i = 0; i < size; ++i)
    if (bytes[i] != 0xFFu) return 0;
  return 1;
}

/* ======================================================================================== */
/* Buffers                                                                                   */
/* ======================================================================================== */

void* test_alloc(size_t bytes) {
  size_t rounded = ((bytes ? bytes : 1) + 63) / 64 * 64;
  void* pointer = aligned_alloc(64, rounded);
  if (!pointer) test_fatal("out of memory allocating %zu bytes", bytes);
  memset(pointer, 0xFF, rounded);
  return pointer;
}

void test_free(void* pointer) { free(pointer); }

void test_fill_poison(void* base, size_t bytes) { memset(base, 0xFF, bytes); }

void test_fill_random(test_rng* rng, void* base, int64_t count, flashc_dtype dtype, double scale) {
  if (count <= 0) return;
  int any_nonzero = 0;
  for (int64_t i = 0; i < count; ++i) {
    double value = scale * test_rng_normal(rng);
    if (test_rng_uniform(rng) < 1.0 / 512.0) value *= 4.0 + 8.0 * test_rng_uniform(rng);
    test_store(base, i, dtype, value);
  }
  /* a few guaranteed outliers */
  int outliers = count >= 64 ? 2 : (count >= 8 ? 1 : 0);
  for (int n = 0; n < outliers; ++n) {
    int64_t i = (int64_t)(test_rng_next(rng) % (uint64_t)count);
    double sign = (test_rng_next(rng) & 1) ? 1.0 : -1.0;
    test_store(base, i, dtype, sign * scale * (4.0 + 8.0 * test_rng_uniform(rng)));
  }
  for (int64_t i = 0; i < count && !any_nonzero; ++i)
    if (test_load(base, i, dtype) != 0.0) any_nonzero = 1;
  if (!any_nonzero) test_store(base, 0, dtype, scale);
}

/* ======================================================================================== */
/* Attention geometry resolved from the public params (defaults per flashc.h)                */
/* ======================================================================================== */

typedef struct attn_geom {
  flashc_dtype dtype;
  int batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim, head_dim_v;
  int64_t q_b, q_r, q_h, k_b, k_r, k_h, v_b, v_r, v_h;
  int64_t o_b, o_r, o_h, lse_b, lse_h;
  double softmax_scale, softcap;
  int window_left, window_right;
  const int32_t *cu_q, *cu_k, *used_q, *used_k;
  const int32_t* page_table;
  const int32_t* cache_seqlens;
  int64_t page_table_stride;
  int page_size;
  const float *q_descale, *k_descale, *v_descale;
  int64_t descale_b, descale_h;
} attn_geom;

typedef struct attn_seq {
  int64_t q_row0, k_row0;
  int seqlen_q, seqlen_k;
} attn_seq;

static int64_t default_if_zero(int64_t value, int64_t packed) { return value ? value : packed; }

/* The batch, row and head strides of a (batch, rows, heads, dim) tensor: the given ones, packed
 * where a given one is 0. */
static void tensor_strides(int64_t given_batch, int64_t given_row, int64_t given_head, int64_t rows, int heads,
                           int dim, int64_t* batch, int64_t* row, int64_t* head) {
  *head = default_if_zero(given_head, dim);
  *row = default_if_zero(given_row, (int64_t)heads * dim);
  *batch = default_if_zero(given_batch, rows * heads * dim);
}

static void geom_common(attn_geom* g, flashc_dtype dtype, int batch, int seqlen_q, int seqlen_k,
                        int heads_q, int heads_kv, int head_dim, int head_dim_v, float softmax_scale,
                        int causal, int window_left, int window_right, float softcap) {
  g->dtype = dtype;
  g->batch = batch;
  g->seqlen_q = seqlen_q;
  g->seqlen_k = seqlen_k;
  g->heads_q = heads_q;
  g->heads_kv = heads_kv ? heads_kv : heads_q;
  g->head_dim = head_dim;
  g->head_dim_v = head_dim_v ? head_dim_v : head_dim;
  g->softmax_scale = softmax_scale != 0.0f ? (double)softmax_scale : 1.0 / sqrt((double)head_dim);
  g->softcap = softcap;
  g->window_left = window_left;
  g->window_right = causal ? 0 : window_right;
}

static void geom_fwd(attn_geom* g, const flashc_attn_fwd_params* p) {
  memset(g, 0, sizeof *g);
  geom_common(g, p->dtype, p->batch, p->seqlen_q, p->seqlen_k, p->heads_q, p->heads_kv, p->head_dim,
              p->head_dim_v, p->softmax_scale, p->causal, p->window_left, p->window_right, p->softcap);
  int hq = g->heads_q, hkv = g->heads_kv, d = g->head_dim, dv = g->head_dim_v;
  g->cu_q = p->cu_seqlens_q;
  g->cu_k = p->cu_seqlens_k;
  g->used_q = p->seqused_q;
  g->used_k = p->seqused_k;
  g->page_table = p->page_table;
  g->cache_seqlens = p->cache_seqlens;
  g->page_size = p->page_size;
  g->page_table_stride = default_if_zero(p->page_table_batch_stride, p->max_pages);
  int64_t k_rows_per_batch = p->page_table ? p->page_size : p->seqlen_k;
  tensor_strides(p->q_batch_stride, p->q_row_stride, p->q_head_stride, p->seqlen_q, hq, d,
                 &g->q_b, &g->q_r, &g->q_h);
  tensor_strides(p->k_batch_stride, p->k_row_stride, p->k_head_stride, k_rows_per_batch, hkv, d,
                 &g->k_b, &g->k_r, &g->k_h);
  tensor_strides(p->v_batch_stride, p->v_row_stride, p->v_head_stride, k_rows_per_batch, hkv, dv,
                 &g->v_b, &g->v_r, &g->v_h);
  tensor_strides(p->o_batch_stride, p->o_row_stride, p->o_head_stride, p->seqlen_q, hq, dv,
                 &g->o_b, &g->o_r, &g->o_h);
  g->lse_h = default_if_zero(p->lse_head_stride, p->cu_seqlens_q ? p->total_q : p->seqlen_q);
  g->lse_b = default_if_zero(p->lse_batch_stride, (int64_t)hq * p->seqlen_q);
  if (p->dtype == FLASHC_DTYPE_E4M3) {
    g->q_descale = p->q_descale;
    g->k_descale = p->k_descale;
    g->v_descale = p->v_descale;
    g->descale_b = default_if_zero(p->descale_batch_stride, hkv);
    g->descale_h = default_if_zero(p->descale_head_stride, 1);
  }
}

static attn_seq geom_sequence(const attn_geom* g, int b) {
  attn_seq s;
  s.q_row0 = g->cu_q ? g->cu_q[b] : 0;
  s.seqlen_q = g->cu_q ? g->cu_q[b + 1] - g->cu_q[b] : g->seqlen_q;
  if (g->used_q) s.seqlen_q = g->used_q[b];
  if (g->page_table) {
    s.k_row0 = 0;
    s.seqlen_k = g->cache_seqlens ? g->cache_seqlens[b] : (g->used_k ? g->used_k[b] : g->seqlen_k);
  } else {
    s.k_row0 = g->cu_k ? g->cu_k[b] : 0;
    s.seqlen_k = g->cu_k ? g->cu_k[b + 1] - g->cu_k[b] : g->seqlen_k;
    if (g->used_k) s.seqlen_k = g->used_k[b];
  }
  return s;
}

/* The mask predicate of flashc.h, bottom-right aligned. */
static int visible(const attn_geom* g, const attn_seq* s, int i, int j) {
  if (j < 0 || j >= s->seqlen_k) return 0;
  int64_t diagonal = (int64_t)i + s->seqlen_k - s->seqlen_q;
  if (g->window_left >= 0 && (int64_t)j < diagonal - g->window_left) return 0;
  if (g->window_right >= 0 && (int64_t)j > diagonal + g->window_right) return 0;
  return 1;
}

static int64_t q_offset(const attn_geom* g, const attn_seq* s, int b, int64_t batch_stride,
                        int64_t row_stride, int64_t head_stride, int i, int h) {
  return (g->cu_q ? 0 : (int64_t)b * batch_stride) + (s->q_row0 + i) * row_stride + (int64_t)h * head_stride;
}

static int64_t kv_offset(const attn_geom* g, const attn_seq* s, int b, int64_t batch_stride,
                         int64_t row_stride, int64_t head_stride, int j, int h) {
  if (g->page_table) {
    int32_t page = g->page_table[(int64_t)b * g->page_table_stride + j / g->page_size];
    return (int64_t)page * batch_stride + (int64_t)(j % g->page_size) * row_stride + (int64_t)h * head_stride;
  }
  return (g->cu_k ? 0 : (int64_t)b * batch_stride) + (s->k_row0 + j) * row_stride + (int64_t)h * head_stride;
}

static int64_t lse_offset(const attn_geom* g, const attn_seq* s, int b, int h, int i) {
  return (g->cu_q ? 0 : (int64_t)b * g->lse_b) + (int64_t)h * g->lse_h + s->q_row0 + i;
}

static int check_range(const char* what, int64_t offset, int64_t length, int64_t count) {
  if (offset < 0 || offset + length > count) {
    printf("  oracle: %s offset %lld (+%lld) outside the buffer of %lld elements (test bug)\n", what,
           (long long)offset, (long long)length, (long long)count);
    return 0;
  }
  return 1;
}

static double descale_of(const float* descale, const attn_geom* g, int b, int kv_head) {
  if (!descale) return 1.0;
  return (double)descale[(int64_t)b * g->descale_b + (int64_t)kv_head * g->descale_h];
}

/* Loads rows x columns of a tensor into a dense double array (value · scale). */
static void load_rows(double* dst, const void* base, flashc_dtype dtype, const int64_t* offsets, int rows,
                      int columns, double scale) {
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < columns; ++c) dst[(int64_t)r * columns + c] = test_load(base, offsets[r] + c, dtype) * scale;
}

static void* oracle_calloc(size_t count, size_t size) {
  void* pointer = calloc(count ? count : 1, size ? size : 1);
  if (!pointer) test_fatal("oracle: out of memory");
  return pointer;
}

int oracle_attn_fwd(const flashc_attn_fwd_params* p, oracle_mode mode, double* o_ref,
                    unsigned char* o_mask, int64_t o_count, double* lse_ref, unsigned char* lse_mask,
                    int64_t lse_count) {
  attn_geom g;
  geom_fwd(&g, p);
  int d = g.head_dim, dv = g.head_dim_v, group = g.heads_q / g.heads_kv;
  int want_lse = p->lse != NULL && lse_ref != NULL;
  memset(o_mask, ORACLE_UNTOUCHED, (size_t)o_count);
  for (int64_t i = 0; i < o_count; ++i) o_ref[i] = 0.0;
  if (want_lse) {
    memset(lse_mask, ORACLE_UNTOUCHED, (size_t)lse_count);
    for (int64_t i = 0; i < lse_count; ++i) lse_ref[i] = 0.0;
  }
  int is_fp8 = g.dtype == FLASHC_DTYPE_E4M3;
  /* The P·V operand precision of a straightforward kernel: the input dtype. */
  flashc_dtype p_dtype = g.dtype;

  for (int b = 0; b < g.batch; ++b) {
    attn_seq s = geom_sequence(&g, b);
    int sq = s.seqlen_q, sk = s.seqlen_k;
    if (sq <= 0) continue;
    int64_t* k_offsets = oracle_calloc((size_t)(sk > 0 ? sk : 1), sizeof(int64_t));
    int64_t* v_offsets = oracle_calloc((size_t)(sk > 0 ? sk : 1), sizeof(int64_t));
    double* keys = oracle_calloc((size_t)sk * d + 1, sizeof(double));
    double* values = oracle_calloc((size_t)sk * dv + 1, sizeof(double));
    double* scores = oracle_calloc((size_t)sk + 1, sizeof(double));
    double* query = oracle_calloc((size_t)d, sizeof(double));
    double* out = oracle_calloc((size_t)dv, sizeof(double));
    for (int kv_head = 0; kv_head < g.heads_kv; ++kv_head) {
      for (int j = 0; j < sk; ++j) {
        k_offsets[j] = kv_offset(&g, &s, b, g.k_b, g.k_r, g.k_h, j, kv_head);
        v_offsets[j] = kv_offset(&g, &s, b, g.v_b, g.v_r, g.v_h, j, kv_head);
      }
      /* Real values: stored · descale in fp64; the stored values in SAME mode (the
       * descales are applied to the fp32 score and output, as a fp8 kernel does). */
      double q_scale = descale_of(g.q_descale, &g, b, kv_head);
      double k_scale = descale_of(g.k_descale, &g, b, kv_head);
      double v_scale = descale_of(g.v_descale, &g, b, kv_head);
      load_rows(keys, p->k, g.dtype, k_offsets, sk, d, mode == ORACLE_FP64 ? k_scale : 1.0);
      load_rows(values, p->v, g.dtype, v_offsets, sk, dv, mode == ORACLE_FP64 ? v_scale : 1.0);
      for (int hh = 0; hh < group; ++hh) {
        int h = kv_head * group + hh;
        for (int i = 0; i < sq; ++i) {
          int64_t q_off = q_offset(&g, &s, b, g.q_b, g.q_r, g.q_h, i, h);
          int64_t o_off = q_offset(&g, &s, b, g.o_b, g.o_r, g.o_h, i, h);
          if (!check_range("o", o_off, dv, o_count)) return -1;
          int64_t l_off = want_lse ? lse_offset(&g, &s, b, h, i) : 0;
          if (want_lse && !check_range("lse", l_off, 1, lse_count)) return -1;
          int any = 0;
          for (int j = 0; j < sk; ++j) any |= visible(&g, &s, i, j);
          if (!any) {
            for (int c = 0; c < dv; ++c) {
              o_ref[o_off + c] = 0.0;
              o_mask[o_off + c] = ORACLE_EXACT;
            }
            if (want_lse) {
              lse_ref[l_off] = -INFINITY;
              lse_mask[l_off] = ORACLE_EXACT;
            }
            continue;
          }
          if (mode == ORACLE_FP64) {
            for (int c = 0; c < d; ++c) query[c] = test_load(p->q, q_off + c, g.dtype) * q_scale;
            double row_max = -INFINITY;
            for (int j = 0; j < sk; ++j) {
              if (!visible(&g, &s, i, j)) continue;
              double dot = 0.0;
              const double* key = keys + (int64_t)j * d;
              for (int c = 0; c < d; ++c) dot += query[c] * key[c];
              double score = dot * g.softmax_scale;
              if (g.softcap > 0.0) score = g.softcap * tanh(score / g.softcap);
              scores[j] = score;
              if (score > row_max) row_max = score;
            }
            double sum = 0.0;
            for (int c = 0; c < dv; ++c) out[c] = 0.0;
            for (int j = 0; j < sk; ++j) {
              if (!visible(&g, &s, i, j)) continue;
              double weight = exp(scores[j] - row_max);
              sum += weight;
              const double* value = values + (int64_t)j * dv;
              for (int c = 0; c < dv; ++c) out[c] += weight * value[c];
            }
            for (int c = 0; c < dv; ++c) {
              o_ref[o_off + c] = out[c] / sum;
              o_mask[o_off + c] = ORACLE_COMPARE;
            }
            if (want_lse) {
              lse_ref[l_off] = row_max + log(sum);
              lse_mask[l_off] = ORACLE_COMPARE;
            }
          } else {
            /* fp32 throughout, scale (and fp8 descales) folded into the score scale, P rounded
             * to the input dtype before P·V, the row sum from the unrounded P. */
            float score_scale = (float)g.softmax_scale;
            if (is_fp8) score_scale = (float)((double)score_scale * (float)q_scale * (float)k_scale);
            float softcap = (float)g.softcap;
            float row_max = -INFINITY;
            for (int c = 0; c < d; ++c) query[c] = (float)test_load(p->q, q_off + c, g.dtype);
            for (int j = 0; j < sk; ++j) {
              if (!visible(&g, &s, i, j)) continue;
              float dot = 0.0f;
              const double* key = keys + (int64_t)j * d;
              for (int c = 0; c < d; ++c) dot += (float)query[c] * (float)key[c];
              float score = dot * score_scale;
              if (softcap > 0.0f) score = softcap * tanhf(score / softcap);
              scores[j] = score;
              if (score > row_max) row_max = score;
            }
            float sum = 0.0f;
            float acc[512 + 1];
            float* accumulator = dv <= 512 ? acc : oracle_calloc((size_t)dv, sizeof(float));
            for (int c = 0; c < dv; ++c) accumulator[c] = 0.0f;
            for (int j = 0; j < sk; ++j) {
              if (!visible(&g, &s, i, j)) continue;
              float weight = expf((float)scores[j] - row_max);
              sum += weight;
              float weight_rounded = (float)test_round(weight, p_dtype);
              const double* value = values + (int64_t)j * dv;
              for (int c = 0; c < dv; ++c) accumulator[c] += weight_rounded * (float)value[c];
            }
            float out_scale = 1.0f / sum;
            if (is_fp8) out_scale *= (float)v_scale;
            for (int c = 0; c < dv; ++c) {
              o_ref[o_off + c] = (double)(accumulator[c] * out_scale);
              o_mask[o_off + c] = ORACLE_COMPARE;
            }
            if (accumulator != acc) free(accumulator);
            if (want_lse) {
              lse_ref[l_off] = (double)(row_max + logf(sum));
              lse_mask[l_off] = ORACLE_COMPARE;
            }
          }
        }
      }
    }
    free(k_offsets);
    free(v_offsets);
    free(keys);
    free(values);
    free(scores);
    free(query);
    free(out);
  }
  return 0;
}

/* ======================================================================================== */
/* Backward                                                                                  */
/* ======================================================================================== */

typedef struct bwd_geom {
  attn_geom g; /* q, k, v, o (as given), lse */
  int64_t do_b, do_r, do_h, dq_b, dq_r, dq_h, dk_b, dk_r, dk_h, dv_b, dv_r, dv_h;
} bwd_geom;

static void geom_bwd(bwd_geom* bg, const flashc_attn_bwd_params* p) {
  memset(bg, 0, sizeof *bg);
  attn_geom* g = &bg->g;
  geom_common(g, p->dtype, p->batch, p->seqlen_q, p->seqlen_k, p->heads_q, p->heads_kv, p->head_dim,
              p->head_dim_v, p->softmax_scale, p->causal, p->window_left, p->window_right, p->softcap);
  int hq = g->heads_q, hkv = g->heads_kv, d = g->head_dim, dv = g->head_dim_v;
  int64_t sq = p->seqlen_q, sk = p->seqlen_k;
  g->cu_q = p->cu_seqlens_q;
  g->cu_k = p->cu_seqlens_k;
  g->used_q = p->seqused_q;
  g->used_k = p->seqused_k;
  tensor_strides(p->q_batch_stride, p->q_row_stride, p->q_head_stride, sq, hq, d,
                 &g->q_b, &g->q_r, &g->q_h);
  tensor_strides(p->k_batch_stride, p->k_row_stride, p->k_head_stride, sk, hkv, d,
                 &g->k_b, &g->k_r, &g->k_h);
  tensor_strides(p->v_batch_stride, p->v_row_stride, p->v_head_stride, sk, hkv, dv,
                 &g->v_b, &g->v_r, &g->v_h);
  tensor_strides(p->o_batch_stride, p->o_row_stride, p->o_head_stride, sq, hq, dv,
                 &g->o_b, &g->o_r, &g->o_h);
  g->lse_h = default_if_zero(p->lse_head_stride, p->cu_seqlens_q ? p->total_q : p->seqlen_q);
  g->lse_b = default_if_zero(p->lse_batch_stride, (int64_t)hq * sq);
  tensor_strides(p->dout_batch_stride, p->dout_row_stride, p->dout_head_stride, sq, hq, dv,
                 &bg->do_b, &bg->do_r, &bg->do_h);
  tensor_strides(p->dq_batch_stride, p->dq_row_stride, p->dq_head_stride, sq, hq, d,
                 &bg->dq_b, &bg->dq_r, &bg->dq_h);
  tensor_strides(p->dk_batch_stride, p->dk_row_stride, p->dk_head_stride, sk, hkv, d,
                 &bg->dk_b, &bg->dk_r, &bg->dk_h);
  tensor_strides(p->dv_batch_stride, p->dv_row_stride, p->dv_head_stride, sk, hkv, dv,
                 &bg->dv_b, &bg->dv_r, &bg->dv_h);
}

/* Marks the full rows of a q-side / k-side tensor of sequence b as DONT_CARE (rows beyond
 * seqused within the sequence's span), then the used ones are overwritten by the caller. */
static void mark_rows(unsigned char* mask, int64_t count, int64_t base_offset, int64_t row_stride,
                      int64_t head_stride, int rows, int heads, int columns, unsigned char value) {
  for (int r = 0; r < rows; ++r)
    for (int h = 0; h < heads; ++h) {
      int64_t offset = base_offset + (int64_t)r * row_stride + (int64_t)h * head_stride;
      for (int c = 0; c < columns; ++c)
        if (offset + c >= 0 && offset + c < count) mask[offset + c] = value;
    }
}

int oracle_attn_bwd(const flashc_attn_bwd_params* p, oracle_mode mode, double* dq_ref,
                    unsigned char* dq_mask, int64_t dq_count, double* dk_ref, unsigned char* dk_mask,
                    int64_t dk_count, double* dv_ref, unsigned char* dv_mask, int64_t dv_count) {
  bwd_geom bg;
  geom_bwd(&bg, p);
  attn_geom* g = &bg.g;
  int d = g->head_dim, dv = g->head_dim_v, group = g->heads_q / g->heads_kv;
  flashc_dtype dt = g->dtype;
  memset(dq_mask, ORACLE_UNTOUCHED, (size_t)dq_count);
  memset(dk_mask, ORACLE_UNTOUCHED, (size_t)dk_count);
  memset(dv_mask, ORACLE_UNTOUCHED, (size_t)dv_count);
  for (int64_t i = 0; i < dq_count; ++i) dq_ref[i] = 0.0;
  for (int64_t i = 0; i < dk_count; ++i) dk_ref[i] = 0.0;
  for (int64_t i = 0; i < dv_count; ++i) dv_ref[i] = 0.0;
  int same = mode == ORACLE_SAME;

  for (int b = 0; b < g->batch; ++b) {
    attn_seq s = geom_sequence(g, b);
    int sq = s.seqlen_q, sk = s.seqlen_k;
    /* The full extent of the sequence (before seqused) is unspecified territory. */
    int full_q = g->cu_q ? g->cu_q[b + 1] - g->cu_q[b] : g->seqlen_q;
    int full_k = g->cu_k ? g->cu_k[b + 1] - g->cu_k[b] : g->seqlen_k;
    {
      attn_seq s0 = s;
      mark_rows(dq_mask, dq_count, q_offset(g, &s0, b, bg.dq_b, bg.dq_r, bg.dq_h, 0, 0), bg.dq_r, bg.dq_h,
                full_q, g->heads_q, d, ORACLE_DONT_CARE);
      mark_rows(dk_mask, dk_count, kv_offset(g, &s0, b, bg.dk_b, bg.dk_r, bg.dk_h, 0, 0), bg.dk_r, bg.dk_h,
                full_k, g->heads_kv, d, ORACLE_DONT_CARE);
      mark_rows(dv_mask, dv_count, kv_offset(g, &s0, b, bg.dv_b, bg.dv_r, bg.dv_h, 0, 0), bg.dv_r, bg.dv_h,
                full_k, g->heads_kv, dv, ORACLE_DONT_CARE);
    }
    size_t qn = (size_t)(sq > 0 ? sq : 1), kn = (size_t)(sk > 0 ? sk : 1);
    double* Q = oracle_calloc(qn * d, sizeof(double));
    double* dO = oracle_calloc(qn * dv, sizeof(double));
    double* O = oracle_calloc(qn * dv, sizeof(double));
    double* lse = oracle_calloc(qn, sizeof(double));
    double* K = oracle_calloc(kn * d, sizeof(double));
    double* V = oracle_calloc(kn * dv, sizeof(double));
    double* dQ = oracle_calloc(qn * d, sizeof(double));
    double* dK = oracle_calloc(kn * d, sizeof(double));
    double* dV = oracle_calloc(kn * dv, sizeof(double));
    double* P = oracle_calloc(qn * kn, sizeof(double));
    double* T = oracle_calloc(qn * kn, sizeof(double)); /* tanh of the softcap, or 0 */
    int64_t* offsets = oracle_calloc(qn > kn ? qn : kn, sizeof(int64_t));
    for (int kv_head = 0; kv_head < g->heads_kv; ++kv_head) {
      for (size_t x = 0; x < kn * d; ++x) dK[x] = 0.0;
      for (size_t x = 0; x < kn * dv; ++x) dV[x] = 0.0;
      for (int j = 0; j < sk; ++j) offsets[j] = kv_offset(g, &s, b, g->k_b, g->k_r, g->k_h, j, kv_head);
      load_rows(K, p->k, dt, offsets, sk, d, 1.0);
      for (int j = 0; j < sk; ++j) offsets[j] = kv_offset(g, &s, b, g->v_b, g->v_r, g->v_h, j, kv_head);
      load_rows(V, p->v, dt, offsets, sk, dv, 1.0);
      for (int hh = 0; hh < group; ++hh) {
        int h = kv_head * group + hh;
        for (int i = 0; i < sq; ++i) offsets[i] = q_offset(g, &s, b, g->q_b, g->q_r, g->q_h, i, h);
        load_rows(Q, p->q, dt, offsets, sq, d, 1.0);
        for (int i = 0; i < sq; ++i) offsets[i] = q_offset(g, &s, b, bg.do_b, bg.do_r, bg.do_h, i, h);
        load_rows(dO, p->dout, dt, offsets, sq, dv, 1.0);
        for (int i = 0; i < sq; ++i) offsets[i] = q_offset(g, &s, b, g->o_b, g->o_r, g->o_h, i, h);
        if (same) load_rows(O, p->o, dt, offsets, sq, dv, 1.0);
        /* scores and probabilities */
        for (int i = 0; i < sq; ++i) {
          double row_max = -INFINITY;
          for (int j = 0; j < sk; ++j) {
            double* pij = &P[(size_t)i * kn + j];
            T[(size_t)i * kn + j] = 0.0;
            if (!visible(g, &s, i, j)) {
              *pij = -INFINITY;
              continue;
            }
            double score;
            if (same) {
              float dot = 0.0f;
              for (int c = 0; c < d; ++c) dot += (float)Q[(size_t)i * d + c] * (float)K[(size_t)j * d + c];
              float sc = dot * (float)g->softmax_scale;
              if (g->softcap > 0.0) {
                float t = tanhf(sc / (float)g->softcap);
                T[(size_t)i * kn + j] = t;
                sc = (float)g->softcap * t;
              }
              score = sc;
            } else {
              double dot = 0.0;
              for (int c = 0; c < d; ++c) dot += Q[(size_t)i * d + c] * K[(size_t)j * d + c];
              score = dot * g->softmax_scale;
              if (g->softcap > 0.0) {
                double t = tanh(score / g->softcap);
                T[(size_t)i * kn + j] = t;
                score = g->softcap * t;
              }
            }
            *pij = score;
            if (score > row_max) row_max = score;
          }
          if (same) {
            /* the given lse (fp32) */
            int64_t l_off = lse_offset(g, &s, b, h, i);
            lse[i] = (double)p->lse[l_off];
            for (int j = 0; j < sk; ++j) {
              double* pij = &P[(size_t)i * kn + j];
              *pij = (*pij == -INFINITY || lse[i] == -INFINITY) ? 0.0 : (double)expf((float)*pij - (float)lse[i]);
            }
          } else {
            double sum = 0.0;
            for (int j = 0; j < sk; ++j) {
              double* pij = &P[(size_t)i * kn + j];
              *pij = *pij == -INFINITY ? 0.0 : exp(*pij - row_max);
              sum += *pij;
            }
            for (int j = 0; j < sk; ++j)
              if (sum > 0.0) P[(size_t)i * kn + j] /= sum;
            for (int c = 0; c < dv; ++c) {
              double acc = 0.0;
              for (int j = 0; j < sk; ++j) acc += P[(size_t)i * kn + j] * V[(size_t)j * dv + c];
              O[(size_t)i * dv + c] = acc;
            }
          }
        }
        /* gradients */
        for (size_t x = 0; x < qn * d; ++x) dQ[x] = 0.0;
        for (int i = 0; i < sq; ++i) {
          if (same) {
            float D = 0.0f;
            for (int c = 0; c < dv; ++c) D += (float)dO[(size_t)i * dv + c] * (float)O[(size_t)i * dv + c];
            for (int j = 0; j < sk; ++j) {
              float pij = (float)P[(size_t)i * kn + j];
              if (pij == 0.0f && !visible(g, &s, i, j)) continue;
              float p_rounded = (float)test_round(pij, dt);
              float dp = 0.0f;
              for (int c = 0; c < dv; ++c) {
                dV[(size_t)j * dv + c] = (double)((float)dV[(size_t)j * dv + c] + p_rounded * (float)dO[(size_t)i * dv + c]);
                dp += (float)dO[(size_t)i * dv + c] * (float)V[(size_t)j * dv + c];
              }
              float ds = pij * (dp - D);
              if (g->softcap > 0.0) {
                float t = (float)T[(size_t)i * kn + j];
                ds *= 1.0f - t * t;
              }
              float ds_rounded = (float)test_round(ds, dt);
              for (int c = 0; c < d; ++c) {
                dQ[(size_t)i * d + c] = (double)((float)dQ[(size_t)i * d + c] + ds_rounded * (float)K[(size_t)j * d + c]);
                dK[(size_t)j * d + c] = (double)((float)dK[(size_t)j * d + c] + ds_rounded * (float)Q[(size_t)i * d + c]);
              }
            }
          } else {
            double D = 0.0;
            for (int c = 0; c < dv; ++c) D += dO[(size_t)i * dv + c] * O[(size_t)i * dv + c];
            for (int j = 0; j < sk; ++j) {
              if (!visible(g, &s, i, j)) continue;
              double pij = P[(size_t)i * kn + j];
              double dp = 0.0;
              for (int c = 0; c < dv; ++c) {
                dV[(size_t)j * dv + c] += pij * dO[(size_t)i * dv + c];
                dp += dO[(size_t)i * dv + c] * V[(size_t)j * dv + c];
              }
              double ds = pij * (dp - D);
              if (g->softcap > 0.0) {
                double t = T[(size_t)i * kn + j];
                ds *= 1.0 - t * t;
              }
              for (int c = 0; c < d; ++c) {
                dQ[(size_t)i * d + c] += ds * K[(size_t)j * d + c];
                dK[(size_t)j * d + c] += ds * Q[(size_t)i * d + c];
              }
            }
          }
        }
        for (int i = 0; i < sq; ++i) {
          int64_t off = q_offset(g, &s, b, bg.dq_b, bg.dq_r, bg.dq_h, i, h);
          if (!check_range("dq", off, d, dq_count)) return -1;
          for (int c = 0; c < d; ++c) {
            double value = dQ[(size_t)i * d + c];
            dq_ref[off + c] = same ? (double)((float)value * (float)g->softmax_scale) : value * g->softmax_scale;
            dq_mask[off + c] = ORACLE_COMPARE;
          }
        }
      }
      for (int j = 0; j < sk; ++j) {
        int64_t off_k = kv_offset(g, &s, b, bg.dk_b, bg.dk_r, bg.dk_h, j, kv_head);
        int64_t off_v = kv_offset(g, &s, b, bg.dv_b, bg.dv_r, bg.dv_h, j, kv_head);
        if (!check_range("dk", off_k, d, dk_count) || !check_range("dv", off_v, dv, dv_count)) return -1;
        for (int c = 0; c < d; ++c) {
          double value = dK[(size_t)j * d + c];
          dk_ref[off_k + c] = same ? (double)((float)value * (float)g->softmax_scale) : value * g->softmax_scale;
          dk_mask[off_k + c] = ORACLE_COMPARE;
        }
        for (int c = 0; c < dv; ++c) {
          dv_ref[off_v + c] = dV[(size_t)j * dv + c];
          dv_mask[off_v + c] = ORACLE_COMPARE;
        }
      }
    }
    free(Q), free(dO), free(O), free(lse), free(K), free(V), free(dQ), free(dK), free(dV), free(P), free(T);
    free(offsets);
  }
  return 0;
}

/* ======================================================================================== */
/* Combine                                                                                   */
/* ======================================================================================== */

int oracle_attn_combine(const flashc_attn_combine_params* p, oracle_mode mode, double* o_ref,
                        unsigned char* o_mask, int64_t o_count, double* lse_ref,
                        unsigned char* lse_mask, int64_t lse_count) {
  int S = p->num_splits, B = p->batch, L = p->seqlen, H = p->heads, dv = p->head_dim_v;
  int64_t ops_h = default_if_zero(p->o_partial_head_stride, dv);
  int64_t ops_r = default_if_zero(p->o_partial_row_stride, (int64_t)H * dv);
  int64_t ops_b = default_if_zero(p->o_partial_batch_stride, (int64_t)L * H * dv);
  int64_t ops_s = default_if_zero(p->o_partial_split_stride, (int64_t)B * L * H * dv);
  int64_t lps_r = default_if_zero(p->lse_partial_row_stride, 1);
  int64_t lps_h = default_if_zero(p->lse_partial_head_stride, L);
  int64_t lps_b = default_if_zero(p->lse_partial_batch_stride, (int64_t)H * L);
  int64_t lps_s = default_if_zero(p->lse_partial_split_stride, (int64_t)B * H * L);
  int64_t o_h = default_if_zero(p->o_head_stride, dv);
  int64_t o_r = default_if_zero(p->o_row_stride, (int64_t)H * dv);
  int64_t o_b = default_if_zero(p->o_batch_stride, (int64_t)L * H * dv);
  int64_t l_h = default_if_zero(p->lse_head_stride, L);
  int64_t l_b = default_if_zero(p->lse_batch_stride, (int64_t)H * L);
  int want_lse = p->lse != NULL && lse_ref != NULL;
  memset(o_mask, ORACLE_UNTOUCHED, (size_t)o_count);
  for (int64_t i = 0; i < o_count; ++i) o_ref[i] = 0.0;
  if (want_lse) {
    memset(lse_mask, ORACLE_UNTOUCHED, (size_t)lse_count);
    for (int64_t i = 0; i < lse_count; ++i) lse_ref[i] = 0.0;
  }
  for (int b = 0; b < B; ++b)
    for (int i = 0; i < L; ++i)
      for (int h = 0; h < H; ++h) {
        int64_t o_off = (int64_t)b * o_b + (int64_t)i * o_r + (int64_t)h * o_h;
        if (!check_range("o", o_off, dv, o_count)) return -1;
        int64_t l_off = (int64_t)b * l_b + (int64_t)h * l_h + i;
        if (want_lse && !check_range("lse", l_off, 1, lse_count)) return -1;
        double row_max = -INFINITY;
        for (int s = 0; s < S; ++s) {
          double l = p->lse_partial[(int64_t)s * lps_s + (int64_t)b * lps_b + (int64_t)h * lps_h + (int64_t)i * lps_r];
          if (l > row_max) row_max = l;
        }
        if (row_max == -INFINITY) {
          for (int c = 0; c < dv; ++c) o_ref[o_off + c] = 0.0, o_mask[o_off + c] = ORACLE_EXACT;
          if (want_lse) lse_ref[l_off] = -INFINITY, lse_mask[l_off] = ORACLE_EXACT;
          continue;
        }
        double lse;
        if (mode == ORACLE_SAME) {
          float sum = 0.0f;
          for (int s = 0; s < S; ++s) {
            float l = p->lse_partial[(int64_t)s * lps_s + (int64_t)b * lps_b + (int64_t)h * lps_h + (int64_t)i * lps_r];
            if (l != -INFINITY) sum += expf(l - (float)row_max);
          }
          lse = (double)((float)row_max + logf(sum));
        } else {
          double sum = 0.0;
          for (int s = 0; s < S; ++s) {
            double l = p->lse_partial[(int64_t)s * lps_s + (int64_t)b * lps_b + (int64_t)h * lps_h + (int64_t)i * lps_r];
            if (l != -INFINITY) sum += exp(l - row_max);
          }
          lse = row_max + log(sum);
        }
        for (int c = 0; c < dv; ++c) {
          double acc = 0.0;
          float acc_f = 0.0f;
          for (int s = 0; s < S; ++s) {
            double l = p->lse_partial[(int64_t)s * lps_s + (int64_t)b * lps_b + (int64_t)h * lps_h + (int64_t)i * lps_r];
            if (l == -INFINITY) continue;
            double value = p->o_partial[(int64_t)s * ops_s + (int64_t)b * ops_b + (int64_t)i * ops_r + (int64_t)h * ops_h + c];
            if (mode == ORACLE_SAME)
              acc_f += expf((float)l - (float)lse) * (float)value;
            else
              acc += exp(l - lse) * value;
          }
          o_ref[o_off + c] = mode == ORACLE_SAME ? (double)acc_f : acc;
          o_mask[o_off + c] = ORACLE_COMPARE;
        }
        if (want_lse) lse_ref[l_off] = lse, lse_mask[l_off] = ORACLE_COMPARE;
      }
  return 0;
}

/* ======================================================================================== */
/* GEMM                                                                                      */
/* ======================================================================================== */

static int64_t matrix_offset(flashc_layout layout, int64_t ld, int64_t i, int64_t j) {
  return layout == FLASHC_ROW_MAJOR ? i * ld + j : j * ld + i;
}

static double gelu_tanh(double x) {
  const double k = 0.7978845608028654; /* sqrt(2 / pi) */
  return 0.5 * x * (1.0 + tanh(k * (x + 0.044715 * x * x * x)));
}

int oracle_gemm(const flashc_gemm_params* p, oracle_mode mode, double* d_ref, unsigned char* d_mask,
                int64_t d_count) {
  int m = p->m, n = p->n, k = p->k, batches = p->batch_count;
  int64_t lda = default_if_zero(p->lda, p->a_layout == FLASHC_ROW_MAJOR ? k : m);
  int64_t ldb = default_if_zero(p->ldb, p->b_layout == FLASHC_ROW_MAJOR ? n : k);
  int64_t ldc = default_if_zero(p->ldc, p->cd_layout == FLASHC_ROW_MAJOR ? n : m);
  int64_t ldd = default_if_zero(p->ldd, p->cd_layout == FLASHC_ROW_MAJOR ? n : m);
  int64_t stride_d = p->stride_d ? p->stride_d : (int64_t)(p->cd_layout == FLASHC_ROW_MAJOR ? m : n) * ldd;
  double scale = (p->scale_a ? (double)*p->scale_a : 1.0) * (p->scale_b ? (double)*p->scale_b : 1.0);
  int use_c = p->beta != 0.0f;
  memset(d_mask, ORACLE_UNTOUCHED, (size_t)d_count);
  for (int64_t i = 0; i < d_count; ++i) d_ref[i] = 0.0;
  double* A = oracle_calloc((size_t)m * k, sizeof(double));
  /* B transposed (n × k) so that both operands of each dot product are read contiguously:
   * the reference of a large case takes seconds, not minutes. */
  double* Bt = oracle_calloc((size_t)k * n, sizeof(double));
  for (int batch = 0; batch < batches; ++batch) {
    int64_t a0 = (int64_t)batch * p->stride_a, b0 = (int64_t)batch * p->stride_b;
    int64_t c0 = (int64_t)batch * p->stride_c, d0 = (int64_t)batch * stride_d;
    for (int i = 0; i < m; ++i)
      for (int x = 0; x < k; ++x) A[(size_t)i * k + x] = test_load(p->a, a0 + matrix_offset(p->a_layout, lda, i, x), p->a_dtype);
    for (int x = 0; x < k; ++x)
      for (int j = 0; j < n; ++j) Bt[(size_t)j * k + x] = test_load(p->b, b0 + matrix_offset(p->b_layout, ldb, x, j), p->b_dtype);
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        int64_t d_off = d0 + matrix_offset(p->cd_layout, ldd, i, j);
        if (!check_range("d", d_off, 1, d_count)) {
          free(A), free(Bt);
          return -1;
        }
        double c_value = use_c ? test_load(p->c, c0 + matrix_offset(p->cd_layout, ldc, i, j), p->d_dtype) : 0.0;
        double bias = p->bias ? test_load(p->bias, j, p->d_dtype) : 0.0;
        double value;
        if (mode == ORACLE_SAME) {
          float acc = 0.0f;
          for (int x = 0; x < k; ++x) acc += (float)A[(size_t)i * k + x] * (float)Bt[(size_t)j * k + x];
          float v = p->alpha * ((float)scale * acc);
          if (use_c) v += p->beta * (float)c_value;
          v += (float)bias;
          if (p->activation == FLASHC_ACTIVATION_RELU) v = v > 0.0f ? v : 0.0f;
          if (p->activation == FLASHC_ACTIVATION_GELU) { /* in fp32, as a kernel's epilogue computes it */
            const float k = 0.7978845608f;
            v = 0.5f * v * (1.0f + tanhf(k * (v + 0.044715f * v * v * v)));
          }
          value = v;
        } else {
          double acc = 0.0;
          for (int x = 0; x < k; ++x) acc += A[(size_t)i * k + x] * Bt[(size_t)j * k + x];
          value = (double)p->alpha * scale * acc;
          if (use_c) value += (double)p->beta * c_value;
          value += bias;
          if (p->activation == FLASHC_ACTIVATION_RELU) value = value > 0.0 ? value : 0.0;
          if (p->activation == FLASHC_ACTIVATION_GELU) value = gelu_tanh(value);
        }
        d_ref[d_off] = value;
        d_mask[d_off] = ORACLE_COMPARE;
      }
  }
  free(A), free(Bt);
  return 0;
}

/* ======================================================================================== */
/* Checks                                                                                    */
/* ======================================================================================== */

int test_check_written(const char* name, const void* out, flashc_dtype dtype, int64_t count,
                       const unsigned char* mask) {
  int64_t clobbered = 0, unwritten = 0, first_bad = -1;
  for (int64_t i = 0; i < count; ++i) {
    if (mask[i] == ORACLE_UNTOUCHED) {
      if (!test_is_poison(out, i, dtype)) {
        if (first_bad < 0) first_bad = i;
        ++clobbered;
      }
    } else if (mask[i] == ORACLE_COMPARE || mask[i] == ORACLE_EXACT) {
      if (isnan(test_load(out, i, dtype))) {
        if (first_bad < 0) first_bad = i;
        ++unwritten;
      }
    }
  }
  if (clobbered || unwritten) {
    printf("  %s: %lld elements written that must stay untouched, %lld not written or NaN (first at %lld)\n",
           name, (long long)clobbered, (long long)unwritten, (long long)first_bad);
    return 0;
  }
  return 1;
}

int test_check_output(const char* name, const void* out, flashc_dtype dtype, int64_t count,
                      const double* ref64, const double* same, const unsigned char* mask, double atol,
                      test_check_result* result) {
  test_check_result r;
  memset(&r, 0, sizeof r);
  r.worst_index = -1;
  double sum_sq_err = 0.0, sum_sq_ref = 0.0, sum_sq_same = 0.0;
  int64_t first_problem = -1;
  for (int64_t i = 0; i < count; ++i) {
    if ((mask[i] == ORACLE_COMPARE || mask[i] == ORACLE_EXACT) && isfinite(ref64[i]) && fabs(ref64[i]) > r.max_ref)
      r.max_ref = fabs(ref64[i]);
  }
  if (atol < 0.0) {
    /* One unit in the last place of the output at its magnitude (2u). For fp32 outputs the
     * kernel's own arithmetic, not the output rounding, dominates: online-softmax rescaling
     * and the split-KV combine add rounding steps a naive fp32 loop does not have, so the
     * "2 x same" term can undershoot by a few ulps; 16 ulps (32u) cover that. */
    double ulps = dtype == FLASHC_DTYPE_FP32 ? 32.0 : 2.0;
    atol = ulps * test_unit_roundoff(dtype) * r.max_ref + 1e-30;
  }
  r.atol = atol;
  for (int64_t i = 0; i < count; ++i) {
    unsigned char m = mask[i];
    if (m == ORACLE_DONT_CARE) continue;
    if (m == ORACLE_UNTOUCHED) {
      if (!test_is_poison(out, i, dtype)) {
        ++r.clobbered;
        if (first_problem < 0) first_problem = i;
      }
      continue;
    }
    double value = test_load(out, i, dtype);
    if (test_is_poison(out, i, dtype)) {
      ++r.unwritten;
      if (first_problem < 0) first_problem = i;
      continue;
    }
    if (isnan(value)) {
      ++r.nan_count;
      if (first_problem < 0) first_problem = i;
      continue;
    }
    if (m == ORACLE_EXACT || !isfinite(ref64[i])) {
      if (!(value == ref64[i])) {
        ++r.exact_mismatch;
        if (first_problem < 0) first_problem = i;
      }
      continue;
    }
    ++r.compared;
    double error = fabs(value - ref64[i]);
    if (!(error <= r.max_error)) {
      r.max_error = error;
      r.worst_index = i;
    }
    sum_sq_err += error * error;
    sum_sq_ref += ref64[i] * ref64[i];
    if (same) {
      double e = fabs(same[i] - ref64[i]);
      if (!(e <= r.max_error_same)) r.max_error_same = e; /* a NaN here makes the bound NaN: fail */
      sum_sq_same += e * e;
    }
  }
  r.bound = 2.0 * r.max_error_same + r.atol;
  r.rel_l2 = sum_sq_ref > 0.0 ? sqrt(sum_sq_err / sum_sq_ref) : sqrt(sum_sq_err);
  /* The two oracle modes must agree closely, or "2 x same" would excuse anything: a guard
   * against a bug in one of the oracle's two code paths. */
  double same_rel_l2 = sum_sq_ref > 0.0 ? sqrt(sum_sq_same / sum_sq_ref) : sqrt(sum_sq_same);
  /* (only over enough elements: a handful of values can legitimately differ a lot relative to
   * their own tiny size, e.g. fp32 GELU of a large negative input, 0.5x(1 + tanh) cancelling) */
  int oracle_consistent = r.compared < 16 || same_rel_l2 <= TEST_ORACLE_MODES_MAX_REL_L2;
  if (!oracle_consistent)
    printf("  %s: the oracle's fp64 and same-precision results disagree (rel_l2 %.3e): test bug\n", name, same_rel_l2);
  r.pass = r.max_error <= r.bound && !r.nan_count && !r.unwritten && !r.clobbered && !r.exact_mismatch &&
           oracle_consistent;
  if (!r.pass) {
    printf("  %s: max_err %.3e > bound %.3e? (2*same %.3e + atol %.3e) rel_l2 %.3e max_ref %.3e; "
           "nan %lld, unwritten %lld, clobbered %lld, exact-mismatch %lld (first problem at %lld)\n",
           name, r.max_error, r.bound, 2.0 * r.max_error_same, r.atol, r.rel_l2, r.max_ref,
           (long long)r.nan_count, (long long)r.unwritten, (long long)r.clobbered, (long long)r.exact_mismatch,
           (long long)first_problem);
    if (r.worst_index >= 0)
      printf("    worst at element %lld: out %.8g ref64 %.8g same %.8g\n", (long long)r.worst_index,
             test_load(out, r.worst_index, dtype), ref64[r.worst_index], same ? same[r.worst_index] : NAN);
    if (first_problem >= 0)
      printf("    first problem at element %lld: out %.8g (poison %d) ref64 %.8g mask %d\n", (long long)first_problem,
             test_load(out, first_problem, dtype), test_is_poison(out, first_problem, dtype), ref64[first_problem],
             (int)mask[first_problem]);
  }
  if (result) *result = r;
  return r.pass;
}

/* ======================================================================================== */
/* Reporting                                                                                 */
/* ======================================================================================== */

static int g_cases = 0, g_failed = 0;

static void case_line(int pass, const char* format, va_list args) {
  ++g_cases;
  if (!pass) ++g_failed;
  printf("%s ", pass ? "PASS" : "FAIL");
  vprintf(format, args);
  printf("\n");
  fflush(stdout);
}

void test_case_pass(const char* format, ...) {
  va_list args;
  va_start(args, format);
  case_line(1, format, args);
  va_end(args);
}

void test_case_fail(const char* format, ...) {
  va_list args;
  va_start(args, format);
  case_line(0, format, args);
  va_end(args);
}

void test_case_result(int pass, const char* format, ...) {
  va_list args;
  va_start(args, format);
  case_line(pass, format, args);
  va_end(args);
}

int test_case_count(void) { return g_cases; }
int test_failed_count(void) { return g_failed; }

int test_summary(void) {
  printf("%d cases, %d failed\n", g_cases, g_failed);
  fflush(stdout);
  return g_failed ? TEST_EXIT_FAIL : TEST_EXIT_PASS;
}

void test_fatal(const char* format, ...) {
  va_list args;
  va_start(args, format);
  printf("FATAL (test bug): ");
  vprintf(format, args);
  printf("\n");
  va_end(args);
  fflush(stdout);
  exit(TEST_EXIT_FAIL);
}

const char* test_status_name(flashc_status status) { return flashc_status_name(status); }

void test_print_status(const char* what, flashc_status status) {
  printf("  %s returned %s (%d): %s\n", what, flashc_status_name(status), (int)status, flashc_last_error());
}
