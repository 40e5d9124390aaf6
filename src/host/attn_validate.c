/*
 * attn_validate.c — flashc_attn_fwd_params / flashc_attn_bwd_params → fc_attn_problem.
 *
 * The forward and backward share their shape, mask and varlen fields; those are copied into
 * one attn_shape_args and checked once. Tensors are then resolved one by one (packed
 * default strides, layout, GPU alignment). Every failure names the argument and its value.
 * Checked by tests/cpu_validation.c (one table row per rule).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "host/error.h"
#include "host/layout.h"
#include "host/validate.h"

/* The CPU backend's loops take any head dim; this bound keeps per-row scratch small. */
#define FC_CPU_MAX_HEAD_DIM 512
/* Split-KV partials are merged in one pass; FA3 caps splits at the same number. */
#define FC_MAX_NUM_SPLITS 256

/* The fields the forward and the backward parameter structs have in common. */
typedef struct attn_shape_args {
  flashc_dtype dtype;
  int batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim, head_dim_v;
  float softmax_scale, softcap;
  int causal, window_left, window_right;
  const int32_t* cu_seqlens_q;
  const int32_t* cu_seqlens_k;
  const int32_t* seqused_q;
  const int32_t* seqused_k;
  int total_q, total_k;
} attn_shape_args;

/* The forward and backward structs name these fields alike, so one initializer serves both. */
#define ATTN_SHAPE_ARGS(params)                                                                           \
  ((attn_shape_args){(params)->dtype, (params)->batch, (params)->seqlen_q, (params)->seqlen_k,              \
                     (params)->heads_q, (params)->heads_kv, (params)->head_dim, (params)->head_dim_v,       \
                     (params)->softmax_scale, (params)->softcap, (params)->causal, (params)->window_left,  \
                     (params)->window_right, (params)->cu_seqlens_q, (params)->cu_seqlens_k,              \
                     (params)->seqused_q, (params)->seqused_k, (params)->total_q, (params)->total_k})

static flashc_status check_positive(const char* name, int value) {
  if (value <= 0) return fc_fail(FLASHC_STATUS_INVALID_VALUE, "%s (%d) must be positive", name, value);
  return FLASHC_STATUS_SUCCESS;
}

static flashc_status check_flag(const char* name, int value) {
  if (value != 0 && value != 1) return fc_fail(FLASHC_STATUS_INVALID_VALUE, "%s (%d) must be 0 or 1", name, value);
  return FLASHC_STATUS_SUCCESS;
}

static flashc_status check_input_dtype(flashc_dtype dtype, flashc_backend backend, int is_backward) {
  if (!fc_dtype_is_valid(dtype))
    return fc_fail(FLASHC_STATUS_INVALID_VALUE, "dtype (%d) is not a flashc_dtype input type", (int)dtype);
  if (is_backward && dtype == FLASHC_DTYPE_E4M3)
    return fc_fail(FLASHC_STATUS_NOT_SUPPORTED_DTYPE,
                   "dtype e4m3 is not supported by the attention backward (fp16, bf16%s)",
                   backend == FLASHC_BACKEND_CPU ? ", fp32" : "");
  if (backend == FLASHC_BACKEND_CUDA && dtype == FLASHC_DTYPE_FP32)
    return fc_fail(FLASHC_STATUS_NOT_SUPPORTED_DTYPE,
                   "dtype fp32 attention runs on the CPU backend only (the GPU takes fp16, bf16, e4m3)");
  return FLASHC_STATUS_SUCCESS;
}

static flashc_status check_head_dim(const char* name, int value, flashc_backend backend) {
  if (backend == FLASHC_BACKEND_CPU && value > FC_CPU_MAX_HEAD_DIM)
    return fc_fail(FLASHC_STATUS_NOT_SUPPORTED_HEAD_DIM, "%s (%d) is larger than the CPU backend's maximum (%d)",
                   name, value, FC_CPU_MAX_HEAD_DIM);
  return FLASHC_STATUS_SUCCESS;
}

/* cu_seqlens: starts at 0, non-decreasing, each length <= the maximum, ends at the total. */
static flashc_status check_cu_seqlens(const char* name, const int32_t* cu, int batch, int total,
                                      const char* total_name, int max_length, const char* max_name) {
  if (cu[0] != 0) return fc_fail(FLASHC_STATUS_INVALID_VALUE, "%s[0] (%d) must be 0", name, cu[0]);
  for (int b = 0; b < batch; ++b) {
    if (cu[b + 1] < cu[b])
      return fc_fail(FLASHC_STATUS_INVALID_VALUE, "%s decreases: %s[%d] (%d) < %s[%d] (%d)", name, name, b + 1,
                     cu[b + 1], name, b, cu[b]);
    if (cu[b + 1] - cu[b] > max_length)
      return fc_fail(FLASHC_STATUS_SHAPE_MISMATCH, "sequence %d has %d rows in %s, more than %s (%d)", b,
                     cu[b + 1] - cu[b], name, max_name, max_length);
  }
  if (cu[batch] != total)
    return fc_fail(FLASHC_STATUS_SHAPE_MISMATCH, "%s[batch = %d] (%d) does not equal %s (%d)", name, batch,
                   cu[batch], total_name, total);
  return FLASHC_STATUS_SUCCESS;
}

/* seqused[b] within [0, rows available to sequence b]. */
static flashc_status check_seqused(const char* name, const int32_t* seqused, const int32_t* cu, int batch,
                                   int fixed_length, const char* length_source) {
  for (int b = 0; b < batch; ++b) {
    int available = cu ? cu[b + 1] - cu[b] : fixed_length;
    if (seqused[b] < 0 || seqused[b] > available)
      return fc_fail(FLASHC_STATUS_INVALID_VALUE, "%s[%d] (%d) is outside [0, %d] (the rows %s gives sequence %d)",
                     name, b, seqused[b], available, length_source, b);
  }
  return FLASHC_STATUS_SUCCESS;
}

static flashc_status check_shape(const attn_shape_args* a, flashc_backend backend, int is_backward,
                                 fc_attn_problem* p) {
  FC_TRY(check_input_dtype(a->dtype, backend, is_backward));
  FC_TRY(check_positive("batch", a->batch));
  FC_TRY(check_positive("seqlen_q", a->seqlen_q));
  FC_TRY(check_positive("seqlen_k", a->seqlen_k));
  FC_TRY(check_positive("heads_q", a->heads_q));
  FC_TRY(check_positive("head_dim", a->head_dim));
  if (a->heads_kv < 0)
    return fc_fail(FLASHC_STATUS_INVALID_VALUE, "heads_kv (%d) must be positive (or 0 for heads_q)", a->heads_kv);
  if (a->head_dim_v < 0)
    return fc_fail(FLASHC_STATUS_INVALID_VALUE, "head_dim_v (%d) must be positive (or 0 for head_dim)",
                   a->head_dim_v);
  p->dtype = a->dtype;
  p->batch = a->batch;
  p->seqlen_q = a->seqlen_q;
  p->seqlen_k = a->seqlen_k;
  p->heads_q = a->heads_q;
  p->heads_kv = a->heads_kv ? a->heads_kv : a->heads_q;
  p->head_dim = a->head_dim;
  p->head_dim_v = a->head_dim_v ? a->head_dim_v : a->head_dim;
  if (p->heads_q % p->heads_kv != 0)
    return fc_fail(FLASHC_STATUS_SHAPE_MISMATCH, "heads_q (%d) is not a multiple of heads_kv (%d)", p->heads_q,
                   p->heads_kv);
  FC_TRY(check_head_dim("head_dim", p->head_dim, backend));
  FC_TRY(check_head_dim("head_dim_v", p->head_dim_v, backend));

  /* Scale and softcap. */
  if (!isfinite(a->softmax_scale))
    return fc_fail(FLASHC_STATUS_INVALID_VALUE, "softmax_scale (%g) must be finite (0 means 1/sqrt(head_dim))",
                   (double)a->softmax_scale);
  p->softmax_scale = a->softmax_scale != 0.0f ? a->softmax_scale : (float)(1.0 / sqrt((double)p->head_dim));
  if (!isfinite(a->softcap) || a->softcap < 0.0f)
    return fc_fail(FLASHC_STATUS_INVALID_VALUE, "softcap (%g) must be finite and >= 0 (0 = off)", (double)a->softcap);
  p->softcap = a->softcap;

  /* Masks: causal is the window (-1, 0), aligned bottom-right. */
  FC_TRY(check_flag("causal", a->causal));
  if (a->window_left < -1)
    return fc_fail(FLASHC_STATUS_INVALID_VALUE, "window_left (%d) must be >= -1 (-1 = unbounded)", a->window_left);
  if (a->window_right < -1)
    return fc_fail(FLASHC_STATUS_INVALID_VALUE, "window_right (%d) must be >= -1 (-1 = unbounded)",
                   a->window_right);
  if (a->causal && a->window_right > 0)
    return fc_fail(FLASHC_STATUS_INVALID_VALUE,
                   "causal contradicts window_right (%d): causal means window_right = 0 (leave it -1 or 0)",
                   a->window_right);
  p->is_causal = a->causal;
  p->window_left = a->window_left;
  p->window_right = a->causal ? 0 : a->window_right;

  /* Variable length. */
  p->cu_seqlens_q = a->cu_seqlens_q;
  p->cu_seqlens_k = a->cu_seqlens_k;
  p->seqused_q = a->seqused_q;
  p->seqused_k = a->seqused_k;
  if (a->cu_seqlens_q) {
    if (a->total_q < 0)
      return fc_fail(FLASHC_STATUS_INVALID_VALUE, "total_q (%d) must be >= 0 with cu_seqlens_q", a->total_q);
    p->total_q = a->total_q;
  }
  if (a->cu_seqlens_k) {
    if (a->total_k < 0)
      return fc_fail(FLASHC_STATUS_INVALID_VALUE, "total_k (%d) must be >= 0 with cu_seqlens_k", a->total_k);
    p->total_k = a->total_k;
  }
  /* The host can read the index arrays only when they are host memory (CPU backend). */
  if (backend == FLASHC_BACKEND_CPU) {
    if (a->cu_seqlens_q)
      FC_TRY(check_cu_seqlens("cu_seqlens_q", a->cu_seqlens_q, a->batch, a->total_q, "total_q", a->seqlen_q,
                              "seqlen_q"));
    if (a->cu_seqlens_k)
      FC_TRY(check_cu_seqlens("cu_seqlens_k", a->cu_seqlens_k, a->batch, a->total_k, "total_k", a->seqlen_k,
                              "seqlen_k"));
    if (a->seqused_q)
      FC_TRY(check_seqused("seqused_q", a->seqused_q, a->cu_seqlens_q, a->batch, a->seqlen_q,
                           a->cu_seqlens_q ? "cu_seqlens_q" : "seqlen_q"));
  }
  return FLASHC_STATUS_SUCCESS;
}

/* Which side of attention a tensor is on: query rows (q, o, dout, dq) or key rows (k, v, dk, dv). */
typedef enum tensor_side { SIDE_QUERY, SIDE_KEY } tensor_side;

typedef struct tensor_request {
  const char* name; /* "q", "dk", ... used to build "q_row_stride" etc. */
  const void* data;
  int64_t batch_stride, row_stride, head_stride;
  tensor_side side;
  int dim; /* last dimension: head_dim or head_dim_v */
  flashc_dtype dtype;
} tensor_request;

/* Packed defaults, layout and alignment of one tensor; writes its resolved strides. */
static flashc_status resolve_tensor(const fc_attn_problem* p, flashc_backend backend, const tensor_request* r,
                                    int64_t* batch_stride, int64_t* row_stride, int64_t* head_stride) {
  if (!r->data) return fc_fail(FLASHC_STATUS_NULL_POINTER, "%s is NULL", r->name);
  int heads = r->side == SIDE_QUERY ? p->heads_q : p->heads_kv;
  int64_t batches, rows;
  int is_varlen;
  if (r->side == SIDE_QUERY) {
    is_varlen = p->cu_seqlens_q != NULL;
    batches = is_varlen ? 1 : p->batch;
    rows = is_varlen ? p->total_q : p->seqlen_q;
  } else if (p->page_table) {
    is_varlen = 0;
    batches = p->num_pages; /* the batch stride is the page stride */
    rows = p->page_size;
  } else {
    is_varlen = p->cu_seqlens_k != NULL;
    batches = is_varlen ? 1 : p->batch;
    rows = is_varlen ? p->total_k : p->seqlen_k;
  }
  *head_stride = r->head_stride ? r->head_stride : r->dim;
  *row_stride = r->row_stride ? r->row_stride : (int64_t)heads * r->dim;
  *batch_stride = is_varlen ? 0 : (r->batch_stride ? r->batch_stride : rows * heads * r->dim);

  char batch_name[40], row_name[40], head_name[40];
  snprintf(batch_name, sizeof batch_name, "%s_batch_stride", r->name);
  snprintf(row_name, sizeof row_name, "%s_row_stride", r->name);
  snprintf(head_name, sizeof head_name, "%s_head_stride", r->name);
  fc_dim dims[3] = {{batches, *batch_stride, batch_name}, {rows, *row_stride, row_name}, {heads, *head_stride, head_name}};
  FC_TRY(fc_check_layout(r->name, dims, 3, r->dim));
  if (backend == FLASHC_BACKEND_CUDA)
    FC_TRY(fc_check_gpu_alignment(r->name, r->data, dims, 3, flashc_dtype_size(r->dtype)));
  return FLASHC_STATUS_SUCCESS;
}

static flashc_status resolve_input(const fc_attn_problem* p, flashc_backend backend, const tensor_request* r,
                                   fc_tensor_in* out) {
  FC_TRY(resolve_tensor(p, backend, r, &out->batch_stride, &out->row_stride, &out->head_stride));
  out->data = r->data;
  return FLASHC_STATUS_SUCCESS;
}

static flashc_status resolve_output(const fc_attn_problem* p, flashc_backend backend, const tensor_request* r,
                                    void* data, fc_tensor_out* out) {
  FC_TRY(resolve_tensor(p, backend, r, &out->batch_stride, &out->row_stride, &out->head_stride));
  out->data = data;
  return FLASHC_STATUS_SUCCESS;
}

/* LSE: (batch, heads_q, seqlen_q) or (heads_q, total_q) with varlen, rows contiguous. */
static flashc_status resolve_lse(fc_attn_problem* p, flashc_backend backend, const float* lse, int64_t batch_stride,
                                 int64_t head_stride) {
  int is_varlen = p->cu_seqlens_q != NULL;
  int64_t rows = is_varlen ? p->total_q : p->seqlen_q;
  p->lse = (float*)lse;
  p->lse_head_stride = head_stride ? head_stride : rows;
  p->lse_batch_stride = is_varlen ? 0 : (batch_stride ? batch_stride : p->heads_q * rows);
  fc_dim dims[2] = {{is_varlen ? 1 : p->batch, p->lse_batch_stride, "lse_batch_stride"},
                    {p->heads_q, p->lse_head_stride, "lse_head_stride"}};
  FC_TRY(fc_check_layout("lse", dims, 2, rows));
  if (backend == FLASHC_BACKEND_CUDA && (uintptr_t)lse % sizeof(float) != 0)
    return fc_fail(FLASHC_STATUS_MISALIGNED, "lse (%p) is not 4-byte aligned", (const void*)lse);
  return FLASHC_STATUS_SUCCESS;
}

/* Paged KV: sizes, the capacity of each sequence, and (CPU) the page indices that are used. */
static flashc_status check_paging(const flashc_attn_fwd_params* params, flashc_backend backend, fc_attn_problem* p) {
  if (params->cu_seqlens_k)
    return fc_fail(FLASHC_STATUS_NOT_SUPPORTED,
                   "cu_seqlens_k cannot be combined with page_table: give per-sequence lengths in cache_seqlens");
  FC_TRY(check_positive("page_size", params->page_size));
  FC_TRY(check_positive("num_pages", params->num_pages));
  FC_TRY(check_positive("max_pages", params->max_pages));
  if (params->page_table_batch_stride < 0)
    return fc_fail(FLASHC_STATUS_BAD_LAYOUT, "page_table_batch_stride (%lld) is negative",
                   (long long)params->page_table_batch_stride);
  p->page_table = params->page_table;
  p->page_size = params->page_size;
  p->num_pages = params->num_pages;
  p->max_pages = params->max_pages;
  p->page_table_batch_stride = params->page_table_batch_stride ? params->page_table_batch_stride : params->max_pages;
  if (p->page_table_batch_stride < params->max_pages && params->batch > 1)
    return fc_fail(FLASHC_STATUS_BAD_LAYOUT, "page_table_batch_stride (%lld) is smaller than max_pages (%d)",
                   (long long)p->page_table_batch_stride, params->max_pages);
  int64_t capacity = (int64_t)params->max_pages * params->page_size;
  if (params->seqlen_k > capacity)
    return fc_fail(FLASHC_STATUS_SHAPE_MISMATCH,
                   "seqlen_k (%d) is larger than max_pages (%d) x page_size (%d) = %lld rows the page table can hold",
                   params->seqlen_k, params->max_pages, params->page_size, (long long)capacity);
  if (backend != FLASHC_BACKEND_CPU) return FLASHC_STATUS_SUCCESS;
  for (int b = 0; b < params->batch; ++b) {
    int64_t length = p->seqused_k ? p->seqused_k[b] : params->seqlen_k;
    int64_t pages_used = (length + params->page_size - 1) / params->page_size;
    for (int64_t page = 0; page < pages_used; ++page) {
      int32_t entry = params->page_table[b * p->page_table_batch_stride + page];
      if (entry < 0 || entry >= params->num_pages)
        return fc_fail(FLASHC_STATUS_INVALID_VALUE, "page_table[%d][%lld] (%d) is outside [0, num_pages = %d)", b,
                       (long long)page, entry, params->num_pages);
    }
  }
  return FLASHC_STATUS_SUCCESS;
}

/* seqused_k (or its alias cache_seqlens): per-sequence key counts within what k holds. */
static flashc_status check_key_lengths(const flashc_attn_fwd_params* params, flashc_backend backend,
                                       fc_attn_problem* p) {
  if (params->cache_seqlens && params->seqused_k)
    return fc_fail(FLASHC_STATUS_INVALID_VALUE,
                   "cache_seqlens and seqused_k are both set; they mean the same thing, give one");
  const char* name = params->cache_seqlens ? "cache_seqlens" : "seqused_k";
  p->seqused_k = params->cache_seqlens ? params->cache_seqlens : params->seqused_k;
  if (!p->seqused_k || backend != FLASHC_BACKEND_CPU) return FLASHC_STATUS_SUCCESS;
  if (params->page_table) {
    int capacity = params->max_pages * params->page_size;
    for (int b = 0; b < params->batch; ++b)
      if (p->seqused_k[b] < 0 || p->seqused_k[b] > capacity)
        return fc_fail(FLASHC_STATUS_INVALID_VALUE,
                       "%s[%d] (%d) is outside [0, %d] (max_pages x page_size of the page table)", name, b,
                       p->seqused_k[b], capacity);
    return FLASHC_STATUS_SUCCESS;
  }
  return check_seqused(name, p->seqused_k, params->cu_seqlens_k, params->batch, params->seqlen_k,
                       params->cu_seqlens_k ? "cu_seqlens_k" : "seqlen_k");
}

static flashc_status check_descales(const flashc_attn_fwd_params* params, fc_attn_problem* p) {
  const float* descales[3] = {params->q_descale, params->k_descale, params->v_descale};
  const char* names[3] = {"q_descale", "k_descale", "v_descale"};
  for (int i = 0; i < 3; ++i) {
    if (params->dtype == FLASHC_DTYPE_E4M3 && !descales[i])
      return fc_fail(FLASHC_STATUS_NULL_POINTER,
                     "%s is NULL: e4m3 attention needs q_descale, k_descale and v_descale", names[i]);
    if (params->dtype != FLASHC_DTYPE_E4M3 && descales[i])
      return fc_fail(FLASHC_STATUS_INVALID_VALUE, "%s is set but dtype is %s (descales apply to e4m3 inputs only)",
                     names[i], flashc_dtype_name(params->dtype));
  }
  if (params->descale_batch_stride < 0 || params->descale_head_stride < 0)
    return fc_fail(FLASHC_STATUS_BAD_LAYOUT, "%s (%lld) is negative",
                   params->descale_batch_stride < 0 ? "descale_batch_stride" : "descale_head_stride",
                   (long long)(params->descale_batch_stride < 0 ? params->descale_batch_stride
                                                                : params->descale_head_stride));
  p->q_descale = params->q_descale;
  p->k_descale = params->k_descale;
  p->v_descale = params->v_descale;
  p->descale_head_stride = params->descale_head_stride ? params->descale_head_stride : 1;
  p->descale_batch_stride = params->descale_batch_stride ? params->descale_batch_stride : p->heads_kv;
  return FLASHC_STATUS_SUCCESS;
}

static flashc_status resolve_out_dtype(flashc_dtype dtype, flashc_dtype out_dtype, flashc_dtype* resolved) {
  if (out_dtype != FLASHC_DTYPE_AUTO && !fc_dtype_is_valid(out_dtype))
    return fc_fail(FLASHC_STATUS_INVALID_VALUE, "out_dtype (%d) is not a flashc_dtype", (int)out_dtype);
  if (dtype == FLASHC_DTYPE_E4M3) {
    *resolved = out_dtype == FLASHC_DTYPE_AUTO ? FLASHC_DTYPE_BF16 : out_dtype;
    if (*resolved != FLASHC_DTYPE_BF16 && *resolved != FLASHC_DTYPE_FP16)
      return fc_fail(FLASHC_STATUS_NOT_SUPPORTED_DTYPE, "out_dtype %s is not supported with e4m3 inputs (bf16 or fp16)",
                     flashc_dtype_name(*resolved));
    return FLASHC_STATUS_SUCCESS;
  }
  *resolved = out_dtype == FLASHC_DTYPE_AUTO ? dtype : out_dtype;
  if (*resolved != dtype)
    return fc_fail(FLASHC_STATUS_NOT_SUPPORTED_DTYPE, "out_dtype %s differs from the %s inputs (o has the input dtype)",
                   flashc_dtype_name(*resolved), flashc_dtype_name(dtype));
  return FLASHC_STATUS_SUCCESS;
}

static flashc_status check_struct_size(size_t given, size_t expected, const char* struct_name) {
  if (given != expected)
    return fc_fail(FLASHC_STATUS_BAD_STRUCT_SIZE,
                   "params->struct_size (%zu) is not sizeof(%s) (%zu): fill the struct with its init function first",
                   given, struct_name, expected);
  return FLASHC_STATUS_SUCCESS;
}

flashc_status fc_attn_fwd_problem_make(const flashc_attn_fwd_params* params, flashc_backend backend,
                                       fc_attn_problem* p) {
  if (!params) return fc_fail(FLASHC_STATUS_NULL_POINTER, "params is NULL");
  FC_TRY(check_struct_size(params->struct_size, sizeof *params, "flashc_attn_fwd_params"));
  memset(p, 0, sizeof *p);
  const attn_shape_args shape = ATTN_SHAPE_ARGS(params);
  FC_TRY(check_shape(&shape, backend, 0, p));
  FC_TRY(resolve_out_dtype(params->dtype, params->out_dtype, &p->out_dtype));
  FC_TRY(check_key_lengths(params, backend, p));
  if (params->page_table) FC_TRY(check_paging(params, backend, p));

  if (params->num_splits < 0 || params->num_splits > FC_MAX_NUM_SPLITS)
    return fc_fail(FLASHC_STATUS_INVALID_VALUE, "num_splits (%d) must be in [0, %d] (0 = automatic, 1 = no split)",
                   params->num_splits, FC_MAX_NUM_SPLITS);
  /* Automatic: the CPU gains nothing from splitting; the GPU heuristic lives with its launcher. */
  p->num_splits = params->num_splits ? params->num_splits : 1;
  p->num_splits_auto = params->num_splits == 0;
  if (params->pack_gqa < -1 || params->pack_gqa > 1)
    return fc_fail(FLASHC_STATUS_INVALID_VALUE, "pack_gqa (%d) must be -1 (automatic), 0 or 1", params->pack_gqa);
  p->pack_gqa = params->pack_gqa;
  FC_TRY(check_descales(params, p));

  tensor_request q = {"q", params->q, params->q_batch_stride, params->q_row_stride, params->q_head_stride,
                      SIDE_QUERY, p->head_dim, p->dtype};
  tensor_request k = {"k", params->k, params->k_batch_stride, params->k_row_stride, params->k_head_stride,
                      SIDE_KEY, p->head_dim, p->dtype};
  tensor_request v = {"v", params->v, params->v_batch_stride, params->v_row_stride, params->v_head_stride,
                      SIDE_KEY, p->head_dim_v, p->dtype};
  tensor_request o = {"o", params->o, params->o_batch_stride, params->o_row_stride, params->o_head_stride,
                      SIDE_QUERY, p->head_dim_v, p->out_dtype};
  FC_TRY(resolve_input(p, backend, &q, &p->q));
  FC_TRY(resolve_input(p, backend, &k, &p->k));
  FC_TRY(resolve_input(p, backend, &v, &p->v));
  FC_TRY(resolve_output(p, backend, &o, params->o, &p->o));
  if (params->lse) FC_TRY(resolve_lse(p, backend, params->lse, params->lse_batch_stride, params->lse_head_stride));
  return FLASHC_STATUS_SUCCESS;
}

flashc_status fc_attn_bwd_problem_make(const flashc_attn_bwd_params* params, flashc_backend backend,
                                       fc_attn_problem* p) {
  if (!params) return fc_fail(FLASHC_STATUS_NULL_POINTER, "params is NULL");
  FC_TRY(check_struct_size(params->struct_size, sizeof *params, "flashc_attn_bwd_params"));
  memset(p, 0, sizeof *p);
  const attn_shape_args shape = ATTN_SHAPE_ARGS(params);
  FC_TRY(check_shape(&shape, backend, 1, p));
  p->out_dtype = p->dtype;
  p->num_splits = 1;
  p->pack_gqa = -1;
  if (backend == FLASHC_BACKEND_CPU && params->seqused_k)
    FC_TRY(check_seqused("seqused_k", params->seqused_k, params->cu_seqlens_k, params->batch, params->seqlen_k,
                         params->cu_seqlens_k ? "cu_seqlens_k" : "seqlen_k"));
  FC_TRY(check_flag("deterministic", params->deterministic));
  p->deterministic = params->deterministic;

  const int d = p->head_dim, dv = p->head_dim_v;
  tensor_request q = {"q", params->q, params->q_batch_stride, params->q_row_stride, params->q_head_stride, SIDE_QUERY, d, p->dtype};
  tensor_request k = {"k", params->k, params->k_batch_stride, params->k_row_stride, params->k_head_stride, SIDE_KEY, d, p->dtype};
  tensor_request v = {"v", params->v, params->v_batch_stride, params->v_row_stride, params->v_head_stride, SIDE_KEY, dv, p->dtype};
  tensor_request o = {"o", params->o, params->o_batch_stride, params->o_row_stride, params->o_head_stride, SIDE_QUERY, dv, p->dtype};
  tensor_request dout = {"dout", params->dout, params->dout_batch_stride, params->dout_row_stride,
                         params->dout_head_stride, SIDE_QUERY, dv, p->dtype};
  tensor_request dq = {"dq", params->dq, params->dq_batch_stride, params->dq_row_stride, params->dq_head_stride, SIDE_QUERY, d, p->dtype};
  tensor_request dk = {"dk", params->dk, params->dk_batch_stride, params->dk_row_stride, params->dk_head_stride, SIDE_KEY, d, p->dtype};
  tensor_request dv_ = {"dv", params->dv, params->dv_batch_stride, params->dv_row_stride, params->dv_head_stride, SIDE_KEY, dv, p->dtype};
  FC_TRY(resolve_input(p, backend, &q, &p->q));
  FC_TRY(resolve_input(p, backend, &k, &p->k));
  FC_TRY(resolve_input(p, backend, &v, &p->v));
  /* o is an input of the backward; the problem keeps it in the forward's slot. */
  FC_TRY(resolve_output(p, backend, &o, (void*)params->o, &p->o));
  FC_TRY(resolve_input(p, backend, &dout, &p->dout));
  if (!params->lse) return fc_fail(FLASHC_STATUS_NULL_POINTER, "lse is NULL: the backward needs the forward's LSE");
  FC_TRY(resolve_lse(p, backend, params->lse, params->lse_batch_stride, params->lse_head_stride));
  FC_TRY(resolve_output(p, backend, &dq, params->dq, &p->dq));
  FC_TRY(resolve_output(p, backend, &dk, params->dk, &p->dk));
  FC_TRY(resolve_output(p, backend, &dv_, params->dv, &p->dv));
  return FLASHC_STATUS_SUCCESS;
}

flashc_status fc_combine_problem_make(const flashc_attn_combine_params* params, flashc_backend backend,
                                      fc_combine_problem* p) {
  if (!params) return fc_fail(FLASHC_STATUS_NULL_POINTER, "params is NULL");
  FC_TRY(check_struct_size(params->struct_size, sizeof *params, "flashc_attn_combine_params"));
  memset(p, 0, sizeof *p);
  if (!fc_dtype_is_valid(params->out_dtype))
    return fc_fail(FLASHC_STATUS_INVALID_VALUE, "out_dtype (%d) is not a flashc_dtype", (int)params->out_dtype);
  if (params->out_dtype == FLASHC_DTYPE_E4M3)
    return fc_fail(FLASHC_STATUS_NOT_SUPPORTED_DTYPE, "out_dtype e4m3 is not supported by the combine (fp16, bf16, fp32)");
  FC_TRY(check_positive("num_splits", params->num_splits));
  if (params->num_splits > FC_MAX_NUM_SPLITS)
    return fc_fail(FLASHC_STATUS_INVALID_VALUE, "num_splits (%d) is larger than %d", params->num_splits,
                   FC_MAX_NUM_SPLITS);
  FC_TRY(check_positive("batch", params->batch));
  FC_TRY(check_positive("seqlen", params->seqlen));
  FC_TRY(check_positive("heads", params->heads));
  FC_TRY(check_positive("head_dim_v", params->head_dim_v));
  if (!params->o_partial) return fc_fail(FLASHC_STATUS_NULL_POINTER, "o_partial is NULL");
  if (!params->lse_partial) return fc_fail(FLASHC_STATUS_NULL_POINTER, "lse_partial is NULL");
  if (!params->o) return fc_fail(FLASHC_STATUS_NULL_POINTER, "o is NULL");

  const int64_t splits = params->num_splits, batch = params->batch, rows = params->seqlen, heads = params->heads,
                dv = params->head_dim_v;
  p->out_dtype = params->out_dtype;
  p->num_splits = params->num_splits;
  p->batch = params->batch;
  p->seqlen = params->seqlen;
  p->heads = params->heads;
  p->head_dim_v = params->head_dim_v;
  p->o_partial = params->o_partial;
  p->lse_partial = params->lse_partial;
  p->o = params->o;
  p->lse = params->lse;
  fc_combine_set_packed_partial_strides(p);
#define FC_STRIDE_OR(value, packed) ((value) ? (value) : (packed))
  p->o_partial_head_stride = FC_STRIDE_OR(params->o_partial_head_stride, p->o_partial_head_stride);
  p->o_partial_row_stride = FC_STRIDE_OR(params->o_partial_row_stride, p->o_partial_row_stride);
  p->o_partial_batch_stride = FC_STRIDE_OR(params->o_partial_batch_stride, p->o_partial_batch_stride);
  p->o_partial_split_stride = FC_STRIDE_OR(params->o_partial_split_stride, p->o_partial_split_stride);
  p->lse_partial_row_stride = FC_STRIDE_OR(params->lse_partial_row_stride, p->lse_partial_row_stride);
  p->lse_partial_head_stride = FC_STRIDE_OR(params->lse_partial_head_stride, p->lse_partial_head_stride);
  p->lse_partial_batch_stride = FC_STRIDE_OR(params->lse_partial_batch_stride, p->lse_partial_batch_stride);
  p->lse_partial_split_stride = FC_STRIDE_OR(params->lse_partial_split_stride, p->lse_partial_split_stride);
  p->o_head_stride = FC_STRIDE_OR(params->o_head_stride, dv);
  p->o_row_stride = FC_STRIDE_OR(params->o_row_stride, heads * dv);
  p->o_batch_stride = FC_STRIDE_OR(params->o_batch_stride, rows * heads * dv);
  p->lse_head_stride = FC_STRIDE_OR(params->lse_head_stride, rows);
  p->lse_batch_stride = FC_STRIDE_OR(params->lse_batch_stride, heads * rows);
#undef FC_STRIDE_OR

  fc_dim o_partial_dims[4] = {{splits, p->o_partial_split_stride, "o_partial_split_stride"},
                              {batch, p->o_partial_batch_stride, "o_partial_batch_stride"},
                              {rows, p->o_partial_row_stride, "o_partial_row_stride"},
                              {heads, p->o_partial_head_stride, "o_partial_head_stride"}};
  fc_dim lse_partial_dims[4] = {{splits, p->lse_partial_split_stride, "lse_partial_split_stride"},
                                {batch, p->lse_partial_batch_stride, "lse_partial_batch_stride"},
                                {heads, p->lse_partial_head_stride, "lse_partial_head_stride"},
                                {rows, p->lse_partial_row_stride, "lse_partial_row_stride"}};
  fc_dim o_dims[3] = {{batch, p->o_batch_stride, "o_batch_stride"},
                      {rows, p->o_row_stride, "o_row_stride"},
                      {heads, p->o_head_stride, "o_head_stride"}};
  fc_dim lse_dims[2] = {{batch, p->lse_batch_stride, "lse_batch_stride"}, {heads, p->lse_head_stride, "lse_head_stride"}};
  FC_TRY(fc_check_layout("o_partial", o_partial_dims, 4, dv));
  FC_TRY(fc_check_layout("lse_partial", lse_partial_dims, 4, 1));
  FC_TRY(fc_check_layout("o", o_dims, 3, dv));
  if (p->lse) FC_TRY(fc_check_layout("lse", lse_dims, 2, rows));
  if (backend == FLASHC_BACKEND_CUDA) {
    FC_TRY(fc_check_gpu_alignment("o_partial", p->o_partial, o_partial_dims, 4, sizeof(float)));
    FC_TRY(fc_check_gpu_alignment("o", p->o, o_dims, 3, flashc_dtype_size(p->out_dtype)));
  }
  return FLASHC_STATUS_SUCCESS;
}
