/*
 * attn_fwd.c — the CPU backend's attention forward: o = softmax(mask(softcap(scale·q·kᵀ)))·v
 * and lse per (sequence, query head), with fp32 accumulation (the math is attn_math.inc,
 * instantiated here for float).
 *
 * Work items are (sequence, query head, split), spread over OpenMP threads; each item
 * converts its head's keys and values to fp32 once and runs the row blocks. Unsplit, the
 * rows go straight to o / lse. Split-KV (num_splits > 1) writes each chunk's normalized
 * partial o and lse into the caller's workspace and merges them with fc_attn_combine_row,
 * the routine behind flashc_attn_combine, so both paths give the same result up to fp32
 * rounding.
 *
 * Checked by the tests against fc_ref_attn_fwd (fp64) with DESIGN.md §6's rule, split
 * against unsplit and paged against contiguous.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>

#include "cpu/attn_common.h"
#include "cpu/cpu_backend.h"
#include "host/error.h"

#define FC_ATTN_REAL_IS_DOUBLE 0
#define FC_ATTN_WITH_FWD 1
#define FC_ATTN_WITH_BWD 0
#include "cpu/attn_math.inc"

/* Split-KV partials in the workspace: fp32 o as (split, batch, heads_q, row, head_dim_v) and
 * lse as (split, batch, heads_q, row), row < the longest query sequence. */
typedef struct fc_split_partials {
  float* o;
  float* lse;
  int max_rows;
  int64_t lse_split_stride; /* elements between the lse of consecutive splits */
} fc_split_partials;

static size_t fc_split_partials_layout(const fc_attn_problem* p, void* base, fc_split_partials* partials) {
  partials->max_rows = fc_attn_max_seqlen_q(p);
  partials->lse_split_stride = (int64_t)p->batch * p->heads_q * partials->max_rows;
  const size_t lse_elements = (size_t)p->num_splits * (size_t)partials->lse_split_stride;
  size_t offset = 0;
  partials->o = fc_scratch_place(base, &offset, lse_elements * (size_t)p->head_dim_v * sizeof(float));
  partials->lse = fc_scratch_place(base, &offset, lse_elements * sizeof(float));
  return offset;
}

/* Index of (split, b, h, row 0) in the partials' lse; times head_dim_v for o. */
static int64_t fc_split_partial_row(const fc_attn_problem* p, const fc_split_partials* partials, int split, int b,
                                    int h) {
  return (((int64_t)split * p->batch + b) * p->heads_q + h) * partials->max_rows;
}

size_t fc_cpu_attn_fwd_workspace_size(const fc_attn_problem* p) {
  if (p->num_splits <= 1) return 0;
  fc_split_partials unused;
  /* + one alignment unit: the caller's pointer may need aligning. */
  return fc_split_partials_layout(p, NULL, &unused) + FC_SCRATCH_ALIGNMENT;
}

/* Per-thread scratch, from one allocation per call: the math's buffers, the rows of one
 * head (unsplit) and the merge buffers of one row (split). */
typedef struct fc_fwd_thread_buffers {
  void* math;
  float* o_rows;
  float* lse_rows;
  float* split_weights;
  float* merged_row;
} fc_fwd_thread_buffers;

static size_t fc_fwd_thread_layout(const fc_attn_problem* p, int keys_per_item, int max_rows, void* base,
                                   fc_fwd_thread_buffers* buf) {
  const int unsplit = p->num_splits <= 1;
  const size_t rows = unsplit ? (size_t)max_rows : 0;
  size_t offset = 0;
  buf->math = fc_scratch_place(base, &offset, fc_attn_fwd_scratch_bytes_f32(p, keys_per_item));
  buf->o_rows = fc_scratch_place(base, &offset, rows * (size_t)p->head_dim_v * sizeof(float));
  buf->lse_rows = fc_scratch_place(base, &offset, rows * sizeof(float));
  buf->split_weights = fc_scratch_place(base, &offset, unsplit ? 0 : (size_t)p->num_splits * sizeof(float));
  buf->merged_row = fc_scratch_place(base, &offset, unsplit ? 0 : (size_t)p->head_dim_v * sizeof(float));
  return offset;
}

/* Row i of query head h: o in out_dtype, lse (if requested) in fp32. */
static void fc_fwd_store_row(const fc_attn_problem* p, const fc_attn_seq* seq, int b, int h, int i, const float* o_row,
                             float lse) {
  const int64_t index = fc_attn_q_index(p, seq, b, p->o.batch_stride, p->o.row_stride, p->o.head_stride, i, h);
  for (int e = 0; e < p->head_dim_v; ++e) fc_store_f32(p->o.data, index + e, p->out_dtype, o_row[e]);
  if (p->lse) p->lse[fc_attn_lse_index(p, seq, b, h, i)] = lse;
}

flashc_status fc_cpu_attn_fwd(const fc_attn_problem* p, void* workspace, size_t workspace_bytes) {
  const int splits = p->num_splits > 1 ? p->num_splits : 1;
  const int max_rows = fc_attn_max_seqlen_q(p);
  const int keys_per_item = fc_attn_split_chunk(fc_attn_max_seqlen_k(p), splits);

  fc_split_partials partials = {NULL, NULL, 0, 0};
  if (splits > 1) {
    const size_t needed = fc_cpu_attn_fwd_workspace_size(p);
    if (!workspace || workspace_bytes < needed)
      return fc_fail(FLASHC_STATUS_WORKSPACE_TOO_SMALL,
                     "workspace_bytes (%zu) is below the %zu bytes the split-KV forward needs (num_splits %d)",
                     workspace ? workspace_bytes : (size_t)0, needed, splits);
    fc_split_partials_layout(p, fc_scratch_align(workspace), &partials);
  }

  const int64_t items = (int64_t)p->batch * p->heads_q * splits;
  const int threads = fc_cpu_threads_for(items);
  fc_fwd_thread_buffers measured;
  const size_t thread_bytes = fc_fwd_thread_layout(p, keys_per_item, max_rows, NULL, &measured);
  void* allocation;
  char* scratch;
  FC_TRY(fc_scratch_alloc(threads, thread_bytes, "CPU attention forward", &allocation, &scratch));

#ifdef FLASHC_WITH_OPENMP
#pragma omp parallel num_threads(threads)
#endif
  {
    fc_fwd_thread_buffers buf;
    fc_fwd_thread_layout(p, keys_per_item, max_rows, scratch + (size_t)fc_cpu_thread_index() * thread_bytes, &buf);

    /* Dynamic: causal and varlen items differ a lot in cost. */
#ifdef FLASHC_WITH_OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
    for (int64_t item = 0; item < items; ++item) {
      const int split = (int)(item % splits);
      const int h = (int)(item / splits % p->heads_q);
      const int b = (int)(item / splits / p->heads_q);
      const fc_attn_seq seq = fc_attn_sequence(p, b);
      if (splits == 1) {
        fc_attn_fwd_head_f32(p, b, h, 0, INT_MAX, FLASHC_DTYPE_FP32, buf.math, buf.o_rows, p->head_dim_v,
                             buf.lse_rows);
        for (int i = 0; i < seq.seqlen_q; ++i)
          fc_fwd_store_row(p, &seq, b, h, i, buf.o_rows + (int64_t)i * p->head_dim_v, buf.lse_rows[i]);
      } else {
        const int chunk = fc_attn_split_chunk(seq.seqlen_k, splits);
        const int64_t key_begin = (int64_t)split * chunk;
        const int64_t key_end = key_begin + chunk;
        const int64_t row0 = fc_split_partial_row(p, &partials, split, b, h);
        fc_attn_fwd_head_f32(p, b, h, (int)(key_begin < INT_MAX ? key_begin : INT_MAX),
                             (int)(key_end < INT_MAX ? key_end : INT_MAX), FLASHC_DTYPE_FP32, buf.math,
                             partials.o + row0 * p->head_dim_v, p->head_dim_v, partials.lse + row0);
      }
    }

    /* Merge the splits of every written row (the loop above ends with a barrier). */
    if (splits > 1) {
      const int64_t row_items = (int64_t)p->batch * p->heads_q * partials.max_rows;
#ifdef FLASHC_WITH_OPENMP
#pragma omp for schedule(static)
#endif
      for (int64_t row_item = 0; row_item < row_items; ++row_item) {
        const int i = (int)(row_item % partials.max_rows);
        const int h = (int)(row_item / partials.max_rows % p->heads_q);
        const int b = (int)(row_item / partials.max_rows / p->heads_q);
        const fc_attn_seq seq = fc_attn_sequence(p, b);
        if (i >= seq.seqlen_q) continue;
        const int64_t row = fc_split_partial_row(p, &partials, 0, b, h) + i;
        float lse;
        fc_attn_combine_row(splits, p->head_dim_v, partials.lse + row, partials.lse_split_stride,
                            partials.o + row * p->head_dim_v, partials.lse_split_stride * p->head_dim_v,
                            buf.split_weights, buf.merged_row, &lse);
        fc_fwd_store_row(p, &seq, b, h, i, buf.merged_row, lse);
      }
    }
  }

  free(allocation);
  return FLASHC_STATUS_SUCCESS;
}
