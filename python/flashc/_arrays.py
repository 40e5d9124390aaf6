"""Arrays as the C API sees them: a pointer, element strides, a flashc dtype and a device.

Two kinds of arrays are accepted: numpy arrays (and CPU torch tensors), which run on the CPU
backend, and torch CUDA tensors, which run on their GPU on torch's current stream. `Ops` hides
the difference for the code in _ops.py: allocation, index arrays, streams and workspaces.
Nothing is copied except where the C API cannot describe a layout (a last dimension that is not
contiguous, a negative or zero stride on a dimension longer than one), as FA3 does.
"""
from __future__ import annotations

import sys

import numpy as np

from . import _capi

try:  # ml_dtypes gives numpy bfloat16 and float8_e4m3fn; optional
    import ml_dtypes as _ml_dtypes
except ImportError:  # pragma: no cover - depends on the environment
    _ml_dtypes = None


def _torch():
    """torch if it is already imported (a torch tensor cannot exist otherwise)."""
    return sys.modules.get("torch")


def is_torch(x):
    torch = _torch()
    return torch is not None and isinstance(x, torch.Tensor)


# ---------------------------------------------------------------------------------------------
# dtypes
# ---------------------------------------------------------------------------------------------

_NUMPY_DTYPES = {"float32": _capi.DTYPE_FP32, "float16": _capi.DTYPE_FP16, "bfloat16": _capi.DTYPE_BF16,
                 "float8_e4m3fn": _capi.DTYPE_E4M3}
_DTYPE_NAMES = {_capi.DTYPE_FP32: "float32", _capi.DTYPE_FP16: "float16", _capi.DTYPE_BF16: "bfloat16",
                _capi.DTYPE_E4M3: "float8_e4m3fn"}


def dtype_code(x, what="tensor"):
    """The flashc_dtype of an array, or TypeError naming the argument."""
    name = str(x.dtype).replace("torch.", "")
    code = _NUMPY_DTYPES.get(name)
    if code is None:
        raise TypeError(f"{what} has dtype {x.dtype}; flashc takes float16, bfloat16, float8_e4m3fn and "
                        f"(on the CPU backend) float32")
    return code


def dtype_from_code(code, like):
    """The framework dtype of flashc dtype `code`, in the framework of array `like`."""
    name = _DTYPE_NAMES[code]
    if is_torch(like):
        return getattr(_torch(), name)
    if name in ("float32", "float16"):
        return np.dtype(name)
    if _ml_dtypes is None:
        raise TypeError(f"{name} numpy arrays need the ml_dtypes package (pip install ml_dtypes)")
    return np.dtype(getattr(_ml_dtypes, name))


def dtype_code_of(dtype):
    """flashc_dtype of a framework dtype (torch.bfloat16, np.float16, 'bfloat16', ...)."""
    name = str(dtype).replace("torch.", "")
    if isinstance(dtype, type):  # np.float16 and friends
        name = np.dtype(dtype).name
    code = _NUMPY_DTYPES.get(name)
    if code is None:
        raise TypeError(f"dtype {dtype} is not one flashc handles (float32, float16, bfloat16, float8_e4m3fn)")
    return code


# ---------------------------------------------------------------------------------------------
# Layout
# ---------------------------------------------------------------------------------------------

def element_strides(x):
    if is_torch(x):
        return tuple(x.stride())
    itemsize = x.dtype.itemsize
    return tuple(s // itemsize if s % itemsize == 0 else None for s in x.strides)


def describable(x):
    """True if the C API can take x as it is: last dimension contiguous, every dimension longer
    than one with a positive stride (0 means "packed" to the library, never "repeat")."""
    strides = element_strides(x)
    shape = tuple(x.shape)
    if not shape:
        return True
    for size, stride in zip(shape, strides):
        if stride is None:
            return False
        if size > 1 and stride <= 0:
            return False
    return shape[-1] <= 1 or strides[-1] == 1


def prepare(x):
    """x itself when describable, else a contiguous copy (FA3's maybe_contiguous)."""
    if x is None or describable(x):
        return x
    return x.contiguous() if is_torch(x) else np.ascontiguousarray(x)


def stride_args(x):
    """Element strides to hand to the C API: the true strides, except that a dimension of extent
    one gets 1 when its stride is 0 (the value is never used, and 0 would mean "packed")."""
    return tuple((s if s else 1) for s in element_strides(x))


def pointer(x):
    if x is None:
        return None
    if is_torch(x):
        return x.data_ptr() if x.numel() else None
    return x.ctypes.data if x.size else None


def device_of(x):
    """_capi.DEVICE_CPU for host arrays, the CUDA ordinal for torch CUDA tensors."""
    if is_torch(x):
        if x.device.type == "cuda":
            return x.device.index if x.device.index is not None else _torch().cuda.current_device()
        if x.device.type == "cpu":
            return _capi.DEVICE_CPU
        raise TypeError(f"flashc runs on CPU arrays and CUDA tensors, not on {x.device.type} tensors")
    if isinstance(x, np.ndarray):
        return _capi.DEVICE_CPU
    raise TypeError(f"expected a numpy array or a torch tensor, got {type(x).__name__}")


# ---------------------------------------------------------------------------------------------
# Framework operations, chosen by the array that decides where an operation runs
# ---------------------------------------------------------------------------------------------

class Ops:
    """Allocation and conversion in the framework and on the device of a reference array."""

    def __init__(self, like, what="q"):
        self.torch = _torch() if is_torch(like) else None
        if self.torch is None and not isinstance(like, np.ndarray):
            raise TypeError(f"{what} must be a numpy array or a torch tensor, got {type(like).__name__}")
        self.like = like
        self.device = device_of(like)
        self.what = what

    @property
    def is_cuda(self):
        return self.device != _capi.DEVICE_CPU

    def check_same(self, x, what):
        """x must be of the same framework and on the same device as the reference array; returns
        it ready for the C API (see prepare)."""
        return prepare(self.check_same_kind(x, what))

    def check_same_kind(self, x, what):
        """x must be of the same framework and on the same device as the reference array."""
        if x is None:
            return None
        if (self.torch is not None) != is_torch(x) or (self.torch is None and not isinstance(x, np.ndarray)):
            raise TypeError(f"{what} is a {type(x).__name__} but {self.what} is a {type(self.like).__name__}: "
                            f"pass arrays of one kind")
        if device_of(x) != self.device:
            raise ValueError(f"{what} is on {self.device_name(device_of(x))} but {self.what} is on "
                             f"{self.device_name(self.device)}")
        return x

    @staticmethod
    def device_name(device):
        return "the CPU" if device == _capi.DEVICE_CPU else f"cuda:{device}"

    def empty(self, shape, code):
        dtype = dtype_from_code(code, self.like)
        if self.torch is not None:
            return self.torch.empty(tuple(shape), dtype=dtype, device=self.like.device)
        return np.empty(tuple(shape), dtype=dtype)

    def full(self, shape, value, code):
        out = self.empty(shape, code)
        if self.torch is not None:
            out.fill_(value)
        else:
            out.fill(value)
        return out

    def index(self, x, what):
        """An int32 index array (cu_seqlens, seqused, page_table, ...) on this device, contiguous.
        Lists, ints and numpy arrays are accepted and converted."""
        if x is None:
            return None
        if self.torch is not None:
            torch = self.torch
            if not isinstance(x, torch.Tensor):
                x = torch.as_tensor(np.asarray(x), device=self.like.device)
            elif device_of(x) != self.device:
                raise ValueError(f"{what} is on {self.device_name(device_of(x))} but {self.what} is on "
                                 f"{self.device_name(self.device)}")
            if x.dtype != torch.int32:
                if x.is_floating_point():
                    raise TypeError(f"{what} must hold integers (int32), got {x.dtype}")
                x = x.to(torch.int32)
            return x.contiguous()
        if is_torch(x):
            x = x.detach().cpu().numpy()
        x = np.asarray(x)
        if x.dtype.kind not in "iu":
            raise TypeError(f"{what} must hold integers (int32), got {x.dtype}")
        return np.ascontiguousarray(x, dtype=np.int32)

    def float32(self, x, shape, what):
        """A contiguous float32 array of `shape` from x (scalar, list or array, broadcast)."""
        if x is None:
            return None
        if self.torch is not None:
            torch = self.torch
            if not isinstance(x, torch.Tensor):
                x = torch.as_tensor(np.asarray(x, dtype=np.float32), device=self.like.device)
            elif device_of(x) != self.device:
                raise ValueError(f"{what} is on {self.device_name(device_of(x))} but {self.what} is on "
                                 f"{self.device_name(self.device)}")
            try:
                return x.to(torch.float32).expand(*shape).contiguous()
            except RuntimeError as error:
                raise ValueError(f"{what} of shape {tuple(x.shape)} does not broadcast to {tuple(shape)}") from error
        if is_torch(x):
            x = x.detach().cpu().numpy()
        try:
            return np.ascontiguousarray(np.broadcast_to(np.asarray(x, dtype=np.float32), shape))
        except ValueError as error:
            raise ValueError(f"{what} of shape {np.shape(x)} does not broadcast to {tuple(shape)}") from error

    def stream(self):
        """The cudaStream_t to queue work on (torch's current stream), or None on the CPU."""
        if not self.is_cuda:
            return None
        return self.torch.cuda.current_stream(self.device).cuda_stream

    def workspace(self, size):
        """(pointer, owner) of `size` bytes of scratch: torch's caching allocator on the GPU, so
        the memory is stream-ordered like the call; the handle's own growing buffer on the CPU."""
        if size == 0 or not self.is_cuda:
            return None, None
        buffer = self.torch.empty(size, dtype=self.torch.uint8, device=self.like.device)
        return buffer.data_ptr(), buffer

    def device_guard(self):
        if self.is_cuda:
            return self.torch.cuda.device(self.device)
        return _NullGuard()


class _NullGuard:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def split_qkv(qkv, num_heads_q):
    """Views q, k, v of a packed qkv (numpy array or torch tensor, no copies): (batch, seqlen,
    3, heads, dim), or (batch, seqlen, heads_q + 2·heads_kv, dim) with num_heads_q given."""
    if qkv.ndim == 5:
        if qkv.shape[2] != 3:
            raise ValueError(f"qkv of shape {tuple(qkv.shape)}: the third dimension must be 3 (q, k, v)")
        return qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
    if qkv.ndim != 4:
        raise ValueError(f"qkv must be (batch, seqlen, 3, heads, dim) or (batch, seqlen, heads_q + 2*heads_kv, dim), "
                         f"got shape {tuple(qkv.shape)}")
    if num_heads_q is None:
        raise ValueError("a 4-D qkv needs num_heads_q (the split is heads_q, heads_kv, heads_kv)")
    heads_kv, remainder = divmod(qkv.shape[2] - num_heads_q, 2)
    if remainder or heads_kv <= 0:
        raise ValueError(f"qkv has {qkv.shape[2]} heads, which is not num_heads_q ({num_heads_q}) + 2 * heads_kv")
    return (qkv[:, :, :num_heads_q], qkv[:, :, num_heads_q:num_heads_q + heads_kv],
            qkv[:, :, num_heads_q + heads_kv:])
