/*
 * attn_bwd_launch_sm80.cu — flashc_attn_bwd on a CUDA handle: which problems the portable
 * tensor-core backward takes (fp16/bf16, head dims up to 256, sm_80 and newer, an instance
 * whose shared memory fits the device), its workspace (D, one fp32 per query row and head),
 * and the dispatch to the per-dtype launchers (attn_bwd_launch.cuh) on the caller's stream.
 * Built with the portable targets (the _sm80.cu suffix).
 * Check: tests/gpu/gpu_attn_bwd.
 */
#include <stdio.h>

#include <cuda_runtime.h>

#include "flashc.h"
#include "host/error.h"
#include "host/problem.h"
#include "kernels/attn/attn_bwd_launch.cuh"
#include "kernels/launch.h"

namespace {

/* The instance for this problem on this device: 64-blocks where they fit the shared memory,
 * else 32-blocks where an instance exists (or only the block fc_cuda_context.attn_bwd_block
 * forces); block = 0 if none. */
attn_bwd_shape shape_for(const fc_attn_problem* p, const fc_cuda_context* context) {
  const int blocks[] = {ATTN_BWD_BLOCK_LARGE, ATTN_BWD_BLOCK_SMALL};
  for (int block : blocks) {
    if (context->attn_bwd_block != 0 && block != context->attn_bwd_block) continue;
    const attn_bwd_shape shape = attn_bwd_shape_for(p->head_dim, p->head_dim_v, block);
    const size_t smem = attn_bwd_smem_bytes(shape);
    if (smem > 0 && smem <= context->shared_memory_per_block_optin) return shape;
  }
  attn_bwd_shape none = attn_bwd_shape_for(p->head_dim, p->head_dim_v, 0);
  return none;
}

int64_t query_rows(const fc_attn_problem* p) {
  return p->cu_seqlens_q ? static_cast<int64_t>(p->total_q) : static_cast<int64_t>(p->batch) * p->seqlen_q;
}

attn_bwd_tensor tensor_of(const void* data, int64_t batch_stride, int64_t row_stride, int64_t head_stride) {
  attn_bwd_tensor t = {data, batch_stride, row_stride, head_stride};
  return t;
}

}  // namespace

extern "C" flashc_status fc_attn_bwd_portable_check(const fc_attn_problem* p, const fc_cuda_context* context,
                                                    fc_reason* why_not) {
  if (context->cc_major < 8) {
    snprintf(why_not->text, sizeof why_not->text,
             "the attention backward needs compute capability 8.0 or newer; this device is %d.%d", context->cc_major,
             context->cc_minor);
    return FLASHC_STATUS_NOT_SUPPORTED_ARCH;
  }
  if (p->dtype != FLASHC_DTYPE_FP16 && p->dtype != FLASHC_DTYPE_BF16) {
    snprintf(why_not->text, sizeof why_not->text, "the GPU attention backward takes fp16 or bf16, not %s",
             flashc_dtype_name(p->dtype));
    return FLASHC_STATUS_NOT_SUPPORTED_DTYPE;
  }
  if (p->head_dim > ATTN_BWD_MAX_HEAD_DIM || p->head_dim_v > ATTN_BWD_MAX_HEAD_DIM) {
    snprintf(why_not->text, sizeof why_not->text,
             "head_dim %d / head_dim_v %d: the GPU attention backward takes head dims up to %d", p->head_dim,
             p->head_dim_v, ATTN_BWD_MAX_HEAD_DIM);
    return FLASHC_STATUS_NOT_SUPPORTED_HEAD_DIM;
  }
  if (shape_for(p, context).block == 0 && context->attn_bwd_block != 0) {
    snprintf(why_not->text, sizeof why_not->text,
             "the handle forces %d-blocks for the GPU attention backward; head dims (%d, %d) have no such instance "
             "that fits this device", context->attn_bwd_block, p->head_dim, p->head_dim_v);
    return FLASHC_STATUS_NOT_SUPPORTED_HEAD_DIM;
  }
  if (shape_for(p, context).block == 0) {
    const attn_bwd_shape smallest = attn_bwd_shape_for(p->head_dim, p->head_dim_v, ATTN_BWD_BLOCK_SMALL);
    size_t smem = attn_bwd_smem_bytes(smallest);
    if (smem == 0) smem = attn_bwd_smem_bytes(attn_bwd_shape_for(p->head_dim, p->head_dim_v, ATTN_BWD_BLOCK_LARGE));
    snprintf(why_not->text, sizeof why_not->text,
             "the GPU attention backward needs %zu bytes of shared memory per block for head dims (%d, %d); this "
             "device offers %zu",
             smem, p->head_dim, p->head_dim_v, context->shared_memory_per_block_optin);
    return FLASHC_STATUS_NOT_SUPPORTED_HEAD_DIM;
  }
  return FLASHC_STATUS_SUCCESS;
}

extern "C" size_t fc_attn_bwd_portable_workspace_size(const fc_attn_problem* p, const fc_cuda_context* context) {
  (void)context;
  return sizeof(float) * static_cast<size_t>(query_rows(p)) * static_cast<size_t>(p->heads_q);
}

extern "C" flashc_status fc_attn_bwd_portable_run(const fc_attn_problem* p, const fc_cuda_context* context,
                                                  void* workspace, void* stream) {
  fc_reason why_not = {{0}};
  flashc_status status = fc_attn_bwd_portable_check(p, context, &why_not);
  if (status != FLASHC_STATUS_SUCCESS) return fc_fail(status, "attention backward: %s", why_not.text);
  if (query_rows(p) > 0 && !workspace)
    return fc_fail(FLASHC_STATUS_INTERNAL_ERROR, "attention backward: no workspace for the row dots");

  attn_bwd_params params;
  params.batch = p->batch;
  params.seqlen_q = p->seqlen_q;
  params.seqlen_k = p->seqlen_k;
  params.heads_q = p->heads_q;
  params.heads_kv = p->heads_kv;
  params.group = p->heads_q / p->heads_kv;
  params.head_dim = p->head_dim;
  params.head_dim_v = p->head_dim_v;
  params.q = tensor_of(p->q.data, p->q.batch_stride, p->q.row_stride, p->q.head_stride);
  params.k = tensor_of(p->k.data, p->k.batch_stride, p->k.row_stride, p->k.head_stride);
  params.v = tensor_of(p->v.data, p->v.batch_stride, p->v.row_stride, p->v.head_stride);
  params.o = tensor_of(p->o.data, p->o.batch_stride, p->o.row_stride, p->o.head_stride);
  params.dout = tensor_of(p->dout.data, p->dout.batch_stride, p->dout.row_stride, p->dout.head_stride);
  params.dq = tensor_of(p->dq.data, p->dq.batch_stride, p->dq.row_stride, p->dq.head_stride);
  params.dk = tensor_of(p->dk.data, p->dk.batch_stride, p->dk.row_stride, p->dk.head_stride);
  params.dv = tensor_of(p->dv.data, p->dv.batch_stride, p->dv.row_stride, p->dv.head_stride);
  params.lse = p->lse;
  params.lse_batch_stride = p->lse_batch_stride;
  params.lse_head_stride = p->lse_head_stride;
  params.row_dots = static_cast<float*>(workspace);
  params.softmax_scale = p->softmax_scale;
  params.softcap = p->softcap;
  params.window_left = p->window_left;
  params.window_right = p->window_right;
  params.cu_seqlens_q = p->cu_seqlens_q;
  params.cu_seqlens_k = p->cu_seqlens_k;
  params.seqused_q = p->seqused_q;
  params.seqused_k = p->seqused_k;

  const attn_bwd_shape shape = shape_for(p, context);
  const cudaStream_t cuda_stream = static_cast<cudaStream_t>(stream);
  const cudaError_t error = p->dtype == FLASHC_DTYPE_FP16 ? attn_bwd_launch_f16(params, shape, cuda_stream)
                                                         : attn_bwd_launch_bf16(params, shape, cuda_stream);
  if (error != cudaSuccess)
    return fc_fail(FLASHC_STATUS_CUDA_ERROR, "attention backward launch failed: %s", cudaGetErrorString(error));
  return FLASHC_STATUS_SUCCESS;
}
