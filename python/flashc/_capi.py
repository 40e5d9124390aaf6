"""ctypes view of include/flashc.h: the library, its parameter structs and its status codes.

The structs mirror the header field by field (tests/test_capi.py parses the header and checks the
names and order). At load time each struct's ctypes size is compared with the struct_size the
library's own *_init function writes, so a header/library mismatch fails at import instead of
corrupting memory.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
import sys
from ctypes import POINTER, Structure, c_char, c_char_p, c_float, c_int, c_int32, c_int64, c_size_t, c_void_p

# ---------------------------------------------------------------------------------------------
# Constants from flashc.h
# ---------------------------------------------------------------------------------------------

DTYPE_AUTO = -1
DTYPE_FP32 = 0
DTYPE_FP16 = 1
DTYPE_BF16 = 2
DTYPE_E4M3 = 3

DEVICE_CPU = -1
BACKEND_CPU = 0
BACKEND_CUDA = 1

ROW_MAJOR = 0
COL_MAJOR = 1

ACTIVATION_NONE = 0
ACTIVATION_RELU = 1
ACTIVATION_GELU = 2

GEMM_ALGO_AUTO = 0
GEMM_ALGO_HOPPER = 1
GEMM_ALGO_PORTABLE = 2

# Status codes (FLASHC_STATUS_TABLE). The names come from flashc_status_name() at run time; the
# numbers are only needed to classify errors: 1x invalid arguments, 2x not supported,
# 3x resources, 4x device/runtime, 5x internal.
STATUS_SUCCESS = 0
STATUS_OUT_OF_MEMORY = 31

_dtype = c_int  # C enums are int-sized on every ABI flashc supports
_i32p = POINTER(c_int32)
_f32p = POINTER(c_float)


class AttnFwdParams(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("dtype", _dtype),
        ("out_dtype", _dtype),
        ("batch", c_int),
        ("seqlen_q", c_int), ("seqlen_k", c_int),
        ("heads_q", c_int), ("heads_kv", c_int),
        ("head_dim", c_int),
        ("head_dim_v", c_int),
        ("q", c_void_p), ("k", c_void_p), ("v", c_void_p), ("o", c_void_p),
        ("lse", c_void_p),
        ("q_batch_stride", c_int64), ("q_row_stride", c_int64), ("q_head_stride", c_int64),
        ("k_batch_stride", c_int64), ("k_row_stride", c_int64), ("k_head_stride", c_int64),
        ("v_batch_stride", c_int64), ("v_row_stride", c_int64), ("v_head_stride", c_int64),
        ("o_batch_stride", c_int64), ("o_row_stride", c_int64), ("o_head_stride", c_int64),
        ("lse_batch_stride", c_int64), ("lse_head_stride", c_int64),
        ("softmax_scale", c_float),
        ("causal", c_int),
        ("window_left", c_int),
        ("window_right", c_int),
        ("softcap", c_float),
        ("cu_seqlens_q", c_void_p), ("cu_seqlens_k", c_void_p),
        ("seqused_q", c_void_p), ("seqused_k", c_void_p),
        ("total_q", c_int), ("total_k", c_int),
        ("page_table", c_void_p),
        ("page_table_batch_stride", c_int64),
        ("max_pages", c_int),
        ("page_size", c_int),
        ("num_pages", c_int),
        ("cache_seqlens", c_void_p),
        ("num_splits", c_int),
        ("pack_gqa", c_int),
        ("q_descale", c_void_p), ("k_descale", c_void_p), ("v_descale", c_void_p),
        ("descale_batch_stride", c_int64),
        ("descale_head_stride", c_int64),
    ]


class AttnBwdParams(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("dtype", _dtype),
        ("batch", c_int),
        ("seqlen_q", c_int), ("seqlen_k", c_int),
        ("heads_q", c_int), ("heads_kv", c_int),
        ("head_dim", c_int),
        ("head_dim_v", c_int),
        ("q", c_void_p), ("k", c_void_p), ("v", c_void_p), ("o", c_void_p),
        ("lse", c_void_p),
        ("dout", c_void_p),
        ("dq", c_void_p), ("dk", c_void_p), ("dv", c_void_p),
        ("q_batch_stride", c_int64), ("q_row_stride", c_int64), ("q_head_stride", c_int64),
        ("k_batch_stride", c_int64), ("k_row_stride", c_int64), ("k_head_stride", c_int64),
        ("v_batch_stride", c_int64), ("v_row_stride", c_int64), ("v_head_stride", c_int64),
        ("o_batch_stride", c_int64), ("o_row_stride", c_int64), ("o_head_stride", c_int64),
        ("lse_batch_stride", c_int64), ("lse_head_stride", c_int64),
        ("dout_batch_stride", c_int64), ("dout_row_stride", c_int64), ("dout_head_stride", c_int64),
        ("dq_batch_stride", c_int64), ("dq_row_stride", c_int64), ("dq_head_stride", c_int64),
        ("dk_batch_stride", c_int64), ("dk_row_stride", c_int64), ("dk_head_stride", c_int64),
        ("dv_batch_stride", c_int64), ("dv_row_stride", c_int64), ("dv_head_stride", c_int64),
        ("softmax_scale", c_float),
        ("causal", c_int),
        ("window_left", c_int), ("window_right", c_int),
        ("softcap", c_float),
        ("cu_seqlens_q", c_void_p), ("cu_seqlens_k", c_void_p),
        ("seqused_q", c_void_p), ("seqused_k", c_void_p),
        ("total_q", c_int), ("total_k", c_int),
        ("deterministic", c_int),
    ]


class AttnCombineParams(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("out_dtype", _dtype),
        ("num_splits", c_int), ("batch", c_int), ("seqlen", c_int), ("heads", c_int), ("head_dim_v", c_int),
        ("o_partial", c_void_p),
        ("lse_partial", c_void_p),
        ("o", c_void_p),
        ("lse", c_void_p),
        ("o_partial_split_stride", c_int64), ("o_partial_batch_stride", c_int64),
        ("o_partial_row_stride", c_int64), ("o_partial_head_stride", c_int64),
        ("lse_partial_split_stride", c_int64), ("lse_partial_batch_stride", c_int64),
        ("lse_partial_head_stride", c_int64), ("lse_partial_row_stride", c_int64),
        ("o_batch_stride", c_int64), ("o_row_stride", c_int64), ("o_head_stride", c_int64),
        ("lse_batch_stride", c_int64), ("lse_head_stride", c_int64),
    ]


class GemmParams(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("m", c_int), ("n", c_int), ("k", c_int),
        ("batch_count", c_int),
        ("a_dtype", _dtype), ("b_dtype", _dtype),
        ("d_dtype", _dtype),
        ("a_layout", c_int), ("b_layout", c_int), ("cd_layout", c_int),
        ("a", c_void_p), ("b", c_void_p), ("c", c_void_p), ("d", c_void_p),
        ("bias", c_void_p),
        ("activation", c_int),
        ("lda", c_int64), ("ldb", c_int64), ("ldc", c_int64), ("ldd", c_int64),
        ("stride_a", c_int64), ("stride_b", c_int64), ("stride_c", c_int64), ("stride_d", c_int64),
        ("alpha", c_float),
        ("beta", c_float),
        ("scale_a", c_void_p),
        ("scale_b", c_void_p),
        ("algo", c_int),
    ]


class DeviceInfo(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("backend", c_int),
        ("device", c_int),
        ("name", c_char * 256),
        ("cc_major", c_int), ("cc_minor", c_int),
        ("sm_count", c_int),
        ("global_memory_bytes", c_size_t),
        ("shared_memory_per_block_optin", c_size_t),
        ("l2_cache_bytes", c_size_t),
    ]


# ---------------------------------------------------------------------------------------------
# Finding and loading the library
# ---------------------------------------------------------------------------------------------

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
# python/flashc/ -> the repository root when the package runs from a source checkout.
_REPO_ROOT = os.path.dirname(os.path.dirname(_PACKAGE_DIR))
_LIBRARY_NAMES = ("libflashc.so", "libflashc.so.0", "libflashc.dylib", "flashc.dll")


def _repo_build_dirs():
    """build/ first, then the other build*/ directories of the checkout, newest library first."""
    if not os.path.isfile(os.path.join(_REPO_ROOT, "include", "flashc.h")):
        return []
    others = [d for d in glob.glob(os.path.join(_REPO_ROOT, "build*")) if os.path.basename(d) != "build"]

    def library_mtime(directory):
        for name in _LIBRARY_NAMES:
            path = os.path.join(directory, name)
            if os.path.exists(path):
                return os.path.getmtime(path)
        return 0.0

    others.sort(key=library_mtime, reverse=True)
    return [os.path.join(_REPO_ROOT, "build")] + others


def candidate_paths():
    """Where the library is looked for, in order (see README "Python package")."""
    paths = []
    env = os.environ.get("FLASHC_LIBRARY")
    if env:
        paths.append(os.path.join(env, "libflashc.so") if os.path.isdir(env) else env)
        return paths  # an explicit choice is never second-guessed
    for directory in [os.path.join(_PACKAGE_DIR, "_lib")] + _repo_build_dirs():
        for name in _LIBRARY_NAMES:
            paths.append(os.path.join(directory, name))
    return paths


def _find_library():
    tried = []
    for path in candidate_paths():
        tried.append(path)
        if os.path.exists(path):
            return os.path.abspath(path), tried
    if os.environ.get("FLASHC_LIBRARY"):
        return None, tried
    # System paths: the dynamic loader's own search (ldconfig cache, LD_LIBRARY_PATH, ...).
    found = ctypes.util.find_library("flashc")
    for name in ([found] if found else []) + ["libflashc.so.0", "libflashc.so"]:
        tried.append(name + " (system search)")
        try:
            ctypes.CDLL(name)
            return name, tried
        except OSError:
            continue
    return None, tried


def _declare(lib):
    """Argument and result types of every function the package calls."""
    status = c_int
    signatures = {
        "flashc_status_name": (c_char_p, [c_int]),
        "flashc_status_string": (c_char_p, [c_int]),
        "flashc_last_error": (c_char_p, []),
        "flashc_version": (c_int, []),
        "flashc_build_info": (c_char_p, []),
        "flashc_dtype_name": (c_char_p, [c_int]),
        "flashc_dtype_size": (c_size_t, [c_int]),
        "flashc_create": (status, [POINTER(c_void_p), c_int]),
        "flashc_destroy": (status, [c_void_p]),
        "flashc_device_info_init": (None, [POINTER(DeviceInfo)]),
        "flashc_get_device_info": (status, [c_void_p, POINTER(DeviceInfo)]),
        "flashc_get_device_count": (status, [POINTER(c_int)]),
        "flashc_handle_kernels": (c_char_p, [c_void_p]),
        "flashc_attn_fwd_params_init": (None, [POINTER(AttnFwdParams)]),
        "flashc_attn_fwd_workspace_size": (status, [c_void_p, POINTER(AttnFwdParams), POINTER(c_size_t)]),
        "flashc_attn_fwd": (status, [c_void_p, POINTER(AttnFwdParams), c_void_p, c_size_t, c_void_p]),
        "flashc_attn_bwd_params_init": (None, [POINTER(AttnBwdParams)]),
        "flashc_attn_bwd_workspace_size": (status, [c_void_p, POINTER(AttnBwdParams), POINTER(c_size_t)]),
        "flashc_attn_bwd": (status, [c_void_p, POINTER(AttnBwdParams), c_void_p, c_size_t, c_void_p]),
        "flashc_attn_combine_params_init": (None, [POINTER(AttnCombineParams)]),
        "flashc_attn_combine": (status, [c_void_p, POINTER(AttnCombineParams), c_void_p]),
        "flashc_gemm_params_init": (None, [POINTER(GemmParams)]),
        "flashc_gemm_workspace_size": (status, [c_void_p, POINTER(GemmParams), POINTER(c_size_t)]),
        "flashc_gemm": (status, [c_void_p, POINTER(GemmParams), c_void_p, c_size_t, c_void_p]),
    }
    for name, (restype, argtypes) in signatures.items():
        function = getattr(lib, name)
        function.restype = restype
        function.argtypes = argtypes


def _check_struct_sizes(lib):
    """Each init function writes sizeof(struct) into struct_size: it must equal ctypes' size."""
    for struct, init in ((AttnFwdParams, lib.flashc_attn_fwd_params_init),
                         (AttnBwdParams, lib.flashc_attn_bwd_params_init),
                         (AttnCombineParams, lib.flashc_attn_combine_params_init),
                         (GemmParams, lib.flashc_gemm_params_init),
                         (DeviceInfo, lib.flashc_device_info_init)):
        instance = struct()
        init(ctypes.byref(instance))
        if instance.struct_size != ctypes.sizeof(struct):
            raise ImportError(
                f"flashc: the library's {struct.__name__} is {instance.struct_size} bytes but the Python "
                f"binding's is {ctypes.sizeof(struct)}: the library and the package come from different "
                f"versions of include/flashc.h")


def load():
    """Loads and checks the library; returns (CDLL, path). Raises ImportError with what was tried."""
    path, tried = _find_library()
    if path is None:
        raise ImportError(
            "flashc: libflashc not found. Build it (cmake -S . -B build && cmake --build build), "
            "install the package with `pip install ./python` (which builds it if needed), or set "
            "FLASHC_LIBRARY to the library's path. Looked in:\n  " + "\n  ".join(tried))
    try:
        lib = ctypes.CDLL(path)
    except OSError as error:
        raise ImportError(f"flashc: loading {path} failed: {error}") from error
    _declare(lib)
    _check_struct_sizes(lib)
    return lib, path


def byref(struct):
    return ctypes.byref(struct)


def new_handle_slot():
    return c_void_p()


def new_size_t():
    return c_size_t(0)


def new_int():
    return c_int(0)


__all__ = [name for name in dir(sys.modules[__name__]) if not name.startswith("_")]
