"""Geometry: resizing, cropping, padding, flipping, rotation, affine and perspective
warps (MindSpore 1.8/2.x vision ops). Transforms with both implementations have
`_execute_numpy` (HWC/HW arrays, Numba kernels from `vision.kernels`) and `_execute_pil`
(Pillow); random parameters are drawn once per call by shared code, so both paths give
the same result for the same generator state.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from PIL import Image, ImageOps

from sporeling.data.transforms._base import (
    PyTensorOperation,
    TensorOperation,
    Transform,
)
from sporeling.data.vision._common import (
    _RANDOM_INTERS,
    _WARP_MODE,
    _check_interpolation,
    _fill_for,
    _hw,
    np_pad,
    np_resize,
    np_rotate,
)
from sporeling.data.vision.kernels import layout as klayout
from sporeling.data.vision.kernels.geometry import warp
from sporeling.data.vision.utils import (
    Border,
    Inter,
    SliceMode,
    check_enum,
    check_fill,
    check_image,
    check_prob,
    check_range,
    check_size,
    is_num,
)

__all__ = [
    "Affine",
    "CenterCrop",
    "Crop",
    "FiveCrop",
    "HorizontalFlip",
    "Pad",
    "PadToSize",
    "Perspective",
    "RandomAffine",
    "RandomCrop",
    "RandomHorizontalFlip",
    "RandomPerspective",
    "RandomResize",
    "RandomResizedCrop",
    "RandomRotation",
    "RandomVerticalFlip",
    "Resize",
    "Rotate",
    "SlicePatches",
    "TenCrop",
    "VerticalFlip",
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


_PIL_WARP = {0: Image.Resampling.NEAREST, 1: Image.Resampling.BILINEAR, 2: Image.Resampling.BICUBIC}


def pil_resize(img: Image.Image, h: int, w: int, filt: str) -> Image.Image:
    return img.resize((w, h), _PIL_FILTER[filt])


def resize_shape(h: int, w: int, size: int | tuple[int, int]) -> tuple[int, int]:
    """int size: the smaller edge becomes `size`, aspect ratio kept (truncated)."""
    if isinstance(size, int):
        if h <= w:
            return size, max(1, int(size * w / h))
        return max(1, int(size * h / w)), size
    return size


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


class Crop(TensorOperation):
    """Crop `size` at `coordinates` = (top, left)."""

    def __init__(self, coordinates: tuple[int, int], size: int | tuple[int, int]) -> None:
        if (
            not isinstance(coordinates, list | tuple)
            or len(coordinates) != 2
            or not all(isinstance(v, int) and v >= 0 for v in coordinates)
        ):
            raise ValueError(f"Crop: coordinates must be (top, left) >= 0, got {coordinates!r}.")
        self.coordinates = (int(coordinates[0]), int(coordinates[1]))
        self.size = check_size("Crop", size)

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        check_image("Crop", img)
        (t, l), (h, w) = self.coordinates, self.size
        if t + h > img.shape[0] or l + w > img.shape[1]:
            raise ValueError(
                f"Crop: region top={t}, left={l}, size={self.size} exceeds the image "
                f"{img.shape[:2]}."
            )
        return img[t : t + h, l : l + w].copy()


class HorizontalFlip(TensorOperation):
    """Flip left-right."""

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        return klayout.hflip(check_image("HorizontalFlip", img))


class VerticalFlip(TensorOperation):
    """Flip top-bottom."""

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(check_image("VerticalFlip", img)[::-1])


class PadToSize(TensorOperation):
    """Pad to `size` (h, w); `offset` (top, left) or centred by default."""

    def __init__(
        self,
        size: Any,
        offset: Any = None,
        fill_value: Any = 0,
        padding_mode: Border = Border.CONSTANT,
    ) -> None:
        self.size = check_size("PadToSize", size)
        if offset is not None:
            offset = (offset, offset) if isinstance(offset, int) else offset
            if not isinstance(offset, list | tuple) or len(offset) != 2 or min(offset) < 0:
                raise ValueError(
                    f"PadToSize: offset must be None or (top, left) >= 0, got {offset!r}."
                )
        self.offset = offset
        self.fill_value = check_fill("PadToSize", fill_value)
        self.padding_mode = check_enum("PadToSize", padding_mode, Border, "padding_mode")

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        check_image("PadToSize", img)
        h, w = img.shape[:2]
        th, tw = self.size
        if th < h or tw < w:
            raise ValueError(
                f"PadToSize: target size {self.size} is smaller than the image {(h, w)}."
            )
        t, l = self.offset if self.offset is not None else ((th - h) // 2, (tw - w) // 2)
        if t + h > th or l + w > tw:
            raise ValueError(f"PadToSize: offset {self.offset} puts the image outside {self.size}.")
        pads = (l, t, tw - w - l, th - h - t)
        return np_pad(img, pads, _fill_for(img, self.fill_value), self.padding_mode)


class RandomResize(TensorOperation):
    """Resize to `size` with an interpolation drawn at random (nearest/bilinear/bicubic/area)."""

    def __init__(self, size: Any) -> None:
        self._resize = [Resize(size, i) for i in _RANDOM_INTERS]
        self.size = size

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        return self._resize[int(self._rng().integers(len(self._resize)))]._execute_numpy(img)


class Rotate(TensorOperation):
    """Rotate by `degrees` counter-clockwise (Pillow's `rotate` arithmetic)."""

    def __init__(
        self,
        degrees: float,
        resample: Inter = Inter.NEAREST,
        expand: bool = False,
        center: Any = None,
        fill_value: Any = 0,
    ) -> None:
        if not is_num(degrees):
            raise TypeError(f"Rotate: degrees must be a number, got {degrees!r}.")
        self.degrees = float(degrees)
        self.resample = _check_interpolation("Rotate", resample, warp_only=True)
        self.expand = bool(expand)
        self.center = _check_center("Rotate", center)
        self.fill_value = check_fill("Rotate", fill_value)

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        check_image("Rotate", img)
        return np_rotate(
            img,
            self.degrees,
            _WARP_MODE[self.resample],
            self.expand,
            self.center,
            _fill_for(img, self.fill_value),
        )


class SlicePatches(TensorOperation):
    """Split an image into `num_height` x `num_width` patches (padding or dropping the rest)."""

    def __init__(
        self,
        num_height: int = 1,
        num_width: int = 1,
        slice_mode: SliceMode = SliceMode.PAD,
        fill_value: int = 0,
    ) -> None:
        for name, v in (("num_height", num_height), ("num_width", num_width)):
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 512:
                raise ValueError(f"SlicePatches: {name} must be an int in [1, 512], got {v!r}.")
        self.num_height, self.num_width = num_height, num_width
        self.slice_mode = check_enum("SlicePatches", slice_mode, SliceMode, "slice_mode")
        if not isinstance(fill_value, int) or not 0 <= fill_value <= 255:
            raise ValueError(
                f"SlicePatches: fill_value must be an int in [0, 255], got {fill_value!r}."
            )
        self.fill_value = fill_value

    def _execute_numpy(self, img: np.ndarray) -> tuple[np.ndarray, ...]:
        check_image("SlicePatches", img)
        h, w = img.shape[:2]
        nh, nw = self.num_height, self.num_width
        if self.slice_mode == SliceMode.PAD:
            ph, pw = -(-h // nh), -(-w // nw)
            img = np_pad(img, (0, 0, pw * nw - w, ph * nh - h), self.fill_value)
        else:
            ph, pw = h // nh, w // nw
        return tuple(
            img[i * ph : (i + 1) * ph, j * pw : (j + 1) * pw].copy()
            for i in range(nh)
            for j in range(nw)
        )


def _five(img: Image.Image, size: tuple[int, int]) -> tuple[Image.Image, ...]:
    ch, cw = size
    w, h = img.size
    if ch > h or cw > w:
        raise ValueError(f"FiveCrop: crop size {size} is larger than the image {(h, w)}.")
    return (
        img.crop((0, 0, cw, ch)),
        img.crop((w - cw, 0, w, ch)),
        img.crop((0, h - ch, cw, h)),
        img.crop((w - cw, h - ch, w, h)),
        CenterCrop(size)._execute_pil(img),
    )


class FiveCrop(PyTensorOperation):
    """The four corner crops and the centre crop of `size` (a tuple of 5 images)."""

    def __init__(self, size: Any) -> None:
        self.size = check_size("FiveCrop", size)

    def _execute_pil(self, img: Image.Image) -> tuple[Image.Image, ...]:
        return _five(img, self.size)


class TenCrop(PyTensorOperation):
    """FiveCrop of the image and of its (horizontally, or vertically) flipped copy."""

    def __init__(self, size: Any, use_vertical_flip: bool = False) -> None:
        self.size = check_size("TenCrop", size)
        self.use_vertical_flip = bool(use_vertical_flip)

    def _execute_pil(self, img: Image.Image) -> tuple[Image.Image, ...]:
        flip = (
            Image.Transpose.FLIP_TOP_BOTTOM
            if self.use_vertical_flip
            else (Image.Transpose.FLIP_LEFT_RIGHT)
        )
        return _five(img, self.size) + _five(img.transpose(flip), self.size)


def perspective_coeffs(start: list[list[int]], end: list[list[int]]) -> list[float]:
    """Pillow PERSPECTIVE data mapping output points `end` back to input points `start`."""
    a = np.zeros((8, 8))
    for i, ((sx, sy), (ex, ey)) in enumerate(zip(start, end)):
        a[2 * i] = [ex, ey, 1, 0, 0, 0, -sx * ex, -sx * ey]
        a[2 * i + 1] = [0, 0, 0, ex, ey, 1, -sy * ex, -sy * ey]
    b = np.asarray(start, dtype=np.float64).reshape(8)
    return np.linalg.solve(a, b).tolist()


class RandomPerspective(PyTensorOperation):
    """Random perspective distortion of strength `distortion_scale` with probability `prob`."""

    def __init__(
        self, distortion_scale: float = 0.5, prob: float = 0.5, interpolation: Inter = Inter.BICUBIC
    ) -> None:
        if not isinstance(distortion_scale, float):  # MindSpore takes a float only
            raise TypeError(
                f"RandomPerspective: distortion_scale must be a float in [0, 1], got "
                f"{type(distortion_scale).__name__} {distortion_scale!r}."
            )
        if not 0 <= distortion_scale <= 1:
            raise ValueError(
                f"RandomPerspective: distortion_scale must be in [0, 1], got {distortion_scale!r}."
            )
        self.distortion_scale = float(distortion_scale)
        self.prob = check_prob("RandomPerspective", prob)
        self.interpolation = _check_interpolation(
            "RandomPerspective", interpolation, warp_only=True
        )

    def _params(self, w: int, h: int) -> tuple[list[list[int]], list[list[int]]]:
        rng = self._rng()
        hw, hh = int(self.distortion_scale * w / 2), int(self.distortion_scale * h / 2)

        def r(n: int) -> int:
            return int(rng.integers(0, n + 1))

        tl = [r(hw), r(hh)]
        tr = [w - 1 - r(hw), r(hh)]
        br = [w - 1 - r(hw), h - 1 - r(hh)]
        bl = [r(hw), h - 1 - r(hh)]
        start = [[0, 0], [w - 1, 0], [w - 1, h - 1], [0, h - 1]]
        return start, [tl, tr, br, bl]

    def _execute_pil(self, img: Image.Image) -> Image.Image:
        rng = self._rng()
        if rng.random() >= self.prob:
            return img
        start, end = self._params(img.width, img.height)
        coeffs = perspective_coeffs(start, end)
        return img.transform(
            img.size,
            Image.Transform.PERSPECTIVE,
            coeffs,
            _PIL_WARP[_WARP_MODE[self.interpolation]],
        )


def inverse_affine(
    w: int,
    h: int,
    angle: float,
    translate: tuple[float, float],
    scale: float,
    shear: tuple[float, float],
) -> list[float]:
    """Output -> input affine coefficients (torchvision's ``_get_inverse_affine_matrix``)."""
    cx, cy = w * 0.5, h * 0.5
    rot = math.radians(angle)
    sx, sy = math.radians(shear[0]), math.radians(shear[1])
    a = math.cos(rot - sy) / math.cos(sy)
    b = -math.cos(rot - sy) * math.tan(sx) / math.cos(sy) - math.sin(rot)
    c = math.sin(rot - sy) / math.cos(sy)
    e = -math.sin(rot - sy) * math.tan(sx) / math.cos(sy) + math.cos(rot)
    m = [v / scale for v in (e, -b, 0.0, -c, a, 0.0)]
    tx, ty = translate
    m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty)
    m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty)
    m[2] += cx
    m[5] += cy
    return m


def _number(op: str, name: str, value: Any, lo: float, hi: float) -> float:
    if not is_num(value) or not lo <= value <= hi:
        raise ValueError(
            f"{op}: argument '{name}' expected a number in [{lo}, {hi}], got {value!r}"
        )
    return float(value)


class Affine(TensorOperation):
    """Rotate by ``degrees`` (clockwise), translate by ``translate`` (fractions of width and
    height), scale and shear (degrees; a number shears x only) about the image centre."""

    def __init__(
        self,
        degrees: float,
        translate: Any,
        scale: float,
        shear: Any,
        resample: Inter = Inter.NEAREST,
        fill_value: Any = 0,
    ) -> None:
        op = "Affine"
        self.degrees = _number(op, "degrees", degrees, -180.0, 180.0)
        if (
            not isinstance(translate, list | tuple)
            or len(translate) != 2
            or not all(is_num(t) and -1.0 <= t <= 1.0 for t in translate)
        ):
            raise ValueError(
                f"{op}: argument 'translate' expected 2 fractions in [-1, 1], got {translate!r}"
            )
        self.translate = (float(translate[0]), float(translate[1]))
        if not is_num(scale) or scale <= 0:
            raise ValueError(f"{op}: argument 'scale' expected a positive number, got {scale!r}")
        self.scale = float(scale)
        if is_num(shear):
            shear = (shear, 0.0)
        if not isinstance(shear, list | tuple) or len(shear) != 2:
            raise ValueError(
                f"{op}: argument 'shear' expected a number or 2 numbers, got {shear!r}"
            )
        self.shear = (
            _number(op, "shear[0]", shear[0], -180.0, 180.0),
            _number(op, "shear[1]", shear[1], -180.0, 180.0),
        )
        self.resample = _check_interpolation(op, resample, warp_only=True)
        self.fill_value = check_fill(op, fill_value)

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        check_image("Affine", img)
        h, w = img.shape[:2]
        m = inverse_affine(
            w,
            h,
            self.degrees,
            (self.translate[0] * w, self.translate[1] * h),
            self.scale,
            self.shear,
        )
        return warp(img, m, (h, w), _WARP_MODE[self.resample], _fill_for(img, self.fill_value))


def _points(op: str, name: str, points: Any) -> list[list[int]]:
    ok = (
        isinstance(points, list | tuple)
        and len(points) == 4
        and all(
            isinstance(p, list | tuple) and len(p) == 2 and all(is_num(v) for v in p)
            for p in points
        )
    )
    if not ok:
        raise TypeError(f"{op}: argument '{name}' expected 4 [x, y] points, got {points!r}")
    return [[p[0], p[1]] for p in points]


class Perspective(TensorOperation):
    """Warp so that ``start_points`` (4 corners [x, y]) land on ``end_points``."""

    def __init__(
        self, start_points: Any, end_points: Any, interpolation: Inter = Inter.BILINEAR
    ) -> None:
        op = "Perspective"
        self.start_points = _points(op, "start_points", start_points)
        self.end_points = _points(op, "end_points", end_points)
        self.interpolation = _check_interpolation(op, interpolation, warp_only=True)
        # OpenCV's warpPerspective (MindSpore's kernel) maps integer pixel positions; the warp
        # kernel here maps pixel centres, so shift by half a pixel on both sides.
        g = np.append(perspective_coeffs(self.start_points, self.end_points), 1.0).reshape(3, 3)
        shift_in = np.array([[1, 0, -0.5], [0, 1, -0.5], [0, 0, 1]])
        shift_out = np.array([[1, 0, 0.5], [0, 1, 0.5], [0, 0, 1]])
        f = shift_out @ g @ shift_in
        self._coeffs = (f / f[2, 2]).reshape(-1)[:8].tolist()

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        check_image("Perspective", img)
        h, w = img.shape[:2]
        return warp(img, self._coeffs, (h, w), _WARP_MODE[self.interpolation], 0)
