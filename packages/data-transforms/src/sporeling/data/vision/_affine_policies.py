"""Affine, Perspective, RandAugment and TrivialAugmentWide (MindSpore 2.x's vision ops).

``Affine`` uses torchvision's inverse affine matrix about the image centre ``(w/2, h/2)``,
which gives MindSpore 2.10's output pixel for pixel with nearest sampling (rotation,
translation as fractions of the size, scale, x/y shear; checked in tests/test_vision_policies.py).
``Perspective`` maps ``start_points`` to ``end_points`` with the same sampling kernel as the
other warps. ``RandAugment`` and ``TrivialAugmentWide`` draw torchvision's operations and
magnitude tables (the ops are AutoAugment's).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from sporeling.data.transforms._base import TensorOperation
from sporeling.data.vision import _dual as d
from sporeling.data.vision._conly import _apply_aug, _u8
from sporeling.data.vision._pyonly import perspective_coeffs
from sporeling.data.vision.kernels.geometry import warp
from sporeling.data.vision.utils import Inter, check_fill, check_image, is_num

__all__ = ["Affine", "Perspective", "RandAugment", "TrivialAugmentWide", "inverse_affine"]


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
        self.resample = d._check_interpolation(op, resample, warp_only=True)
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
        return warp(img, m, (h, w), d._WARP_MODE[self.resample], d._fill_for(img, self.fill_value))


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
        self.interpolation = d._check_interpolation(op, interpolation, warp_only=True)
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
        return warp(img, self._coeffs, (h, w), d._WARP_MODE[self.interpolation], 0)


def _rand_augment_space(bins: int, h: int, w: int) -> dict[str, np.ndarray | None]:
    return {
        "Identity": None,
        "ShearX": np.linspace(0.0, 0.3, bins),
        "ShearY": np.linspace(0.0, 0.3, bins),
        "TranslateX": np.linspace(0.0, 150.0 / 331.0 * w, bins),
        "TranslateY": np.linspace(0.0, 150.0 / 331.0 * h, bins),
        "Rotate": np.linspace(0.0, 30.0, bins),
        "Brightness": np.linspace(0.0, 0.9, bins),
        "Color": np.linspace(0.0, 0.9, bins),
        "Contrast": np.linspace(0.0, 0.9, bins),
        "Sharpness": np.linspace(0.0, 0.9, bins),
        "Posterize": 8 - np.round(np.arange(bins) / ((bins - 1) / 4)).astype(int),
        "Solarize": np.linspace(255.0, 0.0, bins),
        "AutoContrast": None,
        "Equalize": None,
    }


def _trivial_space(bins: int) -> dict[str, np.ndarray | None]:
    return {
        "Identity": None,
        "ShearX": np.linspace(0.0, 0.99, bins),
        "ShearY": np.linspace(0.0, 0.99, bins),
        "TranslateX": np.linspace(0.0, 32.0, bins),
        "TranslateY": np.linspace(0.0, 32.0, bins),
        "Rotate": np.linspace(0.0, 135.0, bins),
        "Brightness": np.linspace(0.0, 0.99, bins),
        "Color": np.linspace(0.0, 0.99, bins),
        "Contrast": np.linspace(0.0, 0.99, bins),
        "Sharpness": np.linspace(0.0, 0.99, bins),
        "Posterize": 8 - np.round(np.arange(bins) / ((bins - 1) / 6)).astype(int),
        "Solarize": np.linspace(255.0, 0.0, bins),
        "AutoContrast": None,
        "Equalize": None,
    }


_SIGNED = {
    "ShearX",
    "ShearY",
    "TranslateX",
    "TranslateY",
    "Rotate",
    "Brightness",
    "Color",
    "Contrast",
    "Sharpness",
}


def _apply(img: np.ndarray, name: str, magnitude: float, mode: int, fill: Any) -> np.ndarray:
    return img if name == "Identity" else _apply_aug(img, name, magnitude, mode, fill)


def _check_bins(op: str, bins: Any) -> int:
    if not isinstance(bins, int) or isinstance(bins, bool) or bins < 2:
        raise ValueError(f"{op}: argument 'num_magnitude_bins' expected an int >= 2, got {bins!r}")
    return bins


class RandAugment(TensorOperation):
    """RandAugment (Cubuk et al. 2019): ``num_ops`` operations drawn uniformly, each at
    bin ``magnitude`` of ``num_magnitude_bins`` (signed ops flip sign with probability 1/2)."""

    def __init__(
        self,
        num_ops: int = 2,
        magnitude: int = 9,
        num_magnitude_bins: int = 31,
        interpolation: Inter = Inter.NEAREST,
        fill_value: Any = 0,
    ) -> None:
        op = "RandAugment"
        if not isinstance(num_ops, int) or isinstance(num_ops, bool) or num_ops < 0:
            raise ValueError(f"{op}: argument 'num_ops' expected an int >= 0, got {num_ops!r}")
        self.num_magnitude_bins = _check_bins(op, num_magnitude_bins)
        if (
            not isinstance(magnitude, int)
            or isinstance(magnitude, bool)
            or not 0 <= magnitude < num_magnitude_bins
        ):
            raise ValueError(
                f"{op}: argument 'magnitude' expected an int in [0, {num_magnitude_bins}), "
                f"got {magnitude!r}"
            )
        self.num_ops, self.magnitude = num_ops, magnitude
        self.interpolation = d._check_interpolation(op, interpolation, warp_only=True)
        self.fill_value = check_fill(op, fill_value)

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        _u8("RandAugment", img)
        rng = self._rng()
        h, w = img.shape[:2]
        space = _rand_augment_space(self.num_magnitude_bins, h, w)
        names = list(space)
        mode = d._WARP_MODE[self.interpolation]
        fill = d._fill_for(img, self.fill_value)
        for _ in range(self.num_ops):
            name = names[int(rng.integers(len(names)))]
            table = space[name]
            mag = float(table[self.magnitude]) if table is not None else 0.0
            if name in _SIGNED and rng.random() < 0.5:
                mag = -mag
            img = _apply(img, name, mag, mode, fill)
        return img


class TrivialAugmentWide(TensorOperation):
    """TrivialAugment Wide (Müller & Hutter 2021): one operation, a random magnitude bin."""

    def __init__(
        self,
        num_magnitude_bins: int = 31,
        interpolation: Inter = Inter.NEAREST,
        fill_value: Any = 0,
    ) -> None:
        op = "TrivialAugmentWide"
        self.num_magnitude_bins = _check_bins(op, num_magnitude_bins)
        self.interpolation = d._check_interpolation(op, interpolation, warp_only=True)
        self.fill_value = check_fill(op, fill_value)

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        _u8("TrivialAugmentWide", img)
        rng = self._rng()
        space = _trivial_space(self.num_magnitude_bins)
        names = list(space)
        name = names[int(rng.integers(len(names)))]
        table = space[name]
        mag = float(table[int(rng.integers(len(table)))]) if table is not None else 0.0
        if name in _SIGNED and rng.random() < 0.5:
            mag = -mag
        return _apply(
            img, name, mag, d._WARP_MODE[self.interpolation], d._fill_for(img, self.fill_value)
        )
