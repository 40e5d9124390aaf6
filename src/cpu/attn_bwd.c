/*
 * attn_bwd.c — the CPU backend's attention backward: dq, dk, dv from q, k, v, o, lse and
 * dout with fp32 accumulation (the math is attn_math.inc, instantiated here for float):
 *   P = exp(s − lse),  D_i = dout_i · o_i,  dS = P ∘ (dout·vᵀ − D) (∘ the softcap's derivative),
 *   dq = scale · dS·k,  dk = scale · dSᵀ·q,  dv = Pᵀ·dout.
 *
 * Work items are (sequence, KV head) pairs spread over OpenMP threads. A thread runs the
 * query heads of its pair one after the other and sums dk, dv in its own fp32 accumulators
 * (from the caller's workspace), so there are no races and no atomics: the result is
 * bitwise the same run to run and for any thread count (deterministic by construction;
 * the `deterministic` flag changes nothing here).
 *
 * Checked by the tests against fc_ref_attn_bwd (fp64, which recomputes the softmax from
 * q and k) and, for fp32 inputs, against central finite differences of the fp64 forward.
 */
#include <stdlib.h>

#include "cpu/attn_common.h"
#include "cpu/cpu_backend.h"
#include "host/error.h"

#define FC_ATTN_REAL_IS_DOUBLE 0
#define FC_ATTN_WITH_FWD 0
#define FC_ATTN_WITH_BWD 1
#include "cpu/attn_math.inc"

/* Scratch of one thread: keys and values of the longest sequence, their gradients, blocks. */
static size_t fc_bwd_thread_bytes(const fc_attn_problem* p) {
  return fc_scratch_round_up(fc_attn_bwd_scratch_bytes_f32(p, fc_attn_max_seqlen_k(p), 0));
}

size_t fc_cpu_attn_bwd_workspace_size(const fc_attn_problem* p) {
  const int threads = fc_cpu_threads_for((int64_t)p->batch * p->heads_kv);
  /* + one alignment unit: the caller's pointer may need aligning. */
  return (size_t)threads * fc_bwd_thread_bytes(p) + FC_SCRATCH_ALIGNMENT;
}

flashc_status fc_cpu_attn_bwd(const fc_attn_problem* p, void* workspace, size_t workspace_bytes) {
  const int64_t items = (int64_t)p->batch * p->heads_kv;
  const size_t thread_bytes = fc_bwd_thread_bytes(p);
  char* scratch = workspace ? fc_scratch_align(workspace) : NULL;
  const size_t alignment_loss = workspace ? (size_t)(scratch - (char*)workspace) : 0;
  const size_t usable = workspace_bytes > alignment_loss ? workspace_bytes - alignment_loss : 0;

  /* The thread count may have grown since the size query: use what the workspace holds. */
  int threads = fc_cpu_threads_for(items);
  if ((size_t)threads > usable / thread_bytes) threads = (int)(usable / thread_bytes);
  if (threads < 1)
    return fc_fail(FLASHC_STATUS_WORKSPACE_TOO_SMALL,
                   "workspace_bytes (%zu) is below the %zu bytes the CPU attention backward needs at least",
                   workspace ? workspace_bytes : (size_t)0, thread_bytes + FC_SCRATCH_ALIGNMENT);

  const fc_attn_bwd_mode mode = {0, FLASHC_DTYPE_FP32, NULL, NULL, NULL};
#ifdef FLASHC_WITH_OPENMP
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
#endif
  for (int64_t item = 0; item < items; ++item) {
    const int kv_head = (int)(item % p->heads_kv);
    const int b = (int)(item / p->heads_kv);
    fc_attn_bwd_kv_head_f32(p, b, kv_head, &mode, scratch + (size_t)fc_cpu_thread_index() * thread_bytes);
  }
  return FLASHC_STATUS_SUCCESS;
}
