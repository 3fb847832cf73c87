"""The C functions of kernels/cpu/conv_columns.py (im2col, col2im, the channels-last copy),
called by address as the conv kernels call them, against NumPy references (float64 and
float32, odd shapes, stride, padding, dilation, one-sided cases where a tap misses the
image)."""

import ctypes

import numpy as np
import pytest

from sporeling.core.kernels.cpu import conv_columns

PROTO = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, *[ctypes.c_int64] * 13)
CASES = [  # C, H, W, KH, KW, stride h/w, pad h/w, dilation h/w
    (1, 5, 7, 3, 3, 1, 1, 1, 1, 1, 1),
    (3, 9, 6, 3, 2, 2, 1, 0, 1, 1, 1),
    (2, 8, 8, 5, 5, 1, 1, 0, 0, 1, 1),
    (4, 7, 9, 3, 3, 1, 2, 2, 1, 2, 1),
    (2, 4, 5, 3, 3, 3, 2, 2, 2, 1, 2),
    (1, 3, 3, 1, 1, 1, 1, 0, 0, 1, 1),
]


def _out(n, k, s, p, d):
    return (n + 2 * p - d * (k - 1) - 1) // s + 1


def _ref_index(c, h, w, kh, kw, sh, sw, ph, pw, dh, dw):
    """For each (c, i, j) row and output pixel: the flat input index, or -1 (padding)."""
    oh, ow = _out(h, kh, sh, ph, dh), _out(w, kw, sw, pw, dw)
    cc, i, j, y, x = np.meshgrid(
        np.arange(c), np.arange(kh), np.arange(kw), np.arange(oh), np.arange(ow), indexing="ij"
    )
    yy, xx = y * sh - ph + i * dh, x * sw - pw + j * dw
    inside = (yy >= 0) & (yy < h) & (xx >= 0) & (xx < w)
    idx = np.where(inside, (cc * h + yy) * w + xx, -1)
    return idx.reshape(c * kh * kw, oh * ow), oh, ow


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("case", CASES)
def test_im2col_and_col2im_match_numpy(case, dtype):
    c, h, w, kh, kw, sh, sw, ph, pw, dh, dw = case
    rng = np.random.default_rng(sum(case))
    idx, oh, ow = _ref_index(c, h, w, kh, kw, sh, sw, ph, pw, dh, dw)
    x = rng.standard_normal((2, c, h, w)).astype(dtype)
    want = np.where(idx >= 0, x[1].reshape(-1)[np.maximum(idx, 0)], 0)
    cols = np.full((c * kh * kw, oh * ow), np.nan, dtype)  # every element written
    geo = (c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow)
    PROTO(conv_columns.address("im2col", dtype))(x[1:].ctypes.data, cols.ctypes.data, *geo)
    np.testing.assert_array_equal(cols, want)
    g = rng.standard_normal(cols.shape).astype(dtype)
    want_img = np.zeros(c * h * w)
    np.add.at(want_img, idx[idx >= 0], g.astype(np.float64)[idx >= 0])
    out = np.full((c, h, w), np.nan, dtype)  # overwritten, not added into
    PROTO(conv_columns.address("col2im", dtype))(g.ctypes.data, out.ctypes.data, *geo)
    tol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(out.reshape(-1), want_img, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_channels_last_copy_fills_the_interior_only(dtype):
    rng = np.random.default_rng(3)
    c, h, w, hp, wp, ph, pw = 5, 4, 7, 7, 10, 1, 2
    x = rng.standard_normal((c, h, w)).astype(dtype)
    xq = np.full((hp, wp, c), -7.0, dtype)
    fn = PROTO(conv_columns.address("nhwc", dtype))
    fn(x.ctypes.data, xq.ctypes.data, c, h, w, hp, wp, ph, pw, 0, 0, 0, 0, 0, 0)
    want = np.full((hp, wp, c), -7.0, dtype)
    want[ph : ph + h, pw : pw + w] = x.transpose(1, 2, 0)
    np.testing.assert_array_equal(xq, want)


def test_address_is_per_dtype_and_reused():
    a32 = conv_columns.address("im2col", np.float32)
    assert a32 == conv_columns.address("im2col", "float32")
    assert a32 != conv_columns.address("im2col", np.float64)
    with pytest.raises(ValueError, match="name 'transpose'"):
        conv_columns.address("transpose", np.float32)
    with pytest.raises(ValueError, match="dtype int32"):
        conv_columns.address("im2col", np.int32)
