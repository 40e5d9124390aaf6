"""torch integration: the C operations as torch.library custom ops (so torch.compile traces them
as opaque nodes with known output shapes), autograd for attention and GEMM, and the
autograd.Function of the packed-QKV attention, whose backward writes dq, dk, dv straight into
one dqkv buffer.

Ops (namespace "flashc"): attn_fwd, attn_bwd (mutates dq, dk, dv), attn_combine (mutates out),
gemm. They accept CPU and CUDA tensors; CPU tensors run on the CPU backend.
"""
from __future__ import annotations

from typing import List, Optional, Tuple

import torch

from . import _ops
from ._arrays import split_qkv

Tensor = torch.Tensor

if not hasattr(torch, "library") or not hasattr(torch.library, "custom_op"):  # pragma: no cover
    raise ImportError(f"flashc's torch integration needs torch >= 2.4 (torch.library.custom_op); "
                      f"this is torch {torch.__version__}")


# ---------------------------------------------------------------------------------------------
# Attention forward
# ---------------------------------------------------------------------------------------------

@torch.library.custom_op("flashc::attn_fwd", mutates_args=())
def attn_fwd(q: Tensor, k: Tensor, v: Tensor, cu_seqlens_q: Optional[Tensor], cu_seqlens_k: Optional[Tensor],
             seqused_q: Optional[Tensor], seqused_k: Optional[Tensor], max_seqlen_q: Optional[int],
             max_seqlen_k: Optional[int], page_table: Optional[Tensor], q_descale: Optional[Tensor],
             k_descale: Optional[Tensor], v_descale: Optional[Tensor], softmax_scale: float, causal: bool,
             window_left: int, window_right: int, softcap: float, num_splits: int, pack_gqa: int,
             deterministic: bool, kv_batch_may_exceed: bool) -> Tuple[Tensor, Tensor]:
    return _ops.attn_forward(q, k, v, cu_seqlens_q, cu_seqlens_k, seqused_q, seqused_k, max_seqlen_q,
                             max_seqlen_k, page_table, q_descale, k_descale, v_descale, softmax_scale, causal,
                             window_left, window_right, softcap, num_splits, pack_gqa, kv_batch_may_exceed)


@attn_fwd.register_fake
def _attn_fwd_fake(q, k, v, cu_seqlens_q, cu_seqlens_k, seqused_q, seqused_k, max_seqlen_q, max_seqlen_k,
                   page_table, q_descale, k_descale, v_descale, softmax_scale, causal, window_left, window_right,
                   softcap, num_splits, pack_gqa, deterministic, kv_batch_may_exceed):
    out_dtype = torch.bfloat16 if q.dtype == torch.float8_e4m3fn else q.dtype
    head_dim_v = v.shape[-1]
    if cu_seqlens_q is not None:
        total_q, heads, _ = q.shape
        out = q.new_empty((total_q, heads, head_dim_v), dtype=out_dtype)
        lse = q.new_empty((heads, total_q), dtype=torch.float32)
    else:
        batch, seqlen_q, heads, _ = q.shape
        out = q.new_empty((batch, seqlen_q, heads, head_dim_v), dtype=out_dtype)
        lse = q.new_empty((batch, heads, seqlen_q), dtype=torch.float32)
    return out, lse


def _attn_fwd_setup_context(ctx, inputs, output):
    (q, k, v, cu_seqlens_q, cu_seqlens_k, seqused_q, seqused_k, max_seqlen_q, max_seqlen_k, page_table,
     q_descale, k_descale, v_descale, softmax_scale, causal, window_left, window_right, softcap, num_splits,
     pack_gqa, deterministic, kv_batch_may_exceed) = inputs
    out, lse = output
    ctx.save_for_backward(q, k, v, out, lse, cu_seqlens_q, cu_seqlens_k, seqused_q, seqused_k)
    ctx.max_seqlen_q, ctx.max_seqlen_k = max_seqlen_q, max_seqlen_k
    ctx.softmax_scale, ctx.causal, ctx.softcap = softmax_scale, causal, softcap
    ctx.window = (window_left, window_right)
    ctx.deterministic = deterministic
    ctx.unsupported = None
    if page_table is not None:
        ctx.unsupported = "a paged KV cache (page_table)"
    elif q.dtype == torch.float8_e4m3fn:
        ctx.unsupported = "float8_e4m3fn inputs"
    elif kv_batch_may_exceed and k.shape[0] != q.shape[0]:
        ctx.unsupported = "a KV cache with more batch entries than q"


def _attn_fwd_backward(ctx, dout, dlse):
    # The gradient of the LSE output is not propagated (FA3 does the same): lse is a statistic.
    if ctx.unsupported:
        raise NotImplementedError(f"flashc: the attention backward does not support {ctx.unsupported}")
    q, k, v, out, lse, cu_seqlens_q, cu_seqlens_k, seqused_q, seqused_k = ctx.saved_tensors
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    attn_bwd(dout, q, k, v, out, lse, dq, dk, dv, cu_seqlens_q, cu_seqlens_k, seqused_q, seqused_k,
             ctx.max_seqlen_q, ctx.max_seqlen_k, ctx.softmax_scale, ctx.causal, ctx.window[0], ctx.window[1],
             ctx.softcap, ctx.deterministic)
    return (dq, dk, dv) + (None,) * 19


attn_fwd.register_autograd(_attn_fwd_backward, setup_context=_attn_fwd_setup_context)


# ---------------------------------------------------------------------------------------------
# Attention backward (writes into dq, dk, dv so packed callers get their gradient without a copy)
# ---------------------------------------------------------------------------------------------

@torch.library.custom_op("flashc::attn_bwd", mutates_args=("dq", "dk", "dv"))
def attn_bwd(dout: Tensor, q: Tensor, k: Tensor, v: Tensor, out: Tensor, lse: Tensor, dq: Tensor, dk: Tensor,
             dv: Tensor, cu_seqlens_q: Optional[Tensor], cu_seqlens_k: Optional[Tensor],
             seqused_q: Optional[Tensor], seqused_k: Optional[Tensor], max_seqlen_q: Optional[int],
             max_seqlen_k: Optional[int], softmax_scale: float, causal: bool, window_left: int,
             window_right: int, softcap: float, deterministic: bool) -> None:
    _ops.attn_backward(dout, q, k, v, out, lse, cu_seqlens_q, cu_seqlens_k, seqused_q, seqused_k, max_seqlen_q,
                       max_seqlen_k, softmax_scale, causal, window_left, window_right, softcap, deterministic,
                       dq, dk, dv)


@attn_bwd.register_fake
def _attn_bwd_fake(*args):
    return None


# ---------------------------------------------------------------------------------------------
# Combine (writes into out; returns the merged LSE)
# ---------------------------------------------------------------------------------------------

@torch.library.custom_op("flashc::attn_combine", mutates_args=("out",))
def attn_combine(out_partial: Tensor, lse_partial: Tensor, out: Tensor) -> Tensor:
    _, lse = _ops.attn_combine(out_partial, lse_partial, out)
    return lse


@attn_combine.register_fake
def _attn_combine_fake(out_partial, lse_partial, out):
    _, batch, seqlen, heads, _ = out_partial.shape
    return out_partial.new_empty((batch, heads, seqlen), dtype=torch.float32)


# ---------------------------------------------------------------------------------------------
# GEMM
# ---------------------------------------------------------------------------------------------

@torch.library.custom_op("flashc::gemm", mutates_args=())
def gemm(a: Tensor, b: Tensor, c: Optional[Tensor], bias: Optional[Tensor], scale_a: Optional[Tensor],
         scale_b: Optional[Tensor], alpha: float, beta: float, activation: int, out_dtype: Optional[torch.dtype],
         algo: int) -> Tensor:
    return _ops.gemm(a, b, c, bias, scale_a, scale_b, alpha, beta, activation, out_dtype, algo)


@gemm.register_fake
def _gemm_fake(a, b, c, bias, scale_a, scale_b, alpha, beta, activation, out_dtype, algo):
    if out_dtype is None:
        out_dtype = torch.bfloat16 if a.dtype == torch.float8_e4m3fn else a.dtype
    m, n = a.shape[-2], b.shape[-1]
    batch = a.shape[0] if a.dim() == 3 else (b.shape[0] if b.dim() == 3 else None)
    shape = (m, n) if batch is None else (batch, m, n)
    return a.new_empty(shape, dtype=out_dtype)


def _gemm_setup_context(ctx, inputs, output):
    a, b, c, bias, scale_a, scale_b, alpha, beta, activation, out_dtype, algo = inputs
    ctx.save_for_backward(a, b)
    ctx.alpha, ctx.beta, ctx.algo = alpha, beta, algo
    ctx.has_c, ctx.has_bias = c is not None, bias is not None
    ctx.c_shape = tuple(c.shape) if c is not None else None
    ctx.unsupported = None
    if activation != 0:
        ctx.unsupported = "an activation (the pre-activation values are not kept)"
    elif scale_a is not None or scale_b is not None or a.dtype == torch.float8_e4m3fn:
        ctx.unsupported = "scale_a / scale_b or float8 inputs"


def _reduce_to(grad, shape):
    """Sums the broadcast batch dimension away when the operand was 2-D."""
    return grad.sum(0) if grad.dim() == 3 and len(shape) == 2 else grad


def _gemm_backward(ctx, grad):
    if ctx.unsupported:
        raise NotImplementedError(f"flashc.gemm: the backward does not support {ctx.unsupported}")
    a, b = ctx.saved_tensors
    grad_a = grad_b = grad_c = grad_bias = None
    g = grad.to(a.dtype)
    if ctx.needs_input_grad[0]:  # dA = alpha · dD · Bᵀ (Bᵀ is a view: no copy)
        grad_a = _reduce_to(gemm(g, b.transpose(-1, -2), None, None, None, None, ctx.alpha, 0.0, 0, a.dtype,
                                 ctx.algo), a.shape)
    if ctx.needs_input_grad[1]:  # dB = alpha · Aᵀ · dD
        grad_b = _reduce_to(gemm(a.transpose(-1, -2), g, None, None, None, None, ctx.alpha, 0.0, 0, b.dtype,
                                 ctx.algo), b.shape)
    if ctx.has_c and ctx.needs_input_grad[2]:
        grad_c = _reduce_to(grad * ctx.beta, ctx.c_shape)
    if ctx.has_bias and ctx.needs_input_grad[3]:
        grad_bias = grad.reshape(-1, grad.shape[-1]).sum(0)
    return grad_a, grad_b, grad_c, grad_bias, None, None, None, None, None, None, None


gemm.register_autograd(_gemm_backward, setup_context=_gemm_setup_context)


# ---------------------------------------------------------------------------------------------
# Packed QKV
# ---------------------------------------------------------------------------------------------

class FlashAttnQKVPackedFunc(torch.autograd.Function):
    """q, k, v are views of qkv; the backward allocates one dqkv and hands its views to the
    backward kernel as dq, dk, dv, so the packed gradient needs no concatenation."""

    @staticmethod
    def forward(ctx, qkv, num_heads_q, softmax_scale, causal, window_left, window_right, softcap, deterministic,
                q_descale, k_descale, v_descale):
        q, k, v = split_qkv(qkv, num_heads_q)
        out, lse = attn_fwd(q, k, v, None, None, None, None, None, None, None, q_descale, k_descale, v_descale,
                            softmax_scale, causal, window_left, window_right, softcap, 1, -1, deterministic,
                            False)
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.num_heads_q = num_heads_q
        ctx.args = (softmax_scale, causal, window_left, window_right, softcap, deterministic)
        ctx.fp8 = qkv.dtype == torch.float8_e4m3fn
        ctx.mark_non_differentiable(lse)
        return out, lse

    @staticmethod
    def backward(ctx, dout, dlse):
        if ctx.fp8:
            raise NotImplementedError("flashc: the attention backward does not support float8_e4m3fn inputs")
        q, k, v, out, lse = ctx.saved_tensors
        softmax_scale, causal, window_left, window_right, softcap, deterministic = ctx.args
        if ctx.num_heads_q is None:
            dqkv = q.new_empty(q.shape[:2] + (3,) + q.shape[2:])
        else:
            dqkv = q.new_empty(q.shape[:2] + (q.shape[2] + 2 * k.shape[2], q.shape[3]))
        dq, dk, dv = split_qkv(dqkv, ctx.num_heads_q)
        attn_bwd(dout, q, k, v, out, lse, dq, dk, dv, None, None, None, None, None, None, softmax_scale, causal,
                 window_left, window_right, softcap, deterministic)
        return (dqkv,) + (None,) * 10
