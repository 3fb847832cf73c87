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


def _infer_ref(x, mean, scale, bias):
    bs = (1, -1) + (1,) * (x.ndim - 2)
    f = [np.asarray(a, np.float64) for a in (x, mean, scale, bias)]
    return (f[0] - f[1].reshape(bs)) * f[2].reshape(bs) + f[3].reshape(bs)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1, 3), (5, 4), (1, 7, 9, 11), (3, 5, 1, 2, 3), (64, 16, 1024)])
def test_batch_norm_infer_kernel_matches_reference(dtype, shape, monkeypatch):
    """One pass per (image, channel) row, on one thread and on row blocks alike."""
    from sporeling.core.ops.activation.normalization import batch_norm_infer_p

    rng = np.random.default_rng(1)
    c = shape[1]
    x = (rng.standard_normal(shape) * 2 + 3).astype(dtype)
    mean, bias = (rng.standard_normal(c).astype(dtype) for _ in range(2))
    scale = (rng.random(c) + 0.5).astype(dtype)
    runs = []
    for blocks in (1, 3):
        monkeypatch.setattr(norm, "n_blocks", lambda rows, elements, _b=blocks: _b)
        runs.append(batch_norm_infer_p.impls["cpu"](np, x, mean, scale, bias))
    np.testing.assert_array_equal(runs[0], runs[1])
    assert runs[0].dtype == dtype and runs[0].shape == shape
    tol = 2e-6 if dtype == np.float32 else 1e-14
    np.testing.assert_allclose(runs[0], _infer_ref(x, mean, scale, bias), rtol=tol, atol=tol)


def test_batch_norm_infer_non_contiguous_and_module():
    """A transposed (non-contiguous) input, and BatchNorm2d in eval mode, through the op."""
    from sporeling.core import Tensor, nn, ops

    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 6, 5, 3)).astype(np.float32).transpose(0, 1, 3, 2)
    rm, rv = rng.standard_normal(6).astype(np.float32), (rng.random(6) + 0.1).astype(np.float32)
    w, b = rng.standard_normal(6).astype(np.float32), rng.standard_normal(6).astype(np.float32)
    args = [Tensor(a) for a in (rm, rv, w, b)]
    y = ops.batch_norm(Tensor(x), *args, training=False, eps=1e-3).asnumpy()
    want = _infer_ref(x, rm, w / np.sqrt(rv.astype(np.float64) + 1e-3), b)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    bn = nn.BatchNorm2d(6)
    bn.set_train(False)
    got = bn(Tensor(np.ascontiguousarray(x))).asnumpy()
    np.testing.assert_allclose(
        got,
        _infer_ref(x, np.zeros(6), np.full(6, 1 / np.sqrt(1 + 1e-5)), np.zeros(6)),
        rtol=1e-6,
        atol=1e-6,
    )
