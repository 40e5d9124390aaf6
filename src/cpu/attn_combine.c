/*
 * attn_combine.c — merging split-KV partial attention results (flashc_attn_combine on a CPU
 * handle, and the last step of the CPU split forward):
 *   lse = log Σ_s exp(lse_s),   o = Σ_s exp(lse_s − lse) · o_s,
 * with the log-sum-exp taken around the largest lse_s so that no exp overflows. A split
 * with lse = −inf (it saw no key) contributes nothing and its o_s is never read; a row
 * whose splits are all −inf gets o = 0, lse = −inf, never NaN.
 *
 * Checked by the tests: split forward against unsplit (same result up to fp32 rounding),
 * and the public combine against partials computed from the fp64 reference.
 */
#include <math.h>
#include <stdlib.h>

#include "cpu/attn_common.h"
#include "cpu/cpu_backend.h"
#include "host/error.h"

void fc_attn_combine_row(int num_splits, int head_dim_v, const float* lse_partial, int64_t lse_split_stride,
                         const float* o_partial, int64_t o_split_stride, float* weights, float* o_row,
                         float* lse_row) {
  float max_lse = -INFINITY;
  for (int s = 0; s < num_splits; ++s) {
    const float lse = lse_partial[s * lse_split_stride];
    if (lse > max_lse) max_lse = lse;
  }
  for (int e = 0; e < head_dim_v; ++e) o_row[e] = 0.0f;
  if (max_lse == -INFINITY) { /* no split saw a key */
    *lse_row = -INFINITY;
    return;
  }

  float sum = 0.0f;
  for (int s = 0; s < num_splits; ++s) {
    const float lse = lse_partial[s * lse_split_stride];
    if (lse == -INFINITY) continue;
    sum += expf(lse - max_lse);
  }
  const float row_lse = max_lse + logf(sum);
  for (int s = 0; s < num_splits; ++s) {
    const float lse = lse_partial[s * lse_split_stride];
    weights[s] = lse == -INFINITY ? 0.0f : expf(lse - row_lse);
  }
  /* Splits in ascending order: the sum is deterministic. */
  for (int s = 0; s < num_splits; ++s) {
    if (weights[s] == 0.0f) continue;
    const float* o_split = o_partial + s * o_split_stride;
    for (int e = 0; e < head_dim_v; ++e) o_row[e] += weights[s] * o_split[e];
  }
  *lse_row = row_lse;
}

flashc_status fc_cpu_attn_combine(const fc_combine_problem* p) {
  const int64_t rows = (int64_t)p->batch * p->seqlen * p->heads;
  const int threads = fc_cpu_threads_for(rows);
  /* Per thread: the weights of one row's splits and the merged row in fp32. */
  const size_t thread_bytes = fc_scratch_round_up((size_t)p->num_splits * sizeof(float)) +
                              fc_scratch_round_up((size_t)p->head_dim_v * sizeof(float));
  void* allocation;
  char* scratch;
  FC_TRY(fc_scratch_alloc(threads, thread_bytes, "CPU attention combine", &allocation, &scratch));

#ifdef FLASHC_WITH_OPENMP
#pragma omp parallel num_threads(threads)
#endif
  {
    char* mine = scratch + (size_t)fc_cpu_thread_index() * thread_bytes;
    size_t offset = 0;
    float* weights = fc_scratch_place(mine, &offset, (size_t)p->num_splits * sizeof(float));
    float* merged_row = fc_scratch_place(mine, &offset, (size_t)p->head_dim_v * sizeof(float));

#ifdef FLASHC_WITH_OPENMP
#pragma omp for schedule(static)
#endif
    for (int64_t item = 0; item < rows; ++item) {
      const int h = (int)(item % p->heads);
      const int row = (int)(item / p->heads % p->seqlen);
      const int b = (int)(item / p->heads / p->seqlen);
      const float* lse_partial = p->lse_partial + (int64_t)b * p->lse_partial_batch_stride +
                                 (int64_t)h * p->lse_partial_head_stride + (int64_t)row * p->lse_partial_row_stride;
      const float* o_partial = p->o_partial + (int64_t)b * p->o_partial_batch_stride +
                               (int64_t)row * p->o_partial_row_stride + (int64_t)h * p->o_partial_head_stride;
      float lse;
      fc_attn_combine_row(p->num_splits, p->head_dim_v, lse_partial, p->lse_partial_split_stride, o_partial,
                          p->o_partial_split_stride, weights, merged_row, &lse);
      const int64_t o_index = (int64_t)b * p->o_batch_stride + (int64_t)row * p->o_row_stride +
                              (int64_t)h * p->o_head_stride;
      for (int e = 0; e < p->head_dim_v; ++e) fc_store_f32(p->o, o_index + e, p->out_dtype, merged_row[e]);
      if (p->lse) p->lse[(int64_t)b * p->lse_batch_stride + (int64_t)h * p->lse_head_stride + row] = lse;
    }
  }

  free(allocation);
  return FLASHC_STATUS_SUCCESS;
}
