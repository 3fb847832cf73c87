"""Enums and helpers of `mindspore.dataset.vision` (1.8), plus argument checks."""

from __future__ import annotations

from enum import Enum, IntEnum, StrEnum
from numbers import Number
from typing import Any

import numpy as np
from PIL import Image

__all__ = [
    "AutoAugmentPolicy",
    "Border",
    "ConvertMode",
    "ImageBatchFormat",
    "Inter",
    "SliceMode",
    "get_image_num_channels",
    "get_image_size",
]


class Inter(StrEnum):
    """Interpolation modes. LINEAR is BILINEAR, CUBIC is BICUBIC."""

    NEAREST = "nearest"
    ANTIALIAS = "antialias"
    BILINEAR = "bilinear"
    LINEAR = "bilinear"
    BICUBIC = "bicubic"
    CUBIC = "bicubic"
    AREA = "area"
    PILCUBIC = "pilcubic"


class Border(StrEnum):
    CONSTANT = "constant"
    EDGE = "edge"
    REFLECT = "reflect"
    SYMMETRIC = "symmetric"


class ConvertMode(IntEnum):
    COLOR_BGR2BGRA = 0
    COLOR_RGB2RGBA = 0
    COLOR_BGRA2BGR = 1
    COLOR_RGBA2RGB = 1
    COLOR_BGR2RGBA = 2
    COLOR_RGB2BGRA = 2
    COLOR_RGBA2BGR = 3
    COLOR_BGRA2RGB = 3
    COLOR_BGR2RGB = 4
    COLOR_RGB2BGR = 4
    COLOR_BGRA2RGBA = 5
    COLOR_RGBA2BGRA = 5
    COLOR_BGR2GRAY = 6
    COLOR_RGB2GRAY = 7
    COLOR_GRAY2BGR = 8
    COLOR_GRAY2RGB = 8
    COLOR_GRAY2BGRA = 9
    COLOR_GRAY2RGBA = 9
    COLOR_BGRA2GRAY = 10
    COLOR_RGBA2GRAY = 11


class ImageBatchFormat(IntEnum):
    NHWC = 0
    NCHW = 1


class SliceMode(StrEnum):
    PAD = "pad"
    DROP = "drop"


class AutoAugmentPolicy(IntEnum):
    IMAGENET = 0
    CIFAR10 = 1
    SVHN = 2


def get_image_num_channels(image: Any) -> int:
    """Channels of an HWC array (1 for HW) or a PIL image."""
    if isinstance(image, Image.Image):
        return len(image.getbands())
    if isinstance(image, np.ndarray):
        if image.ndim == 2:
            return 1
        if image.ndim == 3:
            return int(image.shape[2])
        raise ValueError(f"get_image_num_channels: expected an HW or HWC array, got {image.shape}.")
    raise TypeError(f"get_image_num_channels: expected ndarray or PIL image, got {type(image)}.")


def get_image_size(image: Any) -> list[int]:
    """[height, width] of an HW/HWC array or a PIL image."""
    if isinstance(image, Image.Image):
        return [image.height, image.width]
    if isinstance(image, np.ndarray):
        if image.ndim not in (2, 3):
            raise ValueError(f"get_image_size: expected an HW or HWC array, got {image.shape}.")
        return [int(image.shape[0]), int(image.shape[1])]
    raise TypeError(f"get_image_size: expected ndarray or PIL image, got {type(image)}.")


# -- argument checks (errors name the op, argument, value and expectation) ------------


def is_num(x: Any) -> bool:
    return isinstance(x, Number) and not isinstance(x, bool)


def check_size(op: str, size: Any, name: str = "size") -> tuple[int, int]:
    """int -> (s, s); (h, w) -> (h, w); every value a positive int."""
    if isinstance(size, int) and not isinstance(size, bool):
        size = (size, size)
    if (
        not isinstance(size, list | tuple)
        or len(size) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in size)
    ):
        raise TypeError(f"{op}: {name} must be an int or a (height, width) pair, got {size!r}.")
    if size[0] <= 0 or size[1] <= 0:
        raise ValueError(f"{op}: {name} must be positive, got {size!r}.")
    return int(size[0]), int(size[1])


def check_range(
    op: str,
    value: Any,
    name: str,
    lo: float = 0.0,
    hi: float = float("inf"),
    center: float | None = None,
) -> tuple[float, float]:
    """A number v -> (center - v, center + v) (or (lo', v)), a pair -> ordered pair in [lo, hi]."""
    if is_num(value):
        if value < 0:
            raise ValueError(f"{op}: {name} must be non-negative, got {value}.")
        value = (center - value, center + value) if center is not None else (lo, value)
        value = (max(value[0], lo), value[1])
    if not isinstance(value, list | tuple) or len(value) != 2 or not all(is_num(v) for v in value):
        raise TypeError(f"{op}: {name} must be a number or a (min, max) pair, got {value!r}.")
    if not lo <= value[0] <= value[1] <= hi:
        raise ValueError(
            f"{op}: {name} must satisfy {lo} <= min <= max <= {hi}, got {tuple(value)!r}."
        )
    return float(value[0]), float(value[1])


def check_prob(op: str, prob: Any) -> float:
    if not is_num(prob):  # TypeError first, as MindSpore checks the type before the range
        raise TypeError(f"{op}: prob must be a number in [0, 1], got {prob!r}.")
    if not 0.0 <= prob <= 1.0:
        raise ValueError(f"{op}: prob must be a number in [0, 1], got {prob!r}.")
    return float(prob)


def check_fill(op: str, fill: Any) -> tuple[int, int, int]:
    """fill_value: int in [0, 255] or a 3-tuple of them."""
    if isinstance(fill, int) and not isinstance(fill, bool):
        fill = (fill, fill, fill)
    if (
        not isinstance(fill, list | tuple)
        or len(fill) != 3
        or not all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 255 for v in fill)
    ):
        raise ValueError(
            f"{op}: fill_value must be an int in [0, 255] or a 3-tuple of them, got {fill!r}."
        )
    return int(fill[0]), int(fill[1]), int(fill[2])


def check_enum(op: str, value: Any, enum: type[Enum], name: str) -> Any:
    if not isinstance(value, enum):
        raise TypeError(
            f"{op}: {name} must be a {enum.__name__} (one of "
            f"{', '.join(m.name for m in enum)}), got {value!r}."
        )
    return value


def check_image(op: str, img: Any) -> np.ndarray:
    if not isinstance(img, np.ndarray):
        raise TypeError(f"{op}: expected a numpy.ndarray image, got {type(img).__name__}.")
    if img.ndim not in (2, 3):
        raise ValueError(f"{op}: expected an image of shape (H, W) or (H, W, C), got {img.shape}.")
    return img


def check_rgb(op: str, img: np.ndarray) -> np.ndarray:
    check_image(op, img)
    if img.ndim != 3 or img.shape[2] != 3:
        raise ValueError(f"{op}: expected an RGB image of shape (H, W, 3), got {img.shape}.")
    return img
