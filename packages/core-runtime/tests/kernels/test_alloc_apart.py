"""kernels/cpu/_alloc.py: outputs placed clear of their inputs' 4 KB page offsets."""

import numpy as np
import pytest

from sporeling.core.kernels.cpu import _alloc, relu_grad


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_output_starts_clear_of_every_input(dtype):
    rng = np.random.default_rng(0)
    for shift in range(0, 4096, 48):  # inputs at many page offsets, some close together
        raw = np.empty(70_000 * 8 + 8192, np.uint8)
        a = raw[shift : shift + 70_000 * 8].view(np.float64)
        b = raw[(shift + 16) % 64 : (shift + 16) % 64 + 8 * 9_000].view(np.float64)
        out = _alloc.empty_apart((70, 1000), dtype, a, b)
        assert out.shape == (70, 1000) and out.dtype == dtype
        assert out.flags.c_contiguous and out.flags.writeable
        assert out.ctypes.data % max(64, np.dtype(dtype).itemsize) == 0
        for arr in (a, b):
            assert (out.ctypes.data - arr.ctypes.data) % _alloc.PAGE >= _alloc.GAP
        out[...] = rng.integers(0, 9, out.shape)  # the whole buffer is usable
        assert out.sum() >= 0


def test_small_outputs_and_no_inputs_are_plain_arrays():
    x = np.zeros(10, np.float32)
    small = _alloc.empty_apart((4, 4), np.float32, x)
    assert small.shape == (4, 4) and small.base is None
    big = _alloc.empty_apart(100_000, np.float32)
    assert big.shape == (100_000,) and big.base is None


def test_relu_grad_output_is_placed_apart_and_exact():
    rng = np.random.default_rng(1)
    g = rng.standard_normal((64, 6, 28, 28)).astype(np.float32)
    x = rng.standard_normal((64, 6, 28, 28)).astype(np.float32)
    out = relu_grad.relu_grad(g, x)
    np.testing.assert_array_equal(out, np.where(x > 0, g, 0))
    for arr in (g, x):
        assert (out.ctypes.data - arr.ctypes.data) % _alloc.PAGE >= _alloc.GAP
