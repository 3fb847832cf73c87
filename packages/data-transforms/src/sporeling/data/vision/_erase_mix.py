"""Erasing and mixing: CutOut and RandomErasing (rectangles replaced) and MixUp
(images and labels blended).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from PIL import Image

from sporeling.data.transforms._base import (
    PyTensorOperation,
    TensorOperation,
)
from sporeling.data.vision.utils import (
    check_image,
    check_prob,
    check_range,
    is_num,
)

__all__ = [
    "CutOut",
    "MixUp",
    "RandomErasing",
]


class CutOut(TensorOperation):
    """Zero `num_patches` random `length` x `length` squares (HWC, or CHW if not is_hwc)."""

    def __init__(self, length: int, num_patches: int = 1, is_hwc: bool = True) -> None:
        for name, v in (("length", length), ("num_patches", num_patches)):
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise ValueError(f"CutOut: {name} must be a positive int, got {v!r}.")
        self.length, self.num_patches, self.is_hwc = length, num_patches, bool(is_hwc)

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        check_image("CutOut", img)
        out = img.copy()
        view = out if self.is_hwc or out.ndim == 2 else np.moveaxis(out, 0, -1)
        h, w = view.shape[:2]
        rng = self._rng()
        for _ in range(self.num_patches):
            y = int(rng.integers(0, max(h - self.length, 0) + 1))
            x = int(rng.integers(0, max(w - self.length, 0) + 1))
            view[y : y + self.length, x : x + self.length] = 0
        return out


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
