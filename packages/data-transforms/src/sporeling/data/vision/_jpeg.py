"""Decode a plain JPEG with Pillow's decoder, without `Image.open`, for the fused crop.

`Image.open` parses a JPEG's markers in Python (70-100 us per image, with the GIL held,
so it also limits thread workers) to learn the size and the number of components, which
the decoder (libjpeg-turbo) then reads again. `decode_jpeg` reads them from the SOF
marker (about 1 us) and drives Pillow's JPEG decoder the way `ImageFile.load` does
(`Image._getdecoder(mode, "jpeg", (rawmode, ""), (scale, 0))`), so the pixels are
Pillow's bit for bit (tests/test_vision_fused.py compares them).

It returns None, and the caller uses `Image.open`, for anything but an 8-bit baseline
or progressive JPEG with 1 or 3 components and no Adobe marker (CMYK, colour
transforms, 12-bit, lossless, arithmetic coding), for images above
`Image.MAX_IMAGE_PIXELS` (so Pillow's decompression-bomb check stays in charge), when
`ImageFile.LOAD_TRUNCATED_IMAGES` is set, and on a Pillow without these internals.
"""

from __future__ import annotations

from typing import Any

from PIL import Image, ImageFile
from PIL import _imaging as pil_core

__all__ = ["decode_jpeg", "jpeg_header"]

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


def decode_jpeg(data: Any, header: tuple[int, int, int], scale: int = 1) -> Image.Image | None:
    """The decoded image ("RGB" or "L") at 1/`scale` (libjpeg's DCT scaling: 1, 2, 4, 8),
    or None when this path does not apply (then use `Image.open`). Raises OSError for
    data the decoder rejects or that ends early, as `Image.open(...).load()` would."""
    h, w, c = header
    limit = Image.MAX_IMAGE_PIXELS
    if ImageFile.LOAD_TRUNCATED_IMAGES or (limit is not None and w * h > limit):
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
