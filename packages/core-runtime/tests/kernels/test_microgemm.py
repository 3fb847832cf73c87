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
