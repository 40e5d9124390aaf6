/*
 * attn_reference.c — the attention oracle of DESIGN.md §6 (fc_ref_attn_fwd, fc_ref_attn_bwd).
 *
 * FC_REF_FP64: the CPU backend's math (attn_math.inc) instantiated here with double
 * accumulators: inputs read through fc_load_f32 (the same rounded values the kernels see)
 * and promoted, descales, scores, softmax, products and normalization in double.
 * FC_REF_SAME_PRECISION: what a straightforward kernel in the input precision computes —
 * the fp32 instance of the same math, with the operands a kernel holds in the input dtype
 * rounded to it: P (the unnormalized exp(s − rowmax)) before P·V in the forward; P, dS and
 * the recomputed o in the backward. The final outputs are not rounded.
 * Both write doubles at the element offsets of the problem's own outputs and leave every
 * element the operation does not write untouched. The backward recomputes lse and o from
 * q, k, v: it does not trust the problem's o and lse.
 *
 * Checked by the tests: the fp64 backward against central finite differences of the fp64
 * forward; the backend against both modes.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>

#include "cpu/attn_common.h"
#include "cpu/reference.h"
#include "host/error.h"

#define FC_ATTN_REAL_IS_DOUBLE 1
#define FC_ATTN_WITH_FWD 1
#define FC_ATTN_WITH_BWD 1
#include "cpu/attn_math.inc"

static flashc_status check_ref_mode(fc_ref_mode mode) {
  if (mode != FC_REF_FP64 && mode != FC_REF_SAME_PRECISION)
    return fc_fail(FLASHC_STATUS_INVALID_VALUE, "reference mode (%d) is not FC_REF_FP64 or FC_REF_SAME_PRECISION",
                   (int)mode);
  return FLASHC_STATUS_SUCCESS;
}

/* Per-thread scratch of the forward reference: the math's buffers and one head's rows in
 * the accumulator type of the mode (double or float). */
static size_t fc_ref_fwd_thread_layout(const fc_attn_problem* p, fc_ref_mode mode, void* base, void** math,
                                       void** o_rows, void** lse_rows) {
  const int fp64 = mode == FC_REF_FP64;
  const size_t real_size = fp64 ? sizeof(double) : sizeof(float);
  const int max_keys = fc_attn_max_seqlen_k(p);
  const size_t max_rows = (size_t)fc_attn_max_seqlen_q(p);
  size_t offset = 0;
  *math = fc_scratch_place(base, &offset,
                           fp64 ? fc_attn_fwd_scratch_bytes_f64(p, max_keys) : fc_attn_fwd_scratch_bytes_f32(p, max_keys));
  *o_rows = fc_scratch_place(base, &offset, max_rows * (size_t)p->head_dim_v * real_size);
  *lse_rows = fc_scratch_place(base, &offset, max_rows * real_size);
  return offset;
}

flashc_status fc_ref_attn_fwd(const fc_attn_problem* p, fc_ref_mode mode, double* o_ref, double* lse_ref) {
  if (!o_ref) return fc_fail(FLASHC_STATUS_NULL_POINTER, "o_ref is NULL");
  FC_TRY(check_ref_mode(mode));
  const int64_t items = (int64_t)p->batch * p->heads_q;
  const int threads = fc_cpu_threads_for(items);
  void *unused_math, *unused_o, *unused_lse;
  const size_t thread_bytes = fc_ref_fwd_thread_layout(p, mode, NULL, &unused_math, &unused_o, &unused_lse);
  void* allocation;
  char* scratch;
  FC_TRY(fc_scratch_alloc(threads, thread_bytes, "attention reference", &allocation, &scratch));

#ifdef FLASHC_WITH_OPENMP
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
#endif
  for (int64_t item = 0; item < items; ++item) {
    const int h = (int)(item % p->heads_q);
    const int b = (int)(item / p->heads_q);
    const fc_attn_seq seq = fc_attn_sequence(p, b);
    void *math, *o_rows, *lse_rows;
    fc_ref_fwd_thread_layout(p, mode, scratch + (size_t)fc_cpu_thread_index() * thread_bytes, &math, &o_rows,
                             &lse_rows);
    if (mode == FC_REF_FP64)
      fc_attn_fwd_head_f64(p, b, h, 0, INT_MAX, FLASHC_DTYPE_FP32, math, o_rows, p->head_dim_v, lse_rows);
    else
      fc_attn_fwd_head_f32(p, b, h, 0, INT_MAX, p->dtype, math, o_rows, p->head_dim_v, lse_rows);

    for (int i = 0; i < seq.seqlen_q; ++i) {
      const int64_t index = fc_attn_q_index(p, &seq, b, p->o.batch_stride, p->o.row_stride, p->o.head_stride, i, h);
      const int64_t row = (int64_t)i * p->head_dim_v;
      for (int e = 0; e < p->head_dim_v; ++e)
        o_ref[index + e] = mode == FC_REF_FP64 ? ((const double*)o_rows)[row + e] : ((const float*)o_rows)[row + e];
      if (lse_ref)
        lse_ref[fc_attn_lse_index(p, &seq, b, h, i)] =
            mode == FC_REF_FP64 ? ((const double*)lse_rows)[i] : ((const float*)lse_rows)[i];
    }
  }

  free(allocation);
  return FLASHC_STATUS_SUCCESS;
}

flashc_status fc_ref_attn_bwd(const fc_attn_problem* p, fc_ref_mode mode, double* dq_ref, double* dk_ref,
                              double* dv_ref) {
  if (!dq_ref || !dk_ref || !dv_ref)
    return fc_fail(FLASHC_STATUS_NULL_POINTER, "%s is NULL", !dq_ref ? "dq_ref" : !dk_ref ? "dk_ref" : "dv_ref");
  FC_TRY(check_ref_mode(mode));
  const int fp64 = mode == FC_REF_FP64;
  const fc_attn_bwd_mode bwd_mode = {1, fp64 ? FLASHC_DTYPE_FP32 : p->dtype, dq_ref, dk_ref, dv_ref};
  const int max_keys = fc_attn_max_seqlen_k(p);
  const size_t thread_bytes = fc_scratch_round_up(fp64 ? fc_attn_bwd_scratch_bytes_f64(p, max_keys, 1)
                                                       : fc_attn_bwd_scratch_bytes_f32(p, max_keys, 1));
  const int64_t items = (int64_t)p->batch * p->heads_kv;
  const int threads = fc_cpu_threads_for(items);
  void* allocation;
  char* scratch;
  FC_TRY(fc_scratch_alloc(threads, thread_bytes, "attention reference", &allocation, &scratch));

#ifdef FLASHC_WITH_OPENMP
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
#endif
  for (int64_t item = 0; item < items; ++item) {
    const int kv_head = (int)(item % p->heads_kv);
    const int b = (int)(item / p->heads_kv);
    void* mine = scratch + (size_t)fc_cpu_thread_index() * thread_bytes;
    if (fp64)
      fc_attn_bwd_kv_head_f64(p, b, kv_head, &bwd_mode, mine);
    else
      fc_attn_bwd_kv_head_f32(p, b, kv_head, &bwd_mode, mine);
  }

  free(allocation);
  return FLASHC_STATUS_SUCCESS;
}
