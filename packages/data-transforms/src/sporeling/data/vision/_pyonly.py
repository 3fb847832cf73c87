"""Vision transforms MindSpore 1.8 offers only in Python (`PyTensorOperation`).

Ops that work on PIL images convert uint8 HWC arrays to PIL first; the array ops
(RandomErasing, LinearTransformation, MixUp, HsvToRgb, RgbToHsv) take arrays (CHW by
default, as after ToTensor) and also accept a PIL image (converted to HWC uint8).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from PIL import Image

from sporeling.data.transforms._base import PyTensorOperation, TensorOperation, to_pil
from sporeling.data.transforms.transforms import Compose, TypeCast, _check_transforms
from sporeling.data.vision import _dual as d
from sporeling.data.vision.utils import (
    Inter,
    check_prob,
    check_range,
    check_size,
    is_num,
)

__all__ = [
    "FiveCrop",
    "Grayscale",
    "HsvToRgb",
    "LinearTransformation",
    "MixUp",
    "RandomErasing",
    "RandomGrayscale",
    "RandomPerspective",
    "RgbToHsv",
    "TenCrop",
    "ToNumpy",
    "ToPIL",
    "ToType",
    "UniformAugment",
]


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
        d.CenterCrop(size)._execute_pil(img),
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


class Grayscale(PyTensorOperation):
    """Convert to grayscale with 1 or 3 output channels."""

    def __init__(self, num_output_channels: int = 1) -> None:
        if num_output_channels not in (1, 3):
            raise ValueError(
                f"Grayscale: num_output_channels must be 1 or 3, got {num_output_channels!r}."
            )
        self.num_output_channels = num_output_channels

    def _execute_pil(self, img: Image.Image) -> Image.Image:
        g = img.convert("L")
        return g.convert("RGB") if self.num_output_channels == 3 else g


class RandomGrayscale(PyTensorOperation):
    """Grayscale (keeping the channel count) with probability `prob`."""

    def __init__(self, prob: float = 0.1) -> None:
        self.prob = check_prob("RandomGrayscale", prob)

    def _execute_pil(self, img: Image.Image) -> Image.Image:
        if self._rng().random() < self.prob:
            g = img.convert("L")
            return g.convert("RGB") if img.mode == "RGB" else g
        return img


def _hwc_float(op: str, x: Any, is_hwc: bool) -> tuple[np.ndarray, bool]:
    if isinstance(x, Image.Image):
        x, is_hwc = np.asarray(x.convert("RGB"), np.float32) / 255.0, True
    x = np.asarray(x)
    if x.ndim not in (3, 4):
        raise ValueError(f"{op}: expected an image (3-D) or a batch (4-D), got shape {x.shape}.")
    moved = not is_hwc
    if moved:
        x = np.moveaxis(x, -3, -1)
    if x.shape[-1] != 3:
        raise ValueError(f"{op}: expected 3 channels, got shape {x.shape}.")
    return x.astype(np.float64), moved


def rgb_to_hsv_float(rgb: np.ndarray) -> np.ndarray:
    """Vectorised `colorsys.rgb_to_hsv` on [..., 3] arrays."""
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    maxc = rgb.max(-1)
    minc = rgb.min(-1)
    v = maxc
    delta = maxc - minc
    with np.errstate(invalid="ignore", divide="ignore"):
        s = np.where(maxc > 0, delta / np.where(maxc == 0, 1, maxc), 0.0)
        dd = np.where(delta == 0, 1, delta)
        rc, gc, bc = (maxc - r) / dd, (maxc - g) / dd, (maxc - b) / dd
    h = np.where(r == maxc, bc - gc, np.where(g == maxc, 2.0 + rc - bc, 4.0 + gc - rc))
    h = np.where(delta == 0, 0.0, (h / 6.0) % 1.0)
    return np.stack([h, s, v], -1)


def hsv_to_rgb_float(hsv: np.ndarray) -> np.ndarray:
    """Vectorised `colorsys.hsv_to_rgb` on [..., 3] arrays."""
    h, s, v = hsv[..., 0], hsv[..., 1], hsv[..., 2]
    i = np.floor(h * 6.0)
    f = h * 6.0 - i
    p, q, t = v * (1 - s), v * (1 - s * f), v * (1 - s * (1 - f))
    i = i.astype(np.int64) % 6
    choices = [
        np.stack(c, -1) for c in ((v, t, p), (q, v, p), (p, v, t), (p, q, v), (t, p, v), (v, p, q))
    ]
    out = np.choose(i[..., None], choices)
    return np.where((s == 0)[..., None], np.stack([v, v, v], -1), out)


class RgbToHsv(PyTensorOperation):
    """RGB -> HSV on float arrays in [0, 1] (CHW unless `is_hwc`), as colorsys."""

    _py_input = "any"

    def __init__(self, is_hwc: bool = False) -> None:
        self.is_hwc = bool(is_hwc)

    def _execute_pil(self, x: Any) -> np.ndarray:
        arr, moved = _hwc_float("RgbToHsv", x, self.is_hwc)
        out = rgb_to_hsv_float(arr).astype(np.float32)
        return np.moveaxis(out, -1, -3) if moved else out


class HsvToRgb(PyTensorOperation):
    """HSV -> RGB on float arrays in [0, 1] (CHW unless `is_hwc`), as colorsys."""

    _py_input = "any"

    def __init__(self, is_hwc: bool = False) -> None:
        self.is_hwc = bool(is_hwc)

    def _execute_pil(self, x: Any) -> np.ndarray:
        arr, moved = _hwc_float("HsvToRgb", x, self.is_hwc)
        out = hsv_to_rgb_float(arr).astype(np.float32)
        return np.moveaxis(out, -1, -3) if moved else out


class LinearTransformation(PyTensorOperation):
    """Flatten a CHW array, subtract `mean_vector`, multiply by `transformation_matrix`."""

    _py_input = "any"

    def __init__(self, transformation_matrix: Any, mean_vector: Any) -> None:
        m = np.asarray(transformation_matrix, dtype=np.float64)
        v = np.asarray(mean_vector, dtype=np.float64)
        if m.ndim != 2 or m.shape[0] != m.shape[1]:
            raise ValueError(
                f"LinearTransformation: transformation_matrix must be square, got {m.shape}."
            )
        if v.ndim != 1 or v.shape[0] != m.shape[0]:
            raise ValueError(
                f"LinearTransformation: mean_vector must have length {m.shape[0]}, got {v.shape}."
            )
        self.transformation_matrix, self.mean_vector = m, v

    def _execute_pil(self, x: Any) -> np.ndarray:
        arr = np.asarray(x)
        if arr.size != self.mean_vector.size:
            raise ValueError(
                f"LinearTransformation: the input has {arr.size} elements, the matrix expects "
                f"{self.mean_vector.size}."
            )
        flat = arr.reshape(1, -1).astype(np.float64) - self.mean_vector
        return (flat @ self.transformation_matrix).reshape(arr.shape).astype(np.float32)


class MixUp(PyTensorOperation):
    """Mix a batch of images and one-hot labels with weights from Beta(alpha, alpha).

    `is_single=True` mixes each sample with its mirror in the same batch; otherwise with
    the sample at the same position of the previous batch (the first batch passes through).
    """

    _py_input = "any"

    def __init__(self, batch_size: int, alpha: float, is_single: bool = True) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"MixUp: batch_size must be a positive int, got {batch_size!r}.")
        if not is_num(alpha) or alpha <= 0:
            raise ValueError(f"MixUp: alpha must be a positive number, got {alpha!r}.")
        self.batch_size, self.alpha, self.is_single = batch_size, float(alpha), bool(is_single)
        self._prev: tuple[np.ndarray, np.ndarray] | None = None

    def _execute_pil(self, images: Any, labels: Any) -> tuple[np.ndarray, np.ndarray]:
        x = np.asarray(images, dtype=np.float32)
        y = np.asarray(labels, dtype=np.float32)
        if x.shape[0] != y.shape[0] or y.ndim != 2:
            raise ValueError(
                f"MixUp: expected a batch of images and one-hot labels (N, classes), got "
                f"{x.shape} and {y.shape}."
            )
        if self.is_single:
            ox, oy = x[::-1], y[::-1]
        else:
            if self._prev is None or self._prev[0].shape != x.shape:
                self._prev = (x, y)
                return x, y
            (ox, oy), self._prev = self._prev, (x, y)
        lam = self._rng().beta(self.alpha, self.alpha, size=int(x.shape[0])).astype(np.float32)
        lx = lam.reshape((-1,) + (1,) * (x.ndim - 1))
        return lx * x + (1 - lx) * ox, lam[:, None] * y + (1 - lam[:, None]) * oy


class RandomErasing(PyTensorOperation):
    """Erase a random rectangle of a CHW array (after ToTensor) with probability `prob`."""

    _py_input = "any"

    def __init__(
        self,
        prob: float = 0.5,
        scale: tuple[float, float] = (0.02, 0.33),
        ratio: tuple[float, float] = (0.3, 3.3),
        value: Any = 0,
        inplace: bool = False,
        max_attempts: int = 10,
    ) -> None:
        op = "RandomErasing"
        self.prob = check_prob(op, prob)
        self.scale = check_range(op, scale, "scale", 0.0, 1.0)
        self.ratio = check_range(op, ratio, "ratio", 0.0)
        if self.ratio[0] <= 0:
            raise ValueError(f"{op}: ratio must be positive, got {ratio!r}.")
        if not (
            value == "random"
            or is_num(value)
            or (isinstance(value, list | tuple) and len(value) == 3 and all(map(is_num, value)))
        ):
            raise ValueError(f"{op}: value must be a number, a 3-tuple or 'random', got {value!r}.")
        if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
            raise ValueError(f"{op}: max_attempts must be a positive int, got {max_attempts!r}.")
        self.value, self.inplace, self.max_attempts = value, bool(inplace), max_attempts

    def _execute_pil(self, x: Any) -> np.ndarray:
        if isinstance(x, Image.Image):
            x = np.asarray(x).transpose(2, 0, 1) if x.mode != "L" else np.asarray(x)[None]
        arr = np.asarray(x)
        if arr.ndim != 3:
            raise ValueError(f"RandomErasing: expected a CHW array, got shape {arr.shape}.")
        rng = self._rng()
        if rng.random() >= self.prob:
            return arr
        c, h, w = arr.shape
        area = h * w
        for _ in range(self.max_attempts):
            erase_area = area * rng.uniform(*self.scale)
            aspect = math.exp(rng.uniform(math.log(self.ratio[0]), math.log(self.ratio[1])))
            eh = int(round(math.sqrt(erase_area * aspect)))
            ew = int(round(math.sqrt(erase_area / aspect)))
            if eh < h and ew < w:
                i = int(rng.integers(0, h - eh + 1))
                j = int(rng.integers(0, w - ew + 1))
                out = arr if self.inplace and arr.flags.writeable else arr.copy()
                if self.value == "random":
                    out[:, i : i + eh, j : j + ew] = rng.standard_normal((c, eh, ew))
                else:
                    v = np.asarray(self.value, dtype=out.dtype).reshape(-1, 1, 1)
                    out[:, i : i + eh, j : j + ew] = v
                return out
        return arr


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
        self.interpolation = d._check_interpolation(
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
            d._PIL_WARP[d._WARP_MODE[self.interpolation]],
        )


class ToNumpy(TensorOperation):
    """PIL image -> NumPy array; the ops after it resolve to the NumPy path."""

    _next_state = "C"

    def _execute_numpy(self, img: Any) -> np.ndarray:
        return np.array(img)


class ToPIL(PyTensorOperation):
    """NumPy HWC array -> PIL image; the ops after it resolve to the PIL path."""

    _py_input = "any"

    def _execute_pil(self, img: Any) -> Image.Image:
        return to_pil(img)


class ToType(TypeCast):
    """Cast to `data_type` (TypeCast under the vision name)."""


class UniformAugment(PyTensorOperation):
    """Apply `num_ops` transforms chosen without replacement from `transforms`, in order."""

    _py_input = "any"

    def __init__(self, transforms: list[Any], num_ops: int = 2) -> None:
        self.transforms = _check_transforms("UniformAugment", transforms)
        if isinstance(num_ops, bool) or not isinstance(num_ops, int) or num_ops <= 0:
            raise ValueError(f"UniformAugment: num_ops must be a positive int, got {num_ops!r}.")
        if num_ops > len(self.transforms):
            raise ValueError(
                f"UniformAugment: num_ops ({num_ops}) exceeds the number of transforms "
                f"({len(self.transforms)})."
            )
        self.num_ops = num_ops

    def _execute_pil(self, *args: Any) -> Any:
        rng = self._rng()
        idx = rng.choice(len(self.transforms), self.num_ops, replace=False)
        chosen = [self.transforms[i] for i in sorted(idx)]
        return Compose(chosen)(*args)
