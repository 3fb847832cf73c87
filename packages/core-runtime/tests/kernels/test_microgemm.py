"""The explicit-SIMD float32 GEMM micro-kernel against float64 products."""

import numpy as np
import pytest

from sporeling.core.kernels.cpu import microgemm

pytestmark = pytest.mark.skipif(not microgemm.available(), reason="no AVX-512 on this CPU")


@pytest.mark.parametrize(
    "m,k,n,ldb,ldc",
    [(16, 144, 1024, 1024, 1024), (8, 5, 40, 48, 41), (24, 1, 32, 32, 32), (8, 300, 95, 97, 99)],
)
@pytest.mark.parametrize("acc", [False, True])
def test_blocks_match_the_float64_product(m, k, n, ldb, ldc, acc):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, ldb)).astype(np.float32)
    c0 = rng.standard_normal((m, ldc)).astype(np.float32)
    c = c0.copy()
    ap = np.empty((m // 8, k, 8), np.float32)
    microgemm.pack_rows(a, ap)
    full = microgemm.gemm_blocks(ap, k, b.ctypes.data, ldb, c.ctypes.data, ldc, n, acc)
    assert full == n - n % 32
    want = a.astype(np.float64) @ b[:, :full].astype(np.float64)
    if acc:
        want += c0[:, :full]
    np.testing.assert_allclose(c[:, :full], want, rtol=1e-5, atol=2e-5 * np.sqrt(k))
    np.testing.assert_array_equal(c[:, full:], c0[:, full:])  # columns past the blocks untouched


def test_pack_cols_packs_the_transpose():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((16, 7)).astype(np.float32)
    p_rows, p_cols = np.empty((2, 7, 8), np.float32), np.empty((2, 7, 8), np.float32)
    microgemm.pack_rows(a, p_rows)
    microgemm.pack_cols(np.ascontiguousarray(a.T), p_cols)
    np.testing.assert_array_equal(p_rows, p_cols)
    np.testing.assert_array_equal(p_rows[1, 3], a[8:16, 3])


@pytest.mark.parametrize(
    "m,k,n,lda", [(8, 64, 48, 64), (16, 100, 80, 130), (24, 7, 16, 7), (8, 9, 15, 9)]
)
@pytest.mark.parametrize("acc", [False, True])
def test_rows_read_in_place_match_the_float64_product(m, k, n, lda, acc):
    """``gemm_rows``: A row-major in place, blocks of 32 then 16 columns, the rest untouched."""
    rng = np.random.default_rng(2)
    a = rng.standard_normal((m, lda)).astype(np.float32)
    ldb, ldc = n + 3, n + 5
    b = rng.standard_normal((k, ldb)).astype(np.float32)
    c0 = rng.standard_normal((m, ldc)).astype(np.float32)
    c = c0.copy()
    done = microgemm.gemm_rows(
        a.ctypes.data, lda, m, k, b.ctypes.data, ldb, c.ctypes.data, ldc, n, acc
    )
    assert done == n - n % 32 + (16 if n % 32 >= 16 else 0)
    want = a[:, :k].astype(np.float64) @ b[:, :done].astype(np.float64)
    if acc:
        want += c0[:, :done]
    np.testing.assert_allclose(c[:, :done], want, rtol=1e-5, atol=2e-5 * np.sqrt(k))
    np.testing.assert_array_equal(c[:, done:], c0[:, done:])
