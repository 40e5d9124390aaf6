/*
 * gemm_validate.c — flashc_gemm_params → fc_gemm_problem.
 *
 * Checks sizes, dtypes, layouts, leading dimensions and batch strides, resolves the packed
 * defaults, and normalizes a column-major D into a row-major one: D (m×n, column-major) is
 * Dᵀ (n×m, row-major) = Bᵀ·Aᵀ, and the transpose of a row-major matrix is the same memory
 * read column-major, so swapping A and B and flipping both layouts is free. Kernels and the
 * CPU backend therefore only write row-major D. Checked by tests/cpu_validation.c.
 */
#include <math.h>
#include <string.h>

#include "host/error.h"
#include "host/layout.h"
#include "host/validate.h"

static int is_layout(flashc_layout layout) { return layout == FLASHC_ROW_MAJOR || layout == FLASHC_COL_MAJOR; }

static flashc_layout flipped(flashc_layout layout) {
  return layout == FLASHC_ROW_MAJOR ? FLASHC_COL_MAJOR : FLASHC_ROW_MAJOR;
}

/* Leading dimension of a rows×cols operand: 0 = packed, else at least the contiguous extent. */
static flashc_status resolve_ld(const char* name, int64_t ld, flashc_layout layout, int64_t rows, int64_t cols,
                                int64_t* resolved) {
  int64_t contiguous = layout == FLASHC_ROW_MAJOR ? cols : rows;
  if (ld < 0) return fc_fail(FLASHC_STATUS_BAD_LAYOUT, "%s (%lld) is negative", name, (long long)ld);
  if (ld == 0) ld = contiguous;
  if (ld < contiguous)
    return fc_fail(FLASHC_STATUS_BAD_LAYOUT, "%s (%lld) is smaller than the %s extent (%lld) of a %s %lldx%lld matrix",
                   name, (long long)ld, layout == FLASHC_ROW_MAJOR ? "row" : "column", (long long)contiguous,
                   layout == FLASHC_ROW_MAJOR ? "row-major" : "column-major", (long long)rows, (long long)cols);
  *resolved = ld;
  return FLASHC_STATUS_SUCCESS;
}

/* Elements one matrix spans (the distance a packed batch stride steps). */
static int64_t matrix_span(flashc_layout layout, int64_t ld, int64_t rows, int64_t cols) {
  return layout == FLASHC_ROW_MAJOR ? ld * (rows - 1) + cols : ld * (cols - 1) + rows;
}

static flashc_status check_batch_stride(const char* name, int64_t stride) {
  if (stride < 0) return fc_fail(FLASHC_STATUS_BAD_LAYOUT, "%s (%lld) is negative", name, (long long)stride);
  return FLASHC_STATUS_SUCCESS;
}

/* On the GPU every element must be naturally aligned; wider alignment (16 bytes for TMA and
 * cp.async) only decides which kernel family runs, not whether the problem is valid. */
static flashc_status check_element_aligned(const char* name, const void* pointer, size_t element_bytes) {
  if ((uintptr_t)pointer % element_bytes != 0)
    return fc_fail(FLASHC_STATUS_MISALIGNED, "%s (%p) is not aligned to its %zu-byte elements", name, pointer,
                   element_bytes);
  return FLASHC_STATUS_SUCCESS;
}

flashc_status fc_gemm_problem_make(const flashc_gemm_params* params, flashc_backend backend, fc_gemm_problem* p) {
  if (!params) return fc_fail(FLASHC_STATUS_NULL_POINTER, "params is NULL");
  if (params->struct_size != sizeof *params)
    return fc_fail(FLASHC_STATUS_BAD_STRUCT_SIZE,
                   "params->struct_size (%zu) is not sizeof(flashc_gemm_params) (%zu): call flashc_gemm_params_init",
                   params->struct_size, sizeof *params);
  memset(p, 0, sizeof *p);

  const char* size_names[4] = {"m", "n", "k", "batch_count"};
  const int sizes[4] = {params->m, params->n, params->k, params->batch_count};
  for (int i = 0; i < 4; ++i)
    if (sizes[i] <= 0)
      return fc_fail(FLASHC_STATUS_INVALID_VALUE, "%s (%d) must be positive", size_names[i], sizes[i]);

  /* Dtypes. */
  if (!fc_dtype_is_valid(params->a_dtype))
    return fc_fail(FLASHC_STATUS_INVALID_VALUE, "a_dtype (%d) is not a flashc_dtype", (int)params->a_dtype);
  if (!fc_dtype_is_valid(params->b_dtype))
    return fc_fail(FLASHC_STATUS_INVALID_VALUE, "b_dtype (%d) is not a flashc_dtype", (int)params->b_dtype);
  if (params->d_dtype != FLASHC_DTYPE_AUTO && !fc_dtype_is_valid(params->d_dtype))
    return fc_fail(FLASHC_STATUS_INVALID_VALUE, "d_dtype (%d) is not a flashc_dtype", (int)params->d_dtype);
  if (params->a_dtype != params->b_dtype)
    return fc_fail(FLASHC_STATUS_NOT_SUPPORTED_DTYPE, "a_dtype (%s) and b_dtype (%s) differ: inputs must share a dtype",
                   flashc_dtype_name(params->a_dtype), flashc_dtype_name(params->b_dtype));
  if (backend == FLASHC_BACKEND_CUDA && params->a_dtype == FLASHC_DTYPE_FP32)
    return fc_fail(FLASHC_STATUS_NOT_SUPPORTED_DTYPE,
                   "a_dtype fp32 runs on the CPU backend only (the GPU takes fp16, bf16, e4m3 inputs)");
  flashc_dtype d_dtype = params->d_dtype;
  if (d_dtype == FLASHC_DTYPE_AUTO) d_dtype = params->a_dtype == FLASHC_DTYPE_E4M3 ? FLASHC_DTYPE_BF16 : params->a_dtype;
  if (d_dtype == FLASHC_DTYPE_E4M3)
    return fc_fail(FLASHC_STATUS_NOT_SUPPORTED_DTYPE, "d_dtype e4m3 is not supported (fp16, bf16 or fp32 outputs)");

  /* Enums and scalars. */
  if (!is_layout(params->a_layout))
    return fc_fail(FLASHC_STATUS_INVALID_VALUE, "a_layout (%d) is not a flashc_layout", (int)params->a_layout);
  if (!is_layout(params->b_layout))
    return fc_fail(FLASHC_STATUS_INVALID_VALUE, "b_layout (%d) is not a flashc_layout", (int)params->b_layout);
  if (!is_layout(params->cd_layout))
    return fc_fail(FLASHC_STATUS_INVALID_VALUE, "cd_layout (%d) is not a flashc_layout", (int)params->cd_layout);
  if (params->activation < FLASHC_ACTIVATION_NONE || params->activation > FLASHC_ACTIVATION_GELU)
    return fc_fail(FLASHC_STATUS_INVALID_VALUE, "activation (%d) is not a flashc_activation", (int)params->activation);
  if (params->algo < FLASHC_GEMM_ALGO_AUTO || params->algo > FLASHC_GEMM_ALGO_PORTABLE)
    return fc_fail(FLASHC_STATUS_INVALID_VALUE, "algo (%d) must be 0 (auto), 1 (hopper) or 2 (portable)", params->algo);
  if (!isfinite(params->alpha))
    return fc_fail(FLASHC_STATUS_INVALID_VALUE, "alpha (%g) must be finite", (double)params->alpha);
  if (!isfinite(params->beta))
    return fc_fail(FLASHC_STATUS_INVALID_VALUE, "beta (%g) must be finite", (double)params->beta);

  /* Pointers. */
  if (!params->a) return fc_fail(FLASHC_STATUS_NULL_POINTER, "a is NULL");
  if (!params->b) return fc_fail(FLASHC_STATUS_NULL_POINTER, "b is NULL");
  if (!params->d) return fc_fail(FLASHC_STATUS_NULL_POINTER, "d is NULL");
  if (params->beta != 0.0f && !params->c)
    return fc_fail(FLASHC_STATUS_NULL_POINTER, "c is NULL but beta (%g) is not 0", (double)params->beta);
  if (params->a_dtype == FLASHC_DTYPE_E4M3 && (!params->scale_a || !params->scale_b))
    return fc_fail(FLASHC_STATUS_NULL_POINTER, "%s is NULL: e4m3 inputs need scale_a and scale_b",
                   params->scale_a ? "scale_b" : "scale_a");

  /* Leading dimensions and batch strides, in the user's orientation. */
  const int64_t m = params->m, n = params->n, k = params->k;
  int64_t lda = 0, ldb = 0, ldc = 0, ldd = 0;
  FC_TRY(resolve_ld("lda", params->lda, params->a_layout, m, k, &lda));
  FC_TRY(resolve_ld("ldb", params->ldb, params->b_layout, k, n, &ldb));
  FC_TRY(resolve_ld("ldd", params->ldd, params->cd_layout, m, n, &ldd));
  if (params->c) FC_TRY(resolve_ld("ldc", params->ldc, params->cd_layout, m, n, &ldc));
  FC_TRY(check_batch_stride("stride_a", params->stride_a));
  FC_TRY(check_batch_stride("stride_b", params->stride_b));
  FC_TRY(check_batch_stride("stride_c", params->stride_c));
  FC_TRY(check_batch_stride("stride_d", params->stride_d));
  const int64_t d_span = matrix_span(params->cd_layout, ldd, m, n);
  int64_t stride_d = params->stride_d ? params->stride_d : d_span;
  if (params->batch_count > 1 && stride_d < d_span)
    return fc_fail(FLASHC_STATUS_BAD_LAYOUT,
                   "stride_d (%lld) is smaller than the %lld elements one D matrix spans: batches would overlap",
                   (long long)stride_d, (long long)d_span);

  if (backend == FLASHC_BACKEND_CUDA) {
    size_t ab_bytes = flashc_dtype_size(params->a_dtype), d_bytes = flashc_dtype_size(d_dtype);
    FC_TRY(check_element_aligned("a", params->a, ab_bytes));
    FC_TRY(check_element_aligned("b", params->b, ab_bytes));
    FC_TRY(check_element_aligned("d", params->d, d_bytes));
    if (params->c) FC_TRY(check_element_aligned("c", params->c, d_bytes));
    if (params->bias) FC_TRY(check_element_aligned("bias", params->bias, d_bytes));
    if (params->scale_a) FC_TRY(check_element_aligned("scale_a", params->scale_a, sizeof(float)));
    if (params->scale_b) FC_TRY(check_element_aligned("scale_b", params->scale_b, sizeof(float)));
  }

  /* Normalize to a row-major D. */
  p->batch_count = params->batch_count;
  p->ab_dtype = params->a_dtype;
  p->d_dtype = d_dtype;
  p->c = params->beta != 0.0f ? params->c : NULL;
  p->d = params->d;
  p->bias = params->bias;
  p->activation = params->activation;
  p->ldc = ldc;
  p->ldd = ldd;
  p->stride_c = params->stride_c;
  p->stride_d = stride_d;
  p->alpha = params->alpha;
  p->beta = params->beta;
  p->scale_a = params->scale_a;
  p->scale_b = params->scale_b;
  p->algo = params->algo;
  if (params->cd_layout == FLASHC_ROW_MAJOR) {
    p->m = params->m;
    p->n = params->n;
    p->a = params->a;
    p->b = params->b;
    p->a_layout = params->a_layout;
    p->b_layout = params->b_layout;
    p->lda = lda;
    p->ldb = ldb;
    p->stride_a = params->stride_a;
    p->stride_b = params->stride_b;
    p->bias_per_row = 0;
  } else {
    p->m = params->n;
    p->n = params->m;
    p->a = params->b;
    p->b = params->a;
    p->a_layout = flipped(params->b_layout);
    p->b_layout = flipped(params->a_layout);
    p->lda = ldb;
    p->ldb = lda;
    p->stride_a = params->stride_b;
    p->stride_b = params->stride_a;
    p->bias_per_row = 1;
  }
  p->k = params->k;
  return FLASHC_STATUS_SUCCESS;
}
