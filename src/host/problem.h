/*
 * problem.h — the validated, normalized description of each operation.
 *
 * The public parameter structs are what users fill; host validation (attn_validate.c,
 * gemm_validate.c) checks them once and turns them into these structs, in which every
 * default is resolved (strides, scale, heads_kv, windows with causal folded in, num_splits,
 * cache_seqlens folded into seqused_k, column-major D turned into row-major by swapping the
 * operands). Backends (src/cpu, the CUDA launchers) and the references consume only these,
 * so the rules live in one place.
 */
#ifndef FLASHC_HOST_PROBLEM_H
#define FLASHC_HOST_PROBLEM_H

#include <stdint.h>

#include "flashc.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A read-only attention tensor: element (b, row, head, i) at data + b*batch + row*row + head*head + i.
 * With varlen the batch stride is 0 and row is the global (packed) row index. */
typedef struct fc_tensor_in {
  const void* data;
  int64_t batch_stride, row_stride, head_stride;
} fc_tensor_in;

typedef struct fc_tensor_out {
  void* data;
  int64_t batch_stride, row_stride, head_stride;
} fc_tensor_out;

/* Attention forward and backward share one description; backward-only fields are zero
 * in a forward problem and forward-only ones (paged, splits, fp8) are zero in a backward. */
typedef struct fc_attn_problem {
  flashc_dtype dtype;     /* q, k, v (and dout, dq, dk, dv) */
  flashc_dtype out_dtype; /* o */
  int batch;
  int seqlen_q, seqlen_k; /* fixed lengths, or the maxima with varlen */
  int heads_q, heads_kv;  /* resolved: heads_kv >= 1, heads_q % heads_kv == 0 */
  int head_dim, head_dim_v;

  fc_tensor_in q, k, v;
  fc_tensor_out o; /* forward output; in a backward problem o is an input (data cast from const) */
  float* lse;      /* (batch, heads_q, seqlen_q) or (heads_q, total_q); row stride 1. May be NULL in forward. */
  int64_t lse_batch_stride, lse_head_stride;

  float softmax_scale; /* resolved: never 0 */
  float softcap;       /* 0 = off */
  int window_left;     /* -1 = unbounded; causal folded in as window_right = 0 */
  int window_right;
  int is_causal;       /* informational: the user asked for causal */

  /* varlen: NULL when fixed length */
  const int32_t* cu_seqlens_q;
  const int32_t* cu_seqlens_k;
  const int32_t* seqused_q;
  const int32_t* seqused_k; /* cache_seqlens lands here */
  int total_q, total_k;

  /* paged KV: page_table NULL when not paged. k/v batch_stride is then the page stride. */
  const int32_t* page_table;
  int64_t page_table_batch_stride;
  int max_pages, page_size, num_pages;

  int num_splits;  /* resolved, >= 1 */
  int num_splits_auto; /* the caller passed 0: num_splits is 1 and a GPU launcher may pick its own */
  int pack_gqa;    /* -1 heuristic, 0, 1 */

  /* fp8 descales (NULL unless dtype is E4M3) */
  const float* q_descale;
  const float* k_descale;
  const float* v_descale;
  int64_t descale_batch_stride, descale_head_stride;

  /* backward */
  fc_tensor_in dout;
  fc_tensor_out dq, dk, dv;
  int deterministic;
} fc_attn_problem;

/* Per-sequence geometry: where sequence b starts and how long it is. */
typedef struct fc_attn_seq {
  int64_t q_row0;    /* global row index of row 0 (varlen), else 0 */
  int64_t k_row0;
  int seqlen_q;      /* rows used (seqused_q applied) */
  int seqlen_k;      /* keys used (seqused_k / cache_seqlens applied) */
} fc_attn_seq;

/* Reads cu_seqlens / seqused (host memory) for sequence b. */
static inline fc_attn_seq fc_attn_sequence(const fc_attn_problem* p, int b) {
  fc_attn_seq s;
  s.q_row0 = p->cu_seqlens_q ? p->cu_seqlens_q[b] : 0;
  s.k_row0 = p->cu_seqlens_k ? p->cu_seqlens_k[b] : 0;
  s.seqlen_q = p->cu_seqlens_q ? p->cu_seqlens_q[b + 1] - p->cu_seqlens_q[b] : p->seqlen_q;
  s.seqlen_k = p->cu_seqlens_k ? p->cu_seqlens_k[b + 1] - p->cu_seqlens_k[b] : p->seqlen_k;
  if (p->seqused_q) s.seqlen_q = p->seqused_q[b];
  if (p->seqused_k) s.seqlen_k = p->seqused_k[b];
  return s;
}

/* Element offset of (b, row, head) in a query-side tensor (q, o, dout, dq), row local to the sequence. */
static inline int64_t fc_attn_q_index(const fc_attn_problem* p, const fc_attn_seq* s, int b,
                                      int64_t batch_stride, int64_t row_stride, int64_t head_stride,
                                      int row, int head) {
  int64_t batch_part = p->cu_seqlens_q ? 0 : (int64_t)b * batch_stride;
  return batch_part + (s->q_row0 + row) * row_stride + (int64_t)head * head_stride;
}

/* Element offset of key/value row j of sequence b, head hk, for k or v (paged or not). */
static inline int64_t fc_attn_kv_index(const fc_attn_problem* p, const fc_attn_seq* s, int b,
                                       int64_t batch_stride, int64_t row_stride, int64_t head_stride,
                                       int j, int head) {
  if (p->page_table) {
    int32_t page = p->page_table[(int64_t)b * p->page_table_batch_stride + j / p->page_size];
    return (int64_t)page * batch_stride + (int64_t)(j % p->page_size) * row_stride +
           (int64_t)head * head_stride;
  }
  int64_t batch_part = p->cu_seqlens_k ? 0 : (int64_t)b * batch_stride;
  return batch_part + (s->k_row0 + j) * row_stride + (int64_t)head * head_stride;
}

/* Offset of LSE for (b, head, row). */
static inline int64_t fc_attn_lse_index(const fc_attn_problem* p, const fc_attn_seq* s, int b, int head,
                                        int row) {
  int64_t batch_part = p->cu_seqlens_q ? 0 : (int64_t)b * p->lse_batch_stride;
  return batch_part + (int64_t)head * p->lse_head_stride + s->q_row0 + row;
}

/* Visible key range [first, last] of query row i (both may leave an empty range: last < first). */
static inline void fc_attn_key_range(const fc_attn_problem* p, const fc_attn_seq* s, int i, int* first,
                                     int* last) {
  int64_t diagonal = (int64_t)i + s->seqlen_k - s->seqlen_q;
  int64_t lo = 0, hi = (int64_t)s->seqlen_k - 1;
  if (p->window_left >= 0 && diagonal - p->window_left > lo) lo = diagonal - p->window_left;
  if (p->window_right >= 0 && diagonal + p->window_right < hi) hi = diagonal + p->window_right;
  if (hi < lo) { /* empty: normalize so loops from first to last do nothing */
    lo = 0;
    hi = -1;
  }
  *first = (int)lo;
  *last = (int)hi;
}

/* Combine problem (see flashc_attn_combine_params). */
typedef struct fc_combine_problem {
  flashc_dtype out_dtype;
  int num_splits, batch, seqlen, heads, head_dim_v;
  const float* o_partial;
  const float* lse_partial;
  void* o;
  float* lse;
  int64_t o_partial_split_stride, o_partial_batch_stride, o_partial_row_stride, o_partial_head_stride;
  int64_t lse_partial_split_stride, lse_partial_batch_stride, lse_partial_head_stride,
      lse_partial_row_stride;
  int64_t o_batch_stride, o_row_stride, o_head_stride;
  int64_t lse_batch_stride, lse_head_stride;
  /* Set only by the split-KV forward on a GPU (attn_fwd_launch.cu): the query sequences'
   * cu_seqlens_q / seqused_q (device pointers), see attn_combine_kernel.cuh. NULL from
   * flashc_attn_combine. */
  const int32_t* cu_seqlens;
  const int32_t* seqused;
  /* Set only by the split-KV forward: launch the combine as a programmatic dependent of the
   * forward kernel just queued on the stream (sm_90; attn_fwd_kernel.cuh). */
  int after_forward;
} fc_combine_problem;

/* The packed partials layout, flashc_attn_combine's default and the one the split-KV forward
 * writes into its workspace: o_partial (splits, batch, seqlen, heads, head_dim_v) and
 * lse_partial (splits, batch, heads, seqlen), contiguous. Needs the five sizes set. */
static inline void fc_combine_set_packed_partial_strides(fc_combine_problem* p) {
  const int64_t batch = p->batch, rows = p->seqlen, heads = p->heads, dv = p->head_dim_v;
  p->o_partial_head_stride = dv;
  p->o_partial_row_stride = heads * dv;
  p->o_partial_batch_stride = rows * heads * dv;
  p->o_partial_split_stride = batch * rows * heads * dv;
  p->lse_partial_row_stride = 1;
  p->lse_partial_head_stride = rows;
  p->lse_partial_batch_stride = heads * rows;
  p->lse_partial_split_stride = batch * heads * rows;
}

/* GEMM, normalized so that D is always row-major (a column-major D is computed as
 * Dᵀ = Bᵀ·Aᵀ by swapping the operands and flipping their layouts). */
typedef struct fc_gemm_problem {
  int m, n, k, batch_count;
  flashc_dtype ab_dtype, d_dtype;
  flashc_layout a_layout, b_layout; /* of the (possibly swapped) operands */
  const void* a;
  const void* b;
  const void* c; /* NULL when beta == 0 */
  void* d;
  const void* bias;
  int bias_per_row; /* 1 after the swap: bias indexed by the row of D instead of the column */
  flashc_activation activation;
  int64_t lda, ldb, ldc, ldd; /* resolved, never 0 */
  int64_t stride_a, stride_b, stride_c, stride_d;
  float alpha, beta;
  const float* scale_a; /* NULL = 1 */
  const float* scale_b;
  int algo;
} fc_gemm_problem;

/* Can a GEMM epilogue read C / write D `width` elements at a time at columns that are
 * multiples of width: base `pointer` aligned to width elements, leading dimension and batch
 * stride (elements; pass 0 where the kernel ignores it) multiples of width? */
static inline int fc_gemm_vectors_ok(const void* pointer, int64_t ld, int64_t batch_stride, size_t element_bytes,
                                     int width) {
  return (uintptr_t)pointer % (width * element_bytes) == 0 && ld % width == 0 && batch_stride % width == 0;
}

/* The epilogues' 4-element path (gemm_portable_epilogue.cuh, the Hopper general epilogue): D,
 * C when present and a per-column bias, with the batch strides the kernel uses. */
static inline int fc_gemm_epilogue_quads_ok(const fc_gemm_problem* p, int64_t stride_d, int64_t stride_c) {
  const size_t bytes = flashc_dtype_size(p->d_dtype);
  return fc_gemm_vectors_ok(p->d, p->ldd, stride_d, bytes, 4) &&
         (!p->c || fc_gemm_vectors_ok(p->c, p->ldc, stride_c, bytes, 4)) &&
         (!p->bias || p->bias_per_row || (uintptr_t)p->bias % (4 * bytes) == 0);
}

/* Helpers below that kernels also call are compiled for the device too under nvcc. */
#ifdef __CUDACC__
#define FC_HOST_DEVICE __host__ __device__
#else
#define FC_HOST_DEVICE
#endif

/* Element (i, j) of an operand in `layout` with leading dimension ld. */
static inline FC_HOST_DEVICE int64_t fc_matrix_index(flashc_layout layout, int64_t ld, int64_t i, int64_t j) {
  return layout == FLASHC_ROW_MAJOR ? i * ld + j : j * ld + i;
}

#ifdef __cplusplus
}
#endif

#endif /* FLASHC_HOST_PROBLEM_H */
