"""Decode + RandomResizedCrop in one step: `RandomCropDecodeResize` and the fused map op.

The crop box is drawn from the image size in the file's header (the same
`resized_crop_params` call RandomResizedCrop makes), then the image is decoded (a plain
JPEG by Pillow's decoder into a NumPy buffer, without `Image.open`, and only down
to the crop's bottom row, as MindSpore's RandomCropDecodeResize stops; see `_jpeg`), in
Pillow's JPEG draft mode (DCT-domain scaling by 1/2, 1/4 or 1/8) when the crop is at
least twice the output size in both directions, and the crop is resized straight out of
the decoder's buffer (no full-image copy). The tolerance against Decode
then RandomResizedCrop is in `_fused`'s docstring.
"""

from __future__ import annotations

import io
import math
from typing import Any

import numpy as np
from PIL import Image

from sporeling.data.vision._common import DECODE_ERRORS, decode_error, encoded_bytes
from sporeling.data.vision._geometry import resized_crop_params
from sporeling.data.vision._jpeg import decode_jpeg, decode_jpeg_rgbx, jpeg_header
from sporeling.data.vision._pil_pixels import pixels
from sporeling.data.vision.kernels.resample import resize_array, resize_nearest

__all__ = ["decode_resized_crop", "draft_factor"]

_NON_NEGATIVE = ("bilinear", "box", "hamming")

#: DCT-domain scale factors Pillow's JPEG draft mode offers, largest first.
_DRAFT_FACTORS = (8, 4, 2)


def draft_factor(crop_h: int, crop_w: int, out_h: int, out_w: int) -> int:
    """The largest of 8, 4, 2 that keeps the crop at least as large as the output, else 1."""
    for f in _DRAFT_FACTORS:
        if crop_h >= f * out_h and crop_w >= f * out_w:
            return f
    return 1


def _open(op: str, raw: Any) -> Image.Image:
    try:
        return Image.open(io.BytesIO(raw))
    except DECODE_ERRORS as exc:
        raise decode_error(op, len(raw), exc) from exc


def _load(im: Image.Image, factor: int) -> tuple[Image.Image, int]:
    """Load an opened image, JPEGs at 1/`factor` scale (draft mode); the factor used."""
    if factor > 1:
        w, h = im.size
        got = im.draft(im.mode, (max(w // factor, 1), max(h // factor, 1)))
        factor = round(w / got[1][2]) if got is not None else 1
    with im:
        im.load()
    return im, factor


def decode_resized_crop(
    op: str,
    data: Any,
    size: tuple[int, int],
    scale: tuple[float, float],
    ratio: tuple[float, float],
    max_attempts: int,
    filt: str,
    rng: np.random.Generator,
    draft: bool = True,
) -> np.ndarray:
    """Decode `data` and RandomResizedCrop it to `size` (h, w) in one step (see the module
    docstring); the crop box is `resized_crop_params(rng, h, w, ...)` of the full image."""
    # Filters without negative lobes run the shrinking pass first (fewer rows for the
    # slower horizontal pass, ~20 % of the resize); the result may differ from Pillow's
    # pass order by one level. Bicubic/Lanczos keep Pillow's order: their intermediate
    # clips at 0/255, so another order can differ by more.
    order = "fast" if filt in _NON_NEGATIVE else "pillow"
    raw = encoded_bytes(op, data)
    header = jpeg_header(raw)  # a plain JPEG: decoded without Image.open (`_jpeg`)
    opened = None if header is not None else _open(op, raw)
    if opened is not None:
        w, h = opened.size
    else:
        h, w = header[0], header[1]  # type: ignore[index]
    i, j, ch, cw = resized_crop_params(rng, h, w, scale, ratio, max_attempts)
    out_h, out_w = size
    jpeg = opened is None or opened.format == "JPEG"
    factor = draft_factor(ch, cw, out_h, out_w) if draft and filt != "nearest" and jpeg else 1
    # Rows of the (scaled) image the crop reaches: the decoder stops after them.
    rows = i + ch if factor == 1 else math.ceil((i + ch) / factor)
    try:
        px = decode_jpeg_rgbx(raw, header, factor, rows) if header is not None else None
        if px is None:
            rgb = decode_jpeg(raw, header, factor) if header is not None else None
            if rgb is None:
                rgb, factor = _load(opened if opened is not None else _open(op, raw), factor)
            if rgb.mode != "RGB":
                rgb = rgb.convert("RGB")
            px = pixels(rgb)  # a view of the decoder's buffer (RGBX), no copy
    except DECODE_ERRORS as exc:
        raise decode_error(op, len(raw), exc) from exc
    if filt == "nearest":
        return resize_nearest(px[i : i + ch, j : j + cw, :3], out_h, out_w)
    if factor == 1:
        return resize_array(px, out_h, out_w, filt, region=(i, j, ch, cw), channels=3, order=order)
    # Crop box in the scaled image's coordinates: libjpeg's 1/f output pixel k covers
    # source pixels [f*k, f*k + f), so continuous coordinates just divide by f.
    y0, y1, x0, x1 = i / factor, (i + ch) / factor, j / factor, (j + cw) / factor
    top, left = int(y0), int(x0)
    bottom = min(px.shape[0], math.ceil(y1))
    right = min(px.shape[1], math.ceil(x1))
    return resize_array(
        px,
        out_h,
        out_w,
        filt,
        region=(top, left, bottom - top, right - left),
        box=(y0 - top, x0 - left, y1 - top, x1 - left),
        channels=3,
        order=order,
    )
