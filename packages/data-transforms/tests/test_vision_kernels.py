"""The Numba kernels of `vision.kernels.resample` and `vision.kernels.layout` against
Pillow and NumPy references.

Tolerances (uint8 levels): one-axis resizes equal Pillow's bit for bit for every filter;
`region=` equals resizing the cropped copy bit for bit; `box=` (bilinear) is within 1
level of Pillow's `resize(box=...)` (Pillow may run the passes in the other order, each
order rounds its intermediate once, by at most half a level); `order="fast"` is within 1
level of Pillow's order for the same reason. Flips, Normalize and
Normalize + HWC2CHW equal the NumPy expressions exactly.
"""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from sporeling.data.vision.kernels import layout
from sporeling.data.vision.kernels.resample import _coeffs, resize_array

PIL_FILTERS = {
    "bilinear": Image.Resampling.BILINEAR,
    "bicubic": Image.Resampling.BICUBIC,
    "lanczos": Image.Resampling.LANCZOS,
    "box": Image.Resampling.BOX,
    "hamming": Image.Resampling.HAMMING,
}


def _photo(h: int, w: int, c: int = 3, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    base = np.stack([xx * 3.0, yy * 4.0, (xx + yy) * 2.0], -1)[..., :c] % 256
    img = np.clip(base + rng.integers(-20, 21, base.shape), 0, 255).astype(np.uint8)
    return img[..., 0] if c == 1 else img


def _pil_resize(img: np.ndarray, oh: int, ow: int, name: str, box=None) -> np.ndarray:
    return np.asarray(Image.fromarray(img).resize((ow, oh), PIL_FILTERS[name], box=box))


@pytest.mark.parametrize("name", list(PIL_FILTERS))
@pytest.mark.parametrize("channels", [1, 3])
def test_one_axis_resize_equals_pillow(name, channels):
    rng = np.random.default_rng(1)
    for k in range(12):
        h, w = (int(v) for v in rng.integers(3, 90, 2))
        img = _photo(h, w, channels, seed=k)
        size = int(rng.integers(2, 140))
        oh, ow = (size, w) if k % 2 else (h, size)
        got = resize_array(img, oh, ow, name)
        np.testing.assert_array_equal(got, _pil_resize(img, oh, ow, name), err_msg=f"{h, w}")


@pytest.mark.parametrize("name", list(PIL_FILTERS))
def test_two_axis_resize_matches_pillow_in_its_pass_order(name):
    # Pillow 13 picks the pass order itself; ours agrees on most shapes (module docstring):
    # where it does the result is identical, elsewhere the intermediate rounding differs.
    rng = np.random.default_rng(2)
    exact = 0
    for k in range(20):
        h, w, oh, ow = (int(v) for v in rng.integers(8, 120, 4))
        img = _photo(h, w, seed=k)
        got, ref = resize_array(img, oh, ow, name), _pil_resize(img, oh, ow, name)
        assert np.abs(got.astype(int) - ref).mean() < 1.0
        exact += bool(np.array_equal(got, ref))
    assert exact >= 15


def test_region_equals_resizing_the_cropped_copy():
    rng = np.random.default_rng(3)
    img = _photo(97, 131)
    for k in range(30):
        name = list(PIL_FILTERS)[k % 5]
        top, left = int(rng.integers(0, 40)), int(rng.integers(0, 60))
        rh, rw = int(rng.integers(1, 97 - top + 1)), int(rng.integers(1, 131 - left + 1))
        oh, ow = (int(v) for v in rng.integers(1, 150, 2))
        got = resize_array(img, oh, ow, name, region=(top, left, rh, rw))
        crop = np.ascontiguousarray(img[top : top + rh, left : left + rw])
        np.testing.assert_array_equal(got, resize_array(crop, oh, ow, name))


def test_box_is_within_one_level_of_pillow_box_for_bilinear():
    rng = np.random.default_rng(4)
    img = _photo(80, 110)
    for _ in range(20):
        y0, x0 = rng.uniform(0, 40), rng.uniform(0, 50)
        y1, x1 = rng.uniform(y0 + 1, 80), rng.uniform(x0 + 1, 110)
        oh, ow = (int(v) for v in rng.integers(4, 90, 2))
        got = resize_array(img, oh, ow, "bilinear", box=(y0, x0, y1, x1))
        ref = _pil_resize(img, oh, ow, "bilinear", box=(x0, y0, x1, y1))
        assert np.abs(got.astype(int) - ref).max() <= 1  # pass order: see the docstring


def test_channels_keeps_the_first_channels_of_an_rgbx_buffer():
    rgb = _photo(50, 60)
    rgbx = np.concatenate([rgb, np.full((50, 60, 1), 255, np.uint8)], axis=2)
    for oh, ow in [(30, 40), (70, 20), (50, 30), (25, 60), (50, 60), (90, 130)]:
        for order in ("pillow", "fast"):  # RGBX sources take one-word-per-pixel kernels
            got = resize_array(rgbx, oh, ow, "bilinear", (2, 3, 45, 55), channels=3, order=order)
            assert got.shape == (oh, ow, 3) and got.flags.c_contiguous
            ref = resize_array(np.ascontiguousarray(rgb[2:47, 3:58]), oh, ow, order=order)
            np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("name", ["bilinear", "box", "hamming"])
def test_fast_order_is_within_one_level(name):
    rng = np.random.default_rng(5)
    for k in range(15):
        h, w, oh, ow = (int(v) for v in rng.integers(20, 200, 4))
        img = _photo(h, w, seed=k)
        a = resize_array(img, oh, ow, name, order="fast")
        b = resize_array(img, oh, ow, name)
        assert np.abs(a.astype(int) - b).max() <= 1


def test_resize_rejects_an_unknown_order():
    with pytest.raises(ValueError, match="order must be 'pillow' or 'fast'"):
        resize_array(_photo(10, 10), 5, 5, order="quick")


def test_float_images_use_float_weights_like_pillow_mode_f():
    img = np.random.default_rng(6).random((40, 50, 2)).astype(np.float32)
    got = resize_array(img, 23, 71, "bicubic", region=(3, 4, 30, 40))
    ref = np.stack(
        [
            np.asarray(
                Image.fromarray(np.ascontiguousarray(img[3:33, 4:44, k]), "F").resize(
                    (71, 23), Image.Resampling.BICUBIC
                )
            )
            for k in range(2)
        ],
        -1,
    )
    np.testing.assert_allclose(got, ref, atol=1e-5)


def test_coefficients_sum_to_one_in_fixed_point():
    for name in PIL_FILTERS:
        bounds, weights, fixed = _coeffs(137, 0.0, 137.0, 41, name)
        assert (bounds[:, 1] > 0).all()
        np.testing.assert_allclose(weights.sum(axis=1), 1.0, atol=1e-9)
        assert (np.abs(fixed.sum(axis=1) - (1 << 22)) <= fixed.shape[1]).all()


# -- layout ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "shape,dtype",
    [
        ((31, 47, 3), np.uint8),  # 3-byte pixels: the uint32-word kernel
        ((20, 33), np.uint8),  # 1-, 2-, 4-, 8-byte pixels: one word each
        ((9, 14, 4), np.uint8),
        ((5, 6, 1), np.uint8),
        ((7, 9, 2), np.int16),
        ((6, 5, 3), np.float32),  # 12-byte pixels: pixel by pixel
        ((4, 1, 3), np.uint8),
    ],
)
def test_hflip_is_a_mirror_copy(shape, dtype):
    img = (np.random.default_rng(7).random(shape) * 255).astype(dtype)
    for x in (img, img[::2]):  # contiguous, and a strided view
        out = layout.hflip(x)
        np.testing.assert_array_equal(out, x[:, ::-1])
        assert out.flags.c_contiguous and not np.shares_memory(out, x)


def test_hflip_of_a_read_only_view_leaves_it_alone():
    img = np.random.default_rng(11).integers(0, 256, (8, 10, 3), dtype=np.uint8)
    view = img.copy()
    view.flags.writeable = False
    np.testing.assert_array_equal(layout.hflip(view), img[:, ::-1])
    np.testing.assert_array_equal(view, img)


def _norm_ref(img, mean, std):
    return (img.astype(np.float32) - np.asarray(mean, np.float32)) / np.asarray(std, np.float32)


@pytest.mark.parametrize("dtype", [np.uint8, np.float32, np.float64, np.int16])
def test_normalize_kernels_equal_numpy_bitwise(dtype):
    rng = np.random.default_rng(8)
    img = (rng.random((19, 23, 3)) * 255).astype(dtype)
    mean, std = np.array([120.0, 110.5, 99.0], np.float32), np.array([58.0, 57.1, 57.3], np.float32)
    ref = _norm_ref(img, mean, std)
    np.testing.assert_array_equal(layout.normalize_hwc(img, mean, std), ref)
    np.testing.assert_array_equal(layout.normalize_chw(img, mean, std), ref.transpose(2, 0, 1))
    np.testing.assert_array_equal(
        layout.normalize_chw(img, mean, std, flip=True), ref[:, ::-1].transpose(2, 0, 1)
    )


def test_normalize_chw_gray_one_mean_and_out_slice():
    rng = np.random.default_rng(9)
    gray = rng.integers(0, 256, (11, 13), dtype=np.uint8)
    mean, std = np.array([100.0], np.float32), np.array([50.0], np.float32)
    np.testing.assert_array_equal(
        layout.normalize_chw(gray, mean, std), _norm_ref(gray, 100.0, 50.0)[None]
    )
    batch = np.zeros((2, 3, 11, 13), np.float32)
    rgb = rng.integers(0, 256, (11, 13, 3), dtype=np.uint8)
    layout.normalize_chw(rgb, mean, std, out=batch[1])  # one mean for every channel
    np.testing.assert_array_equal(batch[1], _norm_ref(rgb, 100.0, 50.0).transpose(2, 0, 1))
    assert not batch[0].any()
    with pytest.raises(ValueError, match=r"out must be float32 of shape \(3, 11, 13\)"):
        layout.normalize_chw(rgb, mean, std, out=batch[0, :2])


def test_normalize_kernels_reject_bad_inputs():
    mean, std = np.zeros(3, np.float32), np.ones(3, np.float32)
    with pytest.raises(ValueError, match="3 mean values for an image with 4 channels"):
        layout.normalize_chw(np.zeros((4, 4, 4), np.uint8), mean, std)
    with pytest.raises(TypeError, match="expected an integer or float image, got dtype bool"):
        layout.normalize_hwc(np.zeros((4, 4, 3), bool), mean, std)
    with pytest.raises(ValueError, match="expected an HW or HWC image"):
        layout.normalize_hwc(np.zeros((2, 4, 4, 3), np.uint8), mean, std)


@pytest.mark.parametrize("shape", [(7, 9, 4), (1, 1, 4), (1, 5, 4), (33, 1, 4)])
def test_drop_channels_packs_rgbx_to_rgb(shape):
    rgbx = np.random.default_rng(10).integers(0, 256, shape, dtype=np.uint8)
    for x in (rgbx, rgbx[:, ::-1]):  # the word kernel, and the pixel loop for a view
        out = layout.drop_channels(x, 3)
        np.testing.assert_array_equal(out, x[..., :3])
        assert out.flags.c_contiguous and out.flags.writeable
    same = layout.drop_channels(rgbx[..., :3], 3)
    np.testing.assert_array_equal(same, rgbx[..., :3])
    assert same.flags.c_contiguous


@pytest.mark.parametrize("name", ["bilinear", "bicubic", "lanczos", "box"])
@pytest.mark.parametrize("in_h", [1, 2, 3, 5, 9, 17, 40])
def test_vertical_pass_unrolled_taps_equal_the_accumulator(name, in_h):
    # Rows of 2-4 taps take one expression per value in `_resample_v_u8_kernel`; compare
    # every row with NumPy's sum of the same int32 products in the same order.
    from sporeling.data.vision.kernels import resample as rs

    rng = np.random.default_rng(in_h)
    src = rng.integers(0, 256, (in_h, 7 * 3), dtype=np.uint8)
    taps = set()
    for out_h in (1, 2, 3, in_h + 1, 2 * in_h + 3, max(in_h // 3, 1)):
        bounds, _, fixed = rs._coeffs(in_h, 0.0, float(in_h), out_h, name)
        taps |= {int(n) for n in bounds[:, 1]}
        out = np.empty((out_h, 5 * 3), np.uint8)
        rs._resample_v_u8_kernel(src, 3, out, bounds, fixed)
        ref = np.empty_like(out)
        for yy in range(out_h):
            ymin, n = bounds[yy]
            acc = np.full(15, 1 << 21, np.int64)
            for t in range(n):
                acc += src[ymin + t, 3:18].astype(np.int64) * int(fixed[yy, t])
            ref[yy] = np.clip(acc >> 22, 0, 255)
        np.testing.assert_array_equal(out, ref)
    if in_h >= 5:  # both paths ran: rows of 2-4 taps and rows of more
        assert taps & {2, 3, 4} and max(taps) > 4
