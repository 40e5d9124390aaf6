"""FlashAttention-3's Python interface (hopper/flash_attn_interface.py) over flashc.

Same function names, argument names, defaults and return conventions, so that

    from flash_attn_interface import flash_attn_func          # FlashAttention-3
    from flashc import flash_attn_func                         # flashc

is the only change. torch tensors run through the custom ops of _torch_ops (CUDA tensors on
torch's current stream, CPU tensors on the CPU backend, gradients through autograd, traceable by
torch.compile); numpy arrays run on the CPU backend and return numpy arrays.

Arguments FA3 has and flashc does not implement raise NotImplementedError when set to a value
that would change the result (qv, attention_chunk, rotary_*, cache_leftpad, cu_seqlens_k_new).
sm_margin is accepted and has no effect: flashc does not reserve SMs.
"""
from __future__ import annotations

import sys

import numpy as np

from . import _ops
from ._arrays import Ops, is_torch, split_qkv

_UNSET_WINDOW = (-1, -1)


def _torch_ops():
    from . import _torch_ops as ops  # imported when flashc is (if torch is installed); cached here
    return ops


def _pack_gqa_code(pack_gqa):
    return -1 if pack_gqa is None else int(bool(pack_gqa))


def _window(window_size, causal):
    if window_size is None:
        window_size = _UNSET_WINDOW
    left, right = (int(w) for w in window_size)
    return left, 0 if causal else right  # FA3: causal forces the right window to 0


def _scale(softmax_scale, head_dim):
    return _ops.default_scale(head_dim) if softmax_scale is None else float(softmax_scale)


def _require_array(x, what):
    if not (is_torch(x) or isinstance(x, np.ndarray)):
        raise TypeError(f"{what} must be a numpy array or a torch tensor, got {type(x).__name__}")
    return x


def _refuse(name, value, default=None, detail=""):
    if value is not default and not (isinstance(value, (int, float)) and value == default):
        raise NotImplementedError(f"flashc does not implement {name}{detail}; leave it at {default!r}")


def _refuse_fa3_only(qv=None, attention_chunk=0):
    _refuse("qv (an extra query-value product)", qv)
    _refuse("attention_chunk", attention_chunk, 0)


def _check_num_splits(num_splits):
    if int(num_splits) < 0:
        raise ValueError(f"num_splits ({num_splits}) must be >= 0 (0 = automatic)")


def _needs_torch_op(q, k, v):
    """The custom op is what autograd and torch.compile see; a call that neither records a
    graph nor is traced skips its dispatch layers (tens of microseconds per call, which at short
    sequences is longer than the kernel) and runs the same C call directly."""
    torch = sys.modules["torch"]
    if torch.compiler.is_compiling():
        return True
    return torch.is_grad_enabled() and any(getattr(x, "requires_grad", False) for x in (q, k, v))


def _attention(q, k, v, *, return_lse, **kwargs):
    """Forward through the torch op when autograd or torch.compile needs it, else directly (numpy
    arrays, and torch calls under no_grad / inference or without inputs that require grad)."""
    if is_torch(q) and _needs_torch_op(q, k, v):
        kind = Ops(q, "q")
        k, v = kind.check_same_kind(k, "k"), kind.check_same_kind(v, "v")
        out, lse = _torch_ops().attn_fwd(
            q, k, v, kwargs.get("cu_seqlens_q"), kwargs.get("cu_seqlens_k"), kwargs.get("seqused_q"),
            kwargs.get("seqused_k"), kwargs.get("max_seqlen_q"), kwargs.get("max_seqlen_k"),
            kwargs.get("page_table"), kwargs.get("q_descale"), kwargs.get("k_descale"), kwargs.get("v_descale"),
            kwargs["softmax_scale"], kwargs["causal"], kwargs["window_left"], kwargs["window_right"],
            kwargs["softcap"], kwargs.get("num_splits", 1), kwargs.get("pack_gqa", -1),
            kwargs.get("deterministic", False), kwargs.get("kv_batch_may_exceed", False))
    else:
        kwargs.pop("deterministic", None)
        out, lse = _ops.attn_forward(q, k, v, **kwargs)
    return (out, lse) if return_lse else out


def _torch_index(x, like):
    """Index arrays for the torch op: int32 tensors on q's device (lists and numpy converted)."""
    if x is None:
        return None
    import torch
    if not isinstance(x, torch.Tensor):
        x = torch.as_tensor(np.asarray(x), device=like.device)
    return x if x.dtype == torch.int32 else x.to(torch.int32)


def _torch_descale(x, like):
    if x is None:
        return None
    import torch
    return x if isinstance(x, torch.Tensor) else torch.as_tensor(np.asarray(x, dtype=np.float32), device=like.device)


def flash_attn_func(q, k, v, softmax_scale=None, causal=False, qv=None, q_descale=None, k_descale=None,
                    v_descale=None, window_size=(-1, -1), attention_chunk=0, softcap=0.0, num_splits=1,
                    pack_gqa=None, deterministic=False, sm_margin=0, return_attn_probs=False):
    """Attention over batches of equal-length sequences.

    q (batch, seqlen_q, heads, head_dim), k (batch, seqlen_k, heads_kv, head_dim),
    v (batch, seqlen_k, heads_kv, head_dim_v); heads a multiple of heads_kv (GQA/MQA).
    softmax_scale defaults to head_dim ** -0.5. causal and window_size=(left, right) masks are
    aligned to the bottom-right corner (query i sees key j when
    i + seqlen_k - seqlen_q - left <= j <= i + seqlen_k - seqlen_q + right, -1 = unbounded);
    softcap > 0 applies softcap * tanh(s / softcap). q_descale/k_descale/v_descale (batch, heads_kv)
    fp32 for float8_e4m3fn inputs (output bf16). num_splits (1 = none, 0 = automatic), pack_gqa
    (None = automatic) and deterministic (backward) are tuning flags.

    Returns out (batch, seqlen_q, heads, head_dim_v), or (out, softmax_lse) with
    return_attn_probs=True, softmax_lse fp32 (batch, heads, seqlen_q), natural log. A row that sees
    no key gets out = 0 and lse = -inf.
    """
    _require_array(q, "q")
    _refuse_fa3_only(qv, attention_chunk)
    _check_num_splits(num_splits)
    left, right = _window(window_size, causal)
    if is_torch(q):
        q_descale, k_descale, v_descale = (_torch_descale(x, q) for x in (q_descale, k_descale, v_descale))
    return _attention(q, k, v, return_lse=return_attn_probs, q_descale=q_descale, k_descale=k_descale,
                      v_descale=v_descale, softmax_scale=_scale(softmax_scale, q.shape[-1]), causal=bool(causal),
                      window_left=left, window_right=right, softcap=float(softcap), num_splits=int(num_splits),
                      pack_gqa=_pack_gqa_code(pack_gqa), deterministic=bool(deterministic))


def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q=None, max_seqlen_k=None,
                           seqused_q=None, seqused_k=None, softmax_scale=None, causal=False, qv=None,
                           q_descale=None, k_descale=None, v_descale=None, window_size=(-1, -1),
                           attention_chunk=0, softcap=0.0, num_splits=1, pack_gqa=None, deterministic=False,
                           sm_margin=0, return_attn_probs=False):
    """Attention over variable-length sequences packed along one dimension.

    q (total_q, heads, head_dim) with cu_seqlens_q (batch + 1,) int32: sequence b is rows
    cu_seqlens_q[b]:cu_seqlens_q[b+1]; likewise k, v with cu_seqlens_k. cu_seqlens_k may be None
    when k and v are batched (batch, seqlen_k, heads_kv, d). max_seqlen_q/k are the longest
    lengths (computed from cu_seqlens when None, which reads them back from the GPU).
    seqused_q/k (batch,) int32 limit the rows used per sequence (query rows beyond are not
    written). Masks, softcap, GQA, descales as in flash_attn_func.

    Returns out (total_q, heads, head_dim_v), or (out, softmax_lse) with softmax_lse fp32
    (heads, total_q).
    """
    _require_array(q, "q")
    _refuse_fa3_only(qv, attention_chunk)
    _check_num_splits(num_splits)
    left, right = _window(window_size, causal)
    if is_torch(q):
        cu_seqlens_q, cu_seqlens_k, seqused_q, seqused_k = (
            _torch_index(x, q) for x in (cu_seqlens_q, cu_seqlens_k, seqused_q, seqused_k))
        q_descale, k_descale, v_descale = (_torch_descale(x, q) for x in (q_descale, k_descale, v_descale))
    if cu_seqlens_q is None:
        raise ValueError("flash_attn_varlen_func needs cu_seqlens_q (use flash_attn_func for batched q)")
    return _attention(q, k, v, return_lse=return_attn_probs, cu_seqlens_q=cu_seqlens_q, cu_seqlens_k=cu_seqlens_k,
                      seqused_q=seqused_q, seqused_k=seqused_k,
                      max_seqlen_q=None if max_seqlen_q is None else int(max_seqlen_q),
                      max_seqlen_k=None if max_seqlen_k is None else int(max_seqlen_k),
                      q_descale=q_descale, k_descale=k_descale, v_descale=v_descale,
                      softmax_scale=_scale(softmax_scale, q.shape[-1]), causal=bool(causal), window_left=left,
                      window_right=right, softcap=float(softcap), num_splits=int(num_splits),
                      pack_gqa=_pack_gqa_code(pack_gqa), deterministic=bool(deterministic))


def flash_attn_qkvpacked_func(qkv, softmax_scale=None, causal=False, q_descale=None, k_descale=None,
                              v_descale=None, window_size=(-1, -1), attention_chunk=0, softcap=0.0,
                              deterministic=False, num_heads_q=None, sm_margin=0, return_attn_probs=False):
    """Attention on one packed tensor: qkv (batch, seqlen, 3, heads, head_dim), or
    (batch, seqlen, heads_q + 2 * heads_kv, head_dim) with num_heads_q (GQA). q, k and v are read
    in place through their strides, and the backward writes one dqkv without concatenation.
    Returns out (batch, seqlen, heads, head_dim), or (out, softmax_lse) with return_attn_probs."""
    _require_array(qkv, "qkv")
    _refuse_fa3_only(None, attention_chunk)
    left, right = _window(window_size, causal)
    scale = _scale(softmax_scale, qkv.shape[-1])
    if is_torch(qkv):
        q_descale, k_descale, v_descale = (_torch_descale(x, qkv) for x in (q_descale, k_descale, v_descale))
        out, lse = _torch_ops().FlashAttnQKVPackedFunc.apply(
            qkv, num_heads_q, scale, bool(causal), left, right, float(softcap), bool(deterministic), q_descale,
            k_descale, v_descale)
        return (out, lse) if return_attn_probs else out
    q, k, v = split_qkv(qkv, num_heads_q)
    return _attention(q, k, v, return_lse=return_attn_probs, q_descale=q_descale, k_descale=k_descale,
                      v_descale=v_descale, softmax_scale=scale, causal=bool(causal), window_left=left,
                      window_right=right, softcap=float(softcap))


def _append_to_cache(k_cache, v_cache, k, v, cache_seqlens, cache_batch_idx, page_table):
    """Writes the new keys/values at positions cache_seqlens[b] ... of each sequence's cache (in
    place, like FA3) and returns the lengths that include them."""
    batch, seqlen_new = int(k.shape[0]), int(k.shape[1])
    if tuple(v.shape[:2]) != (batch, seqlen_new):
        raise ValueError(f"k has shape {tuple(k.shape)} but v has {tuple(v.shape)}: they must share (batch, seqlen_new)")
    if is_torch(k):
        import torch
        positions = cache_seqlens.to(torch.int64)[:, None] + torch.arange(seqlen_new, device=k.device)[None, :]
        lengths = (cache_seqlens + seqlen_new).to(torch.int32)
    else:
        positions = cache_seqlens.astype(np.int64)[:, None] + np.arange(seqlen_new)[None, :]
        lengths = (cache_seqlens + seqlen_new).astype(np.int32)
    if page_table is not None:
        page_size = int(k_cache.shape[1])
        pages = page_table[(np.arange(batch)[:, None] if not is_torch(k) else
                            __import__("torch").arange(batch, device=k.device)[:, None]),
                           positions // page_size]
        rows = positions % page_size
        k_cache[pages, rows] = k
        v_cache[pages, rows] = v
    else:
        if is_torch(k):
            import torch
            batch_index = (cache_batch_idx.to(torch.int64) if cache_batch_idx is not None
                           else torch.arange(batch, device=k.device))[:, None]
        else:
            batch_index = (cache_batch_idx.astype(np.int64) if cache_batch_idx is not None
                           else np.arange(batch))[:, None]
        if int(k_cache.shape[1]) < seqlen_new:
            raise ValueError(f"k has {seqlen_new} new rows but the cache holds {k_cache.shape[1]}")
        k_cache[batch_index, positions] = k
        v_cache[batch_index, positions] = v
    return lengths


def flash_attn_with_kvcache(q, k_cache, v_cache, k=None, v=None, qv=None, rotary_cos=None, rotary_sin=None,
                            cache_seqlens=None, cache_batch_idx=None, cache_leftpad=None, page_table=None,
                            cu_seqlens_q=None, cu_seqlens_k_new=None, max_seqlen_q=None, rotary_seqlens=None,
                            q_descale=None, k_descale=None, v_descale=None, softmax_scale=None, causal=False,
                            window_size=(-1, -1), attention_chunk=0, softcap=0.0, rotary_interleaved=True,
                            scheduler_metadata=None, num_splits=0, pack_gqa=None, sm_margin=0,
                            return_softmax_lse=False):
    """Attention against a KV cache, for decoding.

    q (batch, seqlen_q, heads, head_dim), or (total_q, heads, head_dim) with cu_seqlens_q and
    max_seqlen_q. k_cache/v_cache (batch_cache, seqlen_cache, heads_kv, d), or with page_table
    (batch, max_pages) int32 a paged cache (num_pages, page_size, heads_kv, d).
    cache_seqlens (int or (batch,) int32): keys in use per sequence (default: all).
    k, v (batch, seqlen_new, heads_kv, d) are first written into the cache at cache_seqlens (in
    place) and attended to. cache_batch_idx (batch,) picks the cache entry of each sequence.
    num_splits 0 lets flashc choose a split-KV count. Not implemented: rotary embedding,
    cache_leftpad, cu_seqlens_k_new, qv, attention_chunk (NotImplementedError).

    Returns out (like q with head_dim_v), or (out, softmax_lse) with return_softmax_lse=True.
    No backward (as in FA3).
    """
    _require_array(q, "q")
    _refuse_fa3_only(qv, attention_chunk)
    _refuse("rotary embedding (rotary_cos / rotary_sin)", rotary_cos)
    _refuse("rotary embedding (rotary_cos / rotary_sin)", rotary_sin)
    _refuse("rotary_seqlens", rotary_seqlens)
    _refuse("cache_leftpad", cache_leftpad)
    _refuse("cu_seqlens_k_new", cu_seqlens_k_new)
    _check_num_splits(num_splits)
    if (k is None) != (v is None):
        raise ValueError("k and v must be given together")
    if scheduler_metadata is not None and not _is_flashc_metadata(scheduler_metadata):
        raise ValueError("scheduler_metadata must come from flashc.get_scheduler_metadata")
    left, right = _window(window_size, causal)
    torch_input = is_torch(q)
    convert_index = (lambda x: _torch_index(x, q)) if torch_input else (lambda x: None if x is None else np.ascontiguousarray(np.asarray(x), dtype=np.int32))
    varlen_q = cu_seqlens_q is not None
    batch = (len(cu_seqlens_q) - 1) if varlen_q else int(q.shape[0])
    if isinstance(cache_seqlens, (int, np.integer)):
        cache_seqlens = [int(cache_seqlens)] * batch
    cache_seqlens, cache_batch_idx, page_table, cu_seqlens_q = (
        convert_index(x) for x in (cache_seqlens, cache_batch_idx, page_table, cu_seqlens_q))
    if page_table is not None and cache_batch_idx is not None:
        raise ValueError("cache_batch_idx cannot be combined with page_table (the page table already maps "
                         "sequences to cache pages)")
    if k is not None:
        if cache_seqlens is None:
            raise ValueError("appending k, v to the cache needs cache_seqlens (where to write them)")
        cache_seqlens = _append_to_cache(k_cache, v_cache, k, v, cache_seqlens, cache_batch_idx, page_table)
    if cache_batch_idx is not None:
        # Sequence b reads cache entry cache_batch_idx[b]: a page table with one page per entry,
        # each page a whole cache row, describes that without copying the cache.
        page_table = cache_batch_idx.reshape(batch, 1)
        max_seqlen_k = int(k_cache.shape[1])
    else:
        max_seqlen_k = None
    if torch_input:
        q_descale, k_descale, v_descale = (_torch_descale(x, q) for x in (q_descale, k_descale, v_descale))
    return _attention(q, k_cache, v_cache, return_lse=return_softmax_lse, cu_seqlens_q=cu_seqlens_q,
                      seqused_k=cache_seqlens, max_seqlen_q=None if max_seqlen_q is None else int(max_seqlen_q),
                      max_seqlen_k=max_seqlen_k, page_table=page_table, q_descale=q_descale, k_descale=k_descale,
                      v_descale=v_descale, softmax_scale=_scale(softmax_scale, q.shape[-1]), causal=bool(causal),
                      window_left=left, window_right=right, softcap=float(softcap), num_splits=int(num_splits),
                      pack_gqa=_pack_gqa_code(pack_gqa), kv_batch_may_exceed=True)


def flash_attn_combine(out_partial, lse_partial, out=None, out_dtype=None):
    """Merges partial attention results over disjoint key sets (split-KV, context parallelism):
    lse = log sum_s exp(lse_s), out = sum_s exp(lse_s - lse) out_s.

    out_partial fp32 (num_splits, batch, seqlen, heads, head_dim_v), lse_partial fp32
    (num_splits, batch, seqlen, heads) (any strides, e.g. a transposed view of (.., heads,
    seqlen)). out (batch, seqlen, heads, head_dim_v) is written when given; out_dtype (fp32
    default, fp16, bf16) otherwise. Returns (out, softmax_lse) with softmax_lse fp32
    (batch, seqlen, heads), a view of a (batch, heads, seqlen) buffer, as in FA3.
    """
    _require_array(out_partial, "out_partial")
    if is_torch(out_partial):
        kind = Ops(out_partial, "out_partial")
        lse_partial, out = kind.check_same_kind(lse_partial, "lse_partial"), kind.check_same_kind(out, "out")
        if out is None:
            dtype = out_dtype if out_dtype is not None else out_partial.dtype
            out = out_partial.new_empty(tuple(out_partial.shape[1:]), dtype=dtype)
        elif out_dtype is not None and out.dtype != out_dtype:
            raise TypeError(f"out has dtype {out.dtype} but out_dtype is {out_dtype}")
        lse = _torch_ops().attn_combine(out_partial, lse_partial, out)
        return out, lse.transpose(1, 2)
    out, lse = _ops.attn_combine(out_partial, lse_partial, out, out_dtype)
    return out, lse.transpose(0, 2, 1)


class _SchedulerMetadata(tuple):
    """What get_scheduler_metadata returns: the arguments it was given. flashc schedules inside
    each call (its persistent scheduler needs no precomputed plan), so there is nothing to
    precompute; the object exists so FA3 code that passes it along runs unchanged."""


def _is_flashc_metadata(value):
    return isinstance(value, _SchedulerMetadata)


def get_scheduler_metadata(batch_size, max_seqlen_q, max_seqlen_k, num_heads_q, num_heads_kv, headdim,
                           cache_seqlens, qkv_dtype=None, headdim_v=None, cu_seqlens_q=None,
                           cu_seqlens_k_new=None, cache_leftpad=None, page_size=None, max_seqlen_k_new=0,
                           causal=False, window_size=(-1, -1), attention_chunk=0, has_softcap=False,
                           num_splits=0, pack_gqa=None, sm_margin=0):
    """FA3 precomputes a tile schedule for flash_attn_with_kvcache(scheduler_metadata=...); flashc
    schedules inside the call, so this validates the sizes and returns an opaque token that
    flash_attn_with_kvcache accepts and ignores."""
    for name, value in (("batch_size", batch_size), ("max_seqlen_q", max_seqlen_q), ("num_heads_q", num_heads_q),
                        ("num_heads_kv", num_heads_kv), ("headdim", headdim)):
        if int(value) <= 0:
            raise ValueError(f"{name} ({value}) must be positive")
    if int(num_heads_q) % int(num_heads_kv):
        raise ValueError(f"num_heads_q ({num_heads_q}) is not a multiple of num_heads_kv ({num_heads_kv})")
    return _SchedulerMetadata((int(batch_size), int(max_seqlen_q), int(max_seqlen_k), int(num_heads_q),
                               int(num_heads_kv), int(headdim), int(headdim_v or headdim), int(num_splits)))


def flash_attn_backward(dout, q, k, v, out, softmax_lse, cu_seqlens_q=None, cu_seqlens_k=None, seqused_q=None,
                        seqused_k=None, max_seqlen_q=None, max_seqlen_k=None, softmax_scale=None, causal=False,
                        window_size=(-1, -1), softcap=0.0, deterministic=False, dq=None, dk=None, dv=None):
    """The attention backward without autograd (numpy arrays, or torch tensors outside a graph):
    returns (dq, dk, dv), written into dq/dk/dv when given. Same layouts as the forward; out and
    softmax_lse are the forward's."""
    _require_array(q, "q")
    left, right = _window(window_size, causal)
    scale = _scale(softmax_scale, q.shape[-1])
    return _ops.attn_backward(dout, q, k, v, out, softmax_lse, cu_seqlens_q, cu_seqlens_k, seqused_q, seqused_k,
                              max_seqlen_q, max_seqlen_k, scale, bool(causal), left, right, float(softcap),
                              bool(deterministic), dq, dk, dv)


def gemm(a, b, c=None, *, alpha=1.0, beta=0.0, bias=None, activation=None, out_dtype=None, scale_a=None,
         scale_b=None, algo="auto"):
    """D = act(alpha * scale_a * scale_b * (a @ b) + beta * c + bias), fp32 accumulation.

    a (m, k) or (batch, m, k); b (k, n) or (batch, k, n); a 2-D operand is shared by every batch,
    and either may be a transposed view (b = w.T of an (n, k) weight is read column-major, no
    copy). c (m, n) or (batch, m, n) in the output dtype; bias (n,) in the output dtype, added per
    column; activation None, "relu" or "gelu" (tanh approximation). Inputs float16/bfloat16
    (float8_e4m3fn with scale_a/scale_b; float32 on the CPU backend); out_dtype defaults to the
    input dtype (bfloat16 for float8). algo: "auto", "hopper" or "portable" (GPU kernel family).
    Returns D, row-major. torch tensors get autograd for activation=None without scales.
    """
    _require_array(a, "a")
    activation_code = _ops.activation_code(activation)
    algo_code = _ops.algo_code(algo)
    if is_torch(a):
        import torch
        scale_a, scale_b = (None if s is None else (s if isinstance(s, torch.Tensor) else
                                                     torch.tensor([float(s)], dtype=torch.float32, device=a.device))
                            for s in (scale_a, scale_b))
        kind = Ops(a, "a")
        b, c, bias = kind.check_same_kind(b, "b"), kind.check_same_kind(c, "c"), kind.check_same_kind(bias, "bias")
        return _torch_ops().gemm(a, b, c, bias, scale_a, scale_b, float(alpha), float(beta), activation_code,
                                 out_dtype, algo_code)
    return _ops.gemm(a, b, c, bias, scale_a, scale_b, float(alpha), float(beta), activation_code, out_dtype,
                     algo_code)
