"""flashc: Hopper attention and GEMM kernels from a C library, with FlashAttention-3's Python
interface.

    import flashc
    out = flashc.flash_attn_func(q, k, v, causal=True)          # torch CUDA/CPU tensors or numpy
    d = flashc.gemm(a, w.T, bias=b, activation="gelu")

torch CUDA tensors run on their GPU on torch's current stream, without copies; numpy arrays and
CPU torch tensors run on the library's CPU backend. Errors from the library raise FlashcError
(subclasses FlashcInvalidArgumentError ⊂ ValueError, FlashcNotSupportedError ⊂
NotImplementedError) carrying flashc_last_error()'s message and the status name.
"""
import importlib.util as _importlib_util
import os as _os

from ._runtime import (FlashcError, FlashcInvalidArgumentError, FlashcNotSupportedError, FlashcOutOfMemoryError,
                       build_info, device_count, device_info, kernels, library_path, version_string,
                       version_tuple)

__version__ = version_string()
version_info = version_tuple()

# torch integration (custom ops, autograd) is registered at import when torch is installed, so
# that torch.compile never meets an op being registered mid-trace. FLASHC_NO_TORCH=1 skips it.
if _os.environ.get("FLASHC_NO_TORCH", "0") in ("", "0") and _importlib_util.find_spec("torch") is not None:
    from . import _torch_ops  # noqa: F401

from .interface import (flash_attn_backward, flash_attn_combine, flash_attn_func, flash_attn_qkvpacked_func,
                        flash_attn_varlen_func, flash_attn_with_kvcache, gemm, get_scheduler_metadata)

__all__ = [
    "__version__", "version_info", "library_path", "build_info", "device_count", "device_info", "kernels",
    "FlashcError", "FlashcInvalidArgumentError", "FlashcNotSupportedError", "FlashcOutOfMemoryError",
    "flash_attn_func", "flash_attn_varlen_func", "flash_attn_qkvpacked_func", "flash_attn_with_kvcache",
    "flash_attn_combine", "get_scheduler_metadata", "flash_attn_backward", "gemm",
]
