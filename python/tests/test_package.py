"""The package around the library: the ctypes structs against include/flashc.h, the version,
status names, handles, the library search and (opt-in) `pip install ./python`."""
import ctypes
import os
import re
import subprocess
import sys

import pytest

import flashc
from flashc import _capi, _runtime

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HEADER = os.path.join(REPO, "include", "flashc.h")


def header_struct_fields(text, name):
    """Field names of `typedef struct name { ... } name;` in declaration order."""
    body = re.search(r"typedef struct %s \{(.*?)\} %s;" % (name, name), text, re.S).group(1)
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    fields = []
    for declaration in body.split(";"):
        declaration = declaration.strip()
        if not declaration:
            continue
        declaration = re.sub(r"\[[^\]]*\]", "", declaration)  # char name[256]
        for part in declaration.split(","):  # "int64_t a, b, c" declares three fields
            fields.append(part.strip().split()[-1].lstrip("*"))
    return fields


@pytest.mark.skipif(not os.path.exists(HEADER), reason="needs the source tree's include/flashc.h")
@pytest.mark.parametrize("c_name, struct", [("flashc_attn_fwd_params", _capi.AttnFwdParams),
                                            ("flashc_attn_bwd_params", _capi.AttnBwdParams),
                                            ("flashc_attn_combine_params", _capi.AttnCombineParams),
                                            ("flashc_gemm_params", _capi.GemmParams),
                                            ("flashc_device_info", _capi.DeviceInfo)])
def test_ctypes_structs_mirror_the_header(c_name, struct):
    with open(HEADER) as header:
        expected = header_struct_fields(header.read(), c_name)
    assert [name for name, _ in struct._fields_] == expected


def test_struct_sizes_agree_with_the_library():
    for struct, init in ((_capi.AttnFwdParams, "flashc_attn_fwd_params_init"),
                         (_capi.GemmParams, "flashc_gemm_params_init")):
        instance = struct()
        getattr(_runtime.lib, init)(ctypes.byref(instance))
        assert instance.struct_size == ctypes.sizeof(struct)


@pytest.mark.skipif(not os.path.exists(HEADER), reason="needs the source tree's include/flashc.h")
def test_version_matches_the_header_and_the_library():
    with open(HEADER) as header:
        text = header.read()
    parts = [re.search(r"#define FLASHC_VERSION_%s (\d+)" % p, text).group(1) for p in ("MAJOR", "MINOR", "PATCH")]
    assert flashc.__version__ == ".".join(parts)
    code = _runtime.lib.flashc_version()
    assert flashc.version_info == (code // 10000, code // 100 % 100, code % 100)


def test_status_names_and_info():
    assert _runtime.status_name(0) == "FLASHC_STATUS_SUCCESS"
    assert _runtime.status_name(14) == "FLASHC_STATUS_SHAPE_MISMATCH"
    assert flashc.build_info().startswith("flashc " + flashc.__version__)
    assert "attn_fwd" in flashc.kernels()
    info = flashc.device_info()
    assert info["backend"] == "cpu" and info["sm_count"] >= 1
    assert flashc.device_count() >= 0


def test_missing_cuda_device_is_a_clear_error():
    """A device ordinal that does not exist (or a build without CUDA) raises NO_DEVICE."""
    with pytest.raises(flashc.FlashcError, match="FLASHC_STATUS_NO_DEVICE") as info:
        _runtime.handle(flashc.device_count() + 7)
    assert "does not exist" in info.value.message


def test_one_handle_per_thread():
    import threading
    main = _runtime.handle(_capi.DEVICE_CPU)
    assert _runtime.handle(_capi.DEVICE_CPU) == main
    seen = []
    thread = threading.Thread(target=lambda: seen.append(_runtime.handle(_capi.DEVICE_CPU)))
    thread.start()
    thread.join()
    assert seen and seen[0] != main


def test_library_search_order(monkeypatch, tmp_path):
    monkeypatch.setenv("FLASHC_LIBRARY", str(tmp_path / "nowhere.so"))
    assert _capi.candidate_paths() == [str(tmp_path / "nowhere.so")]
    with pytest.raises(ImportError, match="FLASHC_LIBRARY"):
        _capi.load()
    monkeypatch.delenv("FLASHC_LIBRARY")
    paths = _capi.candidate_paths()
    assert paths[0].endswith(os.path.join("flashc", "_lib", "libflashc.so"))


@pytest.mark.skipif(os.environ.get("FLASHC_TEST_PIP_INSTALL") != "1", reason="set FLASHC_TEST_PIP_INSTALL=1")
def test_pip_install(tmp_path):
    """`pip install ./python` bundles a library and the installed package imports outside the tree."""
    target = tmp_path / "site"
    env = dict(os.environ)
    subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target),
                           os.path.join(REPO, "python")], env=env)
    env.pop("FLASHC_LIBRARY", None)
    env["PYTHONPATH"] = str(target)
    env["FLASHC_NO_TORCH"] = "1"
    code = ("import flashc, numpy as np; q = np.ones((1, 3, 2, 8), np.float32); "
            "o = flashc.flash_attn_func(q, q, q); print(flashc.__version__, flashc.library_path, o.shape)")
    printed = subprocess.check_output([sys.executable, "-c", code], env=env, cwd=str(tmp_path), text=True)
    version, path, _ = printed.split(" ", 2)
    assert version == flashc.__version__
    assert path.startswith(str(target)), path
