"""Affine and Perspective against MindSpore 2.10's outputs (tests/data/ms_vision.npz, made by
make_ms_fixtures.py vision), and RandAugment / TrivialAugmentWide: their operations,
determinism under the seed, and argument errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import sporeling.data as ds
from sporeling.data import vision

MS = np.load(Path(__file__).parent / "data" / "ms_vision.npz")
IMG = MS["input"]
START, END = [[0, 0], [11, 0], [11, 8], [0, 8]], [[1, 1], [10, 0], [11, 7], [0, 8]]


def test_affine_matches_mindspore():
    cases = {
        "affine_rotate": vision.Affine(90.0, [0.0, 0.0], 1.0, 0.0),
        "affine_translate": vision.Affine(0.0, [0.25, 0.0], 1.0, 0.0),
        "affine_scale": vision.Affine(0.0, [0.0, 0.0], 2.0, 0.0),
        "affine_shear": vision.Affine(0.0, [0.0, 0.0], 1.0, [10.0, 0.0]),
    }
    for name, op in cases.items():
        np.testing.assert_array_equal(op(IMG), MS[name], name)
    combined = vision.Affine(15.0, [0.2, -0.1], 1.1, [5.0, 3.0])(IMG)
    # 1 of 108 pixels lands on the other side of a rounding boundary
    assert (combined != MS["affine_all"]).any(axis=2).mean() <= 0.02


def test_perspective_matches_mindspore():
    nearest = vision.Perspective(START, END, vision.Inter.NEAREST)(IMG)
    np.testing.assert_array_equal(nearest, MS["perspective_nearest"])
    bilinear = vision.Perspective(START, END)(IMG).astype(int)
    inner = np.abs(bilinear - MS["perspective_bilinear"].astype(int))[1:-1, 1:-1]
    # OpenCV (MindSpore) weighs with 5-bit fixed point; its edge pixels blend with black
    assert inner.max() <= 3


def test_arguments():
    with pytest.raises(ValueError, match="'translate'"):
        vision.Affine(0.0, [2, 0], 1.0, 0.0)
    with pytest.raises(ValueError, match="'scale'"):
        vision.Affine(0.0, [0, 0], 0.0, 0.0)
    with pytest.raises(TypeError, match="start_points"):
        vision.Perspective([[0, 0]], END)
    with pytest.raises(ValueError, match="'magnitude'"):
        vision.RandAugment(magnitude=31)
    with pytest.raises(ValueError, match="num_magnitude_bins"):
        vision.TrivialAugmentWide(num_magnitude_bins=1)
    with pytest.raises(TypeError, match="uint8"):
        vision.RandAugment()(IMG.astype(np.float32))


def test_rand_augment_and_trivial_augment():
    assert np.array_equal(vision.RandAugment(num_ops=0)(IMG), IMG)
    ds.config.set_seed(4)
    a = [vision.RandAugment(num_ops=2, magnitude=9)(IMG) for _ in range(5)]
    ds.config.set_seed(4)
    b = [vision.RandAugment(num_ops=2, magnitude=9)(IMG) for _ in range(5)]
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert any(not np.array_equal(x, IMG) for x in a)
    outs = [vision.TrivialAugmentWide()(IMG) for _ in range(20)]
    assert all(o.shape == IMG.shape and o.dtype == np.uint8 for o in outs)
    assert len({o.tobytes() for o in outs}) > 5  # different operations and magnitudes
    data = ds.NumpySlicesDataset({"image": np.stack([IMG] * 4)}, shuffle=False)
    data = data.map(vision.TrivialAugmentWide(), input_columns="image", num_parallel_workers=2)
    rows = list(data.create_tuple_iterator(output_numpy=True, num_epochs=1))
    assert len(rows) == 4 and rows[0][0].shape == IMG.shape
