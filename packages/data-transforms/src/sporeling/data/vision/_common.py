"""Helpers shared by several kinds of vision transform: image checks, resize, pad and rotate
arithmetic (geometry and the bbox ops), colour-enhancement maths (the colour ops and the
augmentation policies), and the decode helpers `_decode_crop` also uses.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
from PIL import Image, UnidentifiedImageError

from sporeling.data.vision.kernels import color as kcolor
from sporeling.data.vision.kernels import pointwise as kpoint
from sporeling.data.vision.kernels.geometry import warp
from sporeling.data.vision.kernels.resample import resize_array, resize_nearest
from sporeling.data.vision.utils import (
    Border,
    Inter,
    check_enum,
    check_image,
)

_WARP_MODE = {Inter.NEAREST: 0, Inter.BILINEAR: 1, Inter.BICUBIC: 2}


def _hw(img: Any) -> tuple[int, int]:
    if isinstance(img, Image.Image):
        return img.height, img.width
    return int(img.shape[0]), int(img.shape[1])


def np_resize(
    img: np.ndarray, h: int, w: int, filt: str, region: tuple[int, int, int, int] | None = None
) -> np.ndarray:
    """Resize `img` (or its `region` = (top, left, height, width), without copying it out)."""
    if filt == "nearest":
        if region is not None:
            i, j, rh, rw = region
            img = img[i : i + rh, j : j + rw]
        return resize_nearest(img, h, w)
    if filt == "box" and img.dtype == np.uint8 and (h != _hw(img)[0] or w != _hw(img)[1]):
        # Inter.AREA: Pillow rounds the horizontal pass to uint8 before the vertical one, so
        # an exact 2x downscale is off the block mean by up to 0.75 level; one rounding at
        # the end gives the block mean (rounded half up, as Pillow's one-pass resize).
        out = resize_array(img.astype(np.float32), h, w, filt, region=region)
        return np.floor(out + np.float32(0.5)).clip(0, 255).astype(np.uint8)
    return resize_array(img, h, w, filt, region=region)


def _check_interpolation(op: str, interpolation: Any, warp_only: bool = False) -> Inter:
    check_enum(op, interpolation, Inter, "interpolation")
    if warp_only and interpolation not in _WARP_MODE:
        raise ValueError(
            f"{op}: resample must be Inter.NEAREST, Inter.BILINEAR or Inter.BICUBIC, got "
            f"{interpolation!r}."
        )
    return interpolation


def _fill_for(img: Any, fill: tuple[int, int, int]) -> Any:
    bands = (
        len(img.getbands())
        if isinstance(img, Image.Image)
        else (1 if img.ndim == 2 else img.shape[2])
    )
    if bands == 1:
        return fill[0]
    return tuple(fill[:bands]) + (255,) * max(0, bands - 3)


# -- Decode -----------------------------------------------------------------------------


def encoded_bytes(op: str, data: Any) -> bytes | bytearray | memoryview:
    """The encoded image in `data` (bytes-like or a 1-D uint8 array), else TypeError."""
    if isinstance(data, np.ndarray):
        if data.dtype != np.uint8 or data.ndim != 1:
            raise TypeError(
                f"{op}: expected encoded image bytes (a 1-D uint8 array or bytes), got an "
                f"array of shape {data.shape} and dtype {data.dtype}."
            )
        return np.ascontiguousarray(data).data.cast("B")
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(f"{op}: expected encoded image bytes, got {type(data).__name__}.")
    return data


DECODE_ERRORS = (UnidentifiedImageError, OSError, SyntaxError, ValueError)


def decode_error(op: str, nbytes: int, exc: BaseException) -> RuntimeError:
    return RuntimeError(
        f"{op}: cannot decode image ({nbytes} bytes): {exc}. The data is corrupt, "
        f"truncated or not an image."
    )


def np_pad(
    img: np.ndarray, ltrb: tuple[int, int, int, int], fill: Any = 0, mode: Border = Border.CONSTANT
) -> np.ndarray:
    l, t, r, b = ltrb
    widths = [(t, b), (l, r)] + ([(0, 0)] if img.ndim == 3 else [])
    if mode == Border.CONSTANT and min(ltrb) >= 0:
        # Fill the four borders and copy the image in: row copies, no per-channel np.pad
        # and stack (which were 10x slower than Pillow's expand on an RGB photo).
        h, w = img.shape[:2]
        c = 1 if img.ndim == 2 else img.shape[2]
        out = np.empty((h + t + b, w + l + r, *img.shape[2:]), img.dtype)
        if img.ndim == 3 and isinstance(fill, tuple):
            px = np.array([fill[k % len(fill)] for k in range(c)]).astype(img.dtype)
        else:
            px = np.full(c, fill if not isinstance(fill, tuple) else fill[0]).astype(img.dtype)
        # rows of w * c values: NumPy then copies whole rows, not 3-value pixels one by one
        rows = out.reshape(h + t + b, (w + l + r) * c)
        line = np.tile(px, w + l + r)
        rows[:t] = line
        rows[t + h :] = line
        rows[t : t + h, : l * c] = line[: l * c]
        rows[t : t + h, (l + w) * c :] = line[: r * c]
        rows[t : t + h, l * c : (l + w) * c] = img.reshape(h, w * c)
        return out
    if mode == Border.CONSTANT:
        if img.ndim == 3 and isinstance(fill, tuple):
            return np.stack(
                [
                    np.pad(img[..., c], widths[:2], constant_values=fill[c % len(fill)])
                    for c in range(img.shape[2])
                ],
                axis=2,
            )
        return np.pad(img, widths, constant_values=fill if not isinstance(fill, tuple) else fill[0])
    np_modes: dict[Border, Literal["edge", "reflect", "symmetric"]] = {
        Border.EDGE: "edge",
        Border.REFLECT: "reflect",
        Border.SYMMETRIC: "symmetric",
    }
    return np.pad(img, widths, mode=np_modes[mode])


def rotate_matrix(
    w: int, h: int, angle: float, expand: bool, center: tuple[float, float] | None
) -> tuple[list[float], int, int]:
    """Pillow's `Image.rotate` inverse matrix and output (width, height)."""
    cx, cy = center if center is not None else (w / 2.0, h / 2.0)
    a = -math.radians(angle)
    m = [
        round(math.cos(a), 15),
        round(math.sin(a), 15),
        0.0,
        round(-math.sin(a), 15),
        round(math.cos(a), 15),
        0.0,
    ]

    def tr(x: float, y: float) -> tuple[float, float]:
        return m[0] * x + m[1] * y + m[2], m[3] * x + m[4] * y + m[5]

    m[2], m[5] = tr(-cx, -cy)
    m[2] += cx
    m[5] += cy
    if expand:
        xs, ys = zip(*(tr(x, y) for x, y in ((0, 0), (w, 0), (w, h), (0, h))))
        nw = math.ceil(max(xs)) - math.floor(min(xs))
        nh = math.ceil(max(ys)) - math.floor(min(ys))
        m[2], m[5] = tr(-(nw - w) / 2.0, -(nh - h) / 2.0)
        w, h = nw, nh
    return m, w, h


def np_rotate(
    img: np.ndarray,
    angle: float,
    mode: int,
    expand: bool,
    center: tuple[float, float] | None,
    fill: Any,
) -> np.ndarray:
    angle = angle % 360.0
    h, w = _hw(img)
    if center is None:  # Pillow's transpose shortcuts
        if angle == 0:
            return img.copy()
        if angle == 180:
            return np.ascontiguousarray(img[::-1, ::-1])
        if angle in (90, 270) and (expand or w == h):
            return np.ascontiguousarray(np.rot90(img, 1 if angle == 90 else 3))
    m, nw, nh = rotate_matrix(w, h, angle, expand, center)
    return warp(img, m, (nh, nw), mode, fill)


# -- colour --------------------------------------------------------------------------------


def _gray(img: np.ndarray) -> np.ndarray:
    """Luminance as an image of the same shape (ImageEnhance's degenerate for Color)."""
    if img.ndim == 2 or img.shape[2] == 1:
        return img
    l = kcolor.rgb_to_l(img[..., :3])
    out = np.repeat(l[..., None], img.shape[2], axis=2)
    if img.shape[2] == 4:
        out[..., 3] = img[..., 3]
    return out


def np_color(img: np.ndarray, f: float) -> np.ndarray:
    if img.dtype == np.uint8 and img.ndim == 3 and img.shape[2] in (3, 4):
        return kpoint.saturation_blend(img, f)  # the two lines below, in one pass
    return kcolor.blend(_gray(img), img, f)


def np_brightness(img: np.ndarray, f: float) -> np.ndarray:
    return kcolor.blend(np.zeros_like(img), img, f)


def np_contrast(img: np.ndarray, f: float) -> np.ndarray:
    l = (
        img
        if img.ndim == 2
        else (img[..., 0] if img.shape[2] == 1 else kcolor.rgb_to_l(img[..., :3]))
    )
    mean = int(float(l.mean(dtype=np.float64)) + 0.5)
    return kcolor.blend(np.full_like(img, mean), img, f)


def np_sharpness(img: np.ndarray, f: float) -> np.ndarray:
    return kcolor.blend(kcolor.smooth3x3(img), img, f)


def _u8(op: str, img: Any) -> np.ndarray:
    check_image(op, img)
    if img.dtype != np.uint8:
        raise TypeError(f"{op}: expected a uint8 image, got dtype {img.dtype}.")
    return img


def posterize(img: np.ndarray, bits: int) -> np.ndarray:
    return img & np.uint8((0xFF << (8 - bits)) & 0xFF)


def solarize(img: np.ndarray, lo: float, hi: float) -> np.ndarray:
    return np.where((img >= lo) & (img <= hi), 255 - img, img).astype(img.dtype)


_RANDOM_INTERS = (Inter.NEAREST, Inter.BILINEAR, Inter.BICUBIC, Inter.AREA)
