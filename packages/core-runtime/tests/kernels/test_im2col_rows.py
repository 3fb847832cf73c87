"""The row-parallel Numba im2col/col2im kernels (kernels/cpu/conv.py) against the NumPy slicing
path they replace on the CPU (the per-image C functions are in test_conv_columns.py)."""

import numpy as np
import pytest

from sporeling.core.kernels.cpu import _rows
from sporeling.core.ops.nn.conv import _col2im, _im2col

CASES = [  # (N, C, H, W), kernel, stride, pads, dilation
    ((2, 3, 7, 9), (3, 2), (1, 1), ((0, 0), (0, 0)), (1, 1)),
    ((3, 2, 8, 6), (3, 3), (2, 1), ((1, 2), (2, 0)), (1, 2)),
    ((1, 1, 5, 5), (2, 4), (3, 2), ((3, 3), (0, 4)), (2, 1)),  # padding past the kernel
    ((2, 1, 4, 4), (5, 5), (1, 1), ((2, 2), (2, 2)), (1, 1)),  # taps wholly in the padding
]


def _out_sp(shape, kernel, stride, pads, dilation):
    return tuple(
        (shape[2 + a] + sum(pads[a]) - dilation[a] * (kernel[a] - 1) - 1) // stride[a] + 1
        for a in range(2)
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES)
def test_im2col_and_col2im_match_the_numpy_path(case, dtype):
    shape, kernel, stride, pads, dilation = case
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(dtype)
    out_sp = _out_sp(shape, kernel, stride, pads, dilation)
    args = (kernel, stride, pads, dilation, out_sp)
    want = _im2col(np, x, *args, fast=False)
    got = _im2col(np, x, *args, fast=True)
    assert got.dtype == dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    cols = rng.standard_normal(want.shape).astype(dtype)
    back = (kernel, stride, pads, dilation)
    want_img = _col2im(np, cols, shape, *back, fast=False)
    got_img = _col2im(np, cols, shape, *back, fast=True)
    np.testing.assert_allclose(got_img, want_img, rtol=1e-6 if dtype == np.float32 else 1e-13)


def test_large_inputs_split_over_threads_give_the_same_columns(monkeypatch):
    """Above PARALLEL_MIN the rows (and planes) run in blocks on several threads."""
    calls = []
    real = _rows.run_blocks

    def spy(fn, rows, blocks, chunks=None):
        calls.append(blocks)
        return real(fn, rows, blocks, chunks)

    monkeypatch.setattr("sporeling.core.kernels.cpu.conv.run_blocks", spy)
    monkeypatch.setattr("sporeling.core.kernels.cpu.conv.n_blocks", lambda rows, n: 2)
    x = np.random.default_rng(1).standard_normal((8, 3, 20, 20)).astype(np.float32)
    args = ((3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), (20, 20))
    np.testing.assert_array_equal(
        _im2col(np, x, *args, fast=True), _im2col(np, x, *args, fast=False)
    )
    cols = np.random.default_rng(2).standard_normal((3, 3, 3, 8, 20, 20)).astype(np.float32)
    back = ((3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1))
    np.testing.assert_allclose(
        _col2im(np, cols, x.shape, *back, fast=True),
        _col2im(np, cols, x.shape, *back, fast=False),
        rtol=1e-6,
    )
    assert calls == [2, 2]
