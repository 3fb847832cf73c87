"""Layout, type and value conversions: HWC2CHW, ToTensor, ToNumpy/ToPIL/ToType, Rescale,
Normalize/NormalizePad and LinearTransformation.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from PIL import Image

from sporeling.data.transforms._base import (
    PyTensorOperation,
    TensorOperation,
    to_pil,
)
from sporeling.data.transforms.transforms import TypeCast
from sporeling.data.vision.kernels import layout as klayout
from sporeling.data.vision.utils import (
    check_image,
    is_num,
)

__all__ = [
    "HWC2CHW",
    "LinearTransformation",
    "Normalize",
    "NormalizePad",
    "Rescale",
    "ToNumpy",
    "ToPIL",
    "ToTensor",
    "ToType",
]


class HWC2CHW(TensorOperation):
    """Transpose HWC to CHW (HW becomes 1HW)."""

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        check_image("HWC2CHW", img)
        if img.ndim == 2:
            return img[None].copy()
        return np.ascontiguousarray(img.transpose(2, 0, 1))


def _mean_std(op: str, mean: Any, std: Any) -> tuple[np.ndarray, np.ndarray]:
    for name, v in (("mean", mean), ("std", std)):
        if not isinstance(v, list | tuple) or not v or not all(map(is_num, v)):
            raise TypeError(f"{op}: {name} must be a list of numbers, got {v!r}.")
    if len(mean) != len(std):
        raise ValueError(f"{op}: mean and std must have the same length, got {mean} and {std}.")
    for i, m in enumerate(mean):  # MindSpore's intervals for the unified Normalize
        if not 0 <= m <= 255:
            raise ValueError(
                f"{op}: Input mean[{i}] is not within the required interval of [0, 255], got {m}."
            )
    for i, s in enumerate(std):
        if not 0 < s <= 255:
            raise ValueError(
                f"{op}: Input std[{i}] is not within the required interval of (0, 255], got {s}."
            )
    return np.asarray(mean, np.float32), np.asarray(std, np.float32)


def _normalize(
    op: str, img: np.ndarray, mean: np.ndarray, std: np.ndarray, hwc: bool
) -> np.ndarray:
    check_image(op, img)
    if hwc and img.dtype in (np.uint8, np.float32):
        return klayout.normalize_hwc(img, mean, std, op)  # one pass, same float32 arithmetic
    x = img.astype(np.float32)
    c = 1 if x.ndim == 2 else (x.shape[2] if hwc else x.shape[0])
    if mean.size not in (1, c):
        raise ValueError(f"{op}: {mean.size} mean values for an image with {c} channels.")
    shape = (1, 1, -1) if hwc or x.ndim == 2 else (-1, 1, 1)
    if x.ndim == 2:
        return (x - mean[0]) / std[0]
    return (x - mean.reshape(shape)) / std.reshape(shape)


class Normalize(TensorOperation):
    """(img - mean) / std per channel, output float32 (`is_hwc=False` for CHW input)."""

    def __init__(self, mean: Any, std: Any, is_hwc: bool = True) -> None:
        self.mean, self.std = _mean_std("Normalize", mean, std)
        self.is_hwc = bool(is_hwc)

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        return _normalize("Normalize", img, self.mean, self.std, self.is_hwc)


class NormalizePad(TensorOperation):
    """Normalize, then append a zero channel (HWC -> HW(C+1)); dtype float32 or float16."""

    def __init__(self, mean: Any, std: Any, dtype: str = "float32", is_hwc: bool = True) -> None:
        self.mean, self.std = _mean_std("NormalizePad", mean, std)
        if dtype not in ("float32", "float16"):
            raise ValueError(f"NormalizePad: dtype must be 'float32' or 'float16', got {dtype!r}.")
        self.dtype, self.is_hwc = dtype, bool(is_hwc)

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        x = _normalize("NormalizePad", img, self.mean, self.std, self.is_hwc)
        if x.ndim == 2:
            x = x[..., None]
        axis = 2 if self.is_hwc else 0
        zeros = np.zeros_like(x.take([0], axis=axis))
        return np.concatenate([x, zeros], axis=axis).astype(self.dtype)


class Rescale(TensorOperation):
    """img * rescale + shift, as float32."""

    def __init__(self, rescale: float, shift: float) -> None:
        if not is_num(rescale) or not is_num(shift):
            raise TypeError(
                f"Rescale: rescale and shift must be numbers, got {rescale!r}, {shift!r}."
            )
        self.rescale, self.shift = float(rescale), float(shift)

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        return (
            np.asarray(img, np.float32) * np.float32(self.rescale) + np.float32(self.shift)
        ).astype(np.float32)


class ToTensor(TensorOperation):
    """HWC [0, 255] -> CHW [0, 1] of `output_type` (float32 by default)."""

    def __init__(self, output_type: Any = np.float32) -> None:
        np_attr = getattr(output_type, "np", None)
        try:
            self.output_type = np_attr if isinstance(np_attr, np.dtype) else np.dtype(output_type)
        except TypeError:
            raise TypeError(
                f"ToTensor: output_type must be a numpy dtype, got {output_type!r}."
            ) from None

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        check_image("ToTensor", img)
        x = img[..., None] if img.ndim == 2 else img
        return (np.ascontiguousarray(x.transpose(2, 0, 1)) / 255.0).astype(self.output_type)


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
