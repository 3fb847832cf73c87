"""The float32 sigmoid kernel: accuracy over a wide range, saturation and special values."""

import numpy as np

from sporeling.core.kernels.cpu.activation import sigmoid32


def test_sigmoid32_matches_float64_and_special_values():
    x = np.concatenate(
        [np.linspace(-120, 120, 200_000), [np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-30, -1e-30, 3.0]]
    ).astype(np.float32)
    got = sigmoid32(x.reshape(8, -1)).reshape(-1)
    with np.errstate(over="ignore"):
        ref = 1 / (1 + np.exp(-x.astype(np.float64)))
    finite = np.isfinite(x)
    tiny = np.finfo(np.float32).tiny
    rel = np.abs(got[finite] - ref[finite]) / np.maximum(ref[finite], tiny)
    assert rel[ref[finite] > tiny].max() < 4e-7  # a few float32 ulp
    assert np.all(got[finite] >= 0) and np.all(got[finite] <= 1)
    np.testing.assert_array_equal(got[-8:-5], [1.0, 0.0, np.nan])
    np.testing.assert_array_equal(got[-5:-1], [0.5, 0.5, 0.5, 0.5])
