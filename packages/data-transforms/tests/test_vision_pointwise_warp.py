"""The one-pass kernels behind AdjustGamma, AutoContrast, Equalize, RandomColor, Pad and
the NEAREST affine warp, against the NumPy expressions (or generic kernel) they replaced.

Every comparison is exact: the kernels do the same integer and single-precision steps in
one pass, so any difference is a bug. Odd shapes (1x1, one row, one column), gray, RGB,
RGBA and non-contiguous inputs are covered.
"""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageEnhance

from sporeling.data.vision import _color, _common, _geometry
from sporeling.data.vision.kernels import color as kcolor
from sporeling.data.vision.kernels import geometry, pointwise
from sporeling.data.vision.utils import Border

SHAPES = [(1, 1, 3), (1, 7, 3), (9, 1, 3), (13, 17, 3), (13, 17, 4), (13, 17, 1), (5, 6)]


def _img(shape, seed=0):
    return np.random.default_rng(seed).integers(0, 256, shape, dtype=np.uint8)


def _c(img):
    return 1 if img.ndim == 2 else img.shape[2]


@pytest.mark.parametrize("shape", SHAPES)
def test_apply_luts_equals_fancy_indexing(shape):
    img = _img(shape)
    luts = _img((_c(img), 256), seed=1)
    ref = (
        luts[0][img]
        if img.ndim == 2
        else np.stack([luts[k][img[..., k]] for k in range(_c(img))], axis=-1)
    )
    np.testing.assert_array_equal(pointwise.apply_luts(img, luts), ref)


def test_apply_luts_reads_non_contiguous_input_and_checks_the_tables():
    img = _img((20, 30, 3))[::2, ::3]
    luts = _img((3, 256), seed=2)
    ref = np.stack([luts[k][img[..., k]] for k in range(3)], axis=-1)
    np.testing.assert_array_equal(pointwise.apply_luts(img, luts), ref)
    with pytest.raises(ValueError, match=r"shape \(3, 256\)"):
        pointwise.apply_luts(img, luts[:2])


@pytest.mark.parametrize("shape", [*SHAPES, (0, 4, 3)])
def test_channel_histograms_equal_bincount(shape):
    img = _img(shape)
    ref = [
        np.bincount(ch.ravel(), minlength=256)
        for ch in np.moveaxis(img.reshape(*img.shape[:2], _c(img)), -1, 0)
    ]
    np.testing.assert_array_equal(pointwise.channel_histograms(img), np.stack(ref))


def test_channel_histograms_of_a_flat_region():
    img = np.full((31, 33, 3), 200, np.uint8)[:, ::2]
    h = pointwise.channel_histograms(img)
    assert h[:, 200].tolist() == [31 * 17] * 3 and h.sum() == 3 * 31 * 17


@pytest.mark.parametrize("shape", [(1, 1, 3), (1, 9, 3), (13, 17, 3), (13, 17, 4)])
@pytest.mark.parametrize("factor", [0.0, 0.37, 1.0, 1.5, 3.0])
def test_saturation_blend_equals_luminance_then_blend(shape, factor):
    img = _img(shape)
    gray = np.repeat(kcolor.rgb_to_l(img[..., :3])[..., None], shape[2], axis=2)
    if shape[2] == 4:
        gray[..., 3] = img[..., 3]
    np.testing.assert_array_equal(
        pointwise.saturation_blend(img, factor), kcolor.blend(gray, img, factor)
    )


def test_saturation_blend_equals_pillow_and_rejects_gray():
    img = _img((21, 19, 3))
    pil = np.asarray(ImageEnhance.Color(Image.fromarray(img)).enhance(1.7))
    np.testing.assert_array_equal(pointwise.saturation_blend(img, 1.7), pil)
    with pytest.raises(ValueError, match="RGB/RGBA uint8"):
        pointwise.saturation_blend(img[..., 0], 1.7)


def test_gamma_table_is_cached_read_only():
    lut = _color.gamma_lut(1.5, 1.0)
    assert lut is _color.gamma_lut(1.5, 1.0)
    with pytest.raises(ValueError):
        lut[0] = 1


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize(
    ("ltrb", "fill"), [((0, 0, 0, 0), 0), ((3, 1, 0, 2), 7), ((2, 2, 5, 1), (10, 20, 30))]
)
def test_constant_pad_equals_np_pad(shape, ltrb, fill):
    img = _img(shape)
    l, t, r, b = ltrb
    if img.ndim == 3 and isinstance(fill, tuple):
        ref = np.stack(
            [np.pad(img[..., k], [(t, b), (l, r)], constant_values=fill[k % 3])
             for k in range(img.shape[2])], axis=2,
        )  # fmt: skip
    else:
        value = fill[0] if isinstance(fill, tuple) else fill
        ref = np.pad(img, [(t, b), (l, r)] + [(0, 0)] * (img.ndim - 2), constant_values=value)
    out = _common.np_pad(img, ltrb, fill, Border.CONSTANT)
    np.testing.assert_array_equal(out, ref)


def test_constant_pad_of_a_float_view():
    img = np.random.default_rng(3).random((6, 8, 3)).astype(np.float32)[:, ::2]
    out = _common.np_pad(img, (1, 2, 3, 4), (5, 6, 7), Border.CONSTANT)
    assert out.dtype == np.float32 and out.shape == (12, 8, 3)
    np.testing.assert_array_equal(out[2:8, 1:5], img)
    np.testing.assert_array_equal(out[0, 0], [5, 6, 7])
    np.testing.assert_array_equal(out[-1, -1], [5, 6, 7])


def _generic(img, a, out_hw, fill):
    x = img[:, :, None] if img.ndim == 2 else img
    coeffs = np.zeros(8)
    coeffs[:6] = a
    out = np.empty((*out_hw, x.shape[2]), x.dtype)
    lo, hi = (0.0, 255.0) if x.dtype == np.uint8 else (-np.inf, np.inf)
    fills = np.broadcast_to(np.asarray(fill, np.float64).reshape(-1), (x.shape[2],))
    geometry._warp_kernel(x, out, coeffs, 0, fills.astype(x.dtype).copy(), lo, hi)
    return out[:, :, 0] if img.ndim == 2 else out


PIL_MODES = {1: "L", 3: "RGB", 4: "RGBA"}


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("angle", [17.0, 30.0, 45.0, -123.4, 179.9])
@pytest.mark.parametrize("expand", [False, True])
def test_nearest_rotation_equals_pillow_bit_for_bit(shape, angle, expand):
    img = _img(shape)
    h, w = shape[:2]
    fill = 9 if _c(img) == 1 else tuple(range(50, 50 + _c(img)))
    m, nw, nh = _common.rotate_matrix(w, h, angle, expand, None)
    out = geometry.warp(img, m, (nh, nw), geometry.NEAREST, fill)
    pil = Image.fromarray(img.reshape(h, w, -1).squeeze(-1) if _c(img) == 1 else img)
    ref = np.asarray(pil.rotate(angle, Image.Resampling.NEAREST, expand, fillcolor=fill))
    np.testing.assert_array_equal(out.reshape(ref.shape), ref)


def test_nearest_affine_with_scale_shear_and_float_input_equals_pillow():
    rng = np.random.default_rng(4)
    img = _img((23, 29, 3), seed=4)
    for _ in range(5):
        m = _geometry.affine_matrix(
            29, 23, rng.uniform(-40, 40), (3.0, -2.0), rng.uniform(0.7, 1.3), (5.0, -4.0)
        )
        ref = Image.fromarray(img).transform(
            (29, 23), Image.Transform.AFFINE, m, Image.Resampling.NEAREST
        )
        out = geometry.warp(img, m, (23, 29), geometry.NEAREST, 0)
        np.testing.assert_array_equal(out, np.asarray(ref))
    gray = rng.random((23, 29)).astype(np.float32)
    m, nw, nh = _common.rotate_matrix(29, 23, 33.0, False, None)
    ref = np.asarray(Image.fromarray(gray, "F").rotate(33.0, Image.Resampling.NEAREST))
    np.testing.assert_array_equal(geometry.warp(gray, m, (nh, nw), geometry.NEAREST, 0.0), ref)


def test_steps_inside_equals_counting():
    rng = np.random.default_rng(5)
    for _ in range(400):
        p, d = int(rng.integers(-3000, 3000)), int(rng.integers(-70, 71))
        lo, n = int(rng.integers(-100, 100)), int(rng.integers(0, 60))
        hi = lo + int(rng.integers(0, 900))
        inside = [t for t in range(n) if lo <= p + t * d < hi]
        t0, t1 = geometry._steps_inside(p, d, lo, hi, n)
        assert 0 <= t0 <= n and 0 <= t1 <= n
        assert list(range(t0, t1)) == inside, (p, d, lo, hi, n)


def test_nearest_affine_rows_partly_or_wholly_outside_equal_pillow():
    # Each output row's inside run is computed, not checked per pixel: translations that
    # put rows wholly outside, shears that cut rows on both sides, 1-column images.
    rng = np.random.default_rng(11)
    for shape in ((23, 29, 3), (17, 1, 3), (1, 31, 3), (19, 13, 4), (21, 16)):
        img = _img(shape, seed=2)
        h, w = shape[:2]
        pil = Image.fromarray(img)
        for _ in range(12):
            m = _geometry.affine_matrix(
                w,
                h,
                rng.uniform(-180, 180),
                tuple(rng.uniform(-1.5, 1.5, 2) * (w, h)),
                rng.uniform(0.3, 2.5),
                tuple(rng.uniform(-50, 50, 2)),
            )
            size = (int(rng.integers(1, 2 * w + 2)), int(rng.integers(1, 2 * h + 2)))
            ref = pil.transform(size, Image.Transform.AFFINE, m, Image.Resampling.NEAREST)
            out = geometry.warp(img, m, size[::-1], geometry.NEAREST, 0)
            np.testing.assert_array_equal(out.reshape(np.asarray(ref).shape), np.asarray(ref))


@pytest.mark.parametrize("shape", SHAPES)
def test_nearest_scale_and_huge_coordinates_take_the_float_kernel(shape):
    # Pillow runs pure scale/translation (ScaleAffine) and coordinates past +-32768
    # without 16.16 fixed point: these keep the per-pixel double-precision kernel.
    img = _img(shape)
    h, w = shape[:2]
    fill = 9 if _c(img) == 1 else tuple(range(50, 50 + _c(img)))
    for m in ([0.7, 0.0, 1.5, 0.0, 1.3, -2.0], [1.0, 0.01, 40000.0, 0.02, 1.0, 0.0]):
        assert not geometry._fixed_point_ok(np.array(m + [0.0, 0.0]), h + 3, w + 2)
        out = geometry.warp(img, m, (h + 3, w + 2), geometry.NEAREST, fill)
        np.testing.assert_array_equal(out, _generic(img, m, (h + 3, w + 2), fill))
