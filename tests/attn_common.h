/*
 * attn_common.h — building attention problems for the tests: per-sequence lengths (fixed,
 * varlen with empty sequences, seqused), tensors in several layouts (packed defaults, padded
 * strides, heads-major (batch, heads, seqlen, d) via strides, packed QKV in one buffer), with
 * used elements random and everything else (padding, rows beyond seqused, unused pages)
 * poisoned so that a read of it shows up as NaN in the output.
 */
#ifndef FLASHC_TEST_ATTN_COMMON_H
#define FLASHC_TEST_ATTN_COMMON_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flashc.h"
#include "oracle.h"

enum { LAYOUT_PACKED = 0, LAYOUT_PADDED = 1, LAYOUT_HEADS_MAJOR = 2, LAYOUT_QKV = 3, LAYOUT_COUNT = 4 };
static const char* const layout_names[LAYOUT_COUNT] = {"packed", "padded", "heads-major", "qkv-packed"};

/* A strided 4-d tensor (batch, rows, heads, columns) in one buffer. */
typedef struct tensor4 {
  void* data;     /* start of element (0, 0, 0, 0) */
  void* buffer;   /* allocation (data may point inside a shared buffer) */
  int64_t count;  /* elements from data to the end of the allocation */
  flashc_dtype dtype;
  int batches, rows, heads, columns;
  int64_t batch_stride, row_stride, head_stride; /* actual strides */
  int explicit_strides;                          /* pass them to flashc, else 0 (= packed) */
} tensor4;

static inline int64_t tensor4_span(int batches, int rows, int heads, int columns, int64_t bs, int64_t rs, int64_t hs) {
  int64_t last = 0;
  if (batches > 0 && rows > 0 && heads > 0) last = (int64_t)(batches - 1) * bs + (int64_t)(rows - 1) * rs + (int64_t)(heads - 1) * hs;
  return last + columns;
}

/* Strides of a layout for (batches, rows, heads, columns); padded ones draw random gaps. */
static inline void layout_strides(int layout, test_rng* rng, int rows, int heads, int columns, int64_t* bs,
                                  int64_t* rs, int64_t* hs) {
  switch (layout) {
    case LAYOUT_PADDED:
      *hs = columns + test_rng_int(rng, 0, 5);
      *rs = (int64_t)heads * *hs + test_rng_int(rng, 1, 7);
      *bs = (int64_t)rows * *rs + test_rng_int(rng, 0, 9);
      break;
    case LAYOUT_HEADS_MAJOR:
      *rs = columns;
      *hs = (int64_t)rows * columns;
      *bs = (int64_t)heads * rows * columns;
      break;
    default:
      *hs = columns;
      *rs = (int64_t)heads * columns;
      *bs = (int64_t)rows * heads * columns;
      break;
  }
}

static inline tensor4 tensor4_make(int layout, test_rng* rng, flashc_dtype dtype, int batches, int rows, int heads,
                                   int columns) {
  tensor4 t;
  memset(&t, 0, sizeof t);
  t.dtype = dtype;
  t.batches = batches, t.rows = rows, t.heads = heads, t.columns = columns;
  layout_strides(layout, rng, rows, heads, columns, &t.batch_stride, &t.row_stride, &t.head_stride);
  t.explicit_strides = layout != LAYOUT_PACKED;
  int64_t guard = 23; /* poisoned elements after the last one: an overrun clobbers them */
  t.count = tensor4_span(batches, rows, heads, columns, t.batch_stride, t.row_stride, t.head_stride) + guard;
  t.buffer = test_alloc((size_t)t.count * test_dtype_size(dtype));
  t.data = t.buffer;
  return t;
}

static inline int64_t tensor4_offset(const tensor4* t, int b, int64_t row, int h) {
  return (int64_t)b * t->batch_stride + row * t->row_stride + (int64_t)h * t->head_stride;
}

/* One random element: scale·N(0,1) with rare outliers (×4..×12). */
static inline void store_random(test_rng* rng, void* base, int64_t index, flashc_dtype dtype, double scale) {
  double value = scale * test_rng_normal(rng);
  if (test_rng_uniform(rng) < 1.0 / 400.0) value *= 4.0 + 8.0 * test_rng_uniform(rng);
  test_store(base, index, dtype, value);
}

/* Fills rows [0, used) of every (batch, head) with random values (rows given by row0 + r). */
/* The largest 2-norm of a row (one head's `columns` values) among rows [row0, row0 + used) of
 * batch b, every head: bounds |q·k| sums for the scores' error term (gpu_attn_fwd.c). */
static inline double tensor4_max_row_norm(const tensor4* t, int b, int64_t row0, int used) {
  double best = 0.0;
  for (int r = 0; r < used; ++r)
    for (int h = 0; h < t->heads; ++h) {
      int64_t offset = tensor4_offset(t, b, row0 + r, h);
      double sum = 0.0;
      for (int c = 0; c < t->columns; ++c) {
        double x = test_load(t->data, offset + c, t->dtype);
        sum += x * x;
      }
      if (sum > best) best = sum;
    }
  return sqrt(best);
}

static inline void tensor4_fill_rows(tensor4* t, test_rng* rng, int b, int64_t row0, int used, double scale) {
  for (int r = 0; r < used; ++r)
    for (int h = 0; h < t->heads; ++h) {
      int64_t offset = tensor4_offset(t, b, row0 + r, h);
      for (int c = 0; c < t->columns; ++c) store_random(rng, t->data, offset + c, t->dtype, scale);
    }
  if (used > 0) { /* one guaranteed outlier per filled block */
    int r = test_rng_int(rng, 0, used - 1), h = test_rng_int(rng, 0, t->heads - 1), c = test_rng_int(rng, 0, t->columns - 1);
    test_store(t->data, tensor4_offset(t, b, row0 + r, h) + c, t->dtype,
               (test_rng_next(rng) & 1 ? 1.0 : -1.0) * scale * (4.0 + 6.0 * test_rng_uniform(rng)));
  }
}

static inline void tensor4_free(tensor4* t) {
  if (t->buffer) test_free(t->buffer);
  t->buffer = t->data = NULL;
}

/* Per-sequence lengths of a batch. */
typedef struct seq_lengths {
  int batch;
  int varlen_q, varlen_k;
  int* len_q;  /* full lengths */
  int* len_k;
  int* used_q; /* seqused (== len when not given) */
  int* used_k;
  int32_t* cu_q; /* batch + 1 */
  int32_t* cu_k;
  int32_t* seqused_q; /* NULL unless given */
  int32_t* seqused_k;
  int total_q, total_k;
} seq_lengths;

/*
 * max_q / max_k are seqlen_q / seqlen_k (the maxima with varlen). empty: make some varlen
 * sequences empty. with_used_*: draw seqused in [0, len].
 */
static inline seq_lengths seq_lengths_make(test_rng* rng, int batch, int max_q, int max_k, int varlen_q, int varlen_k,
                                           int empty, int with_used_q, int with_used_k) {
  seq_lengths s;
  memset(&s, 0, sizeof s);
  s.batch = batch;
  s.varlen_q = varlen_q, s.varlen_k = varlen_k;
  s.len_q = calloc((size_t)batch, sizeof(int));
  s.len_k = calloc((size_t)batch, sizeof(int));
  s.used_q = calloc((size_t)batch, sizeof(int));
  s.used_k = calloc((size_t)batch, sizeof(int));
  s.cu_q = calloc((size_t)batch + 1, sizeof(int32_t));
  s.cu_k = calloc((size_t)batch + 1, sizeof(int32_t));
  if (!s.len_q || !s.len_k || !s.used_q || !s.used_k || !s.cu_q || !s.cu_k) test_fatal("out of memory");
  int full_q = test_rng_int(rng, 0, batch - 1), full_k = test_rng_int(rng, 0, batch - 1);
  for (int b = 0; b < batch; ++b) {
    s.len_q[b] = varlen_q ? (b == full_q ? max_q : test_rng_int(rng, 1, max_q)) : max_q;
    s.len_k[b] = varlen_k ? (b == full_k ? max_k : test_rng_int(rng, 1, max_k)) : max_k;
    if (empty && varlen_q && b != full_q && test_rng_uniform(rng) < 0.4) s.len_q[b] = 0;
    if (empty && varlen_k && b != full_k && test_rng_uniform(rng) < 0.4) s.len_k[b] = 0;
    s.cu_q[b + 1] = s.cu_q[b] + s.len_q[b];
    s.cu_k[b + 1] = s.cu_k[b] + s.len_k[b];
  }
  if (empty && batch >= 3) { /* at least one empty sequence */
    int b = (full_q + 1) % batch;
    if (varlen_q && s.len_q[b] != 0) s.len_q[b] = 0;
    if (varlen_k && b != full_k && test_rng_uniform(rng) < 0.5) s.len_k[b] = 0;
    for (int i = 0; i < batch; ++i) {
      s.cu_q[i + 1] = s.cu_q[i] + s.len_q[i];
      s.cu_k[i + 1] = s.cu_k[i] + s.len_k[i];
    }
  }
  s.total_q = s.cu_q[batch];
  s.total_k = s.cu_k[batch];
  for (int b = 0; b < batch; ++b) {
    s.used_q[b] = with_used_q ? test_rng_int(rng, 0, s.len_q[b]) : s.len_q[b];
    s.used_k[b] = with_used_k ? test_rng_int(rng, 0, s.len_k[b]) : s.len_k[b];
  }
  if (with_used_q) { /* keep at least one sequence with rows */
    int b = test_rng_int(rng, 0, batch - 1);
    if (s.len_q[b] > 0 && s.used_q[b] == 0) s.used_q[b] = s.len_q[b];
    s.seqused_q = calloc((size_t)batch, sizeof(int32_t));
    for (int i = 0; i < batch; ++i) s.seqused_q[i] = s.used_q[i];
  }
  if (with_used_k) {
    s.seqused_k = calloc((size_t)batch, sizeof(int32_t));
    for (int i = 0; i < batch; ++i) s.seqused_k[i] = s.used_k[i];
  }
  return s;
}

static inline void seq_lengths_free(seq_lengths* s) {
  free(s->len_q), free(s->len_k), free(s->used_q), free(s->used_k), free(s->cu_q), free(s->cu_k);
  free(s->seqused_q), free(s->seqused_k);
  memset(s, 0, sizeof *s);
}

/* flashc_attn_fwd / _bwd with a workspace from the size query (freed after the call); a
 * failure is printed with the library's message. */
static inline flashc_status attn_run_fwd(flashc_handle_t handle, const flashc_attn_fwd_params* p) {
  size_t bytes = 0;
  flashc_status status = flashc_attn_fwd_workspace_size(handle, p, &bytes);
  if (status != FLASHC_STATUS_SUCCESS) {
    test_print_status("flashc_attn_fwd_workspace_size", status);
    return status;
  }
  void* workspace = bytes ? test_alloc(bytes) : NULL;
  status = flashc_attn_fwd(handle, p, workspace, bytes, NULL);
  if (status != FLASHC_STATUS_SUCCESS) test_print_status("flashc_attn_fwd", status);
  if (workspace) test_free(workspace);
  return status;
}

static inline flashc_status attn_run_bwd(flashc_handle_t handle, const flashc_attn_bwd_params* p) {
  size_t bytes = 0;
  flashc_status status = flashc_attn_bwd_workspace_size(handle, p, &bytes);
  if (status != FLASHC_STATUS_SUCCESS) {
    test_print_status("flashc_attn_bwd_workspace_size", status);
    return status;
  }
  void* workspace = bytes ? test_alloc(bytes) : NULL;
  status = flashc_attn_bwd(handle, p, workspace, bytes, NULL);
  if (status != FLASHC_STATUS_SUCCESS) test_print_status("flashc_attn_bwd", status);
  if (workspace) test_free(workspace);
  return status;
}

/* "1,0,7" */
static inline void format_ints(char* out, size_t cap, const int* values, int count) {
  size_t used = 0;
  out[0] = '\0';
  for (int i = 0; i < count && used + 12 < cap; ++i) used += (size_t)snprintf(out + used, cap - used, "%s%d", i ? "," : "", values[i]);
}

/* Compact "name err/bound l2" text of a check result. */
static inline void format_check(char* out, size_t cap, const char* name, const test_check_result* r) {
  snprintf(out, cap, "%s %.2e/%.2e l2 %.1e", name, r->max_error, r->bound, r->rel_l2);
}

#endif
