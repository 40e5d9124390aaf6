/*
 * cpu_attn_bwd.c — the CPU backend's attention backward (flashc_attn_bwd).
 *
 *  1. fp32 inputs on small shapes (no mask, causal with fully masked rows, local, softcap,
 *     GQA/MQA, d_v != d, explicit scale, varlen with empty sequences and seqused, strided
 *     layouts): dq, dk, dv against central finite differences of the fp64 oracle forward
 *     of the loss L = Σ dout·o (each input perturbed in its fp32 storage, the exact step
 *     used in the quotient, Richardson-extrapolated). The oracle's own analytic backward is checked against the same
 *     finite differences, which is what makes it trustworthy for part 2.
 *  2. fp16/bf16 (and fp32) on larger shapes against the fp64 oracle backward under the
 *     DESIGN §6 rule (out_same: fp32 with P and dS rounded to the dtype, D from the given o),
 *     incl. seqlen_q > seqlen_k causal, local, softcap, GQA, varlen, heads-major layouts;
 *     deterministic = 1 is bitwise reproducible run to run.
 * o and lse given to the backward come from the oracle forward (rounded to the dtype / fp32).
 * Gradient buffers are poisoned: every element that must be written is checked (dk/dv of keys
 * no query sees are 0), padding stays untouched.
 *
 * Built a second time as gpu_attn_bwd (FLASHC_TEST_ON_GPU): part 2 against a CUDA handle, every
 * buffer copied to the device and the gradients back (the GPU takes fp16/bf16 with 16-byte
 * aligned strides, so fp32 cases are skipped and padded layouts become heads-major ones);
 * exit 77 without a CUDA device. Part 3 (GPU only) reruns large-head-dim cases with the
 * 32-row blocks forced on the handle: an H100/H200 picks 64-blocks for every head dim, so
 * the 32-block instances (what GPUs with ~100 KB of shared memory run) are otherwise untested.
 */
#include "attn_common.h"

#ifdef FLASHC_TEST_ON_GPU
#include <cuda_runtime.h>

#include "host/handle.h" /* (linked statically) part 3 forces the backward's block size */
#endif

static flashc_handle_t g_handle;

typedef struct bwd_case {
  flashc_dtype dtype;
  int batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim, head_dim_v;
  int causal, window_left, window_right;
  float softcap, softmax_scale;
  int varlen, empty, seqused_q, seqused_k;
  int layout;
  int deterministic;
  int finite_differences;
} bwd_case;

typedef struct bwd_problem {
  bwd_case c;
  seq_lengths s;
  tensor4 q, k, v, o, dout, dq, dk, dv;
  float* lse;
  int64_t lse_count;
  flashc_attn_bwd_params p;
  flashc_attn_fwd_params fwd; /* the same problem as a forward (o, lse outputs) */
} bwd_problem;

static void set_strides(int64_t* b, int64_t* r, int64_t* h, const tensor4* t) {
  if (!t->explicit_strides) return;
  *b = t->batch_stride, *r = t->row_stride, *h = t->head_stride;
}

static void problem_make(bwd_problem* P, const bwd_case* c, test_rng* rng) {
  memset(P, 0, sizeof *P);
  P->c = *c;
  int hq = c->heads_q, hkv = c->heads_kv, d = c->head_dim, dv = c->head_dim_v;
  P->s = seq_lengths_make(rng, c->batch, c->seqlen_q, c->seqlen_k, c->varlen, c->varlen, c->empty, c->seqused_q,
                          c->seqused_k);
  seq_lengths* s = &P->s;
  int nb = c->varlen ? 1 : c->batch;
  int qr = c->varlen ? (s->total_q ? s->total_q : 1) : c->seqlen_q;
  int kr = c->varlen ? (s->total_k ? s->total_k : 1) : c->seqlen_k;
  flashc_dtype dt = c->dtype;
  P->q = tensor4_make(c->layout, rng, dt, nb, qr, hq, d);
  P->k = tensor4_make(c->layout, rng, dt, nb, kr, hkv, d);
  P->v = tensor4_make(c->layout, rng, dt, nb, kr, hkv, dv);
  P->o = tensor4_make(c->layout, rng, dt, nb, qr, hq, dv);
  P->dout = tensor4_make(c->layout, rng, dt, nb, qr, hq, dv);
  P->dq = tensor4_make(c->layout, rng, dt, nb, qr, hq, d);
  P->dk = tensor4_make(c->layout, rng, dt, nb, kr, hkv, d);
  P->dv = tensor4_make(c->layout, rng, dt, nb, kr, hkv, dv);
  for (int b = 0; b < c->batch; ++b) {
    int bb = c->varlen ? 0 : b;
    int64_t q0 = c->varlen ? s->cu_q[b] : 0, k0 = c->varlen ? s->cu_k[b] : 0;
    tensor4_fill_rows(&P->q, rng, bb, q0, s->used_q[b], 1.0);
    tensor4_fill_rows(&P->dout, rng, bb, q0, s->used_q[b], 1.0);
    tensor4_fill_rows(&P->k, rng, bb, k0, s->used_k[b], 1.0);
    tensor4_fill_rows(&P->v, rng, bb, k0, s->used_k[b], 1.0);
  }
  P->lse_count = (int64_t)nb * hq * qr + 7;
  P->lse = test_alloc(sizeof(float) * (size_t)P->lse_count);

  flashc_attn_bwd_params* p = &P->p;
  flashc_attn_bwd_params_init(p);
  p->dtype = dt;
  p->batch = c->batch, p->seqlen_q = c->seqlen_q, p->seqlen_k = c->seqlen_k;
  p->heads_q = hq, p->heads_kv = hkv, p->head_dim = d, p->head_dim_v = dv;
  p->q = P->q.data, p->k = P->k.data, p->v = P->v.data, p->o = P->o.data, p->lse = P->lse;
  p->dout = P->dout.data, p->dq = P->dq.data, p->dk = P->dk.data, p->dv = P->dv.data;
  set_strides(&p->q_batch_stride, &p->q_row_stride, &p->q_head_stride, &P->q);
  set_strides(&p->k_batch_stride, &p->k_row_stride, &p->k_head_stride, &P->k);
  set_strides(&p->v_batch_stride, &p->v_row_stride, &p->v_head_stride, &P->v);
  set_strides(&p->o_batch_stride, &p->o_row_stride, &p->o_head_stride, &P->o);
  set_strides(&p->dout_batch_stride, &p->dout_row_stride, &p->dout_head_stride, &P->dout);
  set_strides(&p->dq_batch_stride, &p->dq_row_stride, &p->dq_head_stride, &P->dq);
  set_strides(&p->dk_batch_stride, &p->dk_row_stride, &p->dk_head_stride, &P->dk);
  set_strides(&p->dv_batch_stride, &p->dv_row_stride, &p->dv_head_stride, &P->dv);
  p->softmax_scale = c->softmax_scale;
  p->causal = c->causal, p->window_left = c->window_left, p->window_right = c->window_right;
  p->softcap = c->softcap;
  if (c->varlen) {
    p->cu_seqlens_q = s->cu_q, p->cu_seqlens_k = s->cu_k;
    p->total_q = s->total_q, p->total_k = s->total_k;
  }
  p->seqused_q = s->seqused_q, p->seqused_k = s->seqused_k;
  p->deterministic = c->deterministic;

  flashc_attn_fwd_params* f = &P->fwd;
  flashc_attn_fwd_params_init(f);
  f->dtype = dt, f->out_dtype = dt;
  f->batch = p->batch, f->seqlen_q = p->seqlen_q, f->seqlen_k = p->seqlen_k;
  f->heads_q = hq, f->heads_kv = hkv, f->head_dim = d, f->head_dim_v = dv;
  f->q = p->q, f->k = p->k, f->v = p->v, f->o = P->o.data, f->lse = P->lse;
  f->q_batch_stride = p->q_batch_stride, f->q_row_stride = p->q_row_stride, f->q_head_stride = p->q_head_stride;
  f->k_batch_stride = p->k_batch_stride, f->k_row_stride = p->k_row_stride, f->k_head_stride = p->k_head_stride;
  f->v_batch_stride = p->v_batch_stride, f->v_row_stride = p->v_row_stride, f->v_head_stride = p->v_head_stride;
  f->o_batch_stride = p->o_batch_stride, f->o_row_stride = p->o_row_stride, f->o_head_stride = p->o_head_stride;
  f->softmax_scale = p->softmax_scale, f->causal = p->causal, f->window_left = p->window_left;
  f->window_right = p->window_right, f->softcap = p->softcap;
  f->cu_seqlens_q = p->cu_seqlens_q, f->cu_seqlens_k = p->cu_seqlens_k, f->total_q = p->total_q, f->total_k = p->total_k;
  f->seqused_q = p->seqused_q, f->seqused_k = p->seqused_k;

  /* o and lse: the oracle's fp64 forward, stored in the dtype and fp32 */
  double* o_ref = malloc(sizeof(double) * (size_t)P->o.count);
  unsigned char* o_mask = malloc((size_t)P->o.count);
  double* l_ref = malloc(sizeof(double) * (size_t)P->lse_count);
  unsigned char* l_mask = malloc((size_t)P->lse_count);
  if (oracle_attn_fwd(f, ORACLE_FP64, o_ref, o_mask, P->o.count, l_ref, l_mask, P->lse_count) != 0) test_fatal("oracle");
  for (int64_t i = 0; i < P->o.count; ++i)
    if (o_mask[i] != ORACLE_UNTOUCHED) test_store(P->o.data, i, dt, o_ref[i]);
  for (int64_t i = 0; i < P->lse_count; ++i)
    if (l_mask[i] != ORACLE_UNTOUCHED) P->lse[i] = (float)l_ref[i];
  free(o_ref), free(o_mask), free(l_ref), free(l_mask);
}

static void problem_free(bwd_problem* P) {
  tensor4* all[] = {&P->q, &P->k, &P->v, &P->o, &P->dout, &P->dq, &P->dk, &P->dv};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) tensor4_free(all[i]);
  test_free(P->lse);
  seq_lengths_free(&P->s);
}

#ifdef FLASHC_TEST_ON_GPU
static void* gpu_copy(const void* host, size_t bytes) {
  void* device = NULL;
  if (!host) return NULL;
  if (cudaMalloc(&device, bytes ? bytes : 1) != cudaSuccess ||
      (bytes && cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice) != cudaSuccess))
    test_fatal("cudaMalloc/cudaMemcpy of a test buffer failed");
  return device;
}

static void gpu_copy_back(void* host, const void* device, size_t bytes) {
  if (cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost) != cudaSuccess) test_fatal("cudaMemcpy back failed");
}

/* The backward on the CUDA handle: the buffers p points into are copied to the device (from the
 * pointer to the end of the allocation, as the tensors' counts say), the gradients back. */
static flashc_status run_bwd(const bwd_problem* P, const flashc_attn_bwd_params* p) {
  const size_t size = test_dtype_size(P->c.dtype);
  const size_t sequences = (size_t)P->c.batch;
  flashc_attn_bwd_params d = *p;
  d.q = gpu_copy(p->q, (size_t)P->q.count * size);
  d.k = gpu_copy(p->k, (size_t)P->k.count * size);
  d.v = gpu_copy(p->v, (size_t)P->v.count * size);
  d.o = gpu_copy(p->o, (size_t)P->o.count * size);
  d.dout = gpu_copy(p->dout, (size_t)P->dout.count * size);
  d.lse = gpu_copy(p->lse, sizeof(float) * (size_t)P->lse_count);
  d.dq = gpu_copy(p->dq, (size_t)P->dq.count * size);
  d.dk = gpu_copy(p->dk, (size_t)P->dk.count * size);
  d.dv = gpu_copy(p->dv, (size_t)P->dv.count * size);
  d.cu_seqlens_q = gpu_copy(p->cu_seqlens_q, sizeof(int32_t) * (sequences + 1));
  d.cu_seqlens_k = gpu_copy(p->cu_seqlens_k, sizeof(int32_t) * (sequences + 1));
  d.seqused_q = gpu_copy(p->seqused_q, sizeof(int32_t) * sequences);
  d.seqused_k = gpu_copy(p->seqused_k, sizeof(int32_t) * sequences);
  size_t bytes = 0;
  void* workspace = NULL;
  flashc_status status = flashc_attn_bwd_workspace_size(g_handle, &d, &bytes);
  if (status == FLASHC_STATUS_SUCCESS && bytes && cudaMalloc(&workspace, bytes) != cudaSuccess)
    test_fatal("cudaMalloc of the workspace failed");
  if (status == FLASHC_STATUS_SUCCESS) status = flashc_attn_bwd(g_handle, &d, workspace, bytes, NULL);
  if (status == FLASHC_STATUS_SUCCESS) {
    if (cudaDeviceSynchronize() != cudaSuccess) test_fatal("the backward failed on the device");
    gpu_copy_back(p->dq, d.dq, (size_t)P->dq.count * size);
    gpu_copy_back(p->dk, d.dk, (size_t)P->dk.count * size);
    gpu_copy_back(p->dv, d.dv, (size_t)P->dv.count * size);
  } else {
    test_print_status("flashc_attn_bwd (CUDA)", status);
  }
  const void* buffers[] = {d.q, d.k, d.v, d.o, d.dout, d.lse, d.dq, d.dk, d.dv,
                           d.cu_seqlens_q, d.cu_seqlens_k, d.seqused_q, d.seqused_k, workspace};
  for (size_t i = 0; i < sizeof buffers / sizeof buffers[0]; ++i)
    if (buffers[i]) cudaFree((void*)buffers[i]);
  return status;
}
#else
static flashc_status run_bwd(const bwd_problem* P, const flashc_attn_bwd_params* p) {
  (void)P;
  return attn_run_bwd(g_handle, p);
}
#endif

static void describe(const bwd_problem* P, char* out, size_t cap) {
  const bwd_case* c = &P->c;
  char lens[200] = "";
  if (c->varlen || c->seqused_q || c->seqused_k) {
    char a[64], b[64], uq[64], uk[64];
    format_ints(a, sizeof a, P->s.len_q, c->batch);
    format_ints(b, sizeof b, P->s.len_k, c->batch);
    format_ints(uq, sizeof uq, P->s.used_q, c->batch);
    format_ints(uk, sizeof uk, P->s.used_k, c->batch);
    snprintf(lens, sizeof lens, " %s[q %s k %s]%s%s%s%s", c->varlen ? "varlen " : "", a, b, c->seqused_q ? " used_q " : "",
             c->seqused_q ? uq : "", c->seqused_k ? " used_k " : "", c->seqused_k ? uk : "");
  }
  snprintf(out, cap, "bwd %s b%d sq%d sk%d h%d/%d d%d/%d causal %d window (%d,%d)%s%s%s %s%s", test_dtype_name(c->dtype),
           c->batch, c->seqlen_q, c->seqlen_k, c->heads_q, c->heads_kv, c->head_dim, c->head_dim_v, c->causal,
           c->window_left, c->window_right, c->softcap > 0 ? " softcap" : "", c->softmax_scale > 0 ? " scale" : "", lens,
           layout_names[c->layout], c->deterministic ? " deterministic" : "");
}

/* ------------------------------------------------------------------------------------ */
/* finite differences                                                                     */
/* ------------------------------------------------------------------------------------ */

typedef struct fd_state {
  bwd_problem* P;
  double* o_ref;
  unsigned char* o_mask;
} fd_state;

/* dout is laid out like o only when both have the same strides; map o offsets to dout. */
static double loss_mapped(fd_state* st, const int64_t* dout_of_o) {
  bwd_problem* P = st->P;
  flashc_attn_fwd_params f = P->fwd;
  f.lse = NULL;
  if (oracle_attn_fwd(&f, ORACLE_FP64, st->o_ref, st->o_mask, P->o.count, NULL, NULL, 0) != 0) test_fatal("oracle");
  double loss = 0.0;
  for (int64_t i = 0; i < P->o.count; ++i)
    if (st->o_mask[i] != ORACLE_UNTOUCHED && dout_of_o[i] >= 0)
      loss += st->o_ref[i] * test_load(P->dout.data, dout_of_o[i], FLASHC_DTYPE_FP32);
  return loss;
}

/* Central differences for the used elements of tensor t; fd has t->count entries (NaN where
 * not computed). */
static void finite_differences(fd_state* st, tensor4* t, const int* used_rows, const int32_t* row0, double* fd,
                               const int64_t* dout_of_o) {
  bwd_problem* P = st->P;
  for (int64_t i = 0; i < t->count; ++i) fd[i] = NAN;
  float* data = (float*)t->data;
  for (int b = 0; b < P->c.batch; ++b) {
    int bb = P->c.varlen ? 0 : b;
    int64_t r0 = P->c.varlen ? row0[b] : 0;
    for (int r = 0; r < used_rows[b]; ++r)
      for (int h = 0; h < t->heads; ++h)
        for (int c = 0; c < t->columns; ++c) {
          int64_t off = tensor4_offset(t, bb, r0 + r, h) + c;
          /* central differences at steps h and 2h, combined by Richardson extrapolation
           * (error O(h^4)); each quotient uses the step actually stored in fp32 */
          float x = data[off];
          double h = 2e-4 * (fabs((double)x) > 1.0 ? fabs((double)x) : 1.0);
          double quotient[2];
          for (int s = 0; s < 2; ++s) {
            double step = h * (s + 1);
            float plus = (float)((double)x + step), minus = (float)((double)x - step);
            data[off] = plus;
            double lp = loss_mapped(st, dout_of_o);
            data[off] = minus;
            double lm = loss_mapped(st, dout_of_o);
            quotient[s] = (lp - lm) / ((double)plus - (double)minus);
          }
          data[off] = x;
          fd[off] = (4.0 * quotient[0] - quotient[1]) / 3.0;
        }
  }
}

/* |got - fd| over the elements with a finite-difference value. Without `same`, the bound is
 * rel_tol · max(1, max|fd|); with it, the DESIGN §6 rule with the differences as ref64:
 * 2 · max|same - fd| + 16 fp32 ulps of max|fd| (fp32 cancellation in dS = P (dP - D), e.g.
 * around outliers, is part of the same-precision computation too). */
static int compare_fd(const char* name, const void* got, flashc_dtype dtype, const double* fd, int64_t count,
                      double rel_tol, const double* same, double* max_err_out, double* max_fd_out) {
  double max_fd = 0.0, max_err = 0.0, max_same = 0.0;
  int64_t worst = -1, nan_count = 0;
  for (int64_t i = 0; i < count; ++i)
    if (!isnan(fd[i]) && fabs(fd[i]) > max_fd) max_fd = fabs(fd[i]);
  for (int64_t i = 0; i < count; ++i) {
    if (isnan(fd[i])) continue;
    double value = dtype == (flashc_dtype)-1 ? ((const double*)got)[i] : test_load(got, i, dtype);
    if (isnan(value)) {
      ++nan_count;
      continue;
    }
    double err = fabs(value - fd[i]);
    if (err > max_err) max_err = err, worst = i;
    if (same && !(fabs(same[i] - fd[i]) <= max_same)) max_same = fabs(same[i] - fd[i]);
  }
  double tol = same ? 2.0 * max_same + 32.0 * ldexp(1.0, -24) * max_fd : rel_tol * (max_fd > 1.0 ? max_fd : 1.0);
  *max_err_out = max_err, *max_fd_out = max_fd;
  if (nan_count || max_err > tol) {
    printf("  %s vs finite differences: max err %.3e > tol %.3e (max |fd| %.3e), %lld NaN; worst at %lld: got %.8g fd %.8g\n",
           name, max_err, tol, max_fd, (long long)nan_count, (long long)worst,
           worst >= 0 ? (dtype == (flashc_dtype)-1 ? ((const double*)got)[worst] : test_load(got, worst, dtype)) : NAN,
           worst >= 0 ? fd[worst] : NAN);
    return 0;
  }
  return 1;
}

static int run_fd_case(const bwd_case* c, test_rng* rng) {
  bwd_problem P;
  problem_make(&P, c, rng);
  char description[400];
  describe(&P, description, sizeof description);
  int pass = run_bwd(&P, &P.p) == FLASHC_STATUS_SUCCESS;

  /* oracle backward (fp64) and its masks */
  double* ref[3];
  unsigned char* mask[3];
  tensor4* grads[3] = {&P.dq, &P.dk, &P.dv};
  for (int t = 0; t < 3; ++t) {
    ref[t] = malloc(sizeof(double) * (size_t)grads[t]->count);
    mask[t] = malloc((size_t)grads[t]->count);
  }
  if (oracle_attn_bwd(&P.p, ORACLE_FP64, ref[0], mask[0], P.dq.count, ref[1], mask[1], P.dk.count, ref[2], mask[2],
                      P.dv.count) != 0)
    pass = 0;
  /* the same-precision backward (fp32, the given o and lse): the library's error budget */
  double* same[3];
  unsigned char* same_mask[3];
  for (int t = 0; t < 3; ++t) {
    same[t] = malloc(sizeof(double) * (size_t)grads[t]->count);
    same_mask[t] = malloc((size_t)grads[t]->count);
  }
  if (oracle_attn_bwd(&P.p, ORACLE_SAME, same[0], same_mask[0], P.dq.count, same[1], same_mask[1], P.dk.count, same[2],
                      same_mask[2], P.dv.count) != 0)
    pass = 0;
  /* written / untouched */
  const char* names[3] = {"dq", "dk", "dv"};
  for (int t = 0; t < 3 && pass; ++t) pass = test_check_written(names[t], grads[t]->data, c->dtype, grads[t]->count, mask[t]) && pass;

  /* map each o element to its dout element (same logical index, possibly other strides) */
  int64_t* dout_of_o = malloc(sizeof(int64_t) * (size_t)P.o.count);
  for (int64_t i = 0; i < P.o.count; ++i) dout_of_o[i] = -1;
  for (int b = 0; b < c->batch; ++b) {
    int bb = c->varlen ? 0 : b;
    int64_t r0 = c->varlen ? P.s.cu_q[b] : 0;
    for (int r = 0; r < P.s.used_q[b]; ++r)
      for (int h = 0; h < c->heads_q; ++h)
        for (int x = 0; x < P.o.columns; ++x)
          dout_of_o[tensor4_offset(&P.o, bb, r0 + r, h) + x] = tensor4_offset(&P.dout, bb, r0 + r, h) + x;
  }
  fd_state st;
  st.P = &P;
  st.o_ref = malloc(sizeof(double) * (size_t)P.o.count);
  st.o_mask = malloc((size_t)P.o.count);
  tensor4* inputs[3] = {&P.q, &P.k, &P.v};
  char summary[300] = "";
  size_t used = 0;
  double worst_lib = 0.0, worst_oracle = 0.0;
  for (int t = 0; t < 3; ++t) {
    double* fd = malloc(sizeof(double) * (size_t)inputs[t]->count);
    const int* rows = t == 0 ? P.s.used_q : P.s.used_k;
    const int32_t* row0 = t == 0 ? P.s.cu_q : P.s.cu_k;
    finite_differences(&st, inputs[t], rows, row0, fd, dout_of_o);
    /* gradient buffers share the input's shape but not its strides: compare through the
     * logical index */
    double* lib_at = malloc(sizeof(double) * (size_t)inputs[t]->count);
    double* ora_at = malloc(sizeof(double) * (size_t)inputs[t]->count);
    double* same_at = malloc(sizeof(double) * (size_t)inputs[t]->count);
    for (int64_t i = 0; i < inputs[t]->count; ++i) lib_at[i] = ora_at[i] = same_at[i] = NAN;
    for (int b = 0; b < c->batch; ++b) {
      int bb = c->varlen ? 0 : b;
      int64_t r0 = c->varlen ? row0[b] : 0;
      for (int r = 0; r < rows[b]; ++r)
        for (int h = 0; h < inputs[t]->heads; ++h)
          for (int x = 0; x < inputs[t]->columns; ++x) {
            int64_t in_off = tensor4_offset(inputs[t], bb, r0 + r, h) + x;
            int64_t g_off = tensor4_offset(grads[t], bb, r0 + r, h) + x;
            lib_at[in_off] = test_load(grads[t]->data, g_off, c->dtype);
            ora_at[in_off] = ref[t][g_off];
            same_at[in_off] = same[t][g_off];
          }
    }
    double e1, e2, m1, m2;
    /* the library under the DESIGN rule against the differences; the oracle's analytic
     * backward must match them to 1e-7 (the extrapolated differences are good to ~1e-9) */
    int ok_lib = compare_fd(names[t], lib_at, (flashc_dtype)-1, fd, inputs[t]->count, 0.0, same_at, &e1, &m1);
    char oracle_name[32];
    snprintf(oracle_name, sizeof oracle_name, "oracle %s", names[t]);
    int ok_oracle = compare_fd(oracle_name, ora_at, (flashc_dtype)-1, fd, inputs[t]->count, 1e-7, NULL, &e2, &m2);
    if (e1 / (m1 > 1 ? m1 : 1) > worst_lib) worst_lib = e1 / (m1 > 1 ? m1 : 1);
    if (e2 / (m2 > 1 ? m2 : 1) > worst_oracle) worst_oracle = e2 / (m2 > 1 ? m2 : 1);
    used += (size_t)snprintf(summary + used, sizeof summary - used, "%s%s |fd| %.2f", t ? ", " : "", names[t], m1);
    pass = pass && ok_lib && ok_oracle;
    free(fd), free(lib_at), free(ora_at), free(same_at);
  }
  test_case_result(pass, "%s | vs finite differences: rel err lib %.1e oracle %.1e (%s)", description, worst_lib,
                   worst_oracle, summary);
  free(st.o_ref), free(st.o_mask), free(dout_of_o);
  for (int t = 0; t < 3; ++t) free(ref[t]), free(mask[t]), free(same[t]), free(same_mask[t]);
  problem_free(&P);
  return pass;
}

/* ------------------------------------------------------------------------------------ */
/* against the fp64 oracle backward                                                       */
/* ------------------------------------------------------------------------------------ */

static int run_oracle_case(const bwd_case* c, test_rng* rng) {
  bwd_problem P;
  problem_make(&P, c, rng);
  char description[400];
  describe(&P, description, sizeof description);
  int pass = run_bwd(&P, &P.p) == FLASHC_STATUS_SUCCESS;
  tensor4* grads[3] = {&P.dq, &P.dk, &P.dv};
  const char* names[3] = {"dq", "dk", "dv"};
  double *ref[3], *same[3];
  unsigned char *mask[3], *mask2[3];
  for (int t = 0; t < 3; ++t) {
    ref[t] = malloc(sizeof(double) * (size_t)grads[t]->count);
    same[t] = malloc(sizeof(double) * (size_t)grads[t]->count);
    mask[t] = malloc((size_t)grads[t]->count);
    mask2[t] = malloc((size_t)grads[t]->count);
  }
  char summary[300] = "";
  if (pass) {
    if (oracle_attn_bwd(&P.p, ORACLE_FP64, ref[0], mask[0], P.dq.count, ref[1], mask[1], P.dk.count, ref[2], mask[2],
                        P.dv.count) != 0 ||
        oracle_attn_bwd(&P.p, ORACLE_SAME, same[0], mask2[0], P.dq.count, same[1], mask2[1], P.dk.count, same[2],
                        mask2[2], P.dv.count) != 0)
      pass = 0;
    size_t used = 0;
    for (int t = 0; t < 3 && pass; ++t) {
      test_check_result r;
      pass = test_check_output(names[t], grads[t]->data, c->dtype, grads[t]->count, ref[t], same[t], mask[t], -1.0, &r) &&
             pass;
      format_check(summary + used, sizeof summary - used, names[t], &r);
      used = strlen(summary);
      if (t < 2) used += (size_t)snprintf(summary + used, sizeof summary - used, " | ");
    }
    if (c->deterministic && pass) {
      /* a second run into fresh buffers must be bitwise identical */
      tensor4 again[3];
      for (int t = 0; t < 3; ++t) {
        again[t] = *grads[t];
        again[t].buffer = again[t].data = test_alloc((size_t)grads[t]->count * test_dtype_size(c->dtype));
      }
      flashc_attn_bwd_params p2 = P.p;
      p2.dq = again[0].data, p2.dk = again[1].data, p2.dv = again[2].data;
      int same_bits = run_bwd(&P, &p2) == FLASHC_STATUS_SUCCESS;
      for (int t = 0; t < 3 && same_bits; ++t)
        same_bits = memcmp(again[t].data, grads[t]->data, (size_t)grads[t]->count * test_dtype_size(c->dtype)) == 0;
      if (!same_bits) printf("  deterministic = 1: a second run differs\n");
      pass = pass && same_bits;
      strncat(summary, same_bits ? " | rerun bit-identical" : " | rerun differs", sizeof summary - strlen(summary) - 1);
      for (int t = 0; t < 3; ++t) test_free(again[t].buffer);
    }
  }
  test_case_result(pass, "%s | %s", description, summary);
  for (int t = 0; t < 3; ++t) free(ref[t]), free(same[t]), free(mask[t]), free(mask2[t]);
  problem_free(&P);
  return pass;
}

static bwd_case base_case(flashc_dtype dtype, int batch, int sq, int sk, int hq, int hkv, int d, int dv) {
  bwd_case c;
  memset(&c, 0, sizeof c);
  c.dtype = dtype;
  c.batch = batch, c.seqlen_q = sq, c.seqlen_k = sk, c.heads_q = hq, c.heads_kv = hkv, c.head_dim = d, c.head_dim_v = dv;
  c.window_left = c.window_right = -1;
  return c;
}

int main(void) {
  uint64_t seed = test_seed();
#ifdef FLASHC_TEST_ON_GPU
  int device_count = 0;
  if (cudaGetDeviceCount(&device_count) != cudaSuccess || device_count == 0) {
    printf("gpu_attn_bwd: no CUDA device, skipped\n");
    return 77;
  }
  flashc_status status = flashc_create(&g_handle, 0);
  const int on_gpu = 1;
#else
  flashc_status status = flashc_create(&g_handle, FLASHC_DEVICE_CPU);
  const int on_gpu = 0;
#endif
  if (status != FLASHC_STATUS_SUCCESS) {
    test_print_status("flashc_create", status);
    return TEST_EXIT_FAIL;
  }
  uint64_t index = 0;

  /* 1. fp32 against finite differences (the GPU takes no fp32) */
  if (!on_gpu) {
    bwd_case cases[12];
    int n = 0;
    const flashc_dtype f32 = FLASHC_DTYPE_FP32;
    cases[n++] = base_case(f32, 2, 5, 7, 4, 2, 8, 8);
    cases[n] = base_case(f32, 1, 6, 4, 2, 1, 8, 8), cases[n++].causal = 1; /* seqlen_q > seqlen_k: masked rows */
    cases[n] = base_case(f32, 1, 5, 9, 2, 2, 8, 8), cases[n++].causal = 1;
    cases[n] = base_case(f32, 1, 7, 9, 2, 2, 6, 10), cases[n].window_left = 2, cases[n++].window_right = 1;
    cases[n] = base_case(f32, 1, 9, 5, 2, 1, 8, 8), cases[n].window_left = 1, cases[n++].window_right = 0; /* masked rows */
    cases[n] = base_case(f32, 1, 5, 6, 2, 1, 8, 8), cases[n++].softcap = 2.5f;
    cases[n] = base_case(f32, 1, 4, 6, 6, 2, 8, 8), cases[n].softmax_scale = 0.6f, cases[n++].causal = 1;
    cases[n] = base_case(f32, 1, 3, 8, 3, 1, 16, 8), cases[n++].softcap = 4.0f; /* MQA */
    cases[n] = base_case(f32, 4, 6, 7, 2, 1, 8, 8), cases[n].varlen = 1, cases[n].empty = 1, cases[n++].causal = 1;
    cases[n] = base_case(f32, 3, 5, 6, 2, 2, 8, 8), cases[n].varlen = 1, cases[n].seqused_q = 1, cases[n++].seqused_k = 1;
    cases[n] = base_case(f32, 2, 5, 5, 2, 1, 8, 8), cases[n++].layout = LAYOUT_HEADS_MAJOR;
    cases[n] = base_case(f32, 2, 4, 6, 4, 2, 8, 12), cases[n].layout = LAYOUT_PADDED, cases[n++].softcap = 3.0f;
    for (int i = 0; i < n; ++i) {
      test_rng rng = test_rng_make(seed, ++index);
      run_fd_case(&cases[i], &rng);
    }
  }

  /* 2. against the fp64 oracle backward on larger shapes */
  {
    bwd_case cases[24];
    int n = 0;
    const flashc_dtype bf = FLASHC_DTYPE_BF16, fp = FLASHC_DTYPE_FP16;
    cases[n] = base_case(bf, 2, 113, 203, 4, 2, 64, 64), cases[n++].causal = 1;
    cases[n] = base_case(fp, 1, 128, 217, 2, 2, 128, 128), cases[n].window_left = 40, cases[n++].window_right = 7;
    cases[n] = base_case(bf, 1, 339, 113, 2, 1, 64, 64), cases[n++].causal = 1; /* fully masked rows */
    cases[n] = base_case(fp, 2, 1, 239, 4, 1, 96, 96);
    cases[n++].deterministic = 1;
    cases[n++] = base_case(bf, 3, 3, 3, 2, 2, 32, 32);
    cases[n] = base_case(fp, 1, 108, 256, 4, 2, 64, 64), cases[n++].softcap = 15.0f;
    cases[n] = base_case(bf, 1, 64, 80, 2, 1, 192, 128), cases[n++].causal = 1;
    cases[n] = base_case(fp, 1, 50, 70, 2, 2, 256, 256);
    cases[n++].deterministic = 1;
    cases[n] = base_case(bf, 5, 90, 120, 4, 2, 64, 64), cases[n].varlen = 1, cases[n].empty = 1, cases[n++].causal = 1;
    cases[n] = base_case(fp, 4, 70, 90, 2, 1, 64, 64), cases[n].varlen = 1, cases[n].seqused_q = 1, cases[n++].seqused_k = 1;
    cases[n] = base_case(bf, 2, 77, 77, 4, 4, 64, 64), cases[n].layout = LAYOUT_HEADS_MAJOR, cases[n].deterministic = 1,
    cases[n++].causal = 1;
    cases[n] = base_case(fp, 2, 60, 100, 6, 2, 32, 32), cases[n].layout = LAYOUT_PADDED, cases[n].window_left = 10,
    cases[n++].window_right = 0;
    cases[n] = base_case(FLASHC_DTYPE_FP32, 1, 100, 140, 2, 1, 64, 64), cases[n++].causal = 1;
    cases[n] = base_case(bf, 2, 40, 30, 3, 1, 64, 32), cases[n++].softmax_scale = 0.3f;
    for (int i = 0; i < n; ++i) {
      test_rng rng = test_rng_make(seed, ++index);
      if (on_gpu && cases[i].dtype == FLASHC_DTYPE_FP32) continue;
      if (on_gpu && cases[i].layout == LAYOUT_PADDED) cases[i].layout = LAYOUT_HEADS_MAJOR; /* 16-byte strides */
      run_oracle_case(&cases[i], &rng);
    }
    /* random mixtures */
    for (int i = 0; i < 50; ++i) {
      test_rng rng = test_rng_make(seed, ++index);
      const flashc_dtype dts[3] = {bf, fp, FLASHC_DTYPE_FP32};
      int hkv = test_rng_int(&rng, 1, 2);
      bwd_case c = base_case(dts[test_rng_int(&rng, 0, 2)], test_rng_int(&rng, 1, 3), test_rng_int(&rng, 1, 90),
                             test_rng_int(&rng, 1, 90), hkv * test_rng_pick(&rng, (const int[]){1, 2, 4}, 3), hkv,
                             test_rng_pick(&rng, (const int[]){32, 64, 96, 128, 40}, 5), 0);
      c.head_dim_v = c.head_dim;
      int mask_kind = test_rng_int(&rng, 0, 2);
      c.causal = mask_kind == 1;
      if (mask_kind == 2) c.window_left = test_rng_int(&rng, 0, 30), c.window_right = test_rng_int(&rng, -1, 10);
      if (test_rng_uniform(&rng) < 0.3) c.softcap = (float)(5.0 + 20.0 * test_rng_uniform(&rng));
      c.varlen = test_rng_uniform(&rng) < 0.3;
      c.empty = c.varlen;
      c.layout = test_rng_int(&rng, 0, 2);
      c.deterministic = test_rng_int(&rng, 0, 1);
      if (on_gpu && c.dtype == FLASHC_DTYPE_FP32) c.dtype = bf;
      if (on_gpu && c.layout == LAYOUT_PADDED) c.layout = LAYOUT_HEADS_MAJOR;
      run_oracle_case(&c, &rng);
    }
  }
#ifdef FLASHC_TEST_ON_GPU
  /* 3. the 32-blocks, forced (instances exist for head dims 192, (192, 128) and 256) */
  {
    const flashc_dtype bf = FLASHC_DTYPE_BF16, fp = FLASHC_DTYPE_FP16;
    bwd_case cases[6];
    int n = 0;
    cases[n] = base_case(bf, 2, 77, 95, 4, 2, 192, 128), cases[n++].causal = 1;
    cases[n] = base_case(fp, 1, 100, 61, 2, 1, 192, 192), cases[n].window_left = 20, cases[n++].window_right = 5;
    cases[n] = base_case(bf, 3, 40, 70, 2, 2, 256, 256), cases[n].varlen = 1, cases[n].empty = 1,
    cases[n++].softcap = 10.0f;
    cases[n] = base_case(fp, 1, 1, 150, 4, 1, 256, 256);
    cases[n++].deterministic = 1;
    cases[n] = base_case(bf, 2, 33, 33, 2, 1, 192, 192), cases[n].layout = LAYOUT_HEADS_MAJOR, cases[n].deterministic = 1,
    cases[n++].causal = 1;
    g_handle->cuda.attn_bwd_block = 32;
    for (int i = 0; i < n; ++i) {
      test_rng rng = test_rng_make(seed, ++index);
      run_oracle_case(&cases[i], &rng);
    }
    g_handle->cuda.attn_bwd_block = 0;
  }
#endif
  flashc_destroy(g_handle);
  return test_summary();
}
