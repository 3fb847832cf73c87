"""Decoding encoded images: `Decode` (Pillow; plain JPEGs without `Image.open`) and
`RandomCropDecodeResize` (decode and random resized crop in one step, `_decode_crop`).
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np
from PIL import Image

from sporeling.data import config
from sporeling.data.transforms._base import TensorOperation, Transform
from sporeling.data.vision._common import DECODE_ERRORS, decode_error, encoded_bytes
from sporeling.data.vision._decode_crop import decode_resized_crop
from sporeling.data.vision._geometry import RandomResizedCrop
from sporeling.data.vision._jpeg import decode_jpeg, decode_jpeg_rgbx, jpeg_header
from sporeling.data.vision._pil_pixels import pixels
from sporeling.data.vision.kernels import layout as klayout
from sporeling.data.vision.utils import (
    Inter,
)

__all__ = [
    "Decode",
    "RandomCropDecodeResize",
]


def open_rgb(op: str, data: Any) -> Image.Image:
    """Decode to a loaded RGB PIL image (no copy when the file is RGB already)."""
    if isinstance(data, Image.Image):
        return data.convert("RGB")
    raw = encoded_bytes(op, data)
    try:
        header = jpeg_header(raw)  # a plain JPEG: Pillow's decoder without Image.open
        im = decode_jpeg(raw, header) if header is not None else None
        if im is None:
            with Image.open(io.BytesIO(raw)) as im:
                im.load()
        return im if im.mode == "RGB" else im.convert("RGB")
    except DECODE_ERRORS as exc:
        raise decode_error(op, len(raw), exc) from exc


class Decode(Transform):
    """Decode JPEG/PNG/BMP/TIFF/GIF/WEBP bytes to an RGB HWC uint8 array, or a PIL image
    with `to_pil=True`. Decoding is Pillow's (libjpeg-turbo, libpng, ...)."""

    _py_input = "any"

    def __init__(self, to_pil: bool = False) -> None:
        if not isinstance(to_pil, bool):
            raise TypeError(f"Decode: to_pil must be a bool, got {to_pil!r}.")
        self.to_pil = to_pil
        self.implementation = "PY" if to_pil else "C"

    @staticmethod
    def _open(data: Any) -> Image.Image:
        return open_rgb("Decode", data)

    def _execute_numpy(self, data: Any) -> np.ndarray:
        # The decoder's RGBX buffer, then the one copy: a writable HWC RGB array.
        px = None
        if not isinstance(data, Image.Image):
            raw = encoded_bytes("Decode", data)
            header = jpeg_header(raw)
            if header is not None:
                try:
                    px = decode_jpeg_rgbx(raw, header)
                except DECODE_ERRORS as exc:
                    raise decode_error("Decode", len(raw), exc) from exc
            data = raw
        if px is None:
            px = pixels(self._open(data))
        return klayout.drop_channels(px, 3)

    def _execute_pil(self, data: Any) -> Image.Image:
        return self._open(data)


class RandomCropDecodeResize(TensorOperation):
    """Decode and RandomResizedCrop in one op: the crop box comes from the file's header,
    a JPEG is decoded only down to the crop's bottom row (as MindSpore's), large crops at
    1/2-1/8 scale (Pillow's draft mode; `config.set_jpeg_draft(False)` turns that off),
    and the crop is resized straight from the decoder's buffer (`_decode_crop`)."""

    def __init__(
        self,
        size: Any,
        scale: tuple[float, float] = (0.08, 1.0),
        ratio: tuple[float, float] = (3.0 / 4.0, 4.0 / 3.0),
        interpolation: Inter = Inter.BILINEAR,
        max_attempts: int = 10,
    ) -> None:
        self._crop = RandomResizedCrop(size, scale, ratio, interpolation, max_attempts)
        self._draft = config.get_jpeg_draft()
        self.size, self.scale, self.ratio = self._crop.size, self._crop.scale, self._crop.ratio
        self.interpolation, self.max_attempts = interpolation, max_attempts

    def _execute_numpy(self, data: Any) -> np.ndarray:
        return decode_resized_crop(
            "RandomCropDecodeResize",
            data,
            self.size,
            self.scale,
            self.ratio,
            self.max_attempts,
            self._crop._filter,
            self._rng(),
            draft=self._draft,
        )
