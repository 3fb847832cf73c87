"""C-only and Python-only vision ops against NumPy/Pillow references, plus helpers."""

from __future__ import annotations

import colorsys
import io

import numpy as np
import pytest
from PIL import Image, ImageEnhance, ImageOps

from sporeling.data import vision
from sporeling.data.transforms import use_rng
from sporeling.data.vision import AutoAugmentPolicy, ConvertMode, Inter, SliceMode


def _img(h=24, w=32, seed=0):
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    base = np.stack([xx * 7.0, yy * 9.0, (xx + yy) * 3.0], -1) % 256
    return np.clip(base + rng.integers(-10, 11, base.shape), 0, 255).astype(np.uint8)


def test_layout_ops():
    img = _img()
    np.testing.assert_array_equal(vision.HorizontalFlip()(img), img[:, ::-1])
    np.testing.assert_array_equal(vision.VerticalFlip()(img), img[::-1])
    np.testing.assert_array_equal(vision.HWC2CHW()(img), img.transpose(2, 0, 1))
    np.testing.assert_array_equal(vision.Crop((2, 3), (5, 6))(img), img[2:7, 3:9])
    t = vision.ToTensor()(img)
    assert t.dtype == np.float32 and t.shape == (3, 24, 32)
    np.testing.assert_allclose(t, img.transpose(2, 0, 1) / 255.0, rtol=1e-6)
    assert vision.ToTensor(np.float64)(img).dtype == np.float64
    np.testing.assert_allclose(vision.Rescale(1 / 255, -0.5)(img), img / 255 - 0.5, atol=1e-6)
    with pytest.raises(ValueError, match="Crop: region"):
        vision.Crop((20, 0), 10)(img)


def test_normalize_and_normalize_pad():
    img = _img()
    mean, std = [10.0, 20.0, 30.0], [2.0, 4.0, 8.0]
    out = vision.Normalize(mean, std)(img)
    np.testing.assert_allclose(out, (img - np.array(mean)) / np.array(std), rtol=1e-6)
    chw = vision.Normalize(mean, std, is_hwc=False)(img.transpose(2, 0, 1))
    np.testing.assert_allclose(chw, out.transpose(2, 0, 1), rtol=1e-6)
    pad = vision.NormalizePad(mean, std)(img)
    assert pad.shape == (24, 32, 4) and (pad[..., 3] == 0).all()
    assert vision.NormalizePad(mean, std, dtype="float16")(img).dtype == np.float16
    with pytest.raises(
        ValueError,
        match=r"Normalize: Input std\[0\] is not within the required interval of \(0, 255\]",
    ):
        vision.Normalize([0.0], [0.0])
    with pytest.raises(ValueError, match="same length"):
        vision.Normalize([0.0, 1.0], [1.0])


def test_convert_color():
    img = _img()
    np.testing.assert_array_equal(
        vision.ConvertColor(ConvertMode.COLOR_RGB2BGR)(img), img[..., ::-1]
    )
    rgba = vision.ConvertColor(ConvertMode.COLOR_RGB2RGBA)(img)
    assert rgba.shape == (24, 32, 4) and (rgba[..., 3] == 255).all()
    gray = vision.ConvertColor(ConvertMode.COLOR_RGB2GRAY)(img)
    ref = np.asarray(Image.fromarray(img).convert("L")).astype(int)
    assert gray.shape == (24, 32) and np.abs(gray.astype(int) - ref).max() <= 1
    with pytest.raises(ValueError, match="ConvertColor: COLOR_BGRA2BGR expects 4 channels"):
        vision.ConvertColor(ConvertMode.COLOR_RGBA2RGB)(img)


def test_pad_to_size_and_slice_patches():
    img = _img()
    out = vision.PadToSize((30, 40))(img)
    assert out.shape == (30, 40, 3)
    np.testing.assert_array_equal(out[3:27, 4:36], img)
    out = vision.PadToSize((30, 40), offset=(0, 0), fill_value=9)(img)
    assert (out[24:] == 9).all()
    patches = vision.SlicePatches(2, 3)(img)
    assert len(patches) == 6 and patches[0].shape == (12, 11, 3)
    np.testing.assert_array_equal(patches[0], img[:12, :11])
    drop = vision.SlicePatches(5, 5, SliceMode.DROP)(img)
    assert drop[0].shape == (4, 6, 3)


def test_random_pixel_ops_match_pillow():
    img = _img()
    pil = Image.fromarray(img)
    np.testing.assert_array_equal(vision.RandomInvert(1.0)(img), 255 - img)
    np.testing.assert_array_equal(vision.RandomInvert(0.0)(img), img)
    np.testing.assert_array_equal(
        vision.RandomEqualize(1.0)(img), np.asarray(ImageOps.equalize(pil))
    )
    np.testing.assert_array_equal(
        vision.RandomAutoContrast(prob=1.0)(img), np.asarray(ImageOps.autocontrast(pil))
    )
    np.testing.assert_array_equal(
        vision.RandomAdjustSharpness(2.0, 1.0)(img),
        np.asarray(ImageEnhance.Sharpness(pil).enhance(2.0)),
    )
    np.testing.assert_array_equal(
        vision.RandomPosterize(3)(img), np.asarray(ImageOps.posterize(pil, 3))
    )
    # MindSpore's RandomSolarize inverts the pixels inside [lo, hi], both drawn from threshold.
    np.testing.assert_array_equal(
        vision.RandomSolarize((100, 100))(img), np.where(img == 100, 155, img)
    )


def test_rotate_and_gaussian_blur():
    img = _img()
    np.testing.assert_array_equal(
        vision.Rotate(25, Inter.BILINEAR)(img),
        np.asarray(Image.fromarray(img).rotate(25, Image.Resampling.BILINEAR)),
    )
    assert (
        vision.Rotate(30, expand=True)(img).shape[:2]
        == Image.fromarray(img).rotate(30, expand=True).size[::-1]
    )
    flat = np.full((10, 12, 3), 77, np.uint8)
    np.testing.assert_array_equal(vision.GaussianBlur(5)(flat), flat)
    x = np.zeros((9, 9), np.float32)
    x[4, 4] = 1
    out = vision.GaussianBlur(3, 1.0)(x)
    k = np.exp(-np.array([1.0, 0.0, 1.0]) / 2)
    k /= k.sum()
    np.testing.assert_allclose(out[3:6, 3:6], np.outer(k, k), rtol=1e-6)
    with pytest.raises(ValueError, match="GaussianBlur: kernel_size"):
        vision.GaussianBlur(4)


def test_cutout_and_random_resize_and_decode_crop():
    img = _img()
    out = vision.CutOut(8, 2)(img)
    assert (out == 0).all(axis=-1).sum() >= 64  # a floor on purpose: the 2 random 8x8 may overlap
    assert vision.RandomResize((10, 12))(img).shape == (10, 12, 3)
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format="PNG")
    data = np.frombuffer(buf.getvalue(), np.uint8)
    op = vision.RandomCropDecodeResize(16)
    with use_rng(np.random.default_rng(0)):
        a = op(data)
    with use_rng(np.random.default_rng(0)):
        b = vision.RandomResizedCrop(16)(img)
    # same crop; the fused op runs the shrinking resize pass first (within 1 level)
    assert np.abs(a.astype(int) - b).max() <= 1


@pytest.mark.parametrize("policy", list(AutoAugmentPolicy))
def test_auto_augment_runs_all_policies(policy):
    img = _img(32, 32)
    op = vision.AutoAugment(policy)
    for seed in range(8):
        with use_rng(np.random.default_rng(seed)):
            out = op(img)
        assert out.shape == img.shape and out.dtype == np.uint8


def test_random_select_subpolicy_and_uniform_augment():
    img = _img()
    op = vision.RandomSelectSubpolicy([[(vision.Invert(), 1.0)], [(vision.HorizontalFlip(), 1.0)]])
    outs = {op(img).tobytes() for _ in range(20)}
    assert outs == {(255 - img).tobytes(), img[:, ::-1].tobytes()}
    ua = vision.UniformAugment([vision.Invert(), vision.RandomHorizontalFlip(1.0)], num_ops=2)
    np.testing.assert_array_equal(ua(img), 255 - img[:, ::-1])
    with pytest.raises(ValueError, match="num_ops"):
        vision.UniformAugment([vision.Invert()], 2)


def test_bbox_ops():
    img = _img(20, 30)
    boxes = np.array([[2, 3, 10, 5], [20, 10, 5, 5]], np.float32)
    out, b = vision.RandomHorizontalFlipWithBBox(1.0)(img, boxes)
    np.testing.assert_array_equal(out, img[:, ::-1])
    np.testing.assert_allclose(b[:, 0], [30 - 2 - 10, 30 - 20 - 5])
    out, b = vision.RandomVerticalFlipWithBBox(1.0)(img, boxes)
    np.testing.assert_allclose(b[:, 1], [20 - 3 - 5, 20 - 10 - 5])
    out, b = vision.ResizeWithBBox((40, 60))(img, boxes)
    assert out.shape == (40, 60, 3)
    np.testing.assert_allclose(b, boxes * 2)
    crop = vision.RandomCropWithBBox((20, 15))
    offsets = set()
    for _ in range(12):
        out, b = crop(img, boxes)
        # the crop's left edge is where it came from (every column of _img differs)
        (j,) = [j for j in range(16) if np.array_equal(out, img[:, j : j + 15])]
        offsets.add(j)
        x0, x1 = np.clip(boxes[:, 0] - j, 0, 15), np.clip(boxes[:, 0] + boxes[:, 2] - j, 0, 15)
        keep = x1 > x0  # boxes left with no width are dropped, the rest clipped to the crop
        want = np.stack([x0, boxes[:, 1], x1 - x0, boxes[:, 3]], 1)[keep]
        np.testing.assert_array_equal(b, want)
    assert len(offsets) > 1  # statistical: 12 draws of 16 offsets all alike has odds 16**-11
    out, b = vision.RandomResizedCropWithBBox(16, scale=(1.0, 1.0), ratio=(1.5, 1.5))(img, boxes)
    assert out.shape == (16, 16, 3)
    np.testing.assert_allclose(b[:, [0, 2]], boxes[:, [0, 2]] * 16 / 30, rtol=1e-5)
    assert vision.RandomResizeWithBBox(10)(img, boxes)[0].shape[0] == 10
    out, b = vision.BoundingBoxAugment(vision.Invert(), 1.0)(img, boxes)
    np.testing.assert_array_equal(out[3:8, 2:12], 255 - img[3:8, 2:12])
    np.testing.assert_array_equal(out[0:3], img[0:3])
    with pytest.raises(ValueError, match="bboxes must have shape"):
        vision.ResizeWithBBox(4)(img, np.zeros((3,)))


def test_five_and_ten_crop():
    pil = Image.fromarray(_img())
    crops = vision.FiveCrop(10)(pil)
    assert len(crops) == 5 and all(c.size == (10, 10) for c in crops)
    np.testing.assert_array_equal(np.asarray(crops[3]), _img()[14:, 22:])
    ten = vision.TenCrop((8, 6), use_vertical_flip=True)(pil)
    assert len(ten) == 10
    np.testing.assert_array_equal(
        np.asarray(ten[5]), np.asarray(pil.transpose(Image.Transpose.FLIP_TOP_BOTTOM))[:8, :6]
    )


def test_grayscale_and_random_grayscale():
    img = _img()
    g = vision.Grayscale()(img)
    assert g.mode == "L"
    np.testing.assert_array_equal(np.asarray(g), np.asarray(Image.fromarray(img).convert("L")))
    assert vision.Grayscale(3)(img).mode == "RGB"
    assert vision.RandomGrayscale(1.0)(img).mode == "RGB"
    r = np.asarray(vision.RandomGrayscale(1.0)(img))
    assert (r[..., 0] == r[..., 1]).all()


def test_hsv_round_trip_matches_colorsys():
    x = np.random.default_rng(0).random((3, 4, 5)).astype(np.float32)
    hsv = vision.RgbToHsv()(x)
    ref = np.array([colorsys.rgb_to_hsv(*x[:, i, j]) for i in range(4) for j in range(5)]).reshape(
        4, 5, 3
    )
    np.testing.assert_allclose(hsv.transpose(1, 2, 0), ref, atol=1e-6)
    np.testing.assert_allclose(vision.HsvToRgb()(hsv), x, atol=1e-5)
    hwc = vision.RgbToHsv(is_hwc=True)(x.transpose(1, 2, 0))
    np.testing.assert_allclose(hwc, ref, atol=1e-6)


def test_linear_transformation_and_mixup_and_erasing():
    x = np.random.default_rng(0).random((3, 2, 2)).astype(np.float32)
    m = np.eye(12) * 2
    out = vision.LinearTransformation(m, np.ones(12))(x)
    np.testing.assert_allclose(out, (x - 1) * 2, rtol=1e-6)
    with pytest.raises(ValueError, match="LinearTransformation: mean_vector"):
        vision.LinearTransformation(m, np.ones(3))
    images = np.stack([np.zeros((2, 2, 3)), np.ones((2, 2, 3))]).astype(np.float32)
    labels = np.eye(2, dtype=np.float32)
    mi, ml = vision.MixUp(2, 0.5)(images, labels)
    np.testing.assert_allclose(mi[:, 0, 0, 0], ml[:, 1], rtol=1e-6)
    np.testing.assert_allclose(ml.sum(1), 1, rtol=1e-6)
    chw = np.ones((3, 20, 20), np.float32)
    er = vision.RandomErasing(prob=1.0, value=(0, 0, 0))(chw)
    assert (er == 0).any() and (chw == 1).all()
    same = vision.RandomErasing(prob=1.0, inplace=True)(chw)
    assert same is chw
    with pytest.raises(ValueError, match="RandomErasing: value"):
        vision.RandomErasing(value="x")


def test_random_perspective():
    pil = Image.fromarray(_img())
    assert vision.RandomPerspective(prob=0.0)(pil) is pil
    out = vision.RandomPerspective(0.5, 1.0, Inter.BILINEAR)(pil)
    assert out.size == pil.size
    zero = vision.RandomPerspective(0.0, 1.0, Inter.NEAREST)(pil)
    np.testing.assert_array_equal(np.asarray(zero), np.asarray(pil))


def test_topil_tonumpy_totype_and_helpers():
    img = _img()
    p = vision.ToPIL()(img)
    assert isinstance(p, Image.Image) and p.size == (32, 24)
    np.testing.assert_array_equal(vision.ToNumpy()(p), img)
    assert vision.ToPIL()(img.transpose(2, 0, 1)).size == (32, 24)  # CHW accepted
    assert vision.ToType(np.int16)(img).dtype == np.int16
    assert vision.get_image_size(img) == [24, 32] == vision.get_image_size(p)
    assert vision.get_image_num_channels(img) == 3 == vision.get_image_num_channels(p)
    assert vision.get_image_num_channels(img[..., 0]) == 1
    with pytest.raises(TypeError, match="get_image_size"):
        vision.get_image_size([1, 2])
