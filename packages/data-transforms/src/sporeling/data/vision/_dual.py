"""The 18 vision transforms that MindSpore 1.8 offers with both implementations.

Each class has `_execute_numpy` (HWC/HW arrays, Numba kernels from `vision.kernels`
or plain NumPy for pure memory moves: slicing is already optimal there) and
`_execute_pil` (Pillow). Random parameters are drawn once per call by shared code
(`_params`), so both paths give the same result for the same generator state.
"""

from __future__ import annotations

import functools
import io
import math
from typing import Any, Literal

import numpy as np
from PIL import Image, ImageEnhance, ImageOps, UnidentifiedImageError

from sporeling.data.transforms._base import Transform
from sporeling.data.vision._jpeg import decode_jpeg, jpeg_header
from sporeling.data.vision._pil_pixels import pixels
from sporeling.data.vision.kernels import color as kcolor
from sporeling.data.vision.kernels import layout as klayout
from sporeling.data.vision.kernels import pointwise as kpoint
from sporeling.data.vision.kernels.geometry import warp
from sporeling.data.vision.kernels.resample import resize_array, resize_nearest
from sporeling.data.vision.utils import (
    Border,
    Inter,
    check_enum,
    check_fill,
    check_image,
    check_prob,
    check_range,
    check_size,
    is_num,
)

__all__ = [
    "AdjustGamma",
    "AutoContrast",
    "CenterCrop",
    "Decode",
    "Equalize",
    "Invert",
    "Pad",
    "RandomAffine",
    "RandomColor",
    "RandomColorAdjust",
    "RandomCrop",
    "RandomHorizontalFlip",
    "RandomLighting",
    "RandomResizedCrop",
    "RandomRotation",
    "RandomSharpness",
    "RandomVerticalFlip",
    "Resize",
]

# Inter -> Pillow resize filter name (ANTIALIAS is Pillow's LANCZOS, AREA its BOX).
_RESIZE_FILTER = {
    Inter.NEAREST: "nearest",
    Inter.BILINEAR: "bilinear",
    Inter.BICUBIC: "bicubic",
    Inter.PILCUBIC: "bicubic",
    Inter.ANTIALIAS: "lanczos",
    Inter.AREA: "box",
}
_PIL_FILTER = {
    "nearest": Image.Resampling.NEAREST,
    "bilinear": Image.Resampling.BILINEAR,
    "bicubic": Image.Resampling.BICUBIC,
    "lanczos": Image.Resampling.LANCZOS,
    "box": Image.Resampling.BOX,
}
_WARP_MODE = {Inter.NEAREST: 0, Inter.BILINEAR: 1, Inter.BICUBIC: 2}
_PIL_WARP = {0: Image.Resampling.NEAREST, 1: Image.Resampling.BILINEAR, 2: Image.Resampling.BICUBIC}


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


def pil_resize(img: Image.Image, h: int, w: int, filt: str) -> Image.Image:
    return img.resize((w, h), _PIL_FILTER[filt])


def resize_shape(h: int, w: int, size: int | tuple[int, int]) -> tuple[int, int]:
    """int size: the smaller edge becomes `size`, aspect ratio kept (truncated)."""
    if isinstance(size, int):
        if h <= w:
            return size, max(1, int(size * w / h))
        return max(1, int(size * h / w)), size
    return size


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


def _apply_lut(img: np.ndarray, luts: list[np.ndarray]) -> np.ndarray:
    """One table per channel, applied in one pass (`kernels.pointwise.apply_luts`)."""
    return kpoint.apply_luts(img, np.stack(luts))


def _check_u8(op: str, img: np.ndarray) -> np.ndarray:
    check_image(op, img)
    if img.dtype != np.uint8:
        raise TypeError(f"{op}: expected a uint8 image, got dtype {img.dtype}.")
    return img


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
        # A view of Pillow's RGBX storage, then the one copy: a writable HWC RGB array.
        return klayout.drop_channels(pixels(self._open(data)), 3)

    def _execute_pil(self, data: Any) -> Image.Image:
        return self._open(data)


# -- geometric ---------------------------------------------------------------------------


class Resize(Transform):
    """Resize to `size` ((h, w), or the smaller edge for an int) with `interpolation`.

    Both paths use Pillow's convolution resize (antialiasing when downscaling); MindSpore's
    C++ path used OpenCV's resize, which does not antialias. ``Inter.AREA`` on a uint8
    array rounds once, after both passes, so integer downscales give the block mean
    exactly (Pillow rounds between its passes: up to 0.75 level off); L and RGB images
    take the same arithmetic, so both paths agree.
    """

    def __init__(self, size: int | tuple[int, int], interpolation: Inter = Inter.BILINEAR) -> None:
        if isinstance(size, int) and not isinstance(size, bool):
            if size <= 0:
                raise ValueError(f"Resize: size must be positive, got {size}.")
            self.size: int | tuple[int, int] = size
        else:
            self.size = check_size("Resize", size)
        self.interpolation = _check_interpolation("Resize", interpolation)
        self._filter = _RESIZE_FILTER[self.interpolation]

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        check_image("Resize", img)
        h, w = resize_shape(*_hw(img), self.size)
        return np_resize(img, h, w, self._filter)

    def _execute_pil(self, img: Image.Image) -> Image.Image:
        h, w = resize_shape(*_hw(img), self.size)
        if self._filter == "box" and img.mode in ("L", "RGB"):
            # the same single rounding as the array path, so both paths agree exactly
            return Image.fromarray(np_resize(np.asarray(img), h, w, "box"))
        return pil_resize(img, h, w, self._filter)


def _center_crop_box(
    h: int, w: int, ch: int, cw: int
) -> tuple[tuple[int, int, int, int], int, int]:
    """(left, top, right, bottom padding), top, left of a centred crop (torchvision's)."""
    pad = (
        (cw - w) // 2 if cw > w else 0,
        (ch - h) // 2 if ch > h else 0,
        (cw - w + 1) // 2 if cw > w else 0,
        (ch - h + 1) // 2 if ch > h else 0,
    )
    h2, w2 = h + pad[1] + pad[3], w + pad[0] + pad[2]
    return pad, int(round((h2 - ch) / 2.0)), int(round((w2 - cw) / 2.0))


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


def pil_pad(
    img: Image.Image, ltrb: tuple[int, int, int, int], fill: Any = 0, mode: Border = Border.CONSTANT
) -> Image.Image:
    if mode == Border.CONSTANT:
        return ImageOps.expand(img, border=ltrb, fill=fill)
    # Pillow has no reflect/edge padding; as MindSpore's Python Pad, go through NumPy.
    return Image.fromarray(np_pad(np.asarray(img), ltrb, fill, mode), img.mode)


class CenterCrop(Transform):
    """Crop the centre `size` region (zero-padding first when the image is smaller)."""

    def __init__(self, size: int | tuple[int, int]) -> None:
        self.size = check_size("CenterCrop", size)

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        check_image("CenterCrop", img)
        ch, cw = self.size
        pad, top, left = _center_crop_box(*_hw(img), ch, cw)
        if any(pad):
            img = np_pad(img, pad)
        return img[top : top + ch, left : left + cw].copy()

    def _execute_pil(self, img: Image.Image) -> Image.Image:
        ch, cw = self.size
        pad, top, left = _center_crop_box(*_hw(img), ch, cw)
        if any(pad):
            img = ImageOps.expand(img, border=pad, fill=0)
        return img.crop((left, top, left + cw, top + ch))


def check_padding(op: str, padding: Any) -> tuple[int, int, int, int]:
    """int -> all sides; (lr, tb); (left, top, right, bottom)."""
    if isinstance(padding, int) and not isinstance(padding, bool):
        padding = (padding,) * 4
    if isinstance(padding, list | tuple) and len(padding) == 2:
        padding = (padding[0], padding[1], padding[0], padding[1])
    if (
        not isinstance(padding, list | tuple)
        or len(padding) != 4
        or not all(isinstance(p, int) and not isinstance(p, bool) and p >= 0 for p in padding)
    ):
        raise ValueError(
            f"{op}: padding must be a non-negative int or a sequence of 2 or 4 of them, "
            f"got {padding!r}."
        )
    return tuple(int(p) for p in padding)  # type: ignore[return-value]


class Pad(Transform):
    """Pad the borders: `padding` int / (lr, tb) / (l, t, r, b); fill or edge/reflect/symmetric."""

    def __init__(
        self, padding: Any, fill_value: Any = 0, padding_mode: Border = Border.CONSTANT
    ) -> None:
        self.padding = check_padding("Pad", padding)
        self.fill_value = check_fill("Pad", fill_value)
        self.padding_mode = check_enum("Pad", padding_mode, Border, "padding_mode")

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        check_image("Pad", img)
        return np_pad(img, self.padding, _fill_for(img, self.fill_value), self.padding_mode)

    def _execute_pil(self, img: Image.Image) -> Image.Image:
        return pil_pad(img, self.padding, _fill_for(img, self.fill_value), self.padding_mode)


class RandomCrop(Transform):
    """Crop a random `size` region, after optional `padding` / `pad_if_needed` padding."""

    def __init__(
        self,
        size: int | tuple[int, int],
        padding: Any = None,
        pad_if_needed: bool = False,
        fill_value: Any = 0,
        padding_mode: Border = Border.CONSTANT,
    ) -> None:
        self.size = check_size("RandomCrop", size)
        self.padding = None if padding is None else check_padding("RandomCrop", padding)
        if not isinstance(pad_if_needed, bool):
            raise TypeError(f"RandomCrop: pad_if_needed must be a bool, got {pad_if_needed!r}.")
        self.pad_if_needed = pad_if_needed
        self.fill_value = check_fill("RandomCrop", fill_value)
        self.padding_mode = check_enum("RandomCrop", padding_mode, Border, "padding_mode")

    def _pads(self, h: int, w: int) -> tuple[int, int, int, int]:
        l, t, r, b = self.padding or (0, 0, 0, 0)
        h2, w2 = h + t + b, w + l + r
        th, tw = self.size
        if self.pad_if_needed and w2 < tw:
            l, r = l + tw - w2, r + tw - w2
        if self.pad_if_needed and h2 < th:
            t, b = t + th - h2, b + th - h2
        return l, t, r, b

    def _params(self, h: int, w: int) -> tuple[int, int]:
        th, tw = self.size
        if h < th or w < tw:
            raise ValueError(
                f"RandomCrop: crop size {self.size} is larger than the (padded) image size "
                f"{(h, w)}; set pad_if_needed=True or padding."
            )
        rng = self._rng()
        return int(rng.integers(0, h - th + 1)), int(rng.integers(0, w - tw + 1))

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        check_image("RandomCrop", img)
        pads = self._pads(*_hw(img))
        if any(pads):
            img = np_pad(img, pads, _fill_for(img, self.fill_value), self.padding_mode)
        i, j = self._params(*_hw(img))
        return img[i : i + self.size[0], j : j + self.size[1]].copy()

    def _execute_pil(self, img: Image.Image) -> Image.Image:
        pads = self._pads(*_hw(img))
        if any(pads):
            img = pil_pad(img, pads, _fill_for(img, self.fill_value), self.padding_mode)
        i, j = self._params(*_hw(img))
        return img.crop((j, i, j + self.size[1], i + self.size[0]))


def resized_crop_params(
    rng: np.random.Generator,
    h: int,
    w: int,
    scale: tuple[float, float],
    ratio: tuple[float, float],
    max_attempts: int,
) -> tuple[int, int, int, int]:
    """(top, left, height, width) of a random crop of area in `scale`, aspect in `ratio`."""
    area = h * w
    log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
    for _ in range(max_attempts):
        target = area * rng.uniform(scale[0], scale[1])
        aspect = math.exp(rng.uniform(log_ratio[0], log_ratio[1]))
        cw = int(round(math.sqrt(target * aspect)))
        ch = int(round(math.sqrt(target / aspect)))
        if 0 < cw <= w and 0 < ch <= h:
            return int(rng.integers(0, h - ch + 1)), int(rng.integers(0, w - cw + 1)), ch, cw
    in_ratio = w / h
    if in_ratio < ratio[0]:
        cw, ch = w, int(round(w / ratio[0]))
    elif in_ratio > ratio[1]:
        ch, cw = h, int(round(h * ratio[1]))
    else:
        cw, ch = w, h
    return (h - ch) // 2, (w - cw) // 2, ch, cw


def check_scale_ratio(op: str, scale: Any, ratio: Any, max_attempts: Any) -> tuple[Any, Any, int]:
    scale = check_range(op, scale, "scale", 0.0)
    ratio = check_range(op, ratio, "ratio", 0.0)
    if ratio[0] <= 0:
        raise ValueError(f"{op}: ratio must be positive, got {ratio}.")
    if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
        raise ValueError(f"{op}: max_attempts must be a positive int, got {max_attempts!r}.")
    return scale, ratio, max_attempts


class RandomResizedCrop(Transform):
    """Crop a random area/aspect region and resize it to `size`."""

    def __init__(
        self,
        size: int | tuple[int, int],
        scale: tuple[float, float] = (0.08, 1.0),
        ratio: tuple[float, float] = (3.0 / 4.0, 4.0 / 3.0),
        interpolation: Inter = Inter.BILINEAR,
        max_attempts: int = 10,
    ) -> None:
        self.size = check_size("RandomResizedCrop", size)
        self.scale, self.ratio, self.max_attempts = check_scale_ratio(
            "RandomResizedCrop", scale, ratio, max_attempts
        )
        self.interpolation = _check_interpolation("RandomResizedCrop", interpolation)
        self._filter = _RESIZE_FILTER[self.interpolation]

    def _params(self, h: int, w: int) -> tuple[int, int, int, int]:
        return resized_crop_params(self._rng(), h, w, self.scale, self.ratio, self.max_attempts)

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        check_image("RandomResizedCrop", img)
        i, j, ch, cw = self._params(*_hw(img))
        return np_resize(img, *self.size, self._filter, region=(i, j, ch, cw))

    def _execute_pil(self, img: Image.Image) -> Image.Image:
        i, j, ch, cw = self._params(*_hw(img))
        return pil_resize(img.crop((j, i, j + cw, i + ch)), *self.size, self._filter)


class _RandomFlip(Transform):
    _axis = 1
    _pil = Image.Transpose.FLIP_LEFT_RIGHT

    def __init__(self, prob: float = 0.5) -> None:
        self.prob = check_prob(type(self).__name__, prob)

    def _params(self) -> bool:
        return bool(self._rng().random() < self.prob)

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        check_image(type(self).__name__, img)
        if not self._params():
            return img
        return klayout.hflip(img) if self._axis == 1 else img[::-1].copy()

    def _execute_pil(self, img: Image.Image) -> Image.Image:
        return img.transpose(self._pil) if self._params() else img


class RandomHorizontalFlip(_RandomFlip):
    """Flip left-right with probability `prob`."""


class RandomVerticalFlip(_RandomFlip):
    """Flip top-bottom with probability `prob`."""

    _axis = 0
    _pil = Image.Transpose.FLIP_TOP_BOTTOM


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


def _check_degrees(op: str, degrees: Any) -> tuple[float, float]:
    if is_num(degrees):
        if degrees < 0:
            raise ValueError(f"{op}: degrees must be non-negative when a number, got {degrees}.")
        return -float(degrees), float(degrees)
    return check_range(op, degrees, "degrees", -float("inf"))


def _check_center(op: str, center: Any) -> tuple[float, float] | None:
    if center is None:
        return None
    if not isinstance(center, list | tuple) or len(center) != 2 or not all(map(is_num, center)):
        raise ValueError(f"{op}: center must be None or an (x, y) pair, got {center!r}.")
    return float(center[0]), float(center[1])


class RandomRotation(Transform):
    """Rotate by an angle drawn from `degrees` (counter-clockwise, Pillow's convention)."""

    def __init__(
        self,
        degrees: Any,
        resample: Inter = Inter.NEAREST,
        expand: bool = False,
        center: tuple[float, float] | None = None,
        fill_value: Any = 0,
    ) -> None:
        self.degrees = _check_degrees("RandomRotation", degrees)
        self.resample = _check_interpolation("RandomRotation", resample, warp_only=True)
        if not isinstance(expand, bool):
            raise TypeError(f"RandomRotation: expand must be a bool, got {expand!r}.")
        self.expand = expand
        self.center = _check_center("RandomRotation", center)
        self.fill_value = check_fill("RandomRotation", fill_value)

    def _params(self) -> float:
        return float(self._rng().uniform(self.degrees[0], self.degrees[1]))

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        check_image("RandomRotation", img)
        return np_rotate(
            img,
            self._params(),
            _WARP_MODE[self.resample],
            self.expand,
            self.center,
            _fill_for(img, self.fill_value),
        )

    def _execute_pil(self, img: Image.Image) -> Image.Image:
        return img.rotate(
            self._params(),
            _PIL_WARP[_WARP_MODE[self.resample]],
            self.expand,
            self.center,
            fillcolor=_fill_for(img, self.fill_value),
        )


def affine_matrix(
    w: int,
    h: int,
    angle: float,
    translations: tuple[float, float],
    scale: float,
    shear: tuple[float, float],
) -> list[float]:
    """Inverse affine matrix of MindSpore's Python RandomAffine (torchvision 0.4 style)."""
    cx, cy = w * 0.5 + 0.5, h * 0.5 + 0.5
    a = math.radians(angle)
    sx, sy = math.radians(shear[0]), math.radians(shear[1])
    inv_scale = 1.0 / scale
    d = math.cos(a + sx) * math.cos(a + sy) + math.sin(a + sx) * math.sin(a + sy)
    m = [math.cos(a + sx), math.sin(a + sx), 0.0, -math.sin(a + sy), math.cos(a + sy), 0.0]
    m = [inv_scale / d * v for v in m]
    tx, ty = translations
    m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty)
    m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty)
    m[2] += cx
    m[5] += cy
    return m


class RandomAffine(Transform):
    """Random affine map: rotation `degrees`, `translate` fractions, `scale`, `shear`."""

    def __init__(
        self,
        degrees: Any,
        translate: Any = None,
        scale: Any = None,
        shear: Any = None,
        resample: Inter = Inter.NEAREST,
        fill_value: Any = 0,
    ) -> None:
        op = "RandomAffine"
        self.degrees = _check_degrees(op, degrees)
        if translate is not None:
            if (
                not isinstance(translate, list | tuple)
                or len(translate) not in (2, 4)
                or not all(is_num(t) and -1.0 <= t <= 1.0 for t in translate)
            ):
                raise ValueError(
                    f"{op}: translate must be 2 fractions (max |dx|, max |dy|) or 4 "
                    f"(min_dx, max_dx, min_dy, max_dy) in [-1, 1], got {translate!r}."
                )
            if len(translate) == 2:
                translate = (-translate[0], translate[0], -translate[1], translate[1])
        self.translate = None if translate is None else tuple(float(t) for t in translate)
        self.scale = None if scale is None else check_range(op, scale, "scale", 0.0)
        if self.scale is not None and self.scale[0] <= 0:
            raise ValueError(f"{op}: scale must be positive, got {scale!r}.")
        if shear is not None:
            if is_num(shear):
                shear = (-abs(shear), abs(shear), 0.0, 0.0)
            elif isinstance(shear, list | tuple) and len(shear) == 2:
                shear = (shear[0], shear[1], 0.0, 0.0)
            if (
                not isinstance(shear, list | tuple)
                or len(shear) != 4
                or not all(is_num(s) for s in shear)
                or shear[0] > shear[1]
                or shear[2] > shear[3]
            ):
                raise ValueError(
                    f"{op}: shear must be a number, (min_x, max_x) or (min_x, max_x, min_y, "
                    f"max_y), got {shear!r}."
                )
            shear = tuple(float(s) for s in shear)
        self.shear = shear
        self.resample = _check_interpolation(op, resample, warp_only=True)
        self.fill_value = check_fill(op, fill_value)

    def _params(self, w: int, h: int) -> list[float]:
        rng = self._rng()
        angle = float(rng.uniform(*self.degrees))
        if self.translate is not None:
            t = self.translate
            tx = float(np.round(rng.uniform(t[0] * w, t[1] * w)))
            ty = float(np.round(rng.uniform(t[2] * h, t[3] * h)))
        else:
            tx = ty = 0.0
        scale = float(rng.uniform(*self.scale)) if self.scale is not None else 1.0
        if self.shear is not None:
            shear = (
                float(rng.uniform(self.shear[0], self.shear[1])),
                float(rng.uniform(self.shear[2], self.shear[3])),
            )
        else:
            shear = (0.0, 0.0)
        return affine_matrix(w, h, angle, (tx, ty), scale, shear)

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        check_image("RandomAffine", img)
        h, w = _hw(img)
        m = self._params(w, h)
        return warp(img, m, (h, w), _WARP_MODE[self.resample], _fill_for(img, self.fill_value))

    def _execute_pil(self, img: Image.Image) -> Image.Image:
        m = self._params(img.width, img.height)
        return img.transform(
            img.size,
            Image.Transform.AFFINE,
            m,
            _PIL_WARP[_WARP_MODE[self.resample]],
            fillcolor=_fill_for(img, self.fill_value),
        )


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


def hue_shift(f: float) -> int:
    return int(f * 255) % 256


def np_hue(img: np.ndarray, f: float) -> np.ndarray:
    if img.ndim == 2 or img.shape[2] != 3:
        return img
    hsv = kcolor.rgb_to_hsv_u8(img)
    hsv[..., 0] = (hsv[..., 0].astype(np.int32) + hue_shift(f)) % 256
    return kcolor.hsv_to_rgb_u8(hsv)


def pil_hue(img: Image.Image, f: float) -> Image.Image:
    if img.mode != "RGB":
        return img
    h, s, v = img.convert("HSV").split()
    nh = ((np.asarray(h).astype(np.int32) + hue_shift(f)) % 256).astype(np.uint8)
    return Image.merge("HSV", (Image.fromarray(nh, "L"), s, v)).convert("RGB")


def _check_degrees_pos(op: str, degrees: Any) -> tuple[float, float]:
    return check_range(op, degrees, "degrees", 0.0)


class RandomColor(Transform):
    """Adjust saturation by a factor drawn from `degrees` (ImageEnhance.Color)."""

    def __init__(self, degrees: tuple[float, float] = (0.1, 1.9)) -> None:
        self.degrees = _check_degrees_pos("RandomColor", degrees)

    def _params(self) -> float:
        return float(self._rng().uniform(*self.degrees))

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        return np_color(_check_u8("RandomColor", img), self._params())

    def _execute_pil(self, img: Image.Image) -> Image.Image:
        return ImageEnhance.Color(img).enhance(self._params())


class RandomSharpness(Transform):
    """Adjust sharpness by a factor drawn from `degrees` (ImageEnhance.Sharpness)."""

    def __init__(self, degrees: tuple[float, float] = (0.1, 1.9)) -> None:
        self.degrees = _check_degrees_pos("RandomSharpness", degrees)

    def _params(self) -> float:
        return float(self._rng().uniform(*self.degrees))

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        return np_sharpness(_check_u8("RandomSharpness", img), self._params())

    def _execute_pil(self, img: Image.Image) -> Image.Image:
        return ImageEnhance.Sharpness(img).enhance(self._params())


def _factor_range(op: str, value: Any, name: str) -> tuple[float, float]:
    if is_num(value):
        if value < 0:
            raise ValueError(f"{op}: {name} must be non-negative, got {value}.")
        return max(0.0, 1.0 - value), 1.0 + value
    return check_range(op, value, name, 0.0)


class RandomColorAdjust(Transform):
    """Random brightness, contrast, saturation and hue, applied in a random order."""

    def __init__(
        self,
        brightness: Any = (1, 1),
        contrast: Any = (1, 1),
        saturation: Any = (1, 1),
        hue: Any = (0, 0),
    ) -> None:
        op = "RandomColorAdjust"
        self.brightness = _factor_range(op, brightness, "brightness")
        self.contrast = _factor_range(op, contrast, "contrast")
        self.saturation = _factor_range(op, saturation, "saturation")
        if is_num(hue):
            if not 0 <= hue <= 0.5:
                raise ValueError(f"{op}: hue must be in [0, 0.5], got {hue}.")
            hue = (-hue, hue)
        self.hue = check_range(op, hue, "hue", -0.5, 0.5)

    def _params(self) -> list[tuple[str, float]]:
        rng = self._rng()
        steps: list[tuple[str, float]] = []
        for name, (lo, hi), neutral in (
            ("brightness", self.brightness, 1.0),
            ("contrast", self.contrast, 1.0),
            ("saturation", self.saturation, 1.0),
            ("hue", self.hue, 0.0),
        ):
            if lo != neutral or hi != neutral:
                steps.append((name, float(rng.uniform(lo, hi))))
        order: np.ndarray | list[int] = rng.permutation(len(steps)) if steps else []
        return [steps[i] for i in order]

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        _check_u8("RandomColorAdjust", img)
        fns = {
            "brightness": np_brightness,
            "contrast": np_contrast,
            "saturation": np_color,
            "hue": np_hue,
        }
        for name, f in self._params():
            img = fns[name](img, f)
        return img

    def _execute_pil(self, img: Image.Image) -> Image.Image:
        for name, f in self._params():
            if name == "brightness":
                img = ImageEnhance.Brightness(img).enhance(f)
            elif name == "contrast":
                img = ImageEnhance.Contrast(img).enhance(f)
            elif name == "saturation":
                img = ImageEnhance.Color(img).enhance(f)
            else:
                img = pil_hue(img, f)
        return img


# AlexNet PCA lighting: eigenvalues (x255) times eigenvectors, as MindSpore's Python op.
_LIGHTING = np.array(
    [
        [55.46 * -0.5675, 4.794 * 0.7192, 1.148 * 0.4009],
        [55.46 * -0.5808, 4.794 * -0.0045, 1.148 * -0.8140],
        [55.46 * -0.5836, 4.794 * -0.6948, 1.148 * 0.4203],
    ]
)


class RandomLighting(Transform):
    """AlexNet-style PCA lighting noise with strength drawn from N(0, alpha)."""

    def __init__(self, alpha: float = 0.05) -> None:
        if not is_num(alpha) or alpha < 0:
            raise ValueError(f"RandomLighting: alpha must be a non-negative number, got {alpha!r}.")
        self.alpha = float(alpha)

    def _params(self) -> np.ndarray:
        return _LIGHTING @ self._rng().normal(0.0, self.alpha, 3)

    def _apply(self, arr: np.ndarray) -> np.ndarray:
        if arr.ndim != 3 or arr.shape[2] != 3:
            raise ValueError(f"RandomLighting: expected an RGB image (H, W, 3), got {arr.shape}.")
        out = arr.astype(np.float64) + self._params()
        if arr.dtype == np.uint8:
            return np.clip(out, 0, 255).astype(np.uint8)
        return out.astype(arr.dtype)

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        return self._apply(check_image("RandomLighting", img))

    def _execute_pil(self, img: Image.Image) -> Image.Image:
        return Image.fromarray(self._apply(np.asarray(img)), img.mode)


@functools.lru_cache(maxsize=64)
def gamma_lut(gamma: float, gain: float) -> np.ndarray:
    """The uint8 table of AdjustGamma (cached: an op applies the same one to every image;
    read-only, so no caller can change the cached copy)."""
    x = np.arange(256, dtype=np.float64) / 255.0
    lut = np.clip((255 + 1 - 1e-3) * gain * np.power(x, gamma), 0, 255).astype(np.uint8)
    lut.flags.writeable = False
    return lut


class AdjustGamma(Transform):
    """out = 255 * gain * (in / 255) ** gamma (via a lookup table for uint8)."""

    def __init__(self, gamma: float, gain: float = 1.0) -> None:
        if not is_num(gamma) or gamma < 0:
            raise ValueError(f"AdjustGamma: gamma must be a non-negative number, got {gamma!r}.")
        if not is_num(gain):
            raise TypeError(f"AdjustGamma: gain must be a number, got {gain!r}.")
        self.gamma = float(gamma)
        self.gain = float(gain)

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        check_image("AdjustGamma", img)
        if img.dtype != np.uint8:
            return (self.gain * np.power(img.astype(np.float32), self.gamma)).astype(np.float32)
        lut = gamma_lut(self.gamma, self.gain)
        return _apply_lut(img, [lut] * (1 if img.ndim == 2 else img.shape[2]))

    def _execute_pil(self, img: Image.Image) -> Image.Image:
        lut = gamma_lut(self.gamma, self.gain).tolist()
        return img.point(lut * len(img.getbands()))


def autocontrast_lut(h: np.ndarray, cutoff: tuple[float, float], ignore: Any) -> np.ndarray:
    """ImageOps.autocontrast's lookup table for one band histogram."""
    h = h.astype(np.int64).copy()
    if ignore is not None:
        for g in ignore if isinstance(ignore, list | tuple) else [ignore]:
            h[g] = 0
    if cutoff[0] or cutoff[1]:
        n = int(h.sum())
        for lo_side, frac in ((True, cutoff[0]), (False, cutoff[1])):
            cut = int(n * frac // 100)
            rng_ = range(256) if lo_side else range(255, -1, -1)
            for i in rng_:
                if cut > h[i]:
                    cut -= int(h[i])
                    h[i] = 0
                else:
                    h[i] -= cut
                    cut = 0
                if cut <= 0:
                    break
    nz = np.nonzero(h)[0]
    if nz.size == 0 or nz[-1] <= nz[0]:
        return np.arange(256, dtype=np.uint8)
    lo, hi = int(nz[0]), int(nz[-1])
    scale = 255.0 / (hi - lo)
    offset = -lo * scale
    ix = (np.arange(256) * scale + offset).astype(np.int64)  # int() truncates toward zero
    return np.clip(ix, 0, 255).astype(np.uint8)


class AutoContrast(Transform):
    """Stretch each channel's histogram to [0, 255] after cutting `cutoff` % at both ends."""

    def __init__(self, cutoff: float = 0.0, ignore: Any = None) -> None:
        if not is_num(cutoff) or not 0 <= cutoff < 50:
            raise ValueError(f"AutoContrast: cutoff must be in [0, 50), got {cutoff!r}.")
        if ignore is not None:
            items = ignore if isinstance(ignore, list | tuple) else [ignore]
            if not all(isinstance(g, int) and 0 <= g <= 255 for g in items):
                raise ValueError(f"AutoContrast: ignore must be ints in [0, 255], got {ignore!r}.")
        self.cutoff = float(cutoff)
        self.ignore = ignore

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        _check_u8("AutoContrast", img)
        luts = [
            autocontrast_lut(h, (self.cutoff,) * 2, self.ignore)
            for h in kpoint.channel_histograms(img)
        ]
        return _apply_lut(img, luts)

    def _execute_pil(self, img: Image.Image) -> Image.Image:
        return ImageOps.autocontrast(img, self.cutoff, self.ignore)


def equalize_lut(h: np.ndarray) -> np.ndarray:
    """ImageOps.equalize's lookup table for one band histogram."""
    histo = h[h > 0]
    if histo.size <= 1:
        return np.arange(256, dtype=np.uint8)
    step = (int(histo.sum()) - int(histo[-1])) // 255  # Pillow >= 10.3 (older: // 256)
    if not step:
        return np.arange(256, dtype=np.uint8)
    n = step // 2 + np.concatenate([[0], np.cumsum(h[:-1].astype(np.int64))])
    return np.minimum(n // step, 255).astype(np.uint8)


class Equalize(Transform):
    """Equalize each channel's histogram (ImageOps.equalize)."""

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        _check_u8("Equalize", img)
        luts = [equalize_lut(h) for h in kpoint.channel_histograms(img)]
        return _apply_lut(img, luts)

    def _execute_pil(self, img: Image.Image) -> Image.Image:
        return ImageOps.equalize(img)


class Invert(Transform):
    """255 - pixel on every channel."""

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        return 255 - _check_u8("Invert", img)

    def _execute_pil(self, img: Image.Image) -> Image.Image:
        return ImageOps.invert(img)
