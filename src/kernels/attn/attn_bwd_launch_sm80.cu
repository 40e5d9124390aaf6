/*
 * attn_bwd_launch_sm80.cu — flashc_attn_bwd on a CUDA handle: which problems the portable
 * backward takes (fp16/bf16, head dims up to 256, sm_80 and newer), its workspace (D, one
 * fp32 per query row and head) and the three launches of attn_bwd_kernel.cuh on the caller's
 * stream. Built with the portable targets (the _sm80.cu suffix).
 * Check: tests/gpu/gpu_attn_bwd.
 */
#include <stdio.h>

#include <cuda_runtime.h>

#include "flashc.h"
#include "host/error.h"
#include "host/problem.h"
#include "kernels/attn/attn_bwd_kernel.cuh"
#include "kernels/launch.h"

namespace {

size_t smem_bytes_for(const fc_attn_problem* p) {
  return sizeof(float) * static_cast<size_t>(attn_bwd_layout(p->head_dim, p->head_dim_v).end);
}

int64_t query_rows(const fc_attn_problem* p) {
  return p->cu_seqlens_q ? static_cast<int64_t>(p->total_q) : static_cast<int64_t>(p->batch) * p->seqlen_q;
}

attn_bwd_tensor tensor_of(const void* data, int64_t batch_stride, int64_t row_stride, int64_t head_stride) {
  attn_bwd_tensor t = {data, batch_stride, row_stride, head_stride};
  return t;
}

template <typename T>
cudaError_t launch_all(const attn_bwd_params& params, size_t smem_bytes, cudaStream_t stream) {
  const int64_t m_tiles = (params.seqlen_q + ATTN_BWD_BLOCK_M - 1) / ATTN_BWD_BLOCK_M;
  const int64_t n_tiles = (params.seqlen_k + ATTN_BWD_BLOCK_N - 1) / ATTN_BWD_BLOCK_N;
  const int64_t query_ctas = m_tiles * params.heads_q * params.batch;
  const int64_t key_ctas = n_tiles * params.heads_kv * params.batch;
  /* (validation makes batch, heads, seqlen_q and seqlen_k positive: both grids are non-empty) */
  if (query_ctas > 0x7fffffff || key_ctas > 0x7fffffff) return cudaErrorInvalidConfiguration;
  cudaError_t error = cudaFuncSetAttribute(attn_bwd_dkdv_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(smem_bytes));
  if (error == cudaSuccess)
    error = cudaFuncSetAttribute(attn_bwd_dq_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 static_cast<int>(smem_bytes));
  if (error != cudaSuccess) return error;
  attn_bwd_row_dots_kernel<T><<<static_cast<unsigned>(query_ctas), ATTN_BWD_THREADS, 0, stream>>>(params);
  attn_bwd_dq_kernel<T><<<static_cast<unsigned>(query_ctas), ATTN_BWD_THREADS, smem_bytes, stream>>>(params);
  attn_bwd_dkdv_kernel<T><<<static_cast<unsigned>(key_ctas), ATTN_BWD_THREADS, smem_bytes, stream>>>(params);
  return cudaGetLastError();
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
  const size_t smem = smem_bytes_for(p);
  if (smem > context->shared_memory_per_block_optin) {
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

  const size_t smem = smem_bytes_for(p);
  const cudaStream_t cuda_stream = static_cast<cudaStream_t>(stream);
  cudaError_t error = cudaSuccess;
  switch (p->dtype) {
    case FLASHC_DTYPE_FP16: error = launch_all<__half>(params, smem, cuda_stream); break;
    default: error = launch_all<__nv_bfloat16>(params, smem, cuda_stream); break;
  }
  if (error != cudaSuccess)
    return fc_fail(FLASHC_STATUS_CUDA_ERROR, "attention backward launch failed: %s", cudaGetErrorString(error));
  return FLASHC_STATUS_SUCCESS;
}
