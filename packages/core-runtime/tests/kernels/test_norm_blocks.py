"""Batch norm's kernels on blocks of channels across threads give the one-thread results."""

import numpy as np
import pytest

from sporeling.core.kernels.cpu import norm


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_batch_norm_channel_blocks_match_one_thread(dtype, monkeypatch):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((6, 7, 40)) * 3 + 1).astype(dtype)
    w, b = rng.standard_normal(7).astype(dtype), rng.standard_normal(7).astype(dtype)
    gy, gm, gv = (rng.standard_normal(s).astype(dtype) for s in (x.shape, 7, 7))
    runs = []
    for blocks in (1, 3):
        monkeypatch.setattr(norm, "n_blocks", lambda rows, elements, _b=blocks: _b)
        y, mean, var = norm.batch_norm_forward(x, w, b, 1e-5)
        runs.append((y, mean, var, *norm.batch_norm_backward(gy, gm, gv, x, w, mean, var, 1e-5)))
    for one, split in zip(*runs):
        np.testing.assert_array_equal(one, split)
    x64 = x.astype(np.float64)
    mu, va = x64.mean(axis=(0, 2)), x64.var(axis=(0, 2))
    want = (x64 - mu[:, None]) / np.sqrt(va[:, None] + 1e-5) * w[:, None] + b[:, None]
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(runs[1][0], want, rtol=tol, atol=tol)
