"""A NaN/inf input reaches only the outputs whose window (or taps) read it (issue #20):
``interpolate``, ``adaptive_avg_pool2d`` and ``deformable_conv2d`` used to apply dense
matrices or zero-weight reads, where 0 * NaN spread one bad value to unrelated outputs."""

import math

import numpy as np
import pytest

from sporeling.core import Tensor, ops


def _taps(n, o, ctm, mode):
    """Per output index: [(source index, weight)], PyTorch's one or two taps."""
    out = []
    for i in range(o):
        if ctm == "align_corners":
            src = i * (n - 1) / (o - 1) if o > 1 else 0.0
        elif ctm == "half_pixel":
            src = (i + 0.5) * n / o - 0.5 if o > 1 else 0.0
        else:
            src = i * n / o
        if mode == "nearest":
            j = math.floor(src) if ctm == "asymmetric" else math.floor(src + 0.5)
            out.append([(min(max(j, 0), n - 1), 1.0)])
            continue
        src = min(max(src, 0.0), n - 1)
        j0 = math.floor(src)
        lam = src - j0
        out.append([(j0, 1 - lam), (min(j0 + 1, n - 1), lam)])
    return out


def _resize_ref(x, new, ctm, mode):
    out = x.astype(np.float64)
    for k, o in enumerate(new):
        axis = x.ndim - len(new) + k
        rows = [
            sum(w * np.take(out, j, axis=axis) for j, w in taps)
            for taps in _taps(out.shape[axis], o, ctm, mode)
        ]
        out = np.stack(rows, axis=axis)
    return out


def _bad(shape, where, value):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    x[where] = value
    return x


def _same_nonfinite(got, want):
    got = got.asnumpy().astype(np.float64)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    fin = np.isfinite(want)
    assert fin.any()
    np.testing.assert_allclose(got[fin], want[fin], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("value", [np.nan, np.inf])
@pytest.mark.parametrize(
    "mode,ctm,new",
    [
        ("bilinear", "align_corners", (7, 9)),
        ("bilinear", "half_pixel", (3, 5)),
        ("bilinear", "asymmetric", (8, 12)),
        ("nearest", "asymmetric", (7, 9)),
        ("nearest", "half_pixel", (2, 3)),
    ],
)
def test_interpolate_spreads_a_bad_value_only_to_outputs_that_read_it(mode, ctm, new, value):
    x = _bad((1, 2, 4, 6), (0, 1, 2, 3), value)
    with np.errstate(invalid="ignore"):  # a zero-weight tap on inf gives NaN, as PyTorch
        got = ops.interpolate(Tensor(x), sizes=new, coordinate_transformation_mode=ctm, mode=mode)
        want = _resize_ref(x, new, ctm, "nearest" if mode == "nearest" else "linear")
    assert np.isfinite(want[0, 0]).all()  # the other channel is untouched
    _same_nonfinite(got, want)


def test_interpolate_linear_1d_bad_value():
    x = _bad((2, 3, 5), (1, 2, 1), np.nan)
    got = ops.interpolate(Tensor(x), sizes=(9,))
    _same_nonfinite(got, _resize_ref(x, (9,), "align_corners", "linear"))


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("out_hw,where", [((3, 2), (0, 1, 3, 1)), ((4, 5), (1, 0, 6, 4))])
def test_adaptive_avg_pool2d_bad_value_only_in_its_windows(out_hw, where, value):
    x = _bad((2, 3, 7, 5), where, value)
    got = ops.adaptive_avg_pool2d(Tensor(x), out_hw)
    h, w = x.shape[-2:]
    oh, ow = out_hw
    want = np.empty(x.shape[:2] + out_hw)
    x64 = x.astype(np.float64)
    for i in range(oh):
        a, b = (i * h) // oh, -(-((i + 1) * h) // oh)
        for j in range(ow):
            c, d = (j * w) // ow, -(-((j + 1) * w) // ow)
            want[..., i, j] = x64[..., a:b, c:d].mean((-1, -2))
    _same_nonfinite(got, want)


def test_deformable_conv2d_outside_samples_read_zero_not_a_nan_at_the_origin():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 2, 5, 5))
    x[0, 0, 0, 0] = np.nan
    w = rng.standard_normal((3, 2, 2, 2))
    off = np.zeros((1, 12, 4, 4))
    off[:, 4:8, 2:, :] = 100.0  # y offsets of the lower half: every sample leaves the image
    off[:, 8:] = 1.0
    got = ops.deformable_conv2d(Tensor(x), Tensor(w), Tensor(off), (2, 2), (1, 1, 1, 1), 0)
    got = got.asnumpy()
    np.testing.assert_array_equal(got[:, :, 2:], 0.0)
    want = ops.conv2d(Tensor(x), Tensor(w)).asnumpy()
    np.testing.assert_array_equal(np.isnan(got[:, :, :2]), np.isnan(want[:, :, :2]))
    np.testing.assert_allclose(got[:, :, :2], want[:, :, :2], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("value", [np.nan, np.inf])
@pytest.mark.parametrize("pos", [0, 9, 19])
def test_stft_a_bad_sample_makes_only_its_frames_nonfinite(pos, value):
    x = _bad((20,), pos, value)
    with np.errstate(invalid="ignore"):
        got = ops.stft(Tensor(x), 8, hop_length=2).asnumpy()
        padded = np.pad(x.astype(np.float64), 4, mode="reflect")
        frames = np.stack([padded[t * 2 : t * 2 + 8] for t in range(11)])
        ref = np.fft.rfft(frames, axis=-1)  # (frames, freq)
    bad_ref = ~np.isfinite(ref).all(-1)
    assert bad_ref.any() and not bad_ref.all()
    np.testing.assert_array_equal(~np.isfinite(got).all((0, 2)), bad_ref)
    # within a bad frame every bin is non-finite (the DFT's sum); np.fft leaves some finite
    assert not np.isfinite(got[:, bad_ref]).any()
