"""Batch-level vision ops (`sporeling.data.vision.batch`): per-sample parameters, label
mixing, agreement with Pillow / NumPy references, determinism, and argument errors."""

from __future__ import annotations

import colorsys
import hashlib

import numpy as np
import pytest
from PIL import Image, ImageEnhance

from sporeling.data import config
from sporeling.data.transforms._base import use_rng
from sporeling.data.vision.batch import (
    BatchRandomColorAdjust,
    BatchRandomHorizontalFlip,
    BatchRandomResizedCrop,
    CutMixBatch,
    MixUpBatch,
)


class BatchInfo:
    """What the pipeline passes as the last argument of a per_batch_map."""

    def __init__(self, batch: int, epoch: int = 0) -> None:
        self.batch, self.epoch = batch, epoch

    def get_batch_num(self) -> int:
        return self.batch

    def get_epoch_num(self) -> int:
        return self.epoch


def _images(n=8, h=12, w=16, c=3, seed=0, dtype=np.uint8):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, (n, h, w, c)).astype(dtype)


def _constant_batch(n=16, h=20, w=24, c=3):
    """Sample i is filled with the value i: every output pixel names its source sample."""
    return np.broadcast_to(np.arange(n, dtype=np.uint8)[:, None, None, None], (n, h, w, c)).copy()


# ----------------------------------------------------------------------------- MixUpBatch


def test_mixup_reconstructs_from_labels():
    images = _images(n=10).astype(np.float32)
    labels = np.eye(10, dtype=np.int32)
    with use_rng(np.random.default_rng(1)):
        out, mixed = MixUpBatch(alpha=0.7)(images, labels)
    assert out.shape == images.shape and out.dtype == np.float32
    assert mixed.dtype == np.float32 and mixed.shape == (10, 10)
    np.testing.assert_allclose(mixed.sum(axis=1), 1.0, rtol=1e-6)
    lam = mixed[np.arange(10), np.arange(10)]
    for i in range(10):
        row = mixed[i].copy()
        row[i] = 0
        partner = int(np.argmax(row)) if row.max() > 0 else i
        ref = lam[i] * images[i] + (1 - lam[i]) * images[partner]
        np.testing.assert_allclose(out[i], ref, rtol=1e-5, atol=1e-3)
    # MindSpore draws one lambda per batch.
    not_self = mixed.max(axis=1) < 1
    assert np.ptp(lam[not_self]) < 1e-6


def test_mixup_uint8_rounds_and_per_sample_lambda():
    images = _images(n=32)
    labels = np.eye(32, dtype=np.float32)
    with use_rng(np.random.default_rng(2)):
        out, mixed = MixUpBatch(per_sample=True)(images, labels)
    assert out.dtype == np.uint8
    lam = np.diag(mixed)
    assert len(np.unique(np.round(lam, 6))) > 20  # a different lambda per sample
    perm = np.where(mixed.max(1) < 1, np.argsort(-(mixed - np.diag(lam)), axis=1)[:, 0], 0)
    i = int(np.argmax(mixed.max(1) < 1))
    ref = lam[i] * images[i].astype(np.float64) + (1 - lam[i]) * images[perm[i]]
    assert np.abs(out[i].astype(np.float64) - ref).max() <= 0.5 + 1e-6


def test_mixup_nchw_and_three_dim_labels():
    images = _images(n=4).transpose(0, 3, 1, 2).copy()
    labels = np.eye(4, dtype=np.float32)[:, None, :].repeat(2, axis=1)  # (N, L, C)
    out, mixed = MixUpBatch()(images, labels)
    assert out.shape == (4, 3, 12, 16) and mixed.shape == (4, 2, 4)
    np.testing.assert_allclose(mixed.sum(-1), 1.0, rtol=1e-6)


# ---------------------------------------------------------------------------- CutMixBatch


@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
def test_cutmix_boxes_match_label_weights(fmt):
    n, h, w = 16, 20, 24
    images = _constant_batch(n, h, w)
    if fmt == "NCHW":
        images = images.transpose(0, 3, 1, 2).copy()
    labels = np.eye(n, dtype=np.float32)
    with use_rng(np.random.default_rng(3)):
        out, mixed = CutMixBatch(fmt, alpha=1.0, prob=1.0)(images, labels)
    assert out.shape == images.shape and out.dtype == np.uint8
    np.testing.assert_allclose(mixed.sum(axis=1), 1.0, rtol=1e-6)
    hwc = out if fmt == "NHWC" else out.transpose(0, 2, 3, 1)
    weights = []
    for i in range(n):
        sources = np.unique(hwc[i])
        assert set(sources.tolist()) <= {i, *np.flatnonzero(mixed[i]).tolist()}
        pasted = np.mean(hwc[i, :, :, 0] != i)
        self_weight = mixed[i, i]
        if mixed[i].max() < 1:  # partner differs from the sample itself
            assert pasted == pytest.approx(1 - self_weight, abs=1e-6)
            # the pasted region is one rectangle (the box)
            ys, xs = np.nonzero(hwc[i, :, :, 0] != i)
            assert (ys.max() - ys.min() + 1) * (xs.max() - xs.min() + 1) == len(ys)
            weights.append(self_weight)
    assert len(set(np.round(weights, 6))) > 5  # box sizes differ per sample


def test_cutmix_prob_zero_and_mixed_prob():
    images = _constant_batch(32)
    labels = np.eye(32, dtype=np.uint8)
    out, mixed = CutMixBatch("NHWC", prob=0.0)(images, labels)
    np.testing.assert_array_equal(out, images)
    np.testing.assert_array_equal(mixed, labels.astype(np.float32))
    with use_rng(np.random.default_rng(4)):
        out, mixed = CutMixBatch("NHWC", prob=0.5)(images, labels)
    untouched = [(out[i] == i).all() for i in range(32)]
    assert 4 < sum(untouched) < 28
    assert not np.shares_memory(out, images)


# ------------------------------------------------------------------- BatchRandomResizedCrop


def _bilinear_reference(img, box, size):
    """Slow OpenCV-style INTER_LINEAR crop-and-resize (pixel centres aligned, no AA)."""
    x0, y0, cw, ch = box
    oh, ow = size
    crop = img[y0 : y0 + ch, x0 : x0 + cw].astype(np.float64)
    out = np.empty((oh, ow, img.shape[2]))
    for oy in range(oh):
        fy = min(max((oy + 0.5) * ch / oh - 0.5, 0.0), ch - 1)
        ya = int(np.floor(fy))
        yb, wy = min(ya + 1, ch - 1), fy - ya
        for ox in range(ow):
            fx = min(max((ox + 0.5) * cw / ow - 0.5, 0.0), cw - 1)
            xa = int(np.floor(fx))
            xb, wx = min(xa + 1, cw - 1), fx - xa
            top = crop[ya, xa] * (1 - wx) + crop[ya, xb] * wx
            bot = crop[yb, xa] * (1 - wx) + crop[yb, xb] * wx
            out[oy, ox] = top * (1 - wy) + bot * wy
    return out


def test_resized_crop_matches_reference_and_pil_upscale():
    images = _images(n=6, h=30, w=40)
    op = BatchRandomResizedCrop((24, 20), scale=(0.05, 0.2))  # crops < 24x20: upscale
    boxes = op.crop_boxes(np.full(6, 30), np.full(6, 40), np.random.default_rng(5))
    with use_rng(np.random.default_rng(5)):
        out = op(images)
    assert out.shape == (6, 24, 20, 3) and out.dtype == np.uint8
    assert len({tuple(b) for b in boxes.tolist()}) == 6  # a different crop per sample
    for i in range(6):
        x, y, cw, ch = boxes[i]
        assert x >= 0 and x + cw <= 40 and y >= 0 and y + ch <= 30
        ref = _bilinear_reference(images[i], boxes[i], (24, 20))
        assert np.abs(out[i].astype(np.float64) - ref).max() <= 0.5 + 1e-6
        # Upscaling: Pillow's bilinear filter is the same triangle kernel (tolerance 2).
        pil = (
            Image.fromarray(images[i]).crop((x, y, x + cw, y + ch)).resize((20, 24), Image.BILINEAR)
        )
        assert np.abs(out[i].astype(int) - np.asarray(pil, dtype=int)).max() <= 2


def test_resized_crop_identity_fallback_nearest_and_lists():
    images = _images(n=3, h=10, w=10)
    full = BatchRandomResizedCrop(10, scale=(1.0, 1.0), ratio=(1.0, 1.0))(images)
    np.testing.assert_array_equal(full, images)
    # No crop of area fraction 1 with ratio in [2, 3] fits a square: centre-crop fallback.
    op = BatchRandomResizedCrop(10, scale=(1.0, 1.0), ratio=(2.0, 3.0))
    boxes = op.crop_boxes(np.full(3, 10), np.full(3, 10), np.random.default_rng(0))
    np.testing.assert_array_equal(boxes, [[0, 2, 10, 5]] * 3)
    near = BatchRandomResizedCrop(
        (5, 5), scale=(1.0, 1.0), ratio=(1.0, 1.0), interpolation="NEAREST"
    )
    np.testing.assert_array_equal(near(images), images[:, 1::2, 1::2])
    mixed_sizes = [_images(1, 30, 20)[0], _images(1, 17, 41)[0], _images(1, 8, 8)[0]]
    out = BatchRandomResizedCrop(16)(mixed_sizes)
    assert out.shape == (3, 16, 16, 3)
    gray = BatchRandomResizedCrop(8)([im[..., 0] for im in mixed_sizes])
    assert gray.shape == (3, 8, 8)
    chw = BatchRandomResizedCrop(8, image_batch_format="NCHW")(images.transpose(0, 3, 1, 2))
    assert chw.shape == (3, 3, 8, 8)
    floats = BatchRandomResizedCrop(8)(images.astype(np.float32) / 255)
    assert floats.dtype == np.float32 and floats.min() >= 0 and floats.max() <= 1


# ------------------------------------------------------------------ flip and color adjust


def test_horizontal_flip_per_sample():
    images = _images(n=64, h=4, w=5)
    with use_rng(np.random.default_rng(6)):
        out = BatchRandomHorizontalFlip(0.5)(images)
    flipped = [bool((out[i] == images[i, :, ::-1]).all()) for i in range(64)]
    kept = [bool((out[i] == images[i]).all()) for i in range(64)]
    assert all(f or k for f, k in zip(flipped, kept))
    assert 16 < sum(flipped) < 48
    np.testing.assert_array_equal(BatchRandomHorizontalFlip(1.0)(images), images[:, :, ::-1])
    np.testing.assert_array_equal(BatchRandomHorizontalFlip(0.0)(images), images)
    chw = images.transpose(0, 3, 1, 2)
    np.testing.assert_array_equal(
        BatchRandomHorizontalFlip(1.0, image_batch_format="NCHW")(chw), chw[..., ::-1]
    )


@pytest.mark.parametrize(
    "shape_dtype",
    [((40, 7, 9, 3), np.uint8), ((40, 7, 9), np.uint8), ((40, 5, 6, 4), np.uint8),
     ((40, 5, 6, 3), np.float32), ((40, 5, 1, 3), np.uint8), ((40, 3, 8, 2), np.int16)],
)  # fmt: skip
def test_horizontal_flip_per_sample_shapes_and_dtypes(shape_dtype):
    # Contiguous batches take the per-image word kernels sample by sample: each sample
    # is exactly the mirror or a copy, about half of them mirrored.
    shape, dtype = shape_dtype
    images = np.random.default_rng(3).integers(0, 255, shape).astype(dtype)
    with use_rng(np.random.default_rng(8)):
        out = BatchRandomHorizontalFlip(0.5)(images)
    assert out.shape == images.shape and out.dtype == images.dtype
    mirrored = [bool((out[i] == images[i, :, ::-1]).all()) for i in range(40)]
    assert all(m or (out[i] == images[i]).all() for i, m in enumerate(mirrored))
    assert 8 < sum(mirrored) < 32 or shape[2] == 1


@pytest.mark.parametrize(
    ("kwargs", "enhance"),
    [
        ({"brightness": 0.6}, ImageEnhance.Brightness),
        ({"contrast": 0.6}, ImageEnhance.Contrast),
        ({"saturation": 0.8}, ImageEnhance.Color),
    ],
)
def test_color_adjust_matches_pillow_per_sample(kwargs, enhance):
    images = _images(n=6, h=9, w=11)
    op = BatchRandomColorAdjust(**kwargs)
    index = {"brightness": 0, "contrast": 1, "saturation": 2}[next(iter(kwargs))]
    factors, _ = op.draw(6, np.random.default_rng(7))
    with use_rng(np.random.default_rng(7)):
        out = op(images)
    assert len(np.unique(factors[:, index])) == 6
    for i in range(6):
        ref = np.asarray(enhance(Image.fromarray(images[i])).enhance(factors[i, index]))
        # Pillow computes grey levels in fixed point: within 2 levels.
        assert np.abs(out[i].astype(int) - ref.astype(int)).max() <= 2


def test_color_adjust_hue_against_colorsys():
    images = _images(n=3, h=5, w=6)
    op = BatchRandomColorAdjust(hue=0.4)
    factors, _ = op.draw(3, np.random.default_rng(8))
    with use_rng(np.random.default_rng(8)):
        out = op(images)
    for i in range(3):
        shift = factors[i, 3]
        for y in range(5):
            for x in range(6):
                h, s, v = colorsys.rgb_to_hsv(*(images[i, y, x] / 255.0))
                ref = np.array(colorsys.hsv_to_rgb((h + shift) % 1.0, s, v)) * 255
                assert np.abs(out[i, y, x] - ref).max() <= 0.5 + 1e-6
    identity = BatchRandomColorAdjust()(images)
    np.testing.assert_array_equal(identity, images)


# ---------------------------------------------------------------------------- determinism


def _run_all(images, labels):
    ops = [
        BatchRandomResizedCrop(8),
        BatchRandomHorizontalFlip(),
        BatchRandomColorAdjust(0.4, 0.4, 0.4, 0.1),
    ]
    x = images
    for op in ops:
        x = op(x)
    return (x, *MixUpBatch()(x, labels), *CutMixBatch("NHWC")(x, labels))


def test_deterministic_with_seed():
    images, labels = _images(n=8), np.eye(8, dtype=np.float32)
    config.set_seed(123)
    a = _run_all(images, labels)
    config.set_seed(123)
    b = _run_all(images, labels)
    config.set_seed(124)
    c = _run_all(images, labels)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert any(not np.array_equal(x, y) for x, y in zip(a, c))


def test_per_batch_map_keyed_by_batch_info():
    config.set_seed(9)
    images, labels = _images(n=8), np.eye(8, dtype=np.float32)
    op = CutMixBatch("NHWC")
    first = op(list(images), labels, BatchInfo(3))
    op(images, labels, BatchInfo(0))  # another batch in between changes nothing
    again = op(images, labels, BatchInfo(3))
    other = op(images, labels, BatchInfo(4))
    assert isinstance(first, tuple) and len(first) == 2
    np.testing.assert_array_equal(first[0], again[0])
    np.testing.assert_array_equal(first[1], again[1])
    assert not np.array_equal(first[1], other[1])
    (cropped,) = BatchRandomResizedCrop(6)(list(images), BatchInfo(0))
    assert cropped.shape == (8, 6, 6, 3)
    pil = [Image.fromarray(im) for im in images]
    (from_pil,) = BatchRandomResizedCrop(6)(pil, BatchInfo(0))
    assert from_pil.shape == (8, 6, 6, 3)


# --------------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda: MixUpBatch(alpha=0), ValueError, "MixUpBatch: argument alpha"),
        (lambda: MixUpBatch(alpha="1"), TypeError, "alpha must be a float"),
        (lambda: CutMixBatch("NHW"), TypeError, "image_batch_format must be ImageBatchFormat"),
        (lambda: CutMixBatch("NHWC", prob=1.5), ValueError, r"prob must be in \[0.0, 1.0\]"),
        (lambda: CutMixBatch("NHWC", alpha=-1.0), ValueError, "alpha"),
        (lambda: BatchRandomResizedCrop(0), ValueError, "size must be positive"),
        (lambda: BatchRandomResizedCrop(8, scale=(0.9, 0.1)), ValueError, "scale"),
        (lambda: BatchRandomResizedCrop(8, interpolation="CUBIC"), ValueError, "Inter.CUBIC"),
        (lambda: BatchRandomResizedCrop(8, max_attempts=0), ValueError, "max_attempts"),
        (lambda: BatchRandomHorizontalFlip(-0.1), ValueError, "prob"),
        (lambda: BatchRandomColorAdjust(hue=0.7), ValueError, "hue"),
        (lambda: BatchRandomColorAdjust(brightness=-1), ValueError, "brightness"),
    ],
)
def test_argument_errors(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_input_errors():
    images, labels = _images(n=4), np.eye(4, dtype=np.float32)
    with pytest.raises(ValueError, match="MixUpBatch: rank of the images must be 4"):
        MixUpBatch()(images[0], labels)
    with pytest.raises(ValueError, match="one-hot and batched"):
        MixUpBatch()(images, np.arange(4))
    with pytest.raises(ValueError, match="batch sizes of image and label"):
        CutMixBatch("NHWC")(images, labels[:3])
    with pytest.raises(ValueError, match="Batch first"):
        CutMixBatch("NHWC")(images[0], labels)
    with pytest.raises(ValueError, match="1 or 3 channels in NCHW"):
        CutMixBatch("NCHW")(images, labels)
    with pytest.raises(ValueError, match="expects 2 columns"):
        CutMixBatch("NHWC")(images)
    with pytest.raises(TypeError, match="expects uint8"):
        BatchRandomColorAdjust(0.1)(images.astype(np.float32))
    with pytest.raises(ValueError, match="single image"):
        BatchRandomHorizontalFlip()(images[0, 0])
    with pytest.raises(ValueError, match="share one shape"):
        BatchRandomHorizontalFlip()([images[0], images[1, :5]])


# ------------------------------------------------------------------------ in the pipeline


def _dataset(n=12):
    import sporeling.data as ds
    from sporeling.data.transforms import OneHot

    images = _images(n=n, h=10, w=14)
    data = ds.NumpySlicesDataset(
        {"image": images, "label": np.arange(n) % 4}, column_names=["image", "label"], shuffle=False
    )
    return data.map(OneHot(4), input_columns="label")


def _epoch(data):
    return [
        tuple(np.asarray(v) for v in row) for row in data.create_tuple_iterator(output_numpy=True)
    ]


def test_in_pipeline_map_after_batch_and_per_batch_map():
    config.set_seed(11)
    mapped = _dataset().batch(4).map(CutMixBatch("NHWC"), input_columns=["image", "label"])
    rows = _epoch(mapped)
    assert len(rows) == 3
    for image, label in rows:
        assert image.shape == (4, 10, 14, 3) and image.dtype == np.uint8
        assert label.dtype == np.float32
        np.testing.assert_allclose(label.sum(axis=1), 1.0, rtol=1e-6)

    def mixed(workers):
        config.set_seed(12)
        data = _dataset().batch(
            4,
            per_batch_map=MixUpBatch(),
            input_columns=["image", "label"],
            num_parallel_workers=workers,
        )
        return _epoch(data)

    # Keyed by (seed, op, epoch, batch): the same with 1 or 2 workers.
    for (i1, l1), (i2, l2) in zip(mixed(1), mixed(2)):
        np.testing.assert_array_equal(i1, i2)
        np.testing.assert_array_equal(l1, l2)
        np.testing.assert_allclose(l1.sum(axis=1), 1.0, rtol=1e-6)
    cropped = _dataset().batch(3, per_batch_map=BatchRandomResizedCrop(6), input_columns=["image"])
    assert [r[0].shape for r in _epoch(cropped)] == [(3, 6, 6, 3)] * 4


@pytest.mark.parametrize("nearest", [False, True])
@pytest.mark.parametrize("size", [(24, 20), (7, 33), (1, 1)])
def test_resized_crop_rgb8_fast_path_equals_the_per_pixel_loop(nearest, size):
    # uint8 RGB takes the separable kernel; the same pixels with a fourth channel take the
    # per-pixel loop: their first three channels must be the same bytes (also on an
    # NCHW-transposed, non-contiguous view and with flips).
    from sporeling.data.vision import _batch_kernels as k

    rng = np.random.default_rng(11)
    rgbx = rng.integers(0, 256, (5, 30, 40, 4), dtype=np.uint8)
    boxes = np.array([[0, 0, 40, 30], [3, 2, 9, 5], [10, 4, 1, 1], [0, 7, 40, 2], [5, 5, 30, 20]])
    flips = np.array([0, 1, 0, 1, 1], np.uint8)
    ref = np.empty((5, *size, 4), np.uint8)
    k._resized_crop_kernel(rgbx, boxes, flips, ref, nearest, 0.0, 255.0, True)
    for rgb in (rgbx[..., :3].copy(), np.ascontiguousarray(rgbx[..., :3].transpose(0, 3, 1, 2))):
        view = rgb if rgb.shape[-1] == 3 else rgb.transpose(0, 2, 3, 1)
        out = np.empty((5, *size, 3), np.uint8)
        k._resized_crop_kernel(view, boxes, flips, out, nearest, 0.0, 255.0, True)
        np.testing.assert_array_equal(out, ref[..., :3])


def _digest(array):
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()[:16]


def test_resized_crop_output_bytes_are_pinned():
    # sha256 prefixes of the outputs of the scalar kernels before the flat uint8 kernel
    # (c439663): odd sizes, upscales and downscales, NHWC / NCHW batches, lists of images of
    # different sizes (RGB and gray), float32 and 224x224 crops of larger images
    rng = np.random.default_rng(2024)
    images = rng.integers(0, 256, (4, 37, 53, 3), dtype=np.uint8)
    outputs = []
    for fmt in ("NHWC", "NCHW"):
        x = images if fmt == "NHWC" else np.ascontiguousarray(images.transpose(0, 3, 1, 2))
        with use_rng(np.random.default_rng(3)):
            outputs.append(BatchRandomResizedCrop((23, 41), image_batch_format=fmt)(x))
    shapes = ((31, 19, 3), (64, 90, 3), (9, 13, 3), (200, 150, 3))
    listed = [rng.integers(0, 256, s, dtype=np.uint8) for s in shapes]
    for size in (17, (96, 70)):
        for ims in (listed, [im[..., 1] for im in listed]):
            with use_rng(np.random.default_rng(4)):
                outputs.append(BatchRandomResizedCrop(size, scale=(0.02, 1.0))(ims))
    with use_rng(np.random.default_rng(5)):
        outputs.append(BatchRandomResizedCrop(19)(images.astype(np.float32) / 255))
    large = rng.integers(0, 256, (3, 375, 500, 3), dtype=np.uint8)
    with use_rng(np.random.default_rng(6)):
        outputs.append(BatchRandomResizedCrop(224)(large))
    assert [_digest(out) for out in outputs] == [
        "e2f4e30ebe01c98a",
        "9d3a4d781e00bf13",
        "449271dd6f9a9bfd",
        "a77958d1e9c5b10e",
        "43846f977eefad11",
        "0128d5c9f78e7359",
        "4fce5b3c12bdf43c",
        "8a69ebfd54489f3f",
    ]


@pytest.mark.parametrize("nearest", [False, True])
@pytest.mark.parametrize("channels", [1, 3, 4])
@pytest.mark.parametrize("size", [(24, 20), (7, 33), (1, 1), (61, 5)])
def test_resized_crop_u8_flat_kernel_equals_the_per_pixel_loop(nearest, channels, size):
    # the flat kernel (C-contiguous uint8 rows seen as (H, W * C)) against the scalar
    # kernels (`_resized_crop_one`): upscales and downscales, 1x1 and full crops, flips
    from sporeling.data.vision import _batch_kernels as k

    rng = np.random.default_rng(12)
    images = rng.integers(0, 256, (6, 30, 40, channels), dtype=np.uint8)
    boxes = np.array(
        [[0, 0, 40, 30], [3, 2, 9, 5], [10, 4, 1, 1], [0, 7, 40, 2], [5, 5, 30, 20], [39, 0, 1, 30]]
    )
    flips = np.array([0, 1, 0, 1, 1, 0], np.uint8)
    ref = np.empty((6, *size, channels), np.uint8)
    k._resized_crop_kernel(images, boxes, flips, ref, nearest, 0.0, 255.0, True)
    out = np.empty_like(ref)
    flat_in = images.reshape(6, 30, 40 * channels)
    flat_out = out.reshape(6, size[0], size[1] * channels)
    k._resized_crop_u8_batch(flat_in, channels, boxes, flips, flat_out, nearest)
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("channels", [1, 3])
@pytest.mark.parametrize("size", [(9, 13), (50, 61)])
def test_resized_crop_nchw_planes_equal_nhwc(channels, size):
    # N-CHW uint8 batches run each channel plane as a 1-channel image: the same bytes as the
    # N-HWC layout with the same draws (downscale and upscale)
    images = _images(n=5, h=33, w=27, c=channels, seed=7)
    chw = np.ascontiguousarray(images.transpose(0, 3, 1, 2))
    outs = []
    for fmt, x in (("NHWC", images), ("NCHW", chw)):
        with use_rng(np.random.default_rng(8)):
            outs.append(BatchRandomResizedCrop(size, image_batch_format=fmt)(x))
    np.testing.assert_array_equal(outs[1], outs[0].transpose(0, 3, 1, 2))
