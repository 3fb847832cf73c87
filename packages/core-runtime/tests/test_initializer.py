"""Initializers: MindSpore names/defaults, statistics, fans, reproducibility, errors."""

import numpy as np
import pytest

from sporeling.core import initializer as init_mod
from sporeling.core.initializer import (
    Constant,
    HeNormal,
    HeUniform,
    Normal,
    One,
    Orthogonal,
    TruncatedNormal,
    XavierUniform,
    initializer,
)
from sporeling.core.random_state import set_seed


def test_names_numbers_and_tensors():
    assert initializer("zeros", (2, 3)).asnumpy().sum() == 0
    assert initializer("ones", 4, "float16").dtype == "float16"
    assert initializer(2.5, (2,)).tolist() == [2.5, 2.5]
    t = initializer(One(), (2,))
    assert initializer(t, (2,)).tolist() == [1, 1]


def test_statistics():
    set_seed(1)
    w = initializer(Normal(sigma=0.5, mean=1.0), (200, 200)).asnumpy()
    assert abs(w.mean() - 1.0) < 0.01 and abs(w.std() - 0.5) < 0.01
    t = initializer(TruncatedNormal(sigma=0.1), (300, 300)).asnumpy()
    assert np.abs(t).max() <= 0.2 + 1e-6
    fan_in, fan_out = 64 * 9, 32 * 9
    x = initializer(XavierUniform(), (32, 64, 3, 3)).asnumpy()
    assert np.abs(x).max() <= np.sqrt(6 / (fan_in + fan_out)) + 1e-6
    h = initializer(HeNormal(nonlinearity="relu"), (256, 512)).asnumpy()
    assert abs(h.std() - np.sqrt(2 / 512)) < 0.002
    u = initializer(HeUniform(mode="fan_out"), (256, 512)).asnumpy()
    assert np.abs(u).max() <= np.sqrt(6 / 256) + 1e-6
    q = initializer(Orthogonal(), (8, 8)).asnumpy()
    np.testing.assert_allclose(q @ q.T, np.eye(8), atol=1e-5)


def test_reproducible_with_set_seed():
    set_seed(7)
    a = initializer("normal", (5,)).asnumpy()
    set_seed(7)
    b = initializer("normal", (5,)).asnumpy()
    np.testing.assert_array_equal(a, b)


def test_errors():
    with pytest.raises(ValueError, match="unknown initializer name"):
        initializer("bogus", (2,))
    with pytest.raises(ValueError, match="shape"):
        initializer("ones")
    with pytest.raises(TypeError, match="init"):
        initializer(object(), (2,))
    with pytest.raises(ValueError, match="mode"):
        HeNormal(mode="fan_avg")
    with pytest.raises(ValueError, match="2 dims"):
        initializer(XavierUniform(), (4,))
    assert Constant(3)((2,)).tolist() == [3, 3]
    assert init_mod.calculate_gain("tanh") == pytest.approx(5 / 3)
