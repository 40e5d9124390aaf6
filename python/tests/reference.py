"""numpy references for the Python tests, written from the documented semantics (DESIGN.md §5),
not from the library: attention forward/backward and GEMM in float64 (the oracle), and the
"same precision" versions of DESIGN.md §6 (inputs in their dtype, float32 accumulation, P and dS
rounded to the input dtype before they enter a product) that set the tolerance:

    max|out - ref64| <= 2 * max|out_same - ref64| + atol,   atol = k * u(dtype) * max|ref64|

with u the unit roundoff of the output dtype, k = 2 for 16/8-bit outputs, 32 for float32.
"""
import math

import numpy as np

try:
    import ml_dtypes
except ImportError:  # bf16 / e4m3 tests skip without it
    ml_dtypes = None

UNIT_ROUNDOFF = {"float32": 2.0 ** -24, "float16": 2.0 ** -11, "bfloat16": 2.0 ** -8, "float8_e4m3fn": 2.0 ** -4}


def np_dtype(name):
    if name in ("float32", "float16", "float64"):
        return np.dtype(name)
    if ml_dtypes is None:
        return None
    return np.dtype(getattr(ml_dtypes, name))


def _rounded_bfloat16(x):
    """x rounded to bfloat16 (nearest, ties to even, through float32) without ml_dtypes: the
    float32 bit pattern with its low 16 bits rounded away. Infinities stay; NaN stays NaN."""
    f = np.asarray(x, dtype=np.float64).astype(np.float32)
    bits = f.view(np.uint32).astype(np.uint64)
    bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    out = (bits & 0xFFFFFFFF).astype(np.uint32).view(np.float32).astype(np.float64)
    return np.where(np.isnan(f), np.nan, out)


def rounded(x, name):
    """x rounded to dtype `name` and back to float64 (bfloat16 also without ml_dtypes)."""
    if name == "bfloat16" and ml_dtypes is None:
        return _rounded_bfloat16(x)
    return np.asarray(x, dtype=np.float64).astype(np_dtype(name)).astype(np.float64)


def random_inputs(rng, shape, name, outliers=True):
    """Normal values with a few large outliers, never all zeros; in dtype `name`."""
    x = rng.standard_normal(shape)
    if outliers and x.size >= 8:
        flat = x.reshape(-1)
        picks = rng.choice(flat.size, size=max(1, flat.size // 50), replace=False)
        flat[picks] *= 6.0
    return x.astype(np_dtype(name))


def check_close(name, out, ref64, same, dtype_name, mask=None, k=None, magnitude=None):
    """DESIGN.md §6 on one output; raises AssertionError with the numbers. `magnitude` replaces
    max|ref64| in atol where the output is a sum whose terms are larger than the result (an
    attention row averages V; an LSE adds up q·k products), so rounding scales with the terms."""
    out = np.asarray(out, dtype=np.float64)
    ref64 = np.asarray(ref64, dtype=np.float64)
    same = np.asarray(same, dtype=np.float64)
    if mask is not None:
        out, ref64, same = out[mask], ref64[mask], same[mask]
    assert not np.isnan(out).any(), f"{name}: NaN in the output"
    finite = np.isfinite(ref64)
    assert np.array_equal(np.isfinite(out), finite), f"{name}: infinities differ from the reference"
    assert np.array_equal(out[~finite], ref64[~finite]), f"{name}: infinite values differ"
    out, ref64, same = out[finite], ref64[finite], same[finite]
    if out.size == 0:
        return
    max_ref = np.abs(ref64).max() if magnitude is None else max(magnitude, np.abs(ref64).max())
    if k is None:
        k = 32 if dtype_name == "float32" else 2
    atol = k * UNIT_ROUNDOFF[dtype_name] * max_ref + 1e-30
    error = np.abs(out - ref64).max()
    error_same = np.abs(same - ref64).max()
    bound = 2 * error_same + atol
    rel_l2 = np.linalg.norm(out - ref64) / max(np.linalg.norm(ref64), 1e-300)
    assert error <= bound, (f"{name}: max|out - ref64| = {error:.3g} > bound {bound:.3g} "
                            f"(2 * same-precision error {error_same:.3g} + atol {atol:.3g}); rel L2 {rel_l2:.3g}")


# ---------------------------------------------------------------------------------------------
# Attention
# ---------------------------------------------------------------------------------------------

def visible(seqlen_q, seqlen_k, causal, window_left, window_right):
    """Boolean (seqlen_q, seqlen_k): query i sees key j (bottom-right aligned)."""
    i = np.arange(seqlen_q)[:, None]
    j = np.arange(seqlen_k)[None, :]
    shift = seqlen_k - seqlen_q
    right = 0 if causal else window_right
    ok = np.ones((seqlen_q, seqlen_k), dtype=bool)
    if right >= 0:
        ok &= j <= i + shift + right
    if window_left >= 0:
        ok &= j >= i + shift - window_left
    return ok


def attention_sequence(q, k, v, scale, causal=False, window=(-1, -1), softcap=0.0, same_dtype=None):
    """One sequence: q (sq, hq, d), k (sk, hk, d), v (sk, hk, dv) as float64 values of the inputs.
    same_dtype=None: float64 math. same_dtype="float16"...: float32 math, unnormalized P rounded
    to that dtype before P·V, output rounded to it. Returns out (sq, hq, dv), lse (hq, sq)."""
    sq, hq, _ = q.shape
    sk, hk, dv = v.shape
    real = np.float64 if same_dtype is None else np.float32
    mask = visible(sq, sk, causal, *window)
    out = np.zeros((sq, hq, dv))
    lse = np.full((hq, sq), -np.inf)
    group = hq // hk
    for h in range(hq):
        qh, kh, vh = (x.astype(real) for x in (q[:, h], k[:, h // group], v[:, h // group]))
        s = (qh @ kh.T) * real(scale)
        if softcap > 0:
            s = real(softcap) * np.tanh(s / real(softcap))
        s = np.where(mask, s, -np.inf)
        row_max = s.max(axis=1, initial=-np.inf)
        safe_max = np.where(np.isfinite(row_max), row_max, 0)
        p = np.exp(s - safe_max[:, None])
        row_sum = p.sum(axis=1)
        if same_dtype is not None and same_dtype != "float32":
            p = rounded(p, same_dtype).astype(real)
        o = p @ vh
        has_key = row_sum > 0
        o[has_key] /= row_sum[has_key, None]
        o[~has_key] = 0
        out[:, h] = o
        lse[h, has_key] = safe_max[has_key] + np.log(row_sum[has_key])
    if same_dtype is not None:
        out = rounded(out, same_dtype)
    return out, lse


def attention_batched(q, k, v, scale, causal=False, window=(-1, -1), softcap=0.0, same_dtype=None,
                      seqused_q=None, seqused_k=None):
    """q (b, sq, hq, d) etc. Returns out (b, sq, hq, dv) (rows beyond seqused_q: NaN = not
    compared), lse (b, hq, sq)."""
    b, sq, hq, _ = q.shape
    out = np.full(q.shape[:3] + (v.shape[-1],), np.nan)
    lse = np.full((b, hq, sq), np.nan)
    for i in range(b):
        nq = sq if seqused_q is None else int(seqused_q[i])
        nk = k.shape[1] if seqused_k is None else int(seqused_k[i])
        o, l = attention_sequence(q[i, :nq], k[i, :nk], v[i, :nk], scale, causal, window, softcap, same_dtype)
        out[i, :nq], lse[i, :, :nq] = o, l
    return out, lse


def attention_backward_sequence(q, k, v, dout, scale, causal=False, window=(-1, -1), softcap=0.0,
                                same_dtype=None, out=None, lse=None):
    """Gradients of one sequence. same_dtype: float32 math with P and dS rounded to the dtype before
    they enter a product, D = rowsum(dO ∘ O) from the given (rounded) forward output, dq/dk/dv
    rounded to the dtype."""
    sq, hq, d = q.shape
    sk, hk, dv_ = v.shape
    real = np.float64 if same_dtype is None else np.float32
    round_operand = same_dtype is not None and same_dtype != "float32"
    mask = visible(sq, sk, causal, *window)
    group = hq // hk
    dq = np.zeros(q.shape)
    dk = np.zeros(k.shape)
    dv = np.zeros(v.shape)
    if out is None:
        out, _ = attention_sequence(q, k, v, scale, causal, window, softcap)
    for h in range(hq):
        hk_ = h // group
        qh, kh, vh, doh, oh = (x.astype(real) for x in (q[:, h], k[:, hk_], v[:, hk_], dout[:, h], out[:, h]))
        s = (qh @ kh.T) * real(scale)
        if softcap > 0:
            t = np.tanh(s / real(softcap))
            s_capped = real(softcap) * t
        else:
            s_capped = s
        s_capped = np.where(mask, s_capped, -np.inf)
        row_max = s_capped.max(axis=1, initial=-np.inf)
        safe_max = np.where(np.isfinite(row_max), row_max, 0)
        p = np.exp(s_capped - safe_max[:, None])
        row_sum = p.sum(axis=1, keepdims=True)
        p = np.divide(p, row_sum, out=np.zeros_like(p), where=row_sum > 0)
        p_op = rounded(p, same_dtype).astype(real) if round_operand else p
        dv[:, hk_] += p_op.T @ doh
        dp = doh @ vh.T
        delta = (doh * oh).sum(axis=1, keepdims=True)
        ds = p * (dp - delta)
        if softcap > 0:
            ds = ds * (1 - t * t)
        ds_op = rounded(ds, same_dtype).astype(real) if round_operand else ds
        dq[:, h] = real(scale) * (ds_op @ kh)
        dk[:, hk_] += real(scale) * (ds_op.T @ qh)
    if same_dtype is not None:
        dq, dk, dv = (rounded(x, same_dtype) for x in (dq, dk, dv))
    return dq, dk, dv


# ---------------------------------------------------------------------------------------------
# GEMM
# ---------------------------------------------------------------------------------------------

def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def gemm_reference(a, b, c=None, bias=None, alpha=1.0, beta=0.0, activation=None, scale=1.0, same_dtype=None):
    """act(alpha·scale·a@b + beta·c + bias) in float64, or in float32 rounded to same_dtype."""
    real = np.float64 if same_dtype is None else np.float32
    d = real(alpha * scale) * np.matmul(a.astype(real), b.astype(real))
    if c is not None and beta != 0:
        d = d + real(beta) * c.astype(real)
    if bias is not None:
        d = d + bias.astype(real)
    if activation == "relu":
        d = np.maximum(d, 0)
    elif activation == "gelu":
        d = gelu_tanh(d)
    if same_dtype is not None:
        d = rounded(d, same_dtype)
    return d.astype(np.float64)
