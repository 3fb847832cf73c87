"""Regression tests for the defects of the hardening issue (#20): each fails on the code
before its fix (a silent wrong result, a crash or an error naming no op)."""

import numpy as np
import pytest

from sporeling.core import Tensor, ops

# ---- silent wrong results ----------------------------------------------------------------


@pytest.mark.parametrize("fn", [ops.reduce_mean, ops.mean])
def test_mean_of_float16_accumulates_in_float32(fn):
    x = np.full((4, 3), 60000, np.float16)
    out = fn(Tensor(x))
    assert out.dtype == Tensor(x).dtype
    assert float(out) == pytest.approx(60000, rel=1e-3)
    np.testing.assert_allclose(fn(Tensor(x), 0).asnumpy(), np.full(3, 60000, np.float16))
    assert np.isfinite(Tensor(x).mean().asnumpy())


def test_mean_of_float16_gradient_stays_float16():
    from sporeling.core import grad

    g = grad(lambda t: ops.mean(t))(Tensor(np.ones((2, 2), np.float16)))
    assert g.dtype == Tensor(np.ones(1, np.float16)).dtype
    np.testing.assert_allclose(g.asnumpy(), np.full((2, 2), 0.25))


def test_cast_to_none_is_refused():
    with pytest.raises(TypeError, match="cast.*dtype.*None"):
        ops.cast(Tensor([1.0, 2.0]), None)


@pytest.mark.parametrize("shape", ["32", (32.0,), 32.0, (4.0, 8), (True, 32), [4, 8.5]])
def test_reshape_refuses_non_int_shapes(shape):
    with pytest.raises(TypeError, match="reshape.*shape"):
        ops.reshape(Tensor(np.arange(32.0)), shape)


def test_reshape_accepts_int_sequences_and_int_tensors():
    x = Tensor(np.arange(32.0))
    assert ops.reshape(x, [4, np.int64(8)]).shape == (4, 8)
    assert ops.reshape(x, Tensor(np.array([8, -1]))).shape == (8, 4)
    assert ops.reshape(x, 32).shape == (32,)
