"""The cache-blocked product on the AVX-512 micro-kernel against float64 products."""

import numpy as np
import pytest

from sporeling.core.kernels.cpu import microgemm, packed_gemm

needs_avx512 = pytest.mark.skipif(not microgemm.available(), reason="no AVX-512 on this CPU")


def _ref(a, b):
    return a.astype(np.float64) @ b.astype(np.float64)


def _check(got, a, b):
    k = a.shape[1]
    np.testing.assert_allclose(got, _ref(a, b), rtol=1e-5, atol=2e-5 * np.sqrt(max(k, 1)))


def _operands(rng, m, n, k, form):
    """``a`` (m, k) and ``b`` (k, n) laid out as the backward's products see them."""
    if form == "nn":
        return rng.standard_normal((m, k)), rng.standard_normal((k, n))
    if form == "nt":  # dense forward: x @ W.T
        return rng.standard_normal((m, k)), rng.standard_normal((n, k)).T
    if form == "tn":  # weight gradient: dy.T @ x
        return rng.standard_normal((k, m)).T, rng.standard_normal((k, n))
    return rng.standard_normal((k, m)).T, rng.standard_normal((n, k)).T  # "tt"


@needs_avx512
@pytest.mark.parametrize("form", ["nn", "nt", "tn", "tt"])
@pytest.mark.parametrize(
    "m,n,k",
    [(1, 1, 1), (7, 31, 33), (33, 7, 1), (8, 32, 16), (31, 33, 7), (64, 96, 40), (513, 33, 70)],
)
def test_odd_shapes_and_transposes_match_float64(m, n, k, form, monkeypatch):
    # small blocks so that these shapes cross several K chunks and M blocks
    monkeypatch.setattr(packed_gemm, "KC", 16)
    monkeypatch.setattr(packed_gemm, "MC", 24)
    rng = np.random.default_rng(m * 1000 + n * 10 + k)
    a, b = (x.astype(np.float32) for x in _operands(rng, m, n, k, form))
    _check(packed_gemm.gemm(a, b), a, b)


@needs_avx512
def test_default_blocks_on_a_gpt_like_shape():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((130, 600)).astype(np.float32)
    b = rng.standard_normal((97, 600)).astype(np.float32).T
    _check(packed_gemm.gemm(a, b), a, b)


@needs_avx512
def test_non_contiguous_and_negative_strides(monkeypatch):
    monkeypatch.setattr(packed_gemm, "KC", 8)
    rng = np.random.default_rng(4)
    big_a = rng.standard_normal((40, 60)).astype(np.float32)
    big_b = rng.standard_normal((50, 70)).astype(np.float32)
    for a, b in (
        (big_a[::2, ::3], big_b[:20:1, ::2]),  # strided rows and columns
        (big_a[::-1, :25], big_b[::-1, ::-1][:25]),  # reversed
        (big_a[3:20, 1:26], big_b[5:30, 7:50]),  # offset windows
    ):
        _check(packed_gemm.gemm(a, b), a, b)


@needs_avx512
def test_into_out_including_a_strided_out():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((17, 9)).astype(np.float32)
    b = rng.standard_normal((9, 40)).astype(np.float32)
    out = np.full((17, 40), 7.0, np.float32)
    assert packed_gemm.gemm(a, b, out) is out
    _check(out, a, b)
    wide = np.full((17, 80), 7.0, np.float32)
    packed_gemm.gemm(a, b, wide[:, ::2])
    _check(wide[:, ::2], a, b)
    np.testing.assert_array_equal(wide[:, 1::2], 7.0)


@needs_avx512
def test_empty_dimensions():
    empty = packed_gemm.gemm(np.ones((0, 3), np.float32), np.ones((3, 4), np.float32))
    assert empty.shape == (0, 4)
    np.testing.assert_array_equal(
        packed_gemm.gemm(np.ones((2, 0), np.float32), np.ones((0, 5), np.float32)), 0.0
    )


@needs_avx512
def test_bad_operands_are_named():
    with pytest.raises(TypeError, match="a must be a 2-d float32"):
        packed_gemm.gemm(np.ones((2, 2)), np.ones((2, 2), np.float32))
    with pytest.raises(ValueError, match="b has 3 rows, expected K = 2"):
        packed_gemm.gemm(np.ones((2, 2), np.float32), np.ones((3, 2), np.float32))
    with pytest.raises(ValueError, match="out must be float32 of shape"):
        packed_gemm.gemm(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32), np.ones(4))


def test_without_avx512_it_refuses(monkeypatch):
    monkeypatch.setattr(packed_gemm, "available", lambda: False)
    with pytest.raises(RuntimeError, match="AVX-512"):
        packed_gemm.gemm(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32))
