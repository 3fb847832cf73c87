"""The batch-wide conv path: the weight gradient reuses the forward's im2col columns, and
never stale ones. (The per-image path, kernels/cpu/conv_images.py, rebuilds each image's
columns in cache instead; these tests force the batch-wide path.)"""

import numpy as np
import pytest

from sporeling.core import Parameter, Tensor, grad, ops
from sporeling.core.ops.nn import conv


@pytest.fixture(autouse=True)
def batch_wide(monkeypatch):
    monkeypatch.setattr(conv, "_per_image", lambda *a: None)


def test_weight_gradient_reuses_forward_columns(monkeypatch):
    calls = []
    original = conv._im2col
    monkeypatch.setattr(conv, "_im2col", lambda *a, **k: calls.append(1) or original(*a, **k))
    x = Tensor(np.random.default_rng(0).random((2, 3, 6, 6)).astype(np.float32))
    w = Parameter(np.random.default_rng(1).random((4, 3, 3, 3)).astype(np.float32))
    grad(lambda x: ops.conv2d(x, w, pad_mode="pad", padding=1).sum(), 0, [w])(x)
    assert len(calls) == 1


def test_buffer_changed_in_place_gives_fresh_results():
    data = np.random.default_rng(0).random((2, 3, 6, 6)).astype(np.float32)
    w = Parameter(np.random.default_rng(1).random((4, 3, 3, 3)).astype(np.float32))
    x = Tensor.from_numpy(data)  # shares data: the in-place change below reaches x

    def weight_grad():
        return grad(lambda x: ops.conv2d(x, w).sum(), None, [w])(x)[0].asnumpy()

    first = weight_grad()
    data *= 2  # same array object, new values
    np.testing.assert_allclose(weight_grad(), 2 * first, rtol=1e-5)


def test_memo_is_bounded_in_bytes_and_freed_with_its_input(monkeypatch):
    # a ResNet-20 step kept every layer's columns until its backward (850 MiB, issue 24)
    monkeypatch.setattr(conv, "_COLS_MEMO", type(conv._COLS_MEMO)())
    monkeypatch.setattr(conv, "_COLS_MEMO_BYTES", 3 * 6 * 6 * 9 * 2 * 4 * 2)  # two layers' cols
    w = Parameter(np.random.default_rng(1).random((4, 3, 3, 3)).astype(np.float32))
    rng = np.random.default_rng(0)
    xs = [Tensor(rng.random((2, 3, 6, 6)).astype(np.float32)) for _ in range(4)]
    ys = [ops.conv2d(x, w, pad_mode="pad", padding=1) for x in xs]
    assert len(conv._COLS_MEMO) == 2
    assert conv._memo_bytes() <= conv._COLS_MEMO_BYTES
    del xs, ys
    assert len(conv._COLS_MEMO) == 0
    big = Tensor(np.zeros((2, 3, 12, 12), np.float32))  # columns over the budget: not kept
    ops.conv2d(big, w, pad_mode="pad", padding=1)
    assert len(conv._COLS_MEMO) == 0
