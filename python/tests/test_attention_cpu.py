"""flashc's FA3-compatible attention functions on numpy arrays (the CPU backend), against the
float64 references of reference.py under DESIGN.md §6's rule. Small, odd shapes."""
import math

import numpy as np
import pytest

import flashc
from reference import (attention_backward_sequence, attention_batched, attention_sequence, check_close, ml_dtypes,
                       np_dtype, random_inputs, rounded)

DTYPES = ["float32", "float16", "bfloat16"]


def need(dtype):
    if np_dtype(dtype) is None:
        pytest.skip(f"{dtype} numpy arrays need ml_dtypes")


def f64(x):
    return np.asarray(x).astype(np.float64)


def check_forward(out, lse, q, k, v, dtype, scale, causal=False, window=(-1, -1), softcap=0.0, seqused_q=None,
                  seqused_k=None):
    ref, ref_lse = attention_batched(f64(q), f64(k), f64(v), scale, causal, window, softcap,
                                     seqused_q=seqused_q, seqused_k=seqused_k)
    same, _ = attention_batched(f64(q), f64(k), f64(v), scale, causal, window, softcap, same_dtype=dtype,
                                seqused_q=seqused_q, seqused_k=seqused_k)
    rows = ~np.isnan(ref)
    check_close("out", out, ref, same, dtype, mask=rows, magnitude=np.abs(f64(v)).max())
    if lse is not None:
        lse_rows = ~np.isnan(ref_lse)
        check_close("lse", lse, ref_lse, ref_lse, "float32", mask=lse_rows, magnitude=lse_magnitude(q, k, scale))


def lse_magnitude(q, k, scale):
    """Size of the terms an LSE sums: scale · max|q| · max|k| · head_dim, plus log(seqlen_k)."""
    return scale * np.abs(f64(q)).max() * np.abs(f64(k)).max() * q.shape[-1] + math.log(k.shape[-3])


FORWARD_CASES = [
    # dtype, batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim, head_dim_v, causal, window, softcap, scale
    ("float32", 2, 5, 7, 4, 4, 16, 16, False, (-1, -1), 0.0, None),
    ("float32", 1, 1, 1, 1, 1, 8, 8, True, (-1, -1), 0.0, None),
    ("float32", 2, 17, 3, 4, 2, 8, 8, True, (-1, -1), 0.0, None),   # rows that see no key
    ("float32", 2, 3, 17, 6, 1, 24, 24, True, (-1, -1), 0.0, 0.3),  # MQA
    ("float32", 1, 33, 33, 2, 2, 32, 16, False, (4, 2), 0.0, None),  # local, head_dim_v != head_dim
    ("float32", 3, 9, 20, 4, 2, 8, 8, True, (5, -1), 7.5, None),     # causal + left window + softcap
    ("float16", 2, 13, 13, 4, 4, 64, 64, False, (-1, -1), 0.0, None),
    ("float16", 2, 11, 29, 8, 2, 40, 40, True, (-1, -1), 30.0, None),
    ("float16", 1, 30, 9, 3, 1, 16, 32, False, (0, 3), 0.0, 0.125),
    ("bfloat16", 2, 19, 23, 4, 1, 32, 32, True, (-1, -1), 0.0, None),
    ("bfloat16", 2, 7, 7, 2, 2, 128, 128, False, (2, 2), 10.0, None),
]


@pytest.mark.parametrize("case", FORWARD_CASES, ids=lambda c: "-".join(str(x) for x in c))
def test_flash_attn_func(rng, case):
    dtype, b, sq, sk, hq, hk, d, dv, causal, window, softcap, scale = case
    need(dtype)
    q = random_inputs(rng, (b, sq, hq, d), dtype)
    k = random_inputs(rng, (b, sk, hk, d), dtype)
    v = random_inputs(rng, (b, sk, hk, dv), dtype)
    out, lse = flashc.flash_attn_func(q, k, v, softmax_scale=scale, causal=causal, window_size=window,
                                      softcap=softcap, return_attn_probs=True)
    assert out.shape == (b, sq, hq, dv) and out.dtype == q.dtype
    assert lse.shape == (b, hq, sq) and lse.dtype == np.float32
    check_forward(out, lse, q, k, v, dtype, scale if scale else 1 / math.sqrt(d), causal, window, softcap)


def test_flash_attn_func_return_conventions_and_tuning_flags(rng):
    q = random_inputs(rng, (2, 9, 4, 16), "float32")
    k = random_inputs(rng, (2, 14, 2, 16), "float32")
    v = random_inputs(rng, (2, 14, 2, 16), "float32")
    out = flashc.flash_attn_func(q, k, v)
    assert isinstance(out, np.ndarray)  # FA3: out alone unless return_attn_probs
    for kwargs in ({"num_splits": 3}, {"num_splits": 0}, {"pack_gqa": True}, {"pack_gqa": False},
                   {"deterministic": True}, {"sm_margin": 4}):
        other = flashc.flash_attn_func(q, k, v, **kwargs)
        np.testing.assert_allclose(other, out, rtol=1e-5, atol=1e-5, err_msg=str(kwargs))
    # causal overrides a positive right window, as in FA3
    np.testing.assert_array_equal(flashc.flash_attn_func(q, k, v, causal=True, window_size=(-1, 5)),
                                  flashc.flash_attn_func(q, k, v, causal=True))


def test_rows_without_keys_are_zero_with_minus_inf_lse(rng):
    q = random_inputs(rng, (1, 6, 2, 8), "float32")
    k = random_inputs(rng, (1, 2, 2, 8), "float32")
    out, lse = flashc.flash_attn_func(q, k, k, causal=True, return_attn_probs=True)
    assert np.all(out[0, :4] == 0) and np.all(np.isneginf(lse[0, :, :4]))
    assert np.all(np.isfinite(lse[0, :, 4:]))


def test_non_contiguous_views_are_read_in_place(rng):
    """q/k/v as strided views (a heads-major buffer, a slice of a wider tensor) give the same
    result as contiguous copies."""
    base = random_inputs(rng, (2, 4, 11, 24), "float32")  # (batch, heads, seqlen, dim)
    q = base.transpose(0, 2, 1, 3)[..., :16]                 # (batch, seqlen, heads, 16), strided
    kv = random_inputs(rng, (2, 13, 2, 2, 16), "float32")
    k, v = kv[:, :, 0], kv[:, :, 1]
    out = flashc.flash_attn_func(q, k, v, causal=True)
    expected = flashc.flash_attn_func(*(np.ascontiguousarray(x) for x in (q, k, v)), causal=True)
    np.testing.assert_array_equal(out, expected)
    # a last dimension that is not contiguous is copied (as FA3 does), not rejected
    out2 = flashc.flash_attn_func(np.asfortranarray(q), k, v, causal=True)
    np.testing.assert_array_equal(out2, expected)


@pytest.mark.parametrize("dtype", DTYPES)
def test_flash_attn_varlen_func(rng, dtype):
    need(dtype)
    lengths_q = [3, 0, 17, 1, 8]
    lengths_k = [5, 4, 17, 1, 20]
    hq, hk, d = 4, 2, 16
    cu_q = np.concatenate([[0], np.cumsum(lengths_q)]).astype(np.int32)
    cu_k = np.concatenate([[0], np.cumsum(lengths_k)]).astype(np.int32)
    q = random_inputs(rng, (cu_q[-1], hq, d), dtype)
    k = random_inputs(rng, (cu_k[-1], hk, d), dtype)
    v = random_inputs(rng, (cu_k[-1], hk, d), dtype)
    for causal, window, softcap in ((False, (-1, -1), 0.0), (True, (-1, -1), 0.0), (False, (3, 1), 4.0)):
        out, lse = flashc.flash_attn_varlen_func(q, k, v, cu_q, cu_k, max(lengths_q), max(lengths_k), causal=causal,
                                                 window_size=window, softcap=softcap, return_attn_probs=True)
        assert out.shape == (cu_q[-1], hq, d) and lse.shape == (hq, cu_q[-1])
        for b in range(len(lengths_q)):
            rows, keys = slice(cu_q[b], cu_q[b + 1]), slice(cu_k[b], cu_k[b + 1])
            ref, ref_lse = attention_sequence(f64(q[rows]), f64(k[keys]), f64(v[keys]), d ** -0.5, causal, window,
                                              softcap)
            same, _ = attention_sequence(f64(q[rows]), f64(k[keys]), f64(v[keys]), d ** -0.5, causal, window,
                                         softcap, same_dtype=dtype)
            check_close(f"out[{b}]", out[rows], ref, same, dtype, magnitude=np.abs(f64(v[keys])).max(initial=0))
            check_close(f"lse[{b}]", lse[:, rows], ref_lse, ref_lse, "float32",
                        magnitude=lse_magnitude(q[rows], k[keys], d ** -0.5) if keys.stop > keys.start and rows.stop > rows.start else None)
    # max_seqlen_q/k left out: computed from cu_seqlens
    np.testing.assert_array_equal(flashc.flash_attn_varlen_func(q, k, v, cu_q, cu_k), 
                                  flashc.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 17, 20))


def test_varlen_seqused_and_batched_k(rng):
    """seqused_q / seqused_k limit each sequence; cu_seqlens_k=None takes a batched k."""
    batch, hq, d = 3, 2, 8
    lengths_q = [4, 6, 2]
    cu_q = np.array([0, 4, 10, 12], dtype=np.int32)
    q = random_inputs(rng, (12, hq, d), "float32")
    k = random_inputs(rng, (batch, 9, hq, d), "float32")
    v = random_inputs(rng, (batch, 9, hq, d), "float32")
    seqused_q = np.array([2, 6, 0], dtype=np.int32)
    seqused_k = np.array([9, 1, 5], dtype=np.int32)
    out, lse = flashc.flash_attn_varlen_func(q, k, v, cu_q, None, max_seqlen_q=6, max_seqlen_k=9,
                                             seqused_q=seqused_q, seqused_k=seqused_k, causal=True,
                                             return_attn_probs=True)
    for b in range(batch):
        rows = slice(cu_q[b], cu_q[b] + seqused_q[b])
        ref, ref_lse = attention_sequence(f64(q[rows]), f64(k[b, :seqused_k[b]]), f64(v[b, :seqused_k[b]]),
                                          d ** -0.5, True)
        check_close(f"out[{b}]", out[rows], ref, ref, "float32", magnitude=np.abs(v).max())
        check_close(f"lse[{b}]", lse[:, rows], ref_lse, ref_lse, "float32", magnitude=lse_magnitude(q, k, d ** -0.5))


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_flash_attn_qkvpacked_func(rng, dtype):
    qkv = random_inputs(rng, (2, 11, 3, 4, 16), dtype)
    out, lse = flashc.flash_attn_qkvpacked_func(qkv, causal=True, return_attn_probs=True)
    q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
    check_forward(out, lse, q, k, v, dtype, 16 ** -0.5, causal=True)
    # 4-D GQA packing: heads_q + 2 * heads_kv along the head dimension
    packed = random_inputs(rng, (2, 7, 6 + 2 * 2, 8), dtype)
    out = flashc.flash_attn_qkvpacked_func(packed, num_heads_q=6, window_size=(2, 1), softcap=3.0)
    check_forward(out, None, packed[:, :, :6], packed[:, :, 6:8], packed[:, :, 8:], dtype, 8 ** -0.5,
                  window=(2, 1), softcap=3.0)


def _paged(rng, k_dense, v_dense, page_size):
    """A shuffled paged cache holding the dense caches, and its page table."""
    batch, seqlen, heads, d = k_dense.shape
    pages_per_seq = -(-seqlen // page_size)
    num_pages = batch * pages_per_seq + 3
    order = rng.permutation(num_pages)[:batch * pages_per_seq].reshape(batch, pages_per_seq).astype(np.int32)
    k_cache = random_inputs(rng, (num_pages, page_size, heads, d), str(k_dense.dtype))
    v_cache = random_inputs(rng, (num_pages, page_size, heads, v_dense.shape[-1]), str(k_dense.dtype))
    for b in range(batch):
        for j in range(seqlen):
            k_cache[order[b, j // page_size], j % page_size] = k_dense[b, j]
            v_cache[order[b, j // page_size], j % page_size] = v_dense[b, j]
    return k_cache, v_cache, order


@pytest.mark.parametrize("paged", [False, True])
@pytest.mark.parametrize("num_splits", [1, 0, 3])
def test_flash_attn_with_kvcache(rng, paged, num_splits):
    batch, seqlen_cache, hq, hk, d = 3, 21, 4, 2, 16
    q = random_inputs(rng, (batch, 2, hq, d), "float16")
    k_dense = random_inputs(rng, (batch, seqlen_cache, hk, d), "float16")
    v_dense = random_inputs(rng, (batch, seqlen_cache, hk, d), "float16")
    cache_seqlens = np.array([21, 1, 9], dtype=np.int32)
    if paged:
        k_cache, v_cache, page_table = _paged(rng, k_dense, v_dense, page_size=4)
    else:
        k_cache, v_cache, page_table = k_dense, v_dense, None
    out, lse = flashc.flash_attn_with_kvcache(q, k_cache, v_cache, cache_seqlens=cache_seqlens, page_table=page_table,
                                              causal=True, num_splits=num_splits, return_softmax_lse=True)
    check_forward(out, lse, q, k_dense, v_dense, "float16", d ** -0.5, causal=True, seqused_k=cache_seqlens)
    # an int cache_seqlens applies to every sequence
    out = flashc.flash_attn_with_kvcache(q, k_cache, v_cache, cache_seqlens=5, page_table=page_table)
    check_forward(out, None, q, k_dense, v_dense, "float16", d ** -0.5, seqused_k=[5, 5, 5])


@pytest.mark.parametrize("paged", [False, True])
def test_kvcache_appends_new_keys_in_place(rng, paged):
    batch, seqlen_cache, h, d, new = 2, 12, 2, 8, 3
    q = random_inputs(rng, (batch, new, h, d), "float32")
    k_dense = random_inputs(rng, (batch, seqlen_cache, h, d), "float32")
    v_dense = random_inputs(rng, (batch, seqlen_cache, h, d), "float32")
    k_new = random_inputs(rng, (batch, new, h, d), "float32")
    v_new = random_inputs(rng, (batch, new, h, d), "float32")
    cache_seqlens = np.array([4, 9], dtype=np.int32)
    if paged:
        k_cache, v_cache, page_table = _paged(rng, k_dense, v_dense, page_size=5)
    else:
        k_cache, v_cache, page_table = k_dense.copy(), v_dense.copy(), None
    out = flashc.flash_attn_with_kvcache(q, k_cache, v_cache, k=k_new, v=v_new, cache_seqlens=cache_seqlens,
                                         page_table=page_table, causal=True)
    expected_k, expected_v = k_dense.copy(), v_dense.copy()
    for b in range(batch):
        expected_k[b, cache_seqlens[b]:cache_seqlens[b] + new] = k_new[b]
        expected_v[b, cache_seqlens[b]:cache_seqlens[b] + new] = v_new[b]
    for b in range(batch):  # the cache was written in place
        n = cache_seqlens[b] + new
        for j in range(n):
            if paged:
                stored_k = k_cache[page_table[b, j // 5], j % 5]
            else:
                stored_k = k_cache[b, j]
            np.testing.assert_array_equal(stored_k, expected_k[b, j])
    check_forward(out, None, q, expected_k, expected_v, "float32", d ** -0.5, causal=True,
                  seqused_k=cache_seqlens + new)


def test_kvcache_batch_idx_and_varlen_q(rng):
    h, d = 2, 8
    k_cache = random_inputs(rng, (5, 10, h, d), "float32")
    v_cache = random_inputs(rng, (5, 10, h, d), "float32")
    q = random_inputs(rng, (3, 1, h, d), "float32")
    batch_idx = np.array([4, 0, 2], dtype=np.int32)
    seqlens = np.array([10, 3, 7], dtype=np.int32)
    out = flashc.flash_attn_with_kvcache(q, k_cache, v_cache, cache_seqlens=seqlens, cache_batch_idx=batch_idx)
    check_forward(out, None, q, k_cache[batch_idx], v_cache[batch_idx], "float32", d ** -0.5, seqused_k=seqlens)
    # varlen queries against the cache
    cu_q = np.array([0, 2, 3, 6], dtype=np.int32)
    q_var = random_inputs(rng, (6, h, d), "float32")
    out = flashc.flash_attn_with_kvcache(q_var, k_cache[:3], v_cache[:3], cache_seqlens=seqlens, cu_seqlens_q=cu_q,
                                         max_seqlen_q=3, causal=True)
    for b in range(3):
        rows = slice(cu_q[b], cu_q[b + 1])
        ref, _ = attention_sequence(f64(q_var[rows]), f64(k_cache[b, :seqlens[b]]), f64(v_cache[b, :seqlens[b]]),
                                    d ** -0.5, True)
        check_close(f"out[{b}]", out[rows], ref, ref, "float32", magnitude=np.abs(v_cache).max())


def test_kvcache_refuses_what_flashc_does_not_implement(rng):
    q = random_inputs(rng, (1, 1, 2, 8), "float32")
    cache = random_inputs(rng, (1, 4, 2, 8), "float32")
    cos = np.ones((4, 4), dtype=np.float32)
    for kwargs in ({"rotary_cos": cos, "rotary_sin": cos}, {"cache_leftpad": np.zeros(1, np.int32)},
                   {"qv": q}, {"attention_chunk": 2}):
        with pytest.raises(NotImplementedError):
            flashc.flash_attn_with_kvcache(q, cache, cache, **kwargs)


def test_get_scheduler_metadata_is_accepted(rng):
    q = random_inputs(rng, (2, 1, 4, 8), "float32")
    cache = random_inputs(rng, (2, 6, 2, 8), "float32")
    seqlens = np.array([6, 2], dtype=np.int32)
    metadata = flashc.get_scheduler_metadata(2, 1, 6, 4, 2, 8, seqlens, causal=True)
    np.testing.assert_array_equal(
        flashc.flash_attn_with_kvcache(q, cache, cache, cache_seqlens=seqlens, scheduler_metadata=metadata),
        flashc.flash_attn_with_kvcache(q, cache, cache, cache_seqlens=seqlens))
    with pytest.raises(ValueError, match="num_heads_q"):
        flashc.get_scheduler_metadata(2, 1, 6, 5, 2, 8, seqlens)


@pytest.mark.parametrize("out_dtype", [None, "float16", "bfloat16"])
def test_flash_attn_combine(rng, out_dtype):
    if out_dtype is not None:
        need(out_dtype)
    splits, batch, seqlen, heads, dv = 4, 2, 5, 3, 12
    o_partial = rng.standard_normal((splits, batch, seqlen, heads, dv)).astype(np.float32)
    lse_heads_major = (rng.standard_normal((splits, batch, heads, seqlen)) * 3).astype(np.float32)
    lse_heads_major[1, 0, 2, :] = -np.inf       # a split that saw no key
    lse_heads_major[:, 1, 0, 3] = -np.inf       # a row no split saw
    lse_partial = lse_heads_major.transpose(0, 1, 3, 2)  # FA3's (splits, batch, seqlen, heads) view
    out, lse = flashc.flash_attn_combine(o_partial, lse_partial,
                                         out_dtype=None if out_dtype is None else np_dtype(out_dtype))
    assert out.shape == (batch, seqlen, heads, dv) and lse.shape == (batch, seqlen, heads)
    lse64 = lse_partial.astype(np.float64)
    top = np.max(lse64, axis=0)
    safe = np.where(np.isfinite(top), top, 0)
    weights = np.exp(lse64 - safe)
    total = weights.sum(axis=0)
    ref_lse = np.where(total > 0, safe + np.log(np.where(total > 0, total, 1)), -np.inf)
    ref = np.where(total[..., None] > 0,
                   (weights[..., None] * o_partial).sum(axis=0) / np.where(total > 0, total, 1)[..., None], 0)
    name = out_dtype or "float32"
    check_close("out", out, ref, rounded(ref, name), name)
    check_close("lse", lse, ref_lse, ref_lse, "float32")
    assert np.all(out[1, 3, 0] == 0) and np.isneginf(lse[1, 3, 0])
    # writing into a given output
    given = np.empty((batch, seqlen, heads, dv), dtype=np.float32)
    out2, _ = flashc.flash_attn_combine(o_partial, lse_partial, out=given)
    assert out2 is given
    if out_dtype is None:
        np.testing.assert_array_equal(given, out)


# ---------------------------------------------------------------------------------------------
# Backward
# ---------------------------------------------------------------------------------------------

# fp32 gradients are sums over the sequence whose terms cancel (dS = P (dP - D)): their rounding
# grows with sqrt(length) · u · max|ref| rather than staying at one output ulp.
FP32_GRAD_K = 64

BACKWARD_CASES = [
    ("float32", 2, 7, 9, 4, 2, 16, 16, False, (-1, -1), 0.0),
    ("float32", 1, 12, 5, 2, 1, 8, 12, True, (-1, -1), 0.0),
    ("float32", 2, 10, 10, 2, 2, 8, 8, False, (3, 2), 5.0),
    ("float16", 2, 9, 13, 4, 1, 32, 32, True, (-1, -1), 0.0),
    ("bfloat16", 1, 15, 15, 2, 2, 16, 16, True, (4, -1), 20.0),
]


@pytest.mark.parametrize("case", BACKWARD_CASES, ids=lambda c: "-".join(str(x) for x in c))
def test_flash_attn_backward(rng, case):
    dtype, b, sq, sk, hq, hk, d, dv, causal, window, softcap = case
    need(dtype)
    q = random_inputs(rng, (b, sq, hq, d), dtype)
    k = random_inputs(rng, (b, sk, hk, d), dtype)
    v = random_inputs(rng, (b, sk, hk, dv), dtype)
    dout = random_inputs(rng, (b, sq, hq, dv), dtype)
    out, lse = flashc.flash_attn_func(q, k, v, causal=causal, window_size=window, softcap=softcap,
                                      return_attn_probs=True)
    dq, dk, dv_ = flashc.flash_attn_backward(dout, q, k, v, out, lse, causal=causal, window_size=window,
                                             softcap=softcap)
    assert dq.shape == q.shape and dk.shape == k.shape and dv_.shape == v.shape and dq.dtype == q.dtype
    scale = d ** -0.5
    for i in range(b):
        args = (f64(q[i]), f64(k[i]), f64(v[i]), f64(dout[i]), scale, causal, window, softcap)
        ref = attention_backward_sequence(*args)
        same = attention_backward_sequence(*args, same_dtype=dtype, out=f64(out[i]))
        for name, got, r, s in zip(("dq", "dk", "dv"), (dq[i], dk[i], dv_[i]), ref, same):
            check_close(f"{name}[{i}]", got, r, s, dtype, k=FP32_GRAD_K * math.sqrt(max(sq, sk)) if dtype == "float32" else 4)
    # deterministic=True: bitwise identical run to run
    first = flashc.flash_attn_backward(dout, q, k, v, out, lse, causal=causal, window_size=window, softcap=softcap,
                                       deterministic=True)
    second = flashc.flash_attn_backward(dout, q, k, v, out, lse, causal=causal, window_size=window,
                                        softcap=softcap, deterministic=True)
    for x, y in zip(first, second):
        np.testing.assert_array_equal(x, y)


def test_backward_varlen_and_into_given_buffers(rng):
    lengths = [3, 0, 8]
    cu = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    h, d = 2, 8
    q, k, v, dout = (random_inputs(rng, (cu[-1], h, d), "float32") for _ in range(4))
    out, lse = flashc.flash_attn_varlen_func(q, k, v, cu, cu, 8, 8, causal=True, return_attn_probs=True)
    dqkv = np.full((cu[-1], 3, h, d), np.nan, dtype=np.float32)  # one packed gradient buffer
    dq, dk, dv = flashc.flash_attn_backward(dout, q, k, v, out, lse, cu, cu, max_seqlen_q=8, max_seqlen_k=8,
                                            causal=True, dq=dqkv[:, 0], dk=dqkv[:, 1], dv=dqkv[:, 2])
    assert np.shares_memory(dq, dqkv) and not np.isnan(dqkv).any()
    for b in range(len(lengths)):
        rows = slice(cu[b], cu[b + 1])
        args = (f64(q[rows]), f64(k[rows]), f64(v[rows]), f64(dout[rows]), d ** -0.5, True)
        ref = attention_backward_sequence(*args)
        same = attention_backward_sequence(*args, same_dtype="float32", out=f64(out[rows]))
        for name, got, r, s in zip(("dq", "dk", "dv"), (dq[rows], dk[rows], dv[rows]), ref, same):
            check_close(f"{name}[{b}]", got, r, s, "float32", k=FP32_GRAD_K * math.sqrt(8))


# ---------------------------------------------------------------------------------------------
# FP8
# ---------------------------------------------------------------------------------------------

def test_fp8_forward_with_descales(rng):
    need("float8_e4m3fn")
    b, s, hq, hk, d = 2, 9, 4, 2, 16
    q = random_inputs(rng, (b, s, hq, d), "float8_e4m3fn", outliers=False)
    k = random_inputs(rng, (b, s, hk, d), "float8_e4m3fn", outliers=False)
    v = random_inputs(rng, (b, s, hk, d), "float8_e4m3fn", outliers=False)
    q_descale = rng.uniform(0.5, 2, (b, hk)).astype(np.float32)
    k_descale = rng.uniform(0.5, 2, (b, hk)).astype(np.float32)
    v_descale = rng.uniform(0.5, 2, (b, hk)).astype(np.float32)
    out = flashc.flash_attn_func(q, k, v, causal=True, q_descale=q_descale, k_descale=k_descale, v_descale=v_descale)
    assert str(out.dtype) == "bfloat16"
    group = hq // hk
    head_scale = lambda x: np.repeat(x, group, axis=1)[:, None, :, None]  # noqa: E731
    qr = f64(q) * head_scale(q_descale)
    kr, vr = f64(k) * k_descale[:, None, :, None], f64(v) * v_descale[:, None, :, None]
    ref, _ = attention_batched(qr, kr, vr, d ** -0.5, True)
    same, _ = attention_batched(qr, kr, vr, d ** -0.5, True, same_dtype="float8_e4m3fn")
    check_close("out", out, ref, rounded(same, "bfloat16"), "bfloat16")


# ---------------------------------------------------------------------------------------------
# Errors: the library's message and status, or a Python error naming the argument
# ---------------------------------------------------------------------------------------------

def _qkv(rng, b=1, s=4, hq=4, hk=4, d=8, dtype="float32"):
    return (random_inputs(rng, (b, s, hq, d), dtype), random_inputs(rng, (b, s, hk, d), dtype),
            random_inputs(rng, (b, s, hk, d), dtype))


@pytest.mark.parametrize("kwargs, status, message", [
    ({"softcap": -1.0}, "FLASHC_STATUS_INVALID_VALUE", "softcap (-1) must be finite and >= 0"),
    ({"window_size": (-2, 0)}, "FLASHC_STATUS_INVALID_VALUE", "window_left (-2) must be >= -1"),
    ({"window_size": (0, -3)}, "FLASHC_STATUS_INVALID_VALUE", "window_right (-3) must be >= -1"),
    ({"softmax_scale": float("inf")}, "FLASHC_STATUS_INVALID_VALUE", "softmax_scale (inf) must be finite"),
    ({"num_splits": 1000}, "FLASHC_STATUS_INVALID_VALUE", "num_splits (1000) must be in [0, 256]"),
])
def test_library_errors_carry_the_message(rng, kwargs, status, message):
    q, k, v = _qkv(rng)
    with pytest.raises(flashc.FlashcInvalidArgumentError) as info:
        flashc.flash_attn_func(q, k, v, **kwargs)
    error = info.value
    assert isinstance(error, ValueError) and isinstance(error, flashc.FlashcError) and isinstance(error, RuntimeError)
    assert error.status_name == status and message in error.message
    assert status in str(error) and message in str(error)


def test_gqa_mismatch_is_the_librarys_shape_error(rng):
    q, k, v = _qkv(rng, hq=12, hk=5)
    with pytest.raises(flashc.FlashcError, match=r"heads_q \(12\) is not a multiple of heads_kv \(5\)") as info:
        flashc.flash_attn_func(q, k, v)
    assert info.value.status_name == "FLASHC_STATUS_SHAPE_MISMATCH"


def test_head_dim_over_the_cpu_limit_is_not_supported(rng):
    q, k, v = _qkv(rng, d=520)
    with pytest.raises(flashc.FlashcNotSupportedError, match="head_dim \\(520\\)") as info:
        flashc.flash_attn_func(q, k, v)
    assert isinstance(info.value, NotImplementedError)
    assert info.value.status_name == "FLASHC_STATUS_NOT_SUPPORTED_HEAD_DIM"


def test_varlen_index_errors_from_the_library(rng):
    q = random_inputs(rng, (6, 2, 8), "float32")
    bad = np.array([0, 4, 2, 6], dtype=np.int32)
    with pytest.raises(flashc.FlashcInvalidArgumentError, match=r"cu_seqlens_q decreases"):
        flashc.flash_attn_varlen_func(q, q, q, bad, bad, 6, 6)
    cu = np.array([0, 2, 6], dtype=np.int32)
    with pytest.raises(flashc.FlashcInvalidArgumentError, match=r"seqused_k\[1\] \(9\) is outside"):
        flashc.flash_attn_varlen_func(q, q, q, cu, cu, 4, 4, seqused_k=np.array([1, 9], np.int32))
    with pytest.raises(flashc.FlashcError, match=r"sequence 1 has 4 rows in cu_seqlens_q, more than seqlen_q \(3\)"):
        flashc.flash_attn_varlen_func(q, q, q, cu, cu, 3, 4)


def test_page_table_entry_out_of_range(rng):
    q = random_inputs(rng, (1, 1, 2, 8), "float32")
    cache = random_inputs(rng, (2, 4, 2, 8), "float32")
    with pytest.raises(flashc.FlashcInvalidArgumentError, match=r"page_table\[0\]\[1\] \(7\) is outside"):
        flashc.flash_attn_with_kvcache(q, cache, cache, page_table=np.array([[0, 7]], np.int32), cache_seqlens=8)


def test_python_side_shape_and_type_errors(rng):
    q, k, v = _qkv(rng)
    with pytest.raises(ValueError, match="k has batch 2 but q has batch 1"):
        flashc.flash_attn_func(q, np.concatenate([k, k]), np.concatenate([v, v]))
    with pytest.raises(ValueError, match="v has shape"):
        flashc.flash_attn_func(q, k, v[:, :3])
    with pytest.raises(ValueError, match="q must be 4-D"):
        flashc.flash_attn_func(q[0], k, v)
    with pytest.raises(TypeError, match="share a dtype"):
        flashc.flash_attn_func(q, k.astype(np.float16), v)
    with pytest.raises(TypeError, match="int64"):
        flashc.flash_attn_func(q.astype(np.int64), k, v)
    with pytest.raises(TypeError, match="numpy array or a torch tensor"):
        flashc.flash_attn_func(q.tolist(), k, v)
    with pytest.raises(NotImplementedError, match="qv"):
        flashc.flash_attn_func(q, k, v, qv=q)
    with pytest.raises(ValueError, match="num_splits"):
        flashc.flash_attn_func(q, k, v, num_splits=-1)


def test_error_message_is_per_thread(rng):
    """flashc_last_error is thread-local: an error raised in one thread carries its own message."""
    import threading
    q, k, v = _qkv(rng)
    messages = {}

    def fail(name, kwargs):
        try:
            flashc.flash_attn_func(q, k, v, **kwargs)
        except flashc.FlashcError as error:
            messages[name] = error.message

    threads = [threading.Thread(target=fail, args=("softcap", {"softcap": -2.0})),
               threading.Thread(target=fail, args=("window", {"window_size": (-5, 0)}))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert "softcap (-2)" in messages["softcap"] and "window_left (-5)" in messages["window"]
