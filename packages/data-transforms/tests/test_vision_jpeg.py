"""`vision._jpeg`: a plain JPEG decoded without `Image.open` gives Pillow's pixels bit for
bit, also when the decoder stops after the top rows; everything else is left to
`Image.open` (None)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image, ImageFile

from sporeling.data import vision
from sporeling.data.transforms import use_rng
from sporeling.data.vision._jpeg import decode_jpeg, decode_jpeg_rgbx, jpeg_header


def photo(h=90, w=120, seed=0):
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    base = np.stack([xx * 2.0, yy * 2.5, (xx + yy) * 1.2], -1) % 256
    return np.clip(base + rng.normal(0, 8, base.shape), 0, 255).astype(np.uint8)


def encode(img, **kw):
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format="JPEG", quality=90, **kw)
    return buf.getvalue()


def pillow(data, scale=1):
    with Image.open(io.BytesIO(data)) as im:
        if scale > 1:
            im.draft(im.mode, (im.width // scale, im.height // scale))
        im.load()
        return np.asarray(im)


CASES = {
    "baseline": encode(photo()),
    "progressive": encode(photo(), progressive=True),
    "gray": encode(photo()[..., 0]),
    "subsampling-444": encode(photo(), subsampling=0),
    "odd-size": encode(photo(37, 53)),
}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("scale", [1, 2, 4, 8])
def test_decode_equals_pillow(name, scale):
    data = CASES[name]
    header = jpeg_header(data)
    assert header is not None
    h, w, c = header
    assert (h, w) == Image.open(io.BytesIO(data)).size[::-1] and c in (1, 3)
    im = decode_jpeg(np.frombuffer(data, np.uint8).data, header, scale)  # a memoryview
    np.testing.assert_array_equal(np.asarray(im), pillow(data, scale))


def test_header_leaves_other_files_to_pillow():
    cmyk = io.BytesIO()
    Image.fromarray(photo()).convert("CMYK").save(cmyk, format="JPEG")
    png = io.BytesIO()
    Image.fromarray(photo()).save(png, format="PNG")
    data = CASES["baseline"]
    sof = data.index(b"\xff\xc0")
    for other in (cmyk.getvalue(), png.getvalue(), data[:sof], b"\xff\xd8garbage", b""):
        assert jpeg_header(other) is None


def test_truncated_and_corrupt_data_raise_oserror():
    data = CASES["baseline"]
    header = jpeg_header(data)
    with pytest.raises(OSError, match="truncated"):
        decode_jpeg(data[: len(data) // 2], header)
    with pytest.raises(OSError):  # a header that promises more than the data holds
        decode_jpeg(data[:200] + b"\xff\xd9", header)


def test_pillow_settings_send_images_to_image_open(monkeypatch):
    data = CASES["baseline"]
    header = jpeg_header(data)
    monkeypatch.setattr(ImageFile, "LOAD_TRUNCATED_IMAGES", True)
    assert decode_jpeg(data, header) is None
    monkeypatch.setattr(ImageFile, "LOAD_TRUNCATED_IMAGES", False)
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 10_000)  # the image has 10 800
    assert decode_jpeg(data, header) is None
    with pytest.warns(Image.DecompressionBombWarning):  # Image.open's check still applies
        vision.RandomCropDecodeResize(8)(np.frombuffer(data, np.uint8))
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1_000)
    with pytest.raises(Image.DecompressionBombError):
        vision.RandomCropDecodeResize(8)(np.frombuffer(data, np.uint8))


def test_fused_crop_of_a_cmyk_jpeg_goes_through_image_open():
    buf = io.BytesIO()
    Image.fromarray(photo()).convert("CMYK").save(buf, format="JPEG")
    data = np.frombuffer(buf.getvalue(), np.uint8)
    with use_rng(np.random.default_rng(1)):
        a = vision.RandomCropDecodeResize(80)(data)  # no draft scaling: crops < 160 px
    with use_rng(np.random.default_rng(1)):
        b = vision.RandomResizedCrop(80)(vision.Decode()(data))
    assert a.shape == (80, 80, 3) and np.abs(a.astype(int) - b).max() <= 1


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("scale", [1, 2, 8])
def test_rgbx_rows_equal_pillow(name, scale):
    data = CASES[name]
    header = jpeg_header(data)
    full = pillow(data, scale)
    if full.ndim == 2:  # grayscale: Pillow's "L" -> "RGB" replicates the value
        full = np.repeat(full[..., None], 3, axis=2)
    height = full.shape[0]
    for rows in (None, height, height - 1, 9, 1, 10**6):
        px = decode_jpeg_rgbx(np.frombuffer(data, np.uint8).data, header, scale, rows)
        want = height if rows is None else min(rows, height)
        assert px.shape == (want, full.shape[1], 4) and px.flags.writeable
        np.testing.assert_array_equal(px[..., :3], full[:want])
        assert (px[..., 3] == 255).all()


def test_rgbx_leaves_pillow_settings_to_the_other_paths(monkeypatch):
    data = CASES["baseline"]
    monkeypatch.setattr(ImageFile, "LOAD_TRUNCATED_IMAGES", True)
    assert decode_jpeg_rgbx(data, jpeg_header(data), rows=5) is None


def test_rgbx_errors_before_the_wanted_rows_raise():
    data = CASES["baseline"]
    header = jpeg_header(data)
    with pytest.raises(OSError, match="truncated"):
        decode_jpeg_rgbx(data[: len(data) // 2], header)
    with pytest.raises(OSError, match="truncated"):  # cut above row 80 of 90
        decode_jpeg_rgbx(data[: len(data) // 2], header, rows=80)
    with pytest.raises(OSError):
        decode_jpeg_rgbx(data[:200] + b"\xff\xd9", header, rows=5)
    # MindSpore's RandomCropDecodeResize does not read past the crop either: data cut
    # below the wanted rows decodes them.
    top = decode_jpeg_rgbx(data[: len(data) * 3 // 4], header, rows=8)
    np.testing.assert_array_equal(top[..., :3], pillow(data)[:8])
