"""The loaded library, the exceptions that carry its messages, and the per-thread handle cache."""
from __future__ import annotations

import ctypes
import threading

from . import _capi

lib, library_path = _capi.load()


def _text(value):
    return value.decode("utf-8", "replace") if value is not None else ""


def version_tuple():
    code = lib.flashc_version()
    return code // 10000, code // 100 % 100, code % 100


def version_string():
    return "%d.%d.%d" % version_tuple()


def build_info():
    """The library's build configuration ("flashc 0.1.0; cuda 13.0; archs ...; openmp yes")."""
    return _text(lib.flashc_build_info())


def status_name(status):
    return _text(lib.flashc_status_name(status))


def status_string(status):
    return _text(lib.flashc_status_string(status))


def device_count():
    """CUDA devices the library sees (0 without a GPU or in a build without CUDA)."""
    count = _capi.new_int()
    check(lib.flashc_get_device_count(ctypes.byref(count)), "flashc_get_device_count")
    return count.value


# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------

class FlashcError(RuntimeError):
    """A flashc call failed. `status` is the numeric code, `status_name` its name
    ("FLASHC_STATUS_SHAPE_MISMATCH"), `message` flashc_last_error()'s text and `function` the C
    entry point that returned it."""

    def __init__(self, status, message, function=""):
        self.status = int(status)
        self.status_name = status_name(status)
        self.message = message
        self.function = function
        where = f"{function}: " if function else ""
        super().__init__(f"{where}{self.status_name}: {message or status_string(status)}")


class FlashcInvalidArgumentError(FlashcError, ValueError):
    """Status 1x: an argument has an invalid value, is NULL, misaligned, overlapping or of the
    wrong shape."""


class FlashcNotSupportedError(FlashcError, NotImplementedError):
    """Status 2x: the backend cannot run this dtype, head dim, architecture or feature (for
    example an attention kernel the CUDA backend does not have yet). Never answered by a silent
    fallback to another backend."""


class FlashcOutOfMemoryError(FlashcError, MemoryError):
    """FLASHC_STATUS_OUT_OF_MEMORY."""


def error_for(status, function=""):
    """The exception for a failed call, built from the calling thread's flashc_last_error()."""
    message = _text(lib.flashc_last_error())
    if 10 <= status < 20:
        cls = FlashcInvalidArgumentError
    elif 20 <= status < 30:
        cls = FlashcNotSupportedError
    elif status == _capi.STATUS_OUT_OF_MEMORY:
        cls = FlashcOutOfMemoryError
    else:
        cls = FlashcError
    return cls(status, message, function)


def check(status, function):
    if status != _capi.STATUS_SUCCESS:
        raise error_for(status, function)


# ---------------------------------------------------------------------------------------------
# Handles: one per (device, thread), created on first use and destroyed with the thread.
# ---------------------------------------------------------------------------------------------

class _ThreadHandles:
    def __init__(self):
        self.handles = {}

    def __del__(self):
        destroy = getattr(lib, "flashc_destroy", None)
        for handle in self.handles.values():
            try:
                destroy(handle)
            except Exception:  # interpreter shutdown: the library may already be gone
                pass
        self.handles.clear()


_local = threading.local()


def handle(device):
    """The calling thread's handle for `device` (a CUDA ordinal or _capi.DEVICE_CPU)."""
    cache = getattr(_local, "cache", None)
    if cache is None:
        cache = _local.cache = _ThreadHandles()
    found = cache.handles.get(device)
    if found is None:
        slot = _capi.new_handle_slot()
        check(lib.flashc_create(ctypes.byref(slot), device), "flashc_create")
        found = cache.handles[device] = slot.value
    return found


def kernels(device=_capi.DEVICE_CPU):
    """What the library can run on `device` (-1 / "cpu" for the CPU backend), in words."""
    return _text(lib.flashc_handle_kernels(handle(device)))


def device_info(device=_capi.DEVICE_CPU):
    info = _capi.DeviceInfo()
    lib.flashc_device_info_init(ctypes.byref(info))
    check(lib.flashc_get_device_info(handle(device), ctypes.byref(info)), "flashc_get_device_info")
    return {
        "backend": "cuda" if info.backend == _capi.BACKEND_CUDA else "cpu",
        "device": info.device,
        "name": _text(info.name),
        "compute_capability": (info.cc_major, info.cc_minor),
        "sm_count": info.sm_count,
        "global_memory_bytes": info.global_memory_bytes,
        "shared_memory_per_block_optin": info.shared_memory_per_block_optin,
        "l2_cache_bytes": info.l2_cache_bytes,
    }
