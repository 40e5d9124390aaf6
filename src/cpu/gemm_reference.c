/*
 * gemm_reference.c — the GEMM oracle of DESIGN.md §6, fc_ref_gemm:
 *
 *   D_i = act(alpha · scale_a · scale_b · A_i·B_i + beta · C_i + bias)
 *
 * evaluated on the same stored (already rounded) inputs as the kernels, read through
 * fc_load_f32, in one of two precisions:
 *   FC_REF_FP64            every step in double: products, sums over k in plain k order,
 *                          scales, beta · C, bias and the activation;
 *   FC_REF_SAME_PRECISION  what a straightforward fp32 kernel computes: fp32 accumulation in
 *                          plain k order, the epilogue in fp32.
 * Neither rounds the result to d_dtype: d_ref holds the value before the output's final
 * rounding, at the same element offsets as D (row-major with ldd, batch stride stride_d);
 * other elements of d_ref are not touched. With beta = 0 C is not read, as in fc_cpu_gemm.
 *
 * It is written for clarity over speed, with two concessions so that `flashc gemm --check`
 * on a 512³ problem takes a fraction of a second: rows are spread over OpenMP threads (each
 * output is still summed by one thread in k order, so results do not depend on the thread
 * count), and the loop order follows the layout of B so that B is read with unit stride.
 * It was checked against an independent naive triple loop in double (identical to 1e-16
 * relative); tests/cpu_gemm.c checks fc_cpu_gemm against the test oracle (tests/oracle.c).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#ifdef FLASHC_WITH_OPENMP
#include <omp.h>
#endif

#include "cpu/cpu_backend.h"
#include "cpu/reference.h"
#include "host/error.h"
#include "host/numeric.h"
#include "host/problem.h"

/* Coefficient of the cubic term in the tanh approximation of GELU (Hendrycks & Gimpel,
 * "Gaussian Error Linear Units", 2016), as in cuBLASLt's GELU epilogue. */
#define REF_GELU_CUBIC_COEFFICIENT 0.044715
#define REF_PI 3.14159265358979323846

static double ref_activation_f64(flashc_activation activation, double x) {
  switch (activation) {
    case FLASHC_ACTIVATION_RELU:
      return x > 0.0 ? x : 0.0;
    case FLASHC_ACTIVATION_GELU:
      return 0.5 * x * (1.0 + tanh(sqrt(2.0 / REF_PI) * (x + REF_GELU_CUBIC_COEFFICIENT * x * x * x)));
    default:
      return x;
  }
}

static float ref_activation_f32(flashc_activation activation, float x) {
  switch (activation) {
    case FLASHC_ACTIVATION_RELU:
      return x > 0.0f ? x : 0.0f;
    case FLASHC_ACTIVATION_GELU: {
      const float tanh_scale = (float)sqrt(2.0 / REF_PI);
      const float cubic = (float)REF_GELU_CUBIC_COEFFICIENT;
      return 0.5f * x * (1.0f + tanhf(tanh_scale * (x + cubic * x * x * x)));
    }
    default:
      return x;
  }
}

/* Index of element (row, col) of A or B of batch `batch`. */
static int64_t ref_operand_index(flashc_layout layout, int64_t ld, int64_t batch_stride, int64_t batch,
                                 int64_t row, int64_t col) {
  return batch * batch_stride + fc_matrix_index(layout, ld, row, col);
}

/*
 * Row `row` of A_batch·B_batch into sums[0 .. n), in double (_f64) or float (_f32); a_row is
 * scratch for the k values of A's row. Every output is one dot product
 * Σ_kk A(row, kk) · B(kk, col) accumulated from kk = 0 upwards; only the order in which the
 * n dot products advance depends on B's layout, so both branches give identical sums.
 */
static void ref_row_products_f64(const fc_gemm_problem* p, int64_t batch, int64_t row, double* a_row,
                                 double* sums) {
  int64_t kk, col;
  for (kk = 0; kk < p->k; ++kk) {
    a_row[kk] = fc_load_f32(p->a, ref_operand_index(p->a_layout, p->lda, p->stride_a, batch, row, kk),
                            p->ab_dtype);
  }
  if (p->b_layout == FLASHC_ROW_MAJOR) { /* B rows contiguous: advance all n sums per kk */
    for (col = 0; col < p->n; ++col) sums[col] = 0.0;
    for (kk = 0; kk < p->k; ++kk) {
      const int64_t b_row = p->stride_b * batch + kk * p->ldb;
      for (col = 0; col < p->n; ++col) sums[col] += a_row[kk] * (double)fc_load_f32(p->b, b_row + col, p->ab_dtype);
    }
  } else { /* B columns contiguous: one dot product at a time */
    for (col = 0; col < p->n; ++col) {
      const int64_t b_col = p->stride_b * batch + col * p->ldb;
      double sum = 0.0;
      for (kk = 0; kk < p->k; ++kk) sum += a_row[kk] * (double)fc_load_f32(p->b, b_col + kk, p->ab_dtype);
      sums[col] = sum;
    }
  }
}

static void ref_row_products_f32(const fc_gemm_problem* p, int64_t batch, int64_t row, float* a_row,
                                 float* sums) {
  int64_t kk, col;
  for (kk = 0; kk < p->k; ++kk) {
    a_row[kk] = fc_load_f32(p->a, ref_operand_index(p->a_layout, p->lda, p->stride_a, batch, row, kk),
                            p->ab_dtype);
  }
  if (p->b_layout == FLASHC_ROW_MAJOR) {
    for (col = 0; col < p->n; ++col) sums[col] = 0.0f;
    for (kk = 0; kk < p->k; ++kk) {
      const int64_t b_row = p->stride_b * batch + kk * p->ldb;
      for (col = 0; col < p->n; ++col) sums[col] += a_row[kk] * fc_load_f32(p->b, b_row + col, p->ab_dtype);
    }
  } else {
    for (col = 0; col < p->n; ++col) {
      const int64_t b_col = p->stride_b * batch + col * p->ldb;
      float sum = 0.0f;
      for (kk = 0; kk < p->k; ++kk) sum += a_row[kk] * fc_load_f32(p->b, b_col + kk, p->ab_dtype);
      sums[col] = sum;
    }
  }
}

/* The epilogue of one row, in double, from double sums. */
static void ref_row_epilogue_f64(const fc_gemm_problem* p, int64_t batch, int64_t row, const double* sums,
                                 double* d_ref) {
  const double scale = (double)p->alpha * (p->scale_a ? (double)*p->scale_a : 1.0) *
                       (p->scale_b ? (double)*p->scale_b : 1.0);
  const int read_c = p->c != NULL && p->beta != 0.0f;
  int64_t col;
  for (col = 0; col < p->n; ++col) {
    double x = scale * sums[col];
    if (read_c) x += (double)p->beta * fc_load_f32(p->c, batch * p->stride_c + row * p->ldc + col, p->d_dtype);
    if (p->bias) x += fc_load_f32(p->bias, p->bias_per_row ? row : col, p->d_dtype);
    d_ref[batch * p->stride_d + row * p->ldd + col] = ref_activation_f64(p->activation, x);
  }
}

/* The epilogue of one row as an fp32 kernel would compute it. */
static void ref_row_epilogue_f32(const fc_gemm_problem* p, int64_t batch, int64_t row, const float* sums,
                                 double* d_ref) {
  const float scale = p->alpha * (p->scale_a ? *p->scale_a : 1.0f) * (p->scale_b ? *p->scale_b : 1.0f);
  const int read_c = p->c != NULL && p->beta != 0.0f;
  int64_t col;
  for (col = 0; col < p->n; ++col) {
    float x = scale * sums[col];
    if (read_c) x += p->beta * fc_load_f32(p->c, batch * p->stride_c + row * p->ldc + col, p->d_dtype);
    if (p->bias) x += fc_load_f32(p->bias, p->bias_per_row ? row : col, p->d_dtype);
    d_ref[batch * p->stride_d + row * p->ldd + col] = (double)ref_activation_f32(p->activation, x);
  }
}

flashc_status fc_ref_gemm(const fc_gemm_problem* problem, fc_ref_mode mode, double* d_ref) {
  const int in_fp64 = mode == FC_REF_FP64;
  const size_t element_bytes = in_fp64 ? sizeof(double) : sizeof(float);
  int64_t row_count, job;
  int thread_count;
  size_t scratch_elements_per_thread;
  char* scratch;

  if (mode != FC_REF_FP64 && mode != FC_REF_SAME_PRECISION) {
    return fc_fail(FLASHC_STATUS_INVALID_VALUE, "gemm reference: mode (%d) is not a fc_ref_mode", (int)mode);
  }
  if (problem->m <= 0 || problem->n <= 0 || problem->batch_count <= 0) return FLASHC_STATUS_SUCCESS;

  row_count = (int64_t)problem->batch_count * problem->m;
  thread_count = fc_cpu_thread_count();
  if (thread_count < 1) thread_count = 1;
  if (row_count < thread_count) thread_count = (int)row_count;

  /* Per thread: one row of A (k values) and one row of sums (n values). */
  scratch_elements_per_thread = (size_t)problem->k + (size_t)problem->n;
  scratch = (char*)malloc(scratch_elements_per_thread * element_bytes * (size_t)thread_count);
  if (!scratch) {
    return fc_fail(FLASHC_STATUS_OUT_OF_MEMORY, "gemm reference: could not allocate %zu bytes of scratch",
                   scratch_elements_per_thread * element_bytes * (size_t)thread_count);
  }

#ifdef FLASHC_WITH_OPENMP
#pragma omp parallel num_threads(thread_count)
#endif
  {
    int thread_index = 0;
#ifdef FLASHC_WITH_OPENMP
    thread_index = omp_get_thread_num();
#endif
    char* thread_scratch = scratch + (size_t)thread_index * scratch_elements_per_thread * element_bytes;
#ifdef FLASHC_WITH_OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
    for (job = 0; job < row_count; ++job) {
      const int64_t batch = job / problem->m;
      const int64_t row = job % problem->m;
      if (in_fp64) {
        double* a_row = (double*)thread_scratch;
        double* sums = a_row + problem->k;
        ref_row_products_f64(problem, batch, row, a_row, sums);
        ref_row_epilogue_f64(problem, batch, row, sums, d_ref);
      } else {
        float* a_row = (float*)thread_scratch;
        float* sums = a_row + problem->k;
        ref_row_products_f32(problem, batch, row, a_row, sums);
        ref_row_epilogue_f32(problem, batch, row, sums, d_ref);
      }
    }
  }

  free(scratch);
  return FLASHC_STATUS_SUCCESS;
}
