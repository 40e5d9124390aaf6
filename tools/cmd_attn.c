/*
 * cmd_attn.c — `flashc attn`: one attention case, forward and optionally backward.
 *
 * The inputs are built once on the host (random per dtype; with --varlen random sequence
 * lengths, one of them empty; with --paged a shuffled page table), the forward runs on the
 * selected backend through run_operation, then the backward from the forward's o and lse.
 * --check compares o, lse (and dq, dk, dv) with fc_ref_attn_fwd / fc_ref_attn_bwd evaluated
 * on the host copies under the DESIGN.md §6 rule; --bench times each operation.
 *
 *   flashc attn --check
 *   flashc attn --causal --varlen --heads-kv 2 --backward --check
 *   flashc attn --seqlen 8192 --batch 2 --heads 16 --causal --bench --json
 */
#include "cmd_attn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "buffers.h"
#include "commands.h"
#include "common.h"
#include "cpu/reference.h"
#include "host/problem.h"
#include "host/validate.h"

/* Backward FLOPs are this multiple of the forward's (DESIGN.md §7, FA3's convention). */
#define BACKWARD_FLOP_FACTOR 2.5
/* References above this many FLOPs announce themselves on stderr (they run on the host in fp64). */
#define REFERENCE_NOTE_FLOPS 2e9
/* fp8 descale factors are drawn from this range. */
#define DESCALE_LOW 0.5
#define DESCALE_HIGH 2.0
/* Spare pages in the paged cache beyond what the sequences need: page indices are then not
 * a permutation of 0..num_pages-1, so a kernel that ignores the table reads wrong pages. */
#define SPARE_PAGES 3

static const arg_choice dtype_choices[] = {
    {"fp16", FLASHC_DTYPE_FP16}, {"bf16", FLASHC_DTYPE_BF16}, {"fp32", FLASHC_DTYPE_FP32},
    {"e4m3", FLASHC_DTYPE_E4M3}, {NULL, 0}};
static const arg_choice out_dtype_choices[] = {
    {"auto", FLASHC_DTYPE_AUTO}, {"fp16", FLASHC_DTYPE_FP16}, {"bf16", FLASHC_DTYPE_BF16},
    {"fp32", FLASHC_DTYPE_FP32}, {NULL, 0}};
static const arg_choice pack_gqa_choices[] = {{"auto", -1}, {"off", 0}, {"on", 1}, {NULL, 0}};

void attn_config_default(attn_config* c) {
  memset(c, 0, sizeof *c);
  c->batch = 2;
  c->seqlen_q = c->seqlen_k = 512;
  c->heads_q = 8;
  c->head_dim = 128;
  c->dtype = FLASHC_DTYPE_BF16;
  c->out_dtype = FLASHC_DTYPE_AUTO;
  c->window[0] = c->window[1] = -1;
  c->num_splits = 1;
  c->pack_gqa = -1;
}

int attn_config_check(const attn_config* c, const char* prog) {
  const char* conflict = NULL;
  if (c->backward && c->page_size > 0)
    conflict = "--backward cannot be combined with --paged (the backward takes contiguous K/V)";
  else if (c->backward && c->dtype == FLASHC_DTYPE_E4M3)
    conflict = "--backward cannot be combined with --dtype e4m3 (the backward takes fp16, bf16 or fp32)";
  if (!conflict) return 0;
  fprintf(stderr, "%s: %s (see %s --help)\n", prog, conflict, prog);
  return -1;
}

static int resolved_heads_kv(const attn_config* c) { return c->heads_kv ? c->heads_kv : c->heads_q; }
static int resolved_head_dim_v(const attn_config* c) { return c->head_dim_v ? c->head_dim_v : c->head_dim; }
static double resolved_softmax_scale(const attn_config* c) {
  return c->softmax_scale != 0.0 ? c->softmax_scale : 1.0 / sqrt((double)c->head_dim);
}
static flashc_dtype resolved_out_dtype(const attn_config* c) {
  if (c->out_dtype != FLASHC_DTYPE_AUTO) return (flashc_dtype)c->out_dtype;
  return c->dtype == FLASHC_DTYPE_E4M3 ? FLASHC_DTYPE_BF16 : (flashc_dtype)c->dtype;
}

const char* attn_config_summary(const attn_config* c, char* text, size_t capacity) {
  char mask[48] = "";
  if (c->causal)
    snprintf(mask, sizeof mask, " causal");
  else if (c->window[0] >= 0 || c->window[1] >= 0)
    snprintf(mask, sizeof mask, " window %d,%d", c->window[0], c->window[1]);
  snprintf(text, capacity, "b%d sq%d sk%d h%d/%d d%d%s %s%s%s%s", c->batch, c->seqlen_q, c->seqlen_k, c->heads_q,
           resolved_heads_kv(c), c->head_dim, c->head_dim_v && c->head_dim_v != c->head_dim ? "/dv" : "",
           flashc_dtype_name((flashc_dtype)c->dtype), mask, c->varlen ? " varlen" : "", c->page_size ? " paged" : "");
  return text;
}

/* ------------------------------------------------------------------------------------ */
/* The case: host (and device) tensors and the parameter structs                         */
/* ------------------------------------------------------------------------------------ */

typedef struct attn_case {
  const attn_config* config;
  int heads_kv, head_dim_v;
  flashc_dtype out_dtype;
  int varlen, paged;
  int total_q, total_k;      /* rows of q / k with varlen */
  int max_pages, num_pages;  /* paged cache geometry */

  tensor q, k, v, o, lse, dout, dq, dk, dv;
  tensor cu_seqlens_q, cu_seqlens_k, cache_seqlens, page_table;
  tensor q_descale, k_descale, v_descale;
  tensor workspace;

  run_backend* backend; /* where the operation being run was prepared */
  flashc_attn_fwd_params fwd;
  flashc_attn_bwd_params bwd;
} attn_case;

/* Geometry of one attention tensor: outer dimensions around a contiguous last dimension. */
typedef struct attn_layout {
  int64_t batches, rows, heads, dim;
  int64_t row_stride, batch_stride; /* row_stride includes --pad */
  int64_t count;                    /* elements spanned */
} attn_layout;

static attn_layout make_layout(int64_t batches, int64_t rows, int64_t heads, int64_t dim, int pad) {
  attn_layout l;
  l.batches = batches;
  l.rows = rows;
  l.heads = heads;
  l.dim = dim;
  l.row_stride = heads * dim + pad;
  l.batch_stride = rows * l.row_stride;
  l.count = batches * l.batch_stride;
  return l;
}

/* q, o, dout, dq: (batch, seqlen_q, heads_q, dim) or (total_q, heads_q, dim). */
static attn_layout query_layout(const attn_case* c, int dim) {
  const attn_config* cfg = c->config;
  if (c->varlen) return make_layout(1, c->total_q, cfg->heads_q, dim, cfg->pad);
  return make_layout(cfg->batch, cfg->seqlen_q, cfg->heads_q, dim, cfg->pad);
}

/* k, v, dk, dv: (batch, seqlen_k, ...), (total_k, ...) or the paged cache (num_pages, page_size, ...). */
static attn_layout key_layout(const attn_case* c, int dim) {
  const attn_config* cfg = c->config;
  if (c->paged) return make_layout(c->num_pages, cfg->page_size, c->heads_kv, dim, cfg->pad);
  if (c->varlen) return make_layout(1, c->total_k, c->heads_kv, dim, cfg->pad);
  return make_layout(cfg->batch, cfg->seqlen_k, c->heads_kv, dim, cfg->pad);
}

/* Strides for the params: 0 (packed, exercising the library's defaults) unless --pad. */
static void layout_strides(const attn_case* c, const attn_layout* l, int64_t* batch_stride, int64_t* row_stride) {
  *batch_stride = c->config->pad ? l->batch_stride : 0;
  *row_stride = c->config->pad ? l->row_stride : 0;
}

static void attn_case_free(attn_case* c) {
  tensor* all[] = {&c->q,           &c->k,           &c->v,          &c->o,          &c->lse,       &c->dout,
                   &c->dq,          &c->dk,          &c->dv,         &c->cu_seqlens_q, &c->cu_seqlens_k,
                   &c->cache_seqlens, &c->page_table, &c->q_descale, &c->k_descale, &c->v_descale, &c->workspace};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) tensor_free(all[i]);
}

/* Random lengths in [1, max], then one sequence (of two or more) made empty on the query
 * or the key side: empty sequences and fully masked rows are part of every --varlen run. */
static void random_lengths(tool_rng* rng, int batch, int max_q, int max_k, int32_t* lengths_q, int32_t* lengths_k) {
  for (int b = 0; b < batch; ++b) {
    lengths_q[b] = rng_int(rng, 1, max_q);
    lengths_k[b] = rng_int(rng, 1, max_k);
  }
  if (batch >= 2) {
    int empty = rng_int(rng, 0, batch - 1);
    if (rng_next(rng) & 1) lengths_q[empty] = 0;
    else lengths_k[empty] = 0;
  }
}

static flashc_status make_cu_seqlens(tensor* t, const char* name, const int32_t* lengths, int batch, int* total) {
  TOOL_TRY(tensor_alloc_raw(t, name, sizeof(int32_t), batch + 1));
  int32_t* cu = (int32_t*)t->host;
  cu[0] = 0;
  for (int b = 0; b < batch; ++b) cu[b + 1] = cu[b] + lengths[b];
  *total = cu[batch];
  return FLASHC_STATUS_SUCCESS;
}

/* Sequence lengths, the page table, and the index arrays that describe them. */
static flashc_status setup_sequences(attn_case* c, tool_rng* rng) {
  const attn_config* cfg = c->config;
  flashc_status status = FLASHC_STATUS_SUCCESS;
  int32_t* lengths_q = NULL;
  int32_t* lengths_k = NULL;
  if (c->varlen) {
    lengths_q = (int32_t*)malloc((size_t)cfg->batch * sizeof *lengths_q);
    lengths_k = (int32_t*)malloc((size_t)cfg->batch * sizeof *lengths_k);
    if (!lengths_q || !lengths_k) {
      status = tool_fail(FLASHC_STATUS_OUT_OF_MEMORY, "allocating sequence lengths failed");
      goto done;
    }
    random_lengths(rng, cfg->batch, cfg->seqlen_q, cfg->seqlen_k, lengths_q, lengths_k);
    status = make_cu_seqlens(&c->cu_seqlens_q, "cu_seqlens_q", lengths_q, cfg->batch, &c->total_q);
    if (status != FLASHC_STATUS_SUCCESS) goto done;
    if (c->paged) { /* paged keys take their lengths from cache_seqlens, not cu_seqlens_k */
      status = tensor_alloc_raw(&c->cache_seqlens, "cache_seqlens", sizeof(int32_t), cfg->batch);
      if (status != FLASHC_STATUS_SUCCESS) goto done;
      memcpy(c->cache_seqlens.host, lengths_k, (size_t)cfg->batch * sizeof *lengths_k);
    } else {
      status = make_cu_seqlens(&c->cu_seqlens_k, "cu_seqlens_k", lengths_k, cfg->batch, &c->total_k);
      if (status != FLASHC_STATUS_SUCCESS) goto done;
    }
  }
  if (c->paged) {
    c->max_pages = (cfg->seqlen_k + cfg->page_size - 1) / cfg->page_size;
    c->num_pages = cfg->batch * c->max_pages + SPARE_PAGES;
    status = tensor_alloc_raw(&c->page_table, "page_table", sizeof(int32_t), (int64_t)cfg->batch * c->max_pages);
    if (status != FLASHC_STATUS_SUCCESS) goto done;
    /* A random choice of distinct pages: shuffle 0..num_pages-1 and take the first entries. */
    int32_t* pages = (int32_t*)malloc((size_t)c->num_pages * sizeof *pages);
    if (!pages) {
      status = tool_fail(FLASHC_STATUS_OUT_OF_MEMORY, "allocating the page shuffle failed");
      goto done;
    }
    for (int i = 0; i < c->num_pages; ++i) pages[i] = i;
    for (int i = c->num_pages - 1; i > 0; --i) {
      int j = rng_int(rng, 0, i);
      int32_t swap = pages[i];
      pages[i] = pages[j];
      pages[j] = swap;
    }
    memcpy(c->page_table.host, pages, (size_t)c->page_table.count * sizeof *pages);
    free(pages);
  }
done:
  free(lengths_q);
  free(lengths_k);
  return status;
}

static flashc_status attn_case_setup(attn_case* c, const attn_config* cfg, int seed) {
  memset(c, 0, sizeof *c);
  c->config = cfg;
  c->heads_kv = resolved_heads_kv(cfg);
  c->head_dim_v = resolved_head_dim_v(cfg);
  c->out_dtype = resolved_out_dtype(cfg);
  c->varlen = cfg->varlen;
  c->paged = cfg->page_size > 0;

  tool_rng rng;
  rng_seed(&rng, (uint64_t)seed);
  TOOL_TRY(setup_sequences(c, &rng));

  const flashc_dtype dtype = (flashc_dtype)cfg->dtype;
  const int d = cfg->head_dim, dv = c->head_dim_v;
  attn_layout q = query_layout(c, d), o = query_layout(c, dv), k = key_layout(c, d), v = key_layout(c, dv);
  int64_t lse_count = (int64_t)cfg->heads_q * (c->varlen ? c->total_q : (int64_t)cfg->batch * cfg->seqlen_q);
  TOOL_TRY(tensor_alloc(&c->q, "q", dtype, q.count));
  TOOL_TRY(tensor_alloc(&c->k, "k", dtype, k.count));
  TOOL_TRY(tensor_alloc(&c->v, "v", dtype, v.count));
  TOOL_TRY(tensor_alloc(&c->o, "o", c->out_dtype, o.count));
  TOOL_TRY(tensor_alloc(&c->lse, "lse", FLASHC_DTYPE_FP32, lse_count));
  tensor_fill_random(&c->q, &rng, 1.0);
  tensor_fill_random(&c->k, &rng, 1.0);
  tensor_fill_random(&c->v, &rng, 1.0);
  if (dtype == FLASHC_DTYPE_E4M3) {
    int64_t descales = (int64_t)cfg->batch * c->heads_kv;
    TOOL_TRY(tensor_alloc(&c->q_descale, "q_descale", FLASHC_DTYPE_FP32, descales));
    TOOL_TRY(tensor_alloc(&c->k_descale, "k_descale", FLASHC_DTYPE_FP32, descales));
    TOOL_TRY(tensor_alloc(&c->v_descale, "v_descale", FLASHC_DTYPE_FP32, descales));
    tensor_fill_uniform(&c->q_descale, &rng, DESCALE_LOW, DESCALE_HIGH);
    tensor_fill_uniform(&c->k_descale, &rng, DESCALE_LOW, DESCALE_HIGH);
    tensor_fill_uniform(&c->v_descale, &rng, DESCALE_LOW, DESCALE_HIGH);
  }
  if (cfg->backward) {
    TOOL_TRY(tensor_alloc(&c->dout, "dout", dtype, o.count));
    TOOL_TRY(tensor_alloc(&c->dq, "dq", dtype, q.count));
    TOOL_TRY(tensor_alloc(&c->dk, "dk", dtype, k.count));
    TOOL_TRY(tensor_alloc(&c->dv, "dv", dtype, v.count));
    tensor_fill_random(&c->dout, &rng, 1.0);
  }
  return FLASHC_STATUS_SUCCESS;
}

/* The forward's parameter struct with the pointers of one side (host or device). */
static void fill_forward_params(attn_case* c, int on_device, flashc_attn_fwd_params* p) {
  const attn_config* cfg = c->config;
  flashc_attn_fwd_params_init(p);
  p->dtype = (flashc_dtype)cfg->dtype;
  p->out_dtype = (flashc_dtype)cfg->out_dtype;
  p->batch = cfg->batch;
  p->seqlen_q = cfg->seqlen_q;
  p->seqlen_k = cfg->seqlen_k;
  p->heads_q = cfg->heads_q;
  p->heads_kv = cfg->heads_kv;
  p->head_dim = cfg->head_dim;
  p->head_dim_v = cfg->head_dim_v;
  p->q = tensor_pointer(&c->q, on_device);
  p->k = tensor_pointer(&c->k, on_device);
  p->v = tensor_pointer(&c->v, on_device);
  p->o = tensor_pointer(&c->o, on_device);
  p->lse = (float*)tensor_pointer(&c->lse, on_device);
  attn_layout q = query_layout(c, cfg->head_dim), o = query_layout(c, c->head_dim_v);
  attn_layout k = key_layout(c, cfg->head_dim), v = key_layout(c, c->head_dim_v);
  layout_strides(c, &q, &p->q_batch_stride, &p->q_row_stride);
  layout_strides(c, &k, &p->k_batch_stride, &p->k_row_stride);
  layout_strides(c, &v, &p->v_batch_stride, &p->v_row_stride);
  layout_strides(c, &o, &p->o_batch_stride, &p->o_row_stride);
  p->softmax_scale = (float)cfg->softmax_scale;
  p->causal = cfg->causal;
  p->window_left = cfg->window[0];
  p->window_right = cfg->window[1];
  p->softcap = (float)cfg->softcap;
  if (c->varlen) {
    p->cu_seqlens_q = (const int32_t*)tensor_pointer(&c->cu_seqlens_q, on_device);
    p->total_q = c->total_q;
    if (!c->paged) {
      p->cu_seqlens_k = (const int32_t*)tensor_pointer(&c->cu_seqlens_k, on_device);
      p->total_k = c->total_k;
    }
  }
  if (c->paged) {
    p->page_table = (const int32_t*)tensor_pointer(&c->page_table, on_device);
    p->max_pages = c->max_pages;
    p->page_size = cfg->page_size;
    p->num_pages = c->num_pages;
    if (c->varlen) p->cache_seqlens = (const int32_t*)tensor_pointer(&c->cache_seqlens, on_device);
  }
  p->num_splits = cfg->num_splits;
  p->pack_gqa = cfg->pack_gqa;
  if (cfg->dtype == FLASHC_DTYPE_E4M3) {
    p->q_descale = (const float*)tensor_pointer(&c->q_descale, on_device);
    p->k_descale = (const float*)tensor_pointer(&c->k_descale, on_device);
    p->v_descale = (const float*)tensor_pointer(&c->v_descale, on_device);
  }
}

static void fill_backward_params(attn_case* c, int on_device, flashc_attn_bwd_params* p) {
  const attn_config* cfg = c->config;
  flashc_attn_bwd_params_init(p);
  p->dtype = (flashc_dtype)cfg->dtype;
  p->batch = cfg->batch;
  p->seqlen_q = cfg->seqlen_q;
  p->seqlen_k = cfg->seqlen_k;
  p->heads_q = cfg->heads_q;
  p->heads_kv = cfg->heads_kv;
  p->head_dim = cfg->head_dim;
  p->head_dim_v = cfg->head_dim_v;
  p->q = tensor_pointer(&c->q, on_device);
  p->k = tensor_pointer(&c->k, on_device);
  p->v = tensor_pointer(&c->v, on_device);
  p->o = tensor_pointer(&c->o, on_device);
  p->lse = (const float*)tensor_pointer(&c->lse, on_device);
  p->dout = tensor_pointer(&c->dout, on_device);
  p->dq = tensor_pointer(&c->dq, on_device);
  p->dk = tensor_pointer(&c->dk, on_device);
  p->dv = tensor_pointer(&c->dv, on_device);
  attn_layout q = query_layout(c, cfg->head_dim), o = query_layout(c, c->head_dim_v);
  attn_layout k = key_layout(c, cfg->head_dim), v = key_layout(c, c->head_dim_v);
  layout_strides(c, &q, &p->q_batch_stride, &p->q_row_stride);
  layout_strides(c, &k, &p->k_batch_stride, &p->k_row_stride);
  layout_strides(c, &v, &p->v_batch_stride, &p->v_row_stride);
  layout_strides(c, &o, &p->o_batch_stride, &p->o_row_stride);
  layout_strides(c, &o, &p->dout_batch_stride, &p->dout_row_stride);
  layout_strides(c, &q, &p->dq_batch_stride, &p->dq_row_stride);
  layout_strides(c, &k, &p->dk_batch_stride, &p->dk_row_stride);
  layout_strides(c, &v, &p->dv_batch_stride, &p->dv_row_stride);
  p->softmax_scale = (float)cfg->softmax_scale;
  p->causal = cfg->causal;
  p->window_left = cfg->window[0];
  p->window_right = cfg->window[1];
  p->softcap = (float)cfg->softcap;
  if (c->varlen) {
    p->cu_seqlens_q = (const int32_t*)tensor_pointer(&c->cu_seqlens_q, on_device);
    p->cu_seqlens_k = (const int32_t*)tensor_pointer(&c->cu_seqlens_k, on_device);
    p->total_q = c->total_q;
    p->total_k = c->total_k;
  }
  p->deterministic = cfg->deterministic;
}

static flashc_status prepare_inputs(tensor* const* inputs, size_t count, int on_device) {
  for (size_t i = 0; i < count; ++i) TOOL_TRY(tensor_prepare_input(inputs[i], on_device));
  return FLASHC_STATUS_SUCCESS;
}

static void* workspace_pointer(const attn_case* c) {
  return tensor_is_allocated(&c->workspace) ? tensor_pointer(&c->workspace, c->backend->on_device) : NULL;
}

static size_t workspace_bytes(const attn_case* c) {
  return tensor_is_allocated(&c->workspace) ? tensor_bytes(&c->workspace) : 0;
}

/* ---- the forward as a run_op ---- */

static flashc_status forward_prepare(void* self, run_backend* backend) {
  attn_case* c = (attn_case*)self;
  const int dev = backend->on_device;
  c->backend = backend;
  tensor* const inputs[] = {&c->q,          &c->k,          &c->v,          &c->cu_seqlens_q, &c->cu_seqlens_k,
                            &c->cache_seqlens, &c->page_table, &c->q_descale, &c->k_descale,    &c->v_descale};
  TOOL_TRY(prepare_inputs(inputs, sizeof inputs / sizeof inputs[0], dev));
  TOOL_TRY(tensor_prepare_output(&c->o, dev));
  TOOL_TRY(tensor_prepare_output(&c->lse, dev));
  fill_forward_params(c, dev, &c->fwd);
  size_t bytes = 0;
  flashc_status status = flashc_attn_fwd_workspace_size(backend->handle, &c->fwd, &bytes);
  if (status != FLASHC_STATUS_SUCCESS) return tool_library_fail(status, "flashc_attn_fwd_workspace_size");
  return tensor_reserve_workspace(&c->workspace, bytes, dev);
}

static flashc_status forward_launch(void* self) {
  attn_case* c = (attn_case*)self;
  flashc_status status = flashc_attn_fwd(c->backend->handle, &c->fwd, workspace_pointer(c), workspace_bytes(c), NULL);
  return status == FLASHC_STATUS_SUCCESS ? status : tool_library_fail(status, "flashc_attn_fwd");
}

static flashc_status forward_finish(void* self) {
  attn_case* c = (attn_case*)self;
  TOOL_TRY(tensor_fetch(&c->o));
  return tensor_fetch(&c->lse);
}

/* ---- the backward as a run_op ---- */

static flashc_status backward_prepare(void* self, run_backend* backend) {
  attn_case* c = (attn_case*)self;
  const int dev = backend->on_device;
  c->backend = backend;
  tensor* const inputs[] = {&c->q, &c->k, &c->v, &c->o, &c->lse, &c->dout, &c->cu_seqlens_q, &c->cu_seqlens_k};
  TOOL_TRY(prepare_inputs(inputs, sizeof inputs / sizeof inputs[0], dev));
  TOOL_TRY(tensor_prepare_output(&c->dq, dev));
  TOOL_TRY(tensor_prepare_output(&c->dk, dev));
  TOOL_TRY(tensor_prepare_output(&c->dv, dev));
  fill_backward_params(c, dev, &c->bwd);
  size_t bytes = 0;
  flashc_status status = flashc_attn_bwd_workspace_size(backend->handle, &c->bwd, &bytes);
  if (status != FLASHC_STATUS_SUCCESS) return tool_library_fail(status, "flashc_attn_bwd_workspace_size");
  return tensor_reserve_workspace(&c->workspace, bytes, dev);
}

static flashc_status backward_launch(void* self) {
  attn_case* c = (attn_case*)self;
  flashc_status status = flashc_attn_bwd(c->backend->handle, &c->bwd, workspace_pointer(c), workspace_bytes(c), NULL);
  return status == FLASHC_STATUS_SUCCESS ? status : tool_library_fail(status, "flashc_attn_bwd");
}

static flashc_status backward_finish(void* self) {
  attn_case* c = (attn_case*)self;
  TOOL_TRY(tensor_fetch(&c->dq));
  TOOL_TRY(tensor_fetch(&c->dk));
  return tensor_fetch(&c->dv);
}

/* ------------------------------------------------------------------------------------ */
/* FLOPs and the reference check                                                         */
/* ------------------------------------------------------------------------------------ */

/* Visible (query, key) pairs under the mask, exactly, and all pairs, summed over sequences. */
static void count_pairs(const fc_attn_problem* problem, long long* visible, long long* all) {
  *visible = *all = 0;
  for (int b = 0; b < problem->batch; ++b) {
    fc_attn_seq sequence = fc_attn_sequence(problem, b);
    *all += (long long)sequence.seqlen_q * sequence.seqlen_k;
    for (int i = 0; i < sequence.seqlen_q; ++i) {
      int first, last;
      fc_attn_key_range(problem, &sequence, i, &first, &last);
      if (last >= first) *visible += last - first + 1;
    }
  }
}

/* The host problem for the references: the same parameters with the host pointers. */
static flashc_status host_forward_problem(attn_case* c, flashc_attn_fwd_params* params, fc_attn_problem* problem) {
  fill_forward_params(c, 0, params);
  flashc_status status = fc_attn_fwd_problem_make(params, FLASHC_BACKEND_CPU, problem);
  return status == FLASHC_STATUS_SUCCESS ? status : tool_library_fail(status, "validating the reference problem");
}

/* The fp64 and same-precision reference buffers of one output. */
typedef struct reference_pair {
  double* fp64;
  double* same;
} reference_pair;

static void reference_pairs_free(reference_pair* pairs, int count) {
  for (int i = 0; i < count; ++i) {
    free(pairs[i].fp64);
    free(pairs[i].same);
  }
}

static flashc_status reference_pairs_alloc(reference_pair* pairs, tensor* const* outputs, int count) {
  memset(pairs, 0, (size_t)count * sizeof *pairs);
  for (int i = 0; i < count; ++i) {
    pairs[i].fp64 = check_reference_alloc(outputs[i]->count, outputs[i]->name);
    pairs[i].same = check_reference_alloc(outputs[i]->count, outputs[i]->name);
    if (!pairs[i].fp64 || !pairs[i].same) return FLASHC_STATUS_OUT_OF_MEMORY; /* message recorded */
  }
  return FLASHC_STATUS_SUCCESS;
}

static flashc_status check_forward(attn_case* c, const fc_attn_problem* problem, op_result* result, int quiet) {
  tensor* const outputs[2] = {&c->o, &c->lse};
  reference_pair refs[2];
  flashc_status status = reference_pairs_alloc(refs, outputs, 2);
  if (result->flops > REFERENCE_NOTE_FLOPS)
    progress_note(quiet, "flashc attn: computing the forward references on the host (fp64 and same precision)...");
  if (status == FLASHC_STATUS_SUCCESS) {
    status = fc_ref_attn_fwd(problem, FC_REF_FP64, refs[0].fp64, refs[1].fp64);
    if (status == FLASHC_STATUS_SUCCESS)
      status = fc_ref_attn_fwd(problem, FC_REF_SAME_PRECISION, refs[0].same, refs[1].same);
    if (status != FLASHC_STATUS_SUCCESS) status = tool_library_fail(status, "fc_ref_attn_fwd");
  }
  if (status == FLASHC_STATUS_SUCCESS) {
    for (int i = 0; i < 2; ++i)
      check_output(outputs[i]->name, outputs[i], refs[i].fp64, refs[i].same, &result->outputs[i]);
    result->output_count = 2;
    result->checked = 1;
  }
  reference_pairs_free(refs, 2);
  return status;
}

static flashc_status check_backward(attn_case* c, op_result* result, int quiet) {
  flashc_attn_bwd_params params;
  fc_attn_problem problem;
  fill_backward_params(c, 0, &params);
  flashc_status status = fc_attn_bwd_problem_make(&params, FLASHC_BACKEND_CPU, &problem);
  if (status != FLASHC_STATUS_SUCCESS) return tool_library_fail(status, "validating the reference problem");
  tensor* const outputs[3] = {&c->dq, &c->dk, &c->dv};
  reference_pair refs[3];
  status = reference_pairs_alloc(refs, outputs, 3);
  if (result->flops > REFERENCE_NOTE_FLOPS)
    progress_note(quiet, "flashc attn: computing the backward references on the host (fp64 and same precision)...");
  if (status == FLASHC_STATUS_SUCCESS) {
    status = fc_ref_attn_bwd(&problem, FC_REF_FP64, refs[0].fp64, refs[1].fp64, refs[2].fp64);
    if (status == FLASHC_STATUS_SUCCESS)
      status = fc_ref_attn_bwd(&problem, FC_REF_SAME_PRECISION, refs[0].same, refs[1].same, refs[2].same);
    if (status != FLASHC_STATUS_SUCCESS) status = tool_library_fail(status, "fc_ref_attn_bwd");
  }
  if (status == FLASHC_STATUS_SUCCESS) {
    for (int i = 0; i < 3; ++i)
      check_output(outputs[i]->name, outputs[i], refs[i].fp64, refs[i].same, &result->outputs[i]);
    result->output_count = 3;
    result->checked = 1;
  }
  reference_pairs_free(refs, 3);
  return status;
}

/* ------------------------------------------------------------------------------------ */
/* attn_run                                                                              */
/* ------------------------------------------------------------------------------------ */

static flashc_status attn_run_case(run_context* context, attn_case* c, attn_result* result) {
  const attn_config* cfg = c->config;
  const run_options* options = &context->options;
  result->total_q = c->total_q;
  result->total_k = c->total_k;

  run_op forward = {"attn fwd", c, forward_prepare, forward_launch, forward_finish};
  TOOL_TRY(run_operation(context, &forward, &result->forward));

  /* FLOPs: 2·pairs·(d + dv) per query head; the §7 convention halves the full count for causal. */
  flashc_attn_fwd_params host_params;
  fc_attn_problem problem;
  TOOL_TRY(host_forward_problem(c, &host_params, &problem));
  count_pairs(&problem, &result->visible_pairs, &result->all_pairs);
  double flops_per_pair = 2.0 * cfg->heads_q * (double)(cfg->head_dim + c->head_dim_v);
  result->forward.flops = flops_per_pair * (double)result->visible_pairs;
  result->forward.flops_convention = flops_per_pair * (double)result->all_pairs * (cfg->causal ? 0.5 : 1.0);
  if (result->visible_pairs == result->all_pairs) result->forward.flops_convention = result->forward.flops;
  if (options->check) TOOL_TRY(check_forward(c, &problem, &result->forward, options->quiet));

  if (cfg->backward) {
    run_op backward = {"attn bwd", c, backward_prepare, backward_launch, backward_finish};
    result->has_backward = 1;
    TOOL_TRY(run_operation(context, &backward, &result->backward));
    result->backward.flops = BACKWARD_FLOP_FACTOR * result->forward.flops;
    result->backward.flops_convention = BACKWARD_FLOP_FACTOR * result->forward.flops_convention;
    if (options->check) TOOL_TRY(check_backward(c, &result->backward, options->quiet));
  }
  return FLASHC_STATUS_SUCCESS;
}

flashc_status attn_run(run_context* context, const attn_config* config, attn_result* result) {
  memset(result, 0, sizeof *result);
  attn_case c;
  flashc_status status = attn_case_setup(&c, config, context->options.seed);
  if (status == FLASHC_STATUS_SUCCESS) status = attn_run_case(context, &c, result);
  attn_case_free(&c);
  return status;
}

int attn_result_passed(const attn_result* result) {
  return op_result_passed(&result->forward) && (!result->has_backward || op_result_passed(&result->backward));
}

/* ------------------------------------------------------------------------------------ */
/* The command                                                                           */
/* ------------------------------------------------------------------------------------ */

static void print_parameters(FILE* out, const attn_config* cfg, const attn_result* r, const run_options* options) {
  flashc_dtype out_dtype = resolved_out_dtype(cfg);
  fprintf(out,
          "flashc attn: batch %d, seqlen_q %d, seqlen_k %d, heads_q %d, heads_kv %d, head_dim %d, head_dim_v %d, "
          "%s -> %s\n",
          cfg->batch, cfg->seqlen_q, cfg->seqlen_k, cfg->heads_q, resolved_heads_kv(cfg), cfg->head_dim,
          resolved_head_dim_v(cfg), flashc_dtype_name((flashc_dtype)cfg->dtype), flashc_dtype_name(out_dtype));
  char mask[64];
  if (cfg->causal)
    snprintf(mask, sizeof mask, "causal (window %d,0)", cfg->window[0]);
  else if (cfg->window[0] >= 0 || cfg->window[1] >= 0)
    snprintf(mask, sizeof mask, "local window %d,%d", cfg->window[0], cfg->window[1]);
  else
    snprintf(mask, sizeof mask, "none");
  fprintf(out, "  mask %s, softcap %g, softmax_scale %.6g%s, splits %d, seed %d\n", mask, cfg->softcap,
          resolved_softmax_scale(cfg), cfg->softmax_scale == 0.0 ? " (1/sqrt(head_dim))" : "", cfg->num_splits,
          options->seed);
  if (cfg->varlen && cfg->page_size)
    fprintf(out,
            "  varlen: total_q %d via cu_seqlens_q, key lengths via cache_seqlens "
            "(one sequence empty when batch >= 2)\n",
            r->total_q);
  else if (cfg->varlen)
    fprintf(out, "  varlen: total_q %d, total_k %d via cu_seqlens (one sequence empty when batch >= 2)\n", r->total_q,
            r->total_k);
  if (cfg->page_size) fprintf(out, "  paged KV: page_size %d, shuffled page table\n", cfg->page_size);
  if (r->all_pairs > 0)
    fprintf(out, "  visible query-key pairs per head: %lld of %lld (%.1f%%)\n", r->visible_pairs, r->all_pairs,
            100.0 * (double)r->visible_pairs / (double)r->all_pairs);
}

static void write_json(const attn_config* cfg, const attn_result* r, const run_options* options, flashc_status status) {
  json_writer w;
  json_init(&w, stdout);
  json_object_begin(&w, NULL);
  json_string(&w, "command", "attn");
  char version[32];
  json_string(&w, "flashc_version", tool_version_string(flashc_version(), version, sizeof version));
  json_object_begin(&w, "params");
  json_int(&w, "batch", cfg->batch);
  json_int(&w, "seqlen_q", cfg->seqlen_q);
  json_int(&w, "seqlen_k", cfg->seqlen_k);
  json_int(&w, "heads_q", cfg->heads_q);
  json_int(&w, "heads_kv", resolved_heads_kv(cfg));
  json_int(&w, "head_dim", cfg->head_dim);
  json_int(&w, "head_dim_v", resolved_head_dim_v(cfg));
  json_string(&w, "dtype", flashc_dtype_name((flashc_dtype)cfg->dtype));
  json_string(&w, "out_dtype", flashc_dtype_name(resolved_out_dtype(cfg)));
  json_bool(&w, "causal", cfg->causal);
  json_int(&w, "window_left", cfg->window[0]);
  json_int(&w, "window_right", cfg->window[1]);
  json_number(&w, "softcap", cfg->softcap);
  json_number(&w, "softmax_scale", resolved_softmax_scale(cfg));
  json_bool(&w, "varlen", cfg->varlen);
  json_int(&w, "page_size", cfg->page_size);
  json_int(&w, "num_splits", cfg->num_splits);
  json_int(&w, "pack_gqa", cfg->pack_gqa);
  json_bool(&w, "backward", cfg->backward);
  json_bool(&w, "deterministic", cfg->deterministic);
  json_int(&w, "pad", cfg->pad);
  json_int(&w, "seed", options->seed);
  json_bool(&w, "check", options->check);
  json_bool(&w, "bench", options->bench);
  json_object_end(&w);
  if (cfg->varlen) {
    json_int(&w, "total_q", r->total_q);
    if (!cfg->page_size) json_int(&w, "total_k", r->total_k);
  }
  if (r->forward.ran) {
    json_int(&w, "visible_pairs", r->visible_pairs);
    json_int(&w, "all_pairs", r->all_pairs);
  }
  if (r->forward.ran) op_result_write_json(&w, "forward", &r->forward);
  if (r->backward.ran) op_result_write_json(&w, "backward", &r->backward);
  if (status != FLASHC_STATUS_SUCCESS) run_write_json_error(&w, status);
  json_bool(&w, "passed", status == FLASHC_STATUS_SUCCESS && attn_result_passed(r));
  json_object_end(&w);
}

static const char attn_description[] =
    "Runs attention forward (and with --backward the backward) on GPU 0 if present, else on the\n"
    "CPU backend; without --device, an operation the GPU does not support yet runs on the CPU\n"
    "backend with a note saying why. q, k, v are random (normal values with a few outliers,\n"
    "never zero); outputs are poisoned with NaN before each checked run. --check compares o, lse\n"
    "(and dq, dk, dv) with the fp64 reference: max|out - ref64| <= 2*max|out_same - ref64| + atol\n"
    "(DESIGN.md §6), where out_same is the reference in the input precision and atol one ulp of\n"
    "the output dtype at the output's largest magnitude. --bench reports the median time and\n"
    "TFLOP/s; FLOPs count the query-key pairs the mask lets through exactly (DESIGN.md §7's\n"
    "causal = half is also given).";

static const char attn_epilog[] =
    "Exit status: 0 success, 1 library or runtime error, 2 usage error, 3 check failed.\n"
    "\n"
    "Examples:\n"
    "  flashc attn --check\n"
    "  flashc attn --causal --varlen --heads-kv 2 --backward --check\n"
    "  flashc attn --paged 16 --splits 3 --seqlen-q 1 --seqlen-k 4096 --check\n"
    "  flashc attn --dtype e4m3 --hdim 256 --check\n"
    "  flashc attn --batch 1 --seqlen 16384 --heads 16 --causal --bench --json\n";

int cmd_attn(int argc, char** argv, int first) {
  static const char prog[] = "flashc attn";
  attn_config config;
  attn_config_default(&config);
  run_options options;
  run_options_default(&options);
  int seqlen = 512, seqlen_given = 0, seqlen_q_given = 0, seqlen_k_given = 0;

  const arg_option problem_options[] = {
      {.name = "batch", .kind = ARG_INT, .value = &config.batch, .metavar = "N", .range = ARG_POSITIVE,
       .help = "sequences"},
      {.name = "seqlen", .kind = ARG_INT, .value = &seqlen, .metavar = "N", .range = ARG_POSITIVE,
       .seen = &seqlen_given, .help = "sets both --seqlen-q and --seqlen-k", .default_text = ""},
      {.name = "seqlen-q", .kind = ARG_INT, .value = &config.seqlen_q, .metavar = "N", .range = ARG_POSITIVE,
       .seen = &seqlen_q_given, .help = "query length (the maximum with --varlen)"},
      {.name = "seqlen-k", .kind = ARG_INT, .value = &config.seqlen_k, .metavar = "N", .range = ARG_POSITIVE,
       .seen = &seqlen_k_given, .help = "key length (the maximum with --varlen)"},
      {.name = "heads", .kind = ARG_INT, .value = &config.heads_q, .metavar = "N", .range = ARG_POSITIVE,
       .help = "query heads"},
      {.name = "heads-kv", .kind = ARG_INT, .value = &config.heads_kv, .metavar = "N", .range = ARG_NON_NEGATIVE,
       .help = "key/value heads (GQA/MQA; divides --heads)", .default_text = "--heads"},
      {.name = "hdim", .kind = ARG_INT, .value = &config.head_dim, .metavar = "D", .range = ARG_POSITIVE,
       .help = "head dimension of q and k"},
      {.name = "hdim-v", .kind = ARG_INT, .value = &config.head_dim_v, .metavar = "D", .range = ARG_NON_NEGATIVE,
       .help = "head dimension of v and o", .default_text = "--hdim"},
      {.name = "dtype", .kind = ARG_CHOICE, .value = &config.dtype, .choices = dtype_choices,
       .help = "q, k, v dtype (fp32: CPU only; e4m3 with random descales)"},
      {.name = "out-dtype", .kind = ARG_CHOICE, .value = &config.out_dtype, .choices = out_dtype_choices,
       .help = "o dtype (auto: the input dtype, bf16 for e4m3)"},
      {.name = "causal", .kind = ARG_FLAG, .value = &config.causal, .help = "causal mask (bottom-right aligned)"},
      {.name = "window", .kind = ARG_INT_PAIR, .value = config.window, .metavar = "L,R", .range = ARG_MIN_MINUS_ONE,
       .help = "local attention window, -1 = unbounded"},
      {.name = "softcap", .kind = ARG_DOUBLE, .value = &config.softcap, .metavar = "X",
       .help = "softcap*tanh(s/softcap) on the scores, 0 = off"},
      {.name = "scale", .kind = ARG_DOUBLE, .value = &config.softmax_scale, .metavar = "X",
       .help = "softmax scale", .default_text = "1/sqrt(hdim)"},
      {.name = "varlen", .kind = ARG_FLAG, .value = &config.varlen,
       .help = "random lengths up to --seqlen-q/k per sequence (one empty) via cu_seqlens"},
      {.name = "paged", .kind = ARG_INT, .value = &config.page_size, .metavar = "PAGE_SIZE", .range = ARG_NON_NEGATIVE,
       .help = "paged KV cache with a shuffled page table", .default_text = "0 = contiguous"},
      {.name = "splits", .kind = ARG_INT, .value = &config.num_splits, .metavar = "N", .range = ARG_NON_NEGATIVE,
       .help = "split-KV chunks merged by the combine (0 = let flashc choose)"},
      {.name = "pack-gqa", .kind = ARG_CHOICE, .value = &config.pack_gqa, .choices = pack_gqa_choices,
       .help = "GPU hint: pack the query heads of a KV head into one tile"},
      {.name = "backward", .kind = ARG_FLAG, .value = &config.backward, .help = "also run the backward (dq, dk, dv)"},
      {.name = "deterministic", .kind = ARG_FLAG, .value = &config.deterministic,
       .help = "bitwise reproducible backward"},
      {.name = "pad", .kind = ARG_INT, .value = &config.pad, .metavar = "N", .range = ARG_NON_NEGATIVE,
       .help = "extra elements per row of every tensor (non-packed strides)"},
      {.name = NULL},
  };
  arg_option run_table[RUN_OPTIONS_TABLE_SIZE];
  run_options_table(&options, 1, run_table);
  const arg_section sections[] = {{"Problem", problem_options}, {"Run", run_table}};
  const arg_command command = {prog, "flashc attn [options]", attn_description, sections, 2, attn_epilog};

  switch (args_parse(&command, argc, argv, first)) {
    case ARGS_HELP: args_print_help(&command, stdout); return TOOL_EXIT_OK;
    case ARGS_ERROR: return TOOL_EXIT_USAGE;
    case ARGS_OK: break;
  }
  if (seqlen_given) {
    if (!seqlen_q_given) config.seqlen_q = seqlen;
    if (!seqlen_k_given) config.seqlen_k = seqlen;
  }
  if (attn_config_check(&config, prog) != 0 || run_options_finish(&options, prog) != 0) return TOOL_EXIT_USAGE;

  run_context context;
  attn_result result;
  memset(&result, 0, sizeof result);
  flashc_status status = run_context_open(&context, &options, prog, !options.device_given);
  if (status == FLASHC_STATUS_SUCCESS) status = attn_run(&context, &config, &result);
  run_context_close(&context);

  if (options.json) {
    write_json(&config, &result, &options, status);
  } else {
    print_parameters(stdout, &config, &result, &options);
    if (result.forward.ran) op_result_print(stdout, &result.forward);
    if (result.backward.ran) op_result_print(stdout, &result.backward);
  }
  if (status != FLASHC_STATUS_SUCCESS) {
    tool_print_error(prog);
    return TOOL_EXIT_ERROR;
  }
  int passed = attn_result_passed(&result);
  if (!options.json && options.check) printf("result: %s\n", passed ? "PASS" : "FAIL");
  return passed ? TOOL_EXIT_OK : TOOL_EXIT_CHECK_FAILED;
}
