"""x @ y + bias as one OpenBLAS gemm with beta = 1, against NumPy, and the cases it declines."""

import numpy as np
import pytest

from sporeling.core.kernels.cpu import gemm_bias as G


@pytest.fixture(autouse=True)
def _needs_cblas():
    if G._cblas("s") is None:
        pytest.skip("NumPy's BLAS is not an OpenBLAS with CBLAS and a threads callback")


LAYOUTS = {
    "x @ y": lambda x, y: (x, y),
    "x @ y^T": lambda x, y: (x, np.ascontiguousarray(y.T).T),
    "x^T @ y": lambda x, y: (np.ascontiguousarray(x.T).T, y),
    "strided rows": lambda x, y: (np.pad(x, ((0, 0), (0, 3)))[:, : x.shape[1]], y),
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_product_plus_bias_equals_numpy(layout, dtype):
    rng = np.random.default_rng(0)
    x, y = LAYOUTS[layout](
        rng.standard_normal((37, 19)).astype(dtype), rng.standard_normal((19, 23)).astype(dtype)
    )
    bias = rng.standard_normal(23).astype(dtype)
    out = np.full((37, 23), np.nan, dtype)
    got = G.gemm_bias(x, y, bias, out)
    assert got is out
    want = x.astype(np.float64) @ y.astype(np.float64) + bias
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-5)
    fresh = G.gemm_bias(x, y, bias, None)
    np.testing.assert_array_equal(fresh, got)


def test_declines_what_cblas_cannot_take():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 6)).astype(np.float32)
    y = rng.standard_normal((6, 5)).astype(np.float32)
    b = np.ones(5, np.float32)
    assert G.gemm_bias(x[:, ::2], y[:3], b, None) is None  # no unit stride
    assert G.gemm_bias(x.astype(np.int64), y.astype(np.int64), b.astype(np.int64), None) is None
    assert G.gemm_bias(x, y.astype(np.float64), b, None) is None  # mixed dtypes
    assert G.gemm_bias(x, y, np.ones(4, np.float32), None) is None  # bias length
    assert G.gemm_bias(x, y, b, np.empty((5, 8), np.float32).T) is None  # out not C-order
    shared = np.zeros((8, 11), np.float32)
    assert G.gemm_bias(shared[:, :6], y, b, shared[:, 6:].copy()) is not None
    buf = np.zeros(8 * 5 + 8 * 6, np.float32)
    x_in, out_in = buf[:48].reshape(8, 6), buf[48:].reshape(8, 5)
    x_in[...] = x
    assert G.gemm_bias(x_in, y, b, buf[:40].reshape(8, 5)) is None  # out overlaps x
    got = G.gemm_bias(x_in, y, b, out_in)
    np.testing.assert_allclose(got, x @ y + b, rtol=1e-5)
