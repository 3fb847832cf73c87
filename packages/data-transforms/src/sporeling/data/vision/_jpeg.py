"""Decode a plain JPEG with Pillow's decoder, without `Image.open`, for the fused crop.

`Image.open` parses a JPEG's markers in Python (70-100 us per image, with the GIL held,
so it also limits thread workers) to learn the size and the number of components, which
the decoder (libjpeg-turbo) then reads again. `decode_jpeg` reads them from the SOF
marker (about 1 us) and drives Pillow's JPEG decoder the way `ImageFile.load` does
(`Image._getdecoder(mode, "jpeg", (rawmode, ""), (scale, 0))`), so the pixels are
Pillow's bit for bit (tests/test_vision_fused.py compares them).

`decode_jpeg_rgbx` decodes a JPEG to RGB into a NumPy buffer of the caller's (Pillow's
`map_buffer`: no zero-filled Pillow image, no export afterwards) and can stop after the
top `rows` rows, as MindSpore's `RandomCropDecodeResize` (libjpeg-turbo, reading
scanlines up to the crop's bottom edge, then `jpeg_destroy_decompress`) does: the rows
are the full decode's bit for bit, the rows below are never decoded, and the data after
them is not checked.

Both return None, and the caller uses `Image.open`, for anything but an 8-bit baseline
or progressive JPEG with 1 or 3 components and no Adobe marker (CMYK, colour
transforms, 12-bit, lossless, arithmetic coding), for images above
`Image.MAX_IMAGE_PIXELS` (so Pillow's decompression-bomb check stays in charge), when
`ImageFile.LOAD_TRUNCATED_IMAGES` is set, and on a Pillow without these internals.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from PIL import Image, ImageFile
from PIL import _imaging as pil_core

__all__ = ["decode_jpeg", "decode_jpeg_rgbx", "jpeg_header"]

_SOF = (0xC0, 0xC1, 0xC2)  # baseline, extended sequential, progressive (Huffman)
_UNSUPPORTED = frozenset((0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF, 0xEE))
_STANDALONE = frozenset((0x01, *range(0xD0, 0xD8)))  # TEM, RST0-7: no length field


def jpeg_header(data: Any) -> tuple[int, int, int] | None:
    """(height, width, components) of a JPEG this module decodes itself, else None."""
    b = memoryview(data).cast("B") if not isinstance(data, bytes | bytearray) else data
    n = len(b)
    if n < 4 or b[0] != 0xFF or b[1] != 0xD8:
        return None
    i = 2
    while i + 4 <= n:
        if b[i] != 0xFF:
            return None
        marker = b[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker in _STANDALONE:
            i += 2
            continue
        if marker == 0xDA or marker in _UNSUPPORTED:  # scan before any frame, or unsupported
            return None
        if marker in _SOF:
            if i + 10 > n or b[i + 4] != 8:
                return None
            h = (b[i + 5] << 8) | b[i + 6]
            w = (b[i + 7] << 8) | b[i + 8]
            c = b[i + 9]
            return (h, w, c) if h > 0 and w > 0 and c in (1, 3) else None
        i += 2 + ((b[i + 2] << 8) | b[i + 3])
    return None


def _usable(header: tuple[int, int, int]) -> bool:
    h, w, _ = header
    limit = Image.MAX_IMAGE_PIXELS
    return not ImageFile.LOAD_TRUNCATED_IMAGES and (limit is None or w * h <= limit)


def decode_jpeg(data: Any, header: tuple[int, int, int], scale: int = 1) -> Image.Image | None:
    """The decoded image ("RGB" or "L") at 1/`scale` (libjpeg's DCT scaling: 1, 2, 4, 8),
    or None when this path does not apply (then use `Image.open`). Raises OSError for
    data the decoder rejects or that ends early, as `Image.open(...).load()` would."""
    h, w, c = header
    if not _usable(header):
        return None
    mode = "RGB" if c == 3 else "L"
    size = ((w + scale - 1) // scale, (h + scale - 1) // scale)
    try:
        decoder = Image._getdecoder(mode, "jpeg", (mode, ""), (scale, 0))
        core = pil_core.new(mode, size)
    except (AttributeError, TypeError, OSError):  # another Pillow: use Image.open
        return None
    decoder.setimage(core, (0, 0, *size))
    try:
        consumed, err = decoder.decode(data)
    finally:
        decoder.cleanup()
    if consumed >= 0:  # the decoder wants more data
        raise OSError("image file is truncated")
    if err < 0:
        raise OSError(f"decoder error {err} when reading image file")
    return Image.Image()._new(core)


def decode_jpeg_rgbx(
    data: Any, header: tuple[int, int, int], scale: int = 1, rows: int | None = None
) -> np.ndarray | None:
    """The top `rows` rows (default: all) of a JPEG decoded at 1/`scale` to RGB (libjpeg
    replicates a grayscale image's values, as Pillow's "L" to "RGB" conversion), as an
    (rows, W, 4) uint8 array whose 4th channel is 255 (Pillow's RGBX storage), or None
    when this path does not apply (see the module docstring). Raises OSError for data the
    decoder rejects before the last wanted row, or that ends early."""
    h, w, _ = header
    if not _usable(header):
        return None
    width, height = (w + scale - 1) // scale, (h + scale - 1) // scale
    rows = height if rows is None else min(max(int(rows), 1), height)
    buf = np.empty((rows, width, 4), np.uint8)
    buf[rows - 1, width - 1, 3] = 0  # the decoder writes 255 here once the last row is in
    try:
        decoder = Image._getdecoder("RGB", "jpeg", ("RGB", ""), (scale, 0))
        core = pil_core.map_buffer(buf, (width, rows), "raw", 0, ("RGB", 0, 1))
    except (AttributeError, TypeError, ValueError, OSError):  # another Pillow
        return None
    decoder.setimage(core, (0, 0, width, rows))
    try:
        consumed, err = decoder.decode(data)
    finally:
        decoder.cleanup()
        del core
    if consumed >= 0:  # the decoder wants more data
        raise OSError("image file is truncated")
    # Stopping before the last row makes libjpeg's finish step fail (too little data read),
    # which Pillow reports as an error after all wanted rows are written.
    if err < 0 and (rows == height or buf[rows - 1, width - 1, 3] != 255):
        raise OSError(f"decoder error {err} when reading image file")
    return buf
