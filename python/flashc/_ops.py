"""The four C operations on numpy arrays or torch tensors: shapes checked, parameter structs
filled, the call made on the right handle and stream, errors raised with the library's message.

The C API cannot see the extents of the buffers it is given, so every tensor's shape is checked
here against the sizes derived from q (or a, b) before a pointer crosses into C.
"""
from __future__ import annotations

import ctypes
import math

from . import _capi
import numpy as np

from ._arrays import Ops, dtype_code, element_strides, is_torch, pointer, prepare, stride_args
from ._runtime import check, handle, lib


def _shape(x):
    return tuple(int(s) for s in x.shape)


def _expect_shape(x, expected, what, detail=""):
    if _shape(x) != tuple(expected):
        raise ValueError(f"{what} has shape {_shape(x)}, expected {tuple(expected)}{detail}")


def _expect_ndim(x, ndim, what, layout):
    if len(x.shape) != ndim:
        raise ValueError(f"{what} must be {ndim}-D {layout}, got shape {_shape(x)}")


def _max_length(ops, cu_seqlens):
    """Longest sequence of cu_seqlens (reads it back from the GPU: pass max_seqlen to avoid that)."""
    if ops.torch is not None:
        lengths = (cu_seqlens[1:] - cu_seqlens[:-1]).cpu()
        return int(lengths.max().item()) if lengths.numel() else 0
    lengths = cu_seqlens[1:] - cu_seqlens[:-1]
    return int(lengths.max()) if lengths.size else 0


def _call(ops, operation, params):
    """flashc_<operation>(handle, params, workspace, bytes, stream) with the workspace from `ops`."""
    h = handle(ops.device)
    with ops.device_guard():
        size = ctypes.c_size_t(0)
        check(getattr(lib, f"flashc_{operation}_workspace_size")(h, ctypes.byref(params), ctypes.byref(size)),
              f"flashc_{operation}_workspace_size")
        workspace, owner = ops.workspace(size.value)
        check(getattr(lib, f"flashc_{operation}")(h, ctypes.byref(params), workspace,
                                                   size.value if workspace else 0, ops.stream()),
              f"flashc_{operation}")
        del owner  # torch's allocator orders the reuse of this memory after the call on the stream


def _set_strides(params, name, x, batched):
    """<name>_{batch,row,head}_stride from a (batch, rows, heads, dim) or (rows, heads, dim) array."""
    strides = stride_args(x)
    if batched:
        setattr(params, f"{name}_batch_stride", strides[0])
        strides = strides[1:]
    setattr(params, f"{name}_row_stride", strides[0])
    setattr(params, f"{name}_head_stride", strides[1])


class AttnGeometry:
    """Sizes of an attention problem, derived from q, k, v and the varlen / paging arguments."""

    def __init__(self, ops, q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, page_table=None,
                 kv_batch_may_exceed=False):
        self.varlen_q = cu_seqlens_q is not None
        self.varlen_k = cu_seqlens_k is not None
        self.paged = page_table is not None
        if self.varlen_q:
            _expect_ndim(q, 3, "q", "(total_q, heads, head_dim) with cu_seqlens_q")
            self.batch = int(cu_seqlens_q.shape[0]) - 1
            self.total_q, self.heads_q, self.head_dim = _shape(q)
            self.seqlen_q = int(max_seqlen_q) if max_seqlen_q is not None else _max_length(ops, cu_seqlens_q)
            if cu_seqlens_q.ndim != 1 or self.batch < 1:
                raise ValueError(f"cu_seqlens_q must be 1-D with batch + 1 >= 2 entries, got shape "
                                 f"{_shape(cu_seqlens_q)}")
        else:
            _expect_ndim(q, 4, "q", "(batch, seqlen_q, heads, head_dim)")
            self.batch, self.seqlen_q, self.heads_q, self.head_dim = _shape(q)
            self.total_q = self.batch * self.seqlen_q
        if self.paged:
            _expect_ndim(k, 4, "k_cache", "(num_pages, page_size, heads_kv, head_dim) with page_table")
            self.num_pages, self.page_size, self.heads_kv, head_dim_k = _shape(k)
            if page_table.ndim != 2 or int(page_table.shape[0]) != self.batch:
                raise ValueError(f"page_table has shape {_shape(page_table)}, expected (batch = {self.batch}, "
                                 f"max_pages)")
            self.max_pages = int(page_table.shape[1])
            self.seqlen_k = int(max_seqlen_k) if max_seqlen_k is not None else self.max_pages * self.page_size
            self.kv_rows = (self.num_pages, self.page_size)
        elif self.varlen_k:
            _expect_ndim(k, 3, "k", "(total_k, heads_kv, head_dim) with cu_seqlens_k")
            self.total_k, self.heads_kv, head_dim_k = _shape(k)
            if cu_seqlens_k.ndim != 1 or int(cu_seqlens_k.shape[0]) != self.batch + 1:
                raise ValueError(f"cu_seqlens_k has shape {_shape(cu_seqlens_k)}, expected ({self.batch + 1},) "
                                 f"(batch + 1)")
            self.seqlen_k = int(max_seqlen_k) if max_seqlen_k is not None else _max_length(ops, cu_seqlens_k)
            self.kv_rows = (self.total_k,)
        else:
            _expect_ndim(k, 4, "k", "(batch, seqlen_k, heads_kv, head_dim)")
            batch_k, self.seqlen_k, self.heads_kv, head_dim_k = _shape(k)
            if batch_k != self.batch and not (kv_batch_may_exceed and batch_k > self.batch):
                raise ValueError(f"k has batch {batch_k} but q has batch {self.batch}")
            self.kv_rows = (batch_k, self.seqlen_k)
        if head_dim_k != self.head_dim:
            raise ValueError(f"k has head_dim {head_dim_k} but q has {self.head_dim}")
        self.head_dim_v = int(v.shape[-1])
        _expect_shape(v, self.kv_rows + (self.heads_kv, self.head_dim_v), "v", " (k's shape with v's head_dim)")

    @property
    def out_shape(self):
        if self.varlen_q:
            return (self.total_q, self.heads_q, self.head_dim_v)
        return (self.batch, self.seqlen_q, self.heads_q, self.head_dim_v)

    @property
    def lse_shape(self):
        if self.varlen_q:
            return (self.heads_q, self.total_q)
        return (self.batch, self.heads_q, self.seqlen_q)

    def fill_shared(self, params, dtype, q, k, v, cu_seqlens_q, cu_seqlens_k, seqused_q, seqused_k):
        params.dtype = dtype
        params.batch = self.batch
        params.seqlen_q, params.seqlen_k = self.seqlen_q, self.seqlen_k
        params.heads_q, params.heads_kv = self.heads_q, self.heads_kv
        params.head_dim, params.head_dim_v = self.head_dim, self.head_dim_v
        params.q, params.k, params.v = pointer(q), pointer(k), pointer(v)
        _set_strides(params, "q", q, not self.varlen_q)
        _set_strides(params, "k", k, not self.varlen_k)
        _set_strides(params, "v", v, not self.varlen_k)
        params.cu_seqlens_q, params.cu_seqlens_k = pointer(cu_seqlens_q), pointer(cu_seqlens_k)
        params.seqused_q, params.seqused_k = pointer(seqused_q), pointer(seqused_k)
        if self.varlen_q:
            params.total_q = self.total_q
        if self.varlen_k:
            params.total_k = self.total_k


def _check_lengths(x, batch, what):
    if x is not None and _shape(x) != (batch,):
        raise ValueError(f"{what} has shape {_shape(x)}, expected ({batch},) (one entry per sequence)")


def _same_dtype(q, k, v):
    code = dtype_code(q, "q")
    for x, what in ((k, "k"), (v, "v")):
        if dtype_code(x, what) != code:
            raise TypeError(f"q, k and v must share a dtype: q is {q.dtype}, {what} is {x.dtype}")
    return code


def default_scale(head_dim):
    return 1.0 / math.sqrt(head_dim)


def _set_softmax_args(params, geometry, lse, softmax_scale, causal, window_left, window_right, softcap):
    """The fields the forward and the backward share: LSE strides, scale, masks, softcap."""
    if not geometry.varlen_q:
        params.lse_batch_stride = stride_args(lse)[0]
    params.lse_head_stride = stride_args(lse)[-2]
    params.softmax_scale = default_scale(geometry.head_dim) if softmax_scale is None else float(softmax_scale)
    params.causal = int(bool(causal))
    params.window_left = int(window_left)
    params.window_right = 0 if causal else int(window_right)  # FA3: causal means right = 0
    params.softcap = float(softcap)


def attn_forward(q, k, v, cu_seqlens_q=None, cu_seqlens_k=None, seqused_q=None, seqused_k=None,
                 max_seqlen_q=None, max_seqlen_k=None, page_table=None, q_descale=None, k_descale=None,
                 v_descale=None, softmax_scale=None, causal=False, window_left=-1, window_right=-1, softcap=0.0,
                 num_splits=1, pack_gqa=-1, kv_batch_may_exceed=False):
    """flashc_attn_fwd. Returns (out, lse) allocated like q: out (batch, seqlen_q, heads, head_dim_v)
    or (total_q, heads, head_dim_v); lse fp32 (batch, heads, seqlen_q) or (heads, total_q)."""
    ops = Ops(q, "q")
    q = prepare(q)
    k, v = ops.check_same(k, "k"), ops.check_same(v, "v")
    cu_seqlens_q, cu_seqlens_k = ops.index(cu_seqlens_q, "cu_seqlens_q"), ops.index(cu_seqlens_k, "cu_seqlens_k")
    seqused_q, seqused_k = ops.index(seqused_q, "seqused_q"), ops.index(seqused_k, "seqused_k")
    page_table = ops.index(page_table, "page_table")
    if page_table is not None and cu_seqlens_k is not None:
        raise ValueError("page_table cannot be combined with cu_seqlens_k (give per-sequence lengths in "
                         "cache_seqlens / seqused_k)")
    geometry = AttnGeometry(ops, q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, page_table,
                            kv_batch_may_exceed)
    _check_lengths(seqused_q, geometry.batch, "seqused_q")
    _check_lengths(seqused_k, geometry.batch, "seqused_k")
    dtype = _same_dtype(q, k, v)
    out_dtype = _capi.DTYPE_BF16 if dtype == _capi.DTYPE_E4M3 else dtype

    descale_shape = (geometry.batch, geometry.heads_kv)
    q_descale = ops.float32(q_descale, descale_shape, "q_descale")
    k_descale = ops.float32(k_descale, descale_shape, "k_descale")
    v_descale = ops.float32(v_descale, descale_shape, "v_descale")

    out = ops.empty(geometry.out_shape, out_dtype)
    lse = ops.empty(geometry.lse_shape, _capi.DTYPE_FP32)

    params = _capi.AttnFwdParams()
    lib.flashc_attn_fwd_params_init(ctypes.byref(params))
    geometry.fill_shared(params, dtype, q, k, v, cu_seqlens_q, cu_seqlens_k, seqused_q, seqused_k)
    params.out_dtype = out_dtype
    params.o = pointer(out)
    _set_strides(params, "o", out, not geometry.varlen_q)
    params.lse = pointer(lse)
    _set_softmax_args(params, geometry, lse, softmax_scale, causal, window_left, window_right, softcap)
    if page_table is not None:
        params.page_table = pointer(page_table)
        params.page_table_batch_stride = stride_args(page_table)[0]
        params.max_pages = geometry.max_pages
        params.page_size = geometry.page_size
        params.num_pages = geometry.num_pages
    params.num_splits = int(num_splits)
    params.pack_gqa = int(pack_gqa)
    params.q_descale, params.k_descale, params.v_descale = pointer(q_descale), pointer(k_descale), pointer(v_descale)
    _call(ops, "attn_fwd", params)
    return out, lse


def attn_backward(dout, q, k, v, out, lse, cu_seqlens_q=None, cu_seqlens_k=None, seqused_q=None,
                  seqused_k=None, max_seqlen_q=None, max_seqlen_k=None, softmax_scale=None, causal=False,
                  window_left=-1, window_right=-1, softcap=0.0, deterministic=False, dq=None, dk=None, dv=None):
    """flashc_attn_bwd: (dq, dk, dv) like q, k, v; written into dq/dk/dv when given (any strides the
    C API describes, e.g. views of one packed dqkv buffer)."""
    ops = Ops(q, "q")
    q = prepare(q)
    k, v, out, dout = (ops.check_same(x, name) for x, name in ((k, "k"), (v, "v"), (out, "out"), (dout, "dout")))
    lse = ops.check_same(lse, "softmax_lse")
    cu_seqlens_q, cu_seqlens_k = ops.index(cu_seqlens_q, "cu_seqlens_q"), ops.index(cu_seqlens_k, "cu_seqlens_k")
    seqused_q, seqused_k = ops.index(seqused_q, "seqused_q"), ops.index(seqused_k, "seqused_k")
    geometry = AttnGeometry(ops, q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k)
    _check_lengths(seqused_q, geometry.batch, "seqused_q")
    _check_lengths(seqused_k, geometry.batch, "seqused_k")
    dtype = _same_dtype(q, k, v)
    for x, what in ((out, "out"), (dout, "dout")):
        _expect_shape(x, geometry.out_shape, what)
        if dtype_code(x, what) != dtype:
            raise TypeError(f"{what} has dtype {x.dtype}, expected {q.dtype} (q's)")
    _expect_shape(lse, geometry.lse_shape, "softmax_lse")
    if dtype_code(lse, "softmax_lse") != _capi.DTYPE_FP32:
        raise TypeError(f"softmax_lse must be float32, got {lse.dtype}")

    def gradient(given, like, what):
        if given is None:
            return ops.empty(_shape(like), dtype)
        given = ops.check_same(given, what)
        _expect_shape(given, _shape(like), what)
        if dtype_code(given, what) != dtype:
            raise TypeError(f"{what} has dtype {given.dtype}, expected {q.dtype}")
        if not _writable_in_place(given):
            raise ValueError(f"{what} must be writable in place (a describable, non-overlapping layout)")
        return given

    dq, dk, dv = gradient(dq, q, "dq"), gradient(dk, k, "dk"), gradient(dv, v, "dv")

    params = _capi.AttnBwdParams()
    lib.flashc_attn_bwd_params_init(ctypes.byref(params))
    geometry.fill_shared(params, dtype, q, k, v, cu_seqlens_q, cu_seqlens_k, seqused_q, seqused_k)
    params.o, params.dout, params.lse = pointer(out), pointer(dout), pointer(lse)
    params.dq, params.dk, params.dv = pointer(dq), pointer(dk), pointer(dv)
    _set_strides(params, "o", out, not geometry.varlen_q)
    _set_strides(params, "dout", dout, not geometry.varlen_q)
    _set_strides(params, "dq", dq, not geometry.varlen_q)
    _set_strides(params, "dk", dk, not geometry.varlen_k)
    _set_strides(params, "dv", dv, not geometry.varlen_k)
    _set_softmax_args(params, geometry, lse, softmax_scale, causal, window_left, window_right, softcap)
    params.deterministic = int(bool(deterministic))
    _call(ops, "attn_bwd", params)
    return dq, dk, dv


def _writable_in_place(x):
    from ._arrays import describable
    return describable(x) and (not hasattr(x, "flags") or x.flags.writeable)


def attn_combine(out_partial, lse_partial, out=None, out_dtype=None):
    """flashc_attn_combine with FA3's layouts: out_partial fp32 (splits, batch, seqlen, heads, dv),
    lse_partial fp32 (splits, batch, seqlen, heads). Returns (out (batch, seqlen, heads, dv),
    lse fp32 (batch, heads, seqlen))."""
    ops = Ops(out_partial, "out_partial")
    out_partial = prepare(out_partial)
    lse_partial = ops.check_same(lse_partial, "lse_partial")
    if len(out_partial.shape) != 5:
        raise ValueError(f"out_partial must be 5-D (num_splits, batch, seqlen, heads, head_dim), got shape "
                         f"{_shape(out_partial)}")
    splits, batch, seqlen, heads, head_dim_v = _shape(out_partial)
    _expect_shape(lse_partial, (splits, batch, seqlen, heads), "lse_partial")
    for x, what in ((out_partial, "out_partial"), (lse_partial, "lse_partial")):
        if dtype_code(x, what) != _capi.DTYPE_FP32:
            raise TypeError(f"{what} must be float32, got {x.dtype}")
    code = _capi.DTYPE_FP32 if out_dtype is None else _dtype_code_any(out_dtype)
    if out is None:
        out = ops.empty((batch, seqlen, heads, head_dim_v), code)
    else:
        out = ops.check_same(out, "out")
        if out_dtype is None:
            code = dtype_code(out, "out")
        elif dtype_code(out, "out") != code:
            raise TypeError(f"out has dtype {out.dtype} but out_dtype is {out_dtype}")
        _expect_shape(out, (batch, seqlen, heads, head_dim_v), "out")
        if not _writable_in_place(out):
            raise ValueError("out must be writable in place")
    lse = ops.empty((batch, heads, seqlen), _capi.DTYPE_FP32)

    params = _capi.AttnCombineParams()
    lib.flashc_attn_combine_params_init(ctypes.byref(params))
    params.out_dtype = code
    params.num_splits, params.batch, params.seqlen, params.heads, params.head_dim_v = (splits, batch, seqlen,
                                                                                       heads, head_dim_v)
    params.o_partial, params.lse_partial, params.o, params.lse = (pointer(out_partial), pointer(lse_partial),
                                                                  pointer(out), pointer(lse))
    s = stride_args(out_partial)
    (params.o_partial_split_stride, params.o_partial_batch_stride, params.o_partial_row_stride,
     params.o_partial_head_stride) = s[:4]
    s = stride_args(lse_partial)
    (params.lse_partial_split_stride, params.lse_partial_batch_stride, params.lse_partial_row_stride,
     params.lse_partial_head_stride) = s
    s = stride_args(out)
    params.o_batch_stride, params.o_row_stride, params.o_head_stride = s[:3]
    s = stride_args(lse)
    params.lse_batch_stride, params.lse_head_stride = s[:2]
    h = handle(ops.device)
    with ops.device_guard():
        check(lib.flashc_attn_combine(h, ctypes.byref(params), ops.stream()), "flashc_attn_combine")
    return out, lse


def _dtype_code_any(dtype):
    from ._arrays import dtype_code_of
    return dtype_code_of(dtype)


# ---------------------------------------------------------------------------------------------
# GEMM
# ---------------------------------------------------------------------------------------------

_ACTIVATIONS = {None: _capi.ACTIVATION_NONE, "none": _capi.ACTIVATION_NONE, "relu": _capi.ACTIVATION_RELU,
                "gelu": _capi.ACTIVATION_GELU, "gelu_tanh": _capi.ACTIVATION_GELU}
_ALGOS = {"auto": _capi.GEMM_ALGO_AUTO, "hopper": _capi.GEMM_ALGO_HOPPER, "portable": _capi.GEMM_ALGO_PORTABLE}


def activation_code(activation):
    if isinstance(activation, int) and activation in _ACTIVATIONS.values():
        return activation
    try:
        return _ACTIVATIONS[activation.lower() if isinstance(activation, str) else activation]
    except KeyError:
        raise ValueError(f"activation must be None, 'relu' or 'gelu' (tanh approximation), got {activation!r}") \
            from None


def algo_code(algo):
    if isinstance(algo, int) and algo in _ALGOS.values():
        return algo
    try:
        return _ALGOS[algo]
    except KeyError:
        raise ValueError(f"algo must be 'auto', 'hopper' or 'portable', got {algo!r}") from None


def _contiguous(x):
    return x.contiguous() if is_torch(x) else np.ascontiguousarray(x)


def _matrix_layout(x):
    """(x, layout, ld, batch_stride) of a 2-D or 3-D operand, row- or column-major with any leading
    dimension; a batch stride of 0 (an expanded operand) broadcasts. Copies only what no layout
    describes."""
    strides = element_strides(x)
    rows, cols = _shape(x)[-2:]
    s_row, s_col = strides[-2], strides[-1]
    batch_stride = 0
    if len(x.shape) == 3 and int(x.shape[0]) > 1:
        batch_stride = strides[0]
    if None in strides or batch_stride < 0:
        return _matrix_layout(_contiguous(x))
    if (s_col == 1 or cols == 1) and (s_row >= cols or rows == 1):
        return x, _capi.ROW_MAJOR, max(s_row, cols), batch_stride
    if (s_row == 1 or rows == 1) and (s_col >= rows or cols == 1):
        return x, _capi.COL_MAJOR, max(s_col, rows), batch_stride
    return _matrix_layout(_contiguous(x))


def gemm(a, b, c=None, bias=None, scale_a=None, scale_b=None, alpha=1.0, beta=0.0, activation=None,
         out_dtype=None, algo="auto"):
    """D = act(alpha · scale_a · scale_b · a @ b + beta · c + bias). a (m, k) or (batch, m, k), b (k, n)
    or (batch, k, n) — either may be a transposed view (column-major), a 2-D operand is broadcast over
    the batch; c (m, n) or (batch, m, n); bias (n,). Returns D row-major (batch, m, n) or (m, n)."""
    ops = Ops(a, "a")
    b = ops.check_same_kind(b, "b")
    if len(a.shape) not in (2, 3) or len(b.shape) not in (2, 3):
        raise ValueError(f"a and b must be 2-D or 3-D (batch, rows, cols), got shapes {_shape(a)} and {_shape(b)}")
    m, k = _shape(a)[-2:]
    k_b, n = _shape(b)[-2:]
    if k_b != k:
        raise ValueError(f"a is {m}x{k} but b is {k_b}x{n}: inner dimensions differ")
    batches = {int(x.shape[0]) for x in (a, b) if len(x.shape) == 3}
    if len(batches) > 1:
        raise ValueError(f"a and b have different batch sizes {sorted(batches)}")
    batch = batches.pop() if batches else None
    a_code = dtype_code(a, "a")
    if dtype_code(b, "b") != a_code:
        raise TypeError(f"a and b must share a dtype: a is {a.dtype}, b is {b.dtype}")
    d_code = (_capi.DTYPE_BF16 if a_code == _capi.DTYPE_E4M3 else a_code) if out_dtype is None \
        else _dtype_code_any(out_dtype)
    out_shape = (m, n) if batch is None else (batch, m, n)
    d = ops.empty(out_shape, d_code)

    a, a_layout, lda, stride_a = _matrix_layout(a)
    b, b_layout, ldb, stride_b = _matrix_layout(b)
    params = _capi.GemmParams()
    lib.flashc_gemm_params_init(ctypes.byref(params))
    params.m, params.n, params.k = m, n, k
    params.batch_count = batch or 1
    params.a_dtype = params.b_dtype = a_code
    params.d_dtype = d_code
    params.a_layout, params.b_layout, params.cd_layout = a_layout, b_layout, _capi.ROW_MAJOR
    params.a, params.b, params.d = pointer(a), pointer(b), pointer(d)
    params.lda, params.ldb, params.ldd = lda, ldb, n
    params.stride_a, params.stride_b = stride_a, stride_b
    params.stride_d = m * n
    if beta != 0.0 and c is None:
        raise ValueError(f"beta is {beta} but c is None")
    if c is not None:
        c = ops.check_same_kind(c, "c")
        if len(c.shape) not in (2, 3) or _shape(c)[-2:] != (m, n) or (len(c.shape) == 3 and int(c.shape[0]) != batch):
            raise ValueError(f"c has shape {_shape(c)}, expected {out_shape} or ({m}, {n})")
        if dtype_code(c, "c") != d_code:
            raise TypeError(f"c has dtype {c.dtype}; it must have the output dtype")
        c, c_layout, ldc, stride_c = _matrix_layout(c)
        if c_layout != _capi.ROW_MAJOR:  # C shares D's (row-major) layout in the C API
            c, c_layout, ldc, stride_c = _matrix_layout(_contiguous(c))
        params.c, params.ldc, params.stride_c = pointer(c), ldc, stride_c
    if bias is not None:
        bias = ops.check_same(bias, "bias")
        _expect_shape(bias, (n,), "bias")
        if dtype_code(bias, "bias") != d_code:
            raise TypeError(f"bias has dtype {bias.dtype}; it must have the output dtype")
        params.bias = pointer(bias)
    scale_a = ops.float32(scale_a, (1,), "scale_a")
    scale_b = ops.float32(scale_b, (1,), "scale_b")
    params.scale_a, params.scale_b = pointer(scale_a), pointer(scale_b)
    params.alpha, params.beta = float(alpha), float(beta)
    params.activation = activation_code(activation)
    params.algo = algo_code(algo)
    _call(ops, "gemm", params)
    return d
