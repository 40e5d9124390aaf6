"""flashc.gemm on numpy arrays (the CPU backend) against a float64 reference (DESIGN.md §6)."""
import numpy as np
import pytest

import flashc
from reference import check_close, gemm_reference, np_dtype, random_inputs


def need(dtype):
    if np_dtype(dtype) is None:
        pytest.skip(f"{dtype} numpy arrays need ml_dtypes")


def f64(x):
    return np.asarray(x).astype(np.float64)


def check(d, a, b, dtype_out, **kwargs):
    ref = gemm_reference(f64(a), f64(b), **kwargs)
    same = gemm_reference(f64(a), f64(b), same_dtype=dtype_out, **kwargs)
    check_close("d", d, ref, same, dtype_out)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("m, n, k", [(1, 1, 1), (7, 13, 5), (33, 17, 65), (64, 48, 96)])
@pytest.mark.parametrize("layout", ["nn", "tn", "nt", "tt"])
def test_gemm_layouts(rng, dtype, m, n, k, layout):
    """Row-major operands and transposed (column-major) views, read without copies."""
    need(dtype)
    a = random_inputs(rng, (m, k), dtype) if layout[0] == "n" else random_inputs(rng, (k, m), dtype).T
    b = random_inputs(rng, (k, n), dtype) if layout[1] == "n" else random_inputs(rng, (n, k), dtype).T
    d = flashc.gemm(a, b)
    assert d.shape == (m, n) and d.dtype == a.dtype and d.flags.c_contiguous
    check(d, a, b, dtype)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_gemm_epilogue(rng, dtype):
    m, n, k = 19, 23, 31
    a, b = random_inputs(rng, (m, k), dtype), random_inputs(rng, (k, n), dtype)
    c, bias = random_inputs(rng, (m, n), dtype), random_inputs(rng, (n,), dtype)
    for kwargs in ({"alpha": 0.5}, {"c": c, "beta": -1.5}, {"bias": bias}, {"activation": "relu", "bias": bias},
                   {"activation": "gelu", "c": c, "beta": 0.25, "alpha": 2.0}):
        d = flashc.gemm(a, b, **kwargs)
        check(d, a, b, dtype, **kwargs)
    # C given as a transposed view is taken (copied to D's layout), not rejected
    d = flashc.gemm(a, b, np.ascontiguousarray(c.T).T, beta=1.0)
    check(d, a, b, dtype, c=c, beta=1.0)


def test_gemm_batched_and_broadcast(rng):
    batch, m, n, k = 3, 9, 11, 7
    a = random_inputs(rng, (batch, m, k), "float32")
    b = random_inputs(rng, (batch, k, n), "float32")
    w = random_inputs(rng, (k, n), "float32")
    check(flashc.gemm(a, b), a, b, "float32")
    check(flashc.gemm(a, w), a, w, "float32")                      # 2-D b shared by every batch
    check(flashc.gemm(a[0], b), a[0], b, "float32")                # 2-D a shared
    expanded = np.broadcast_to(w, (batch, k, n))                   # batch stride 0
    check(flashc.gemm(a, expanded), a, expanded, "float32")
    strided = random_inputs(rng, (batch, m, 2 * k), "float32")[:, :, ::2]  # a last dim that needs a copy
    check(flashc.gemm(strided, b), strided, b, "float32")
    c = random_inputs(rng, (batch, m, n), "float32")
    check(flashc.gemm(a, b, c, beta=2.0), a, b, "float32", c=c, beta=2.0)


def test_gemm_out_dtype(rng):
    a, b = random_inputs(rng, (5, 6), "float16"), random_inputs(rng, (6, 7), "float16")
    d = flashc.gemm(a, b, out_dtype=np.float32)
    assert d.dtype == np.float32
    check(d, a, b, "float32")


def test_gemm_fp8_with_scales(rng):
    need("float8_e4m3fn")
    a = random_inputs(rng, (16, 32), "float8_e4m3fn", outliers=False)
    b = random_inputs(rng, (32, 8), "float8_e4m3fn", outliers=False)
    d = flashc.gemm(a, b, scale_a=0.5, scale_b=3.0)
    assert str(d.dtype) == "bfloat16"
    check(d, a, b, "bfloat16", scale=1.5)
    with pytest.raises(flashc.FlashcError, match="scale_a is NULL"):
        flashc.gemm(a, b)


def test_gemm_errors(rng):
    a, b = random_inputs(rng, (4, 5), "float32"), random_inputs(rng, (6, 7), "float32")
    with pytest.raises(ValueError, match="inner dimensions differ"):
        flashc.gemm(a, b)
    b = random_inputs(rng, (5, 7), "float32")
    with pytest.raises(ValueError, match="beta is 2.0 but c is None"):
        flashc.gemm(a, b, beta=2.0)
    with pytest.raises(flashc.FlashcInvalidArgumentError, match=r"alpha \(inf\) must be finite") as info:
        flashc.gemm(a, b, alpha=float("inf"))
    assert info.value.status_name == "FLASHC_STATUS_INVALID_VALUE" and info.value.function == "flashc_gemm_workspace_size"
    with pytest.raises(ValueError, match="activation"):
        flashc.gemm(a, b, activation="swish")
    with pytest.raises(ValueError, match="algo"):
        flashc.gemm(a, b, algo="fast")
    with pytest.raises(TypeError, match="share a dtype"):
        flashc.gemm(a, b.astype(np.float16))
    with pytest.raises(ValueError, match="different batch sizes"):
        flashc.gemm(random_inputs(rng, (2, 4, 5), "float32"), random_inputs(rng, (3, 5, 7), "float32"))
