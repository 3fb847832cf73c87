"""The map fusion pass (`vision._fused`), the fused decode + crop and Pillow pixel views.

Tolerances of a fused map against the same map with `config.set_map_fusion(False)`
(stated in `vision._fused`):
* Decode + RandomResizedCrop, no draft scaling: NEAREST identical; bilinear within 1 level
  (the shrinking pass runs first; each pass order rounds its intermediate once);
* with draft scaling (JPEG, crop >= 2x the output): per image, mean |diff| < 5 levels and
  under 4 % of values more than 16 levels off (the DCT-domain downscale is a different
  low-pass filter than the resize's antialiasing);
* [RandomHorizontalFlip +] Normalize + HWC2CHW: bitwise equal.
The crop boxes and flips must be the same draws: a different box or flip would be off by
far more than these tolerances.
"""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

import sporeling.data as ds
from sporeling.data import config, vision
from sporeling.data.transforms import use_rng
from sporeling.data.transforms._base import resolve_operations
from sporeling.data.vision import Inter, _decode_crop, _fused
from sporeling.data.vision._decode_crop import decode_resized_crop, draft_factor
from sporeling.data.vision._pil_pixels import pixels

MEAN = [124.0, 116.0, 104.0]
STD = [58.0, 57.0, 57.5]


def photo(h: int, w: int, seed: int = 0) -> np.ndarray:
    """Smooth colour gradients with texture and noise (JPEG-friendly, like a photo)."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    base = np.stack(
        [
            128 + 100 * np.sin(xx / 37.0 + seed),
            128 + 90 * np.cos(yy / 29.0 - seed),
            128 + 60 * np.sin((xx + yy) / 17.0),
        ],
        -1,
    )
    return np.clip(base + rng.normal(0, 6, base.shape), 0, 255).astype(np.uint8)


def encode(img: np.ndarray, fmt: str = "JPEG") -> np.ndarray:
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format=fmt, quality=90)
    return np.frombuffer(buf.getvalue(), np.uint8)


@pytest.fixture
def fusion():
    """Restore the fusion setting after a test that changes it."""
    before = config.get_map_fusion()
    yield
    config.set_map_fusion(before)


@pytest.fixture
def jpeg_folder(tmp_path):
    for k in range(10):
        cls = tmp_path / f"c{k % 2}"
        cls.mkdir(exist_ok=True)
        h, w = (240, 320) if k % 3 else (300, 260)
        Image.fromarray(photo(h, w, k)).save(cls / f"{k}.jpg", quality=90)
    return tmp_path


def ops(size=48, interpolation=Inter.BILINEAR):
    return [
        vision.Decode(),
        vision.RandomResizedCrop(size, interpolation=interpolation),
        vision.RandomHorizontalFlip(),
        vision.Normalize(MEAN, STD),
        vision.HWC2CHW(),
    ]


def run_map(folder, operations, workers=1, processes=False, seed=5):
    config.set_seed(seed)
    d = ds.ImageFolderDataset(str(folder), shuffle=False)
    d = d.map(
        operations,
        input_columns="image",
        num_parallel_workers=workers,
        python_multiprocessing=processes,
    )
    d = d.batch(5)
    return [b[0].copy() for b in d.create_tuple_iterator(output_numpy=True, num_epochs=1)]


# -- the pass ----------------------------------------------------------------------------------


def test_pass_fuses_decode_crop_and_flip_normalize_chw():
    chain = _fused.fuse_operations(resolve_operations(ops()))
    assert [type(f).__name__ for f in chain] == ["FusedDecodeResizedCrop", "FusedNormalizeCHW"]
    assert chain[1].flip is not None
    no_flip = [vision.Decode(), vision.Normalize(MEAN, STD), vision.HWC2CHW()]
    chain = _fused.fuse_operations(resolve_operations(no_flip))
    assert len(chain) == 2 and isinstance(chain[1], _fused.FusedNormalizeCHW)
    assert chain[1].flip is None


def test_pass_leaves_what_it_must_not_fuse():
    class MyCrop(vision.RandomResizedCrop):
        def _execute_numpy(self, img):
            return img

    cases = [
        [vision.Decode(to_pil=True), vision.RandomResizedCrop(8)],  # PIL path
        [vision.Decode(), MyCrop(8)],  # a subclass with its own behaviour
        [vision.Decode(), vision.Invert(), vision.RandomResizedCrop(8)],  # not adjacent
        [vision.Normalize(MEAN, STD, is_hwc=False), vision.HWC2CHW()],  # CHW input
        [vision.RandomHorizontalFlip(), vision.HWC2CHW()],
    ]
    for case in cases:
        chain = resolve_operations(case)
        assert _fused.fuse_operations(chain) == chain, case


# -- fused vs unfused maps ---------------------------------------------------------------------


def test_fused_map_makes_the_same_draws_nearest_is_identical(jpeg_folder, fusion):
    # Small crops (no draft) with NEAREST: the only difference could be the random draws.
    on = run_map(jpeg_folder, ops(size=130, interpolation=Inter.NEAREST))
    config.set_map_fusion(False)
    off = run_map(jpeg_folder, ops(size=130, interpolation=Inter.NEAREST))
    assert len(on) == 2
    for a, b in zip(on, off):
        np.testing.assert_array_equal(a, b)


def test_fused_map_bilinear_within_one_level(jpeg_folder, fusion):
    on = run_map(jpeg_folder, ops(size=130))
    config.set_map_fusion(False)
    off = run_map(jpeg_folder, ops(size=130))
    for a, b in zip(on, off):
        assert a.shape == (5, 3, 130, 130) and a.dtype == np.float32
        # one uint8 level is 1/std after Normalize
        assert np.abs(a - b).max() <= 1.0 / min(STD) + 1e-5


def test_fused_map_draft_scaling_within_tolerance(jpeg_folder, fusion, monkeypatch):
    calls = []
    original = _decode_crop.decode_jpeg_rgbx

    def spy(data, header, scale=1, rows=None):
        calls.append(scale)
        return original(data, header, scale, rows)

    monkeypatch.setattr(_decode_crop, "decode_jpeg_rgbx", spy)
    on = run_map(jpeg_folder, ops(size=32))
    # 32 px outputs of 240-320 px crops: each decodes at 1/2 or 1/4 (draws seeded by run_map)
    assert calls == [2, 4, 4, 4, 2, 4, 4, 4, 4, 4]
    config.set_map_fusion(False)
    calls.clear()
    off = run_map(jpeg_folder, ops(size=32))
    assert not calls  # switched off: plain Decode, then RandomResizedCrop
    for a, b in zip(on, off):
        levels = np.abs(a - b) * np.array(STD, np.float32)[None, :, None, None]
        per_image = levels.reshape(len(a), -1)
        assert per_image.mean(axis=1).max() < 5.0
        assert (per_image > 16).mean(axis=1).max() < 0.04


def test_jpeg_draft_switch_off_decodes_at_full_scale(jpeg_folder, fusion, monkeypatch):
    calls = []
    original = _decode_crop.decode_jpeg_rgbx

    def spy(data, header, scale=1, rows=None):
        calls.append(scale)
        return original(data, header, scale, rows)

    monkeypatch.setattr(_decode_crop, "decode_jpeg_rgbx", spy)
    before = config.get_jpeg_draft()
    try:
        config.set_jpeg_draft(False)
        on = run_map(jpeg_folder, ops(size=32))  # 240-320 px crops: draft would apply
        op = vision.RandomCropDecodeResize(32, scale=(0.9, 1.0))
        config.set_jpeg_draft(True)  # the op and the iterator keep the setting they saw
        with use_rng(np.random.default_rng(0)):
            op(encode(photo(240, 320)))
    finally:
        config.set_jpeg_draft(before)
    assert calls == [1] * 11
    config.set_map_fusion(False)
    off = run_map(jpeg_folder, ops(size=32))
    for a, b in zip(on, off):  # no draft: within the pass order's one level
        assert np.abs(a - b).max() <= 1.0 / min(STD) + 1e-5
    with pytest.raises(TypeError, match="set_jpeg_draft"):
        config.set_jpeg_draft(1)


def test_switch_off_runs_the_unfused_ops(jpeg_folder, fusion, monkeypatch):
    seen = []

    def spy(*args, **kwargs):
        seen.append(1)
        return decode_resized_crop(*args, **kwargs)

    monkeypatch.setattr(_fused, "decode_resized_crop", spy)
    run_map(jpeg_folder, ops())
    assert len(seen) == 10
    config.set_map_fusion(False)
    assert not config.get_map_fusion()
    run_map(jpeg_folder, ops())
    assert len(seen) == 10
    with pytest.raises(TypeError, match="set_map_fusion: expected a bool"):
        config.set_map_fusion(1)


@pytest.mark.parametrize("workers,processes", [(3, False), (2, True)])
def test_fused_map_is_deterministic_with_workers(jpeg_folder, workers, processes):
    ref = run_map(jpeg_folder, ops())
    got = run_map(jpeg_folder, ops(), workers=workers, processes=processes)
    for a, b in zip(ref, got):
        np.testing.assert_array_equal(a, b)


def test_fused_map_reports_a_corrupt_file(jpeg_folder):
    good = (jpeg_folder / "c0" / "0.jpg").read_bytes()
    (jpeg_folder / "c0" / "9.jpg").write_bytes(good[: len(good) // 3])  # truncated
    expected = r"9\.jpg\): RuntimeError: Decode: cannot decode image"
    with pytest.raises(ds.PipelineError, match=expected):
        run_map(jpeg_folder, ops())
    config.set_seed(5)
    d = ds.ImageFolderDataset(str(jpeg_folder), shuffle=False)
    d = d.map(ops(), input_columns="image", on_error="skip")
    it = d.create_tuple_iterator(output_numpy=True, num_epochs=1)
    assert len(list(it)) == 10 and len(it.skipped) == 1


# -- the fused ops, eagerly ----------------------------------------------------------------------


def test_fused_decode_crop_falls_back_for_other_inputs():
    # Inputs the fast path does not take go through the unfused pair: same errors.
    chain = resolve_operations(ops(size=16)[:2])
    (fused,) = _fused.fuse_operations(chain)
    for bad in (Image.fromarray(photo(40, 50)), np.zeros((3, 3), np.uint8), 3.5):
        with pytest.raises(TypeError) as unfused_error:
            chain[1](*chain[0](bad))
        with pytest.raises(TypeError, match="Decode: expected encoded image bytes") as got:
            fused(bad)
        assert str(got.value) == str(unfused_error.value)


def test_fused_normalize_chw_is_bitwise_and_falls_back():
    chain = _fused.fuse_operations(resolve_operations(ops()[2:]))
    (fused,) = chain
    img = photo(20, 30)
    for seed in range(4):  # both flip outcomes
        with use_rng(np.random.default_rng(seed)):
            (a,) = fused(img)
        with use_rng(np.random.default_rng(seed)):
            b = vision.HWC2CHW()(vision.Normalize(MEAN, STD)(vision.RandomHorizontalFlip()(img)))
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="RandomHorizontalFlip: expected an image of shape"):
        fused(np.zeros((2, 3, 4, 3), np.uint8))  # the unfused ops raise their own errors
    with pytest.raises(ValueError, match="Normalize: 3 mean values for an image with 1"):
        fused(np.zeros((4, 5), np.uint8))


def test_random_crop_decode_resize_tolerance_and_errors():
    img = photo(300, 400, 3)
    data = encode(img)
    for size, seed in [(64, 0), (40, 1), (150, 2)]:
        op = vision.RandomCropDecodeResize(size)
        with use_rng(np.random.default_rng(seed)):
            a = op(data)
        with use_rng(np.random.default_rng(seed)):
            b = vision.RandomResizedCrop(size)(vision.Decode()(data))
        diff = np.abs(a.astype(int) - b)
        assert a.shape == (size, size, 3) and diff.mean() < 5 and (diff > 16).mean() < 0.04
    with pytest.raises(RuntimeError, match="RandomCropDecodeResize: cannot decode image"):
        vision.RandomCropDecodeResize(8)(data[: len(data) // 4])
    with pytest.raises(RuntimeError, match="RandomCropDecodeResize: cannot decode image"):
        vision.RandomCropDecodeResize(8)(np.frombuffer(b"not an image", np.uint8))


@pytest.mark.parametrize("interpolation", [Inter.NEAREST, Inter.BICUBIC, Inter.ANTIALIAS])
def test_decode_crop_without_draft_is_identical_for_these_filters(interpolation):
    # A gray JPEG (40 px outputs: draft scaling would need 80 px crops of a 60x70 image)
    # and a PNG (never draft-scaled).
    gray = photo(60, 70)[..., 0]
    for data, size in ((encode(gray), 40), (encode(photo(60, 70), "PNG"), 20)):
        for seed in range(3):
            with use_rng(np.random.default_rng(seed)):
                a = vision.RandomCropDecodeResize(size, interpolation=interpolation)(data)
            with use_rng(np.random.default_rng(seed)):
                crop = vision.RandomResizedCrop(size, interpolation=interpolation)
                b = crop(vision.Decode()(data))
            assert a.shape == (size, size, 3)
            np.testing.assert_array_equal(a, b)


def test_draft_factor():
    assert draft_factor(224, 224, 224, 224) == 1
    assert draft_factor(448, 500, 224, 224) == 2
    assert draft_factor(447, 900, 224, 224) == 1
    assert draft_factor(900, 1800, 224, 224) == 4
    assert draft_factor(4000, 4000, 224, 224) == 8


def test_draft_decode_box_maps_to_the_scaled_image():
    # A vertical edge at x = 200 of a 400 px wide JPEG: a crop [150, 250) decoded at 1/2
    # (draft) must still put the edge in the middle of the output.
    img = np.zeros((300, 400, 3), np.uint8)
    img[:, 200:] = 255
    data = encode(img)

    class Fixed:
        def uniform(self, lo, hi):
            return hi if hi > 0.5 else 0.0  # full scale, aspect ratio 1

        def integers(self, lo, hi):
            return 0

    out = decode_resized_crop(
        "x", data, (40, 40), (0.0, 0.1), (1.0, 1.0), 1, "bilinear", Fixed()
    )  # one attempt that fails -> the centre crop, 300x300 at (0, 50)
    assert _decode_crop.draft_factor(300, 300, 40, 40) == 4
    row = out[20, :, 0].astype(int)
    centre = int(np.argmax(np.diff(row)))
    assert abs(centre - (200 - 50) * 40 / 300) <= 1.5


@pytest.mark.parametrize("filt", ["bilinear", "bicubic", "nearest"])
@pytest.mark.parametrize("size", [(48, 48), (130, 90), (16, 16)])
def test_decoding_down_to_the_crop_only_changes_nothing(filt, size, monkeypatch):
    # The decoder stops after the crop's bottom row (as MindSpore's RandomCropDecodeResize);
    # the output equals the crop resized from the fully decoded image, bit for bit
    # (also with draft scaling: the 16 px outputs).
    data = encode(photo(240, 320, 3))
    args = ("x", data, size, (0.08, 1.0), (0.75, 4 / 3), 10, filt)
    rows = []
    original = _decode_crop.decode_jpeg_rgbx

    def spy(raw, header, scale=1, rows_wanted=None):
        rows.append(rows_wanted)
        return original(raw, header, scale, rows_wanted)

    monkeypatch.setattr(_decode_crop, "decode_jpeg_rgbx", spy)
    fast = [decode_resized_crop(*args, np.random.default_rng(s)) for s in range(12)]
    assert min(rows) < 240  # some crops end above the bottom
    monkeypatch.setattr(_decode_crop, "decode_jpeg_rgbx", lambda *a: None)  # full decode
    full = [decode_resized_crop(*args, np.random.default_rng(s)) for s in range(12)]
    for a, b in zip(fast, full):
        np.testing.assert_array_equal(a, b)


# -- Decode and pixel views ----------------------------------------------------------------------


def test_decode_output_is_writable_rgb():
    for img in (photo(30, 40), photo(30, 40)[..., 1]):
        data = encode(img)
        out = vision.Decode()(data)
        with Image.open(io.BytesIO(data.tobytes())) as ref:
            np.testing.assert_array_equal(out, np.asarray(ref.convert("RGB")))
        assert out.shape == (30, 40, 3) and out.flags.writeable and out.flags.c_contiguous


def test_pixels_is_a_read_only_view_of_pillow_memory():
    im = Image.fromarray(photo(20, 25))
    view = pixels(im)
    assert view.shape[:2] == (20, 25) and not view.flags.writeable
    np.testing.assert_array_equal(view[..., :3], np.asarray(im))
    im.putpixel((3, 2), (1, 2, 3))
    if view.shape[2] == 4:  # a zero-copy view sees the change
        assert tuple(view[2, 3, :3]) == (1, 2, 3)
    gray = im.convert("L")
    np.testing.assert_array_equal(pixels(gray), np.asarray(gray))
    with pytest.raises(ValueError, match="expected an 'RGB' or 'L' image, got mode 'RGBA'"):
        pixels(im.convert("RGBA"))
