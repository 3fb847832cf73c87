"""Augmentation policies that draw operations from the other transforms: AutoAugment,
RandomSelectSubpolicy, RandAugment, TrivialAugmentWide and UniformAugment.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sporeling.data.transforms._base import (
    PyTensorOperation,
    TensorOperation,
    _as_tuple,
)
from sporeling.data.transforms.transforms import Compose, _check_transforms
from sporeling.data.vision._color import AutoContrast, Equalize
from sporeling.data.vision._common import (
    _WARP_MODE,
    _check_interpolation,
    _fill_for,
    _u8,
    np_brightness,
    np_color,
    np_contrast,
    np_rotate,
    np_sharpness,
    posterize,
    solarize,
)
from sporeling.data.vision.kernels.geometry import warp
from sporeling.data.vision.utils import (
    AutoAugmentPolicy,
    Inter,
    check_enum,
    check_fill,
    is_num,
)

__all__ = [
    "AutoAugment",
    "RandAugment",
    "RandomSelectSubpolicy",
    "TrivialAugmentWide",
    "UniformAugment",
]


# -- AutoAugment ---------------------------------------------------------------------------

_POLICIES = {
    AutoAugmentPolicy.IMAGENET: [
        (("Posterize", 0.4, 8), ("Rotate", 0.6, 9)),
        (("Solarize", 0.6, 5), ("AutoContrast", 0.6, None)),
        (("Equalize", 0.8, None), ("Equalize", 0.6, None)),
        (("Posterize", 0.6, 7), ("Posterize", 0.6, 6)),
        (("Equalize", 0.4, None), ("Solarize", 0.2, 4)),
        (("Equalize", 0.4, None), ("Rotate", 0.8, 8)),
        (("Solarize", 0.6, 3), ("Equalize", 0.6, None)),
        (("Posterize", 0.8, 5), ("Equalize", 1.0, None)),
        (("Rotate", 0.2, 3), ("Solarize", 0.6, 8)),
        (("Equalize", 0.6, None), ("Posterize", 0.4, 6)),
        (("Rotate", 0.8, 8), ("Color", 0.4, 0)),
        (("Rotate", 0.4, 9), ("Equalize", 0.6, None)),
        (("Equalize", 0.0, None), ("Equalize", 0.8, None)),
        (("Invert", 0.6, None), ("Equalize", 1.0, None)),
        (("Color", 0.6, 4), ("Contrast", 1.0, 8)),
        (("Rotate", 0.8, 8), ("Color", 1.0, 2)),
        (("Color", 0.8, 8), ("Solarize", 0.8, 7)),
        (("Sharpness", 0.4, 7), ("Invert", 0.6, None)),
        (("ShearX", 0.6, 5), ("Equalize", 1.0, None)),
        (("Color", 0.4, 0), ("Equalize", 0.6, None)),
        (("Equalize", 0.4, None), ("Solarize", 0.2, 4)),
        (("Solarize", 0.6, 5), ("AutoContrast", 0.6, None)),
        (("Invert", 0.6, None), ("Equalize", 1.0, None)),
        (("Color", 0.6, 4), ("Contrast", 1.0, 8)),
        (("Equalize", 0.8, None), ("Equalize", 0.6, None)),
    ],
    AutoAugmentPolicy.CIFAR10: [
        (("Invert", 0.1, None), ("Contrast", 0.2, 6)),
        (("Rotate", 0.7, 2), ("TranslateX", 0.3, 9)),
        (("Sharpness", 0.8, 1), ("Sharpness", 0.9, 3)),
        (("ShearY", 0.5, 8), ("TranslateY", 0.7, 9)),
        (("AutoContrast", 0.5, None), ("Equalize", 0.9, None)),
        (("ShearY", 0.2, 7), ("Posterize", 0.3, 7)),
        (("Color", 0.4, 3), ("Brightness", 0.6, 7)),
        (("Sharpness", 0.3, 9), ("Brightness", 0.7, 9)),
        (("Equalize", 0.6, None), ("Equalize", 0.5, None)),
        (("Contrast", 0.6, 7), ("Sharpness", 0.6, 5)),
        (("Color", 0.7, 7), ("TranslateX", 0.5, 8)),
        (("Equalize", 0.3, None), ("AutoContrast", 0.4, None)),
        (("TranslateY", 0.4, 3), ("Sharpness", 0.2, 6)),
        (("Brightness", 0.9, 6), ("Color", 0.2, 8)),
        (("Solarize", 0.5, 2), ("Invert", 0.0, None)),
        (("Equalize", 0.2, None), ("AutoContrast", 0.6, None)),
        (("Equalize", 0.2, None), ("Equalize", 0.6, None)),
        (("Color", 0.9, 9), ("Equalize", 0.6, None)),
        (("AutoContrast", 0.8, None), ("Solarize", 0.2, 8)),
        (("Brightness", 0.1, 3), ("Color", 0.7, 0)),
        (("Solarize", 0.4, 5), ("AutoContrast", 0.9, None)),
        (("TranslateY", 0.9, 9), ("TranslateY", 0.7, 9)),
        (("AutoContrast", 0.9, None), ("Solarize", 0.8, 3)),
        (("Equalize", 0.8, None), ("Invert", 0.1, None)),
        (("TranslateY", 0.7, 9), ("AutoContrast", 0.9, None)),
    ],
    AutoAugmentPolicy.SVHN: [
        (("ShearX", 0.9, 4), ("Invert", 0.2, None)),
        (("ShearY", 0.9, 8), ("Invert", 0.7, None)),
        (("Equalize", 0.6, None), ("Solarize", 0.6, 6)),
        (("Invert", 0.9, None), ("Equalize", 0.6, None)),
        (("Equalize", 0.6, None), ("Rotate", 0.9, 3)),
        (("ShearX", 0.9, 4), ("AutoContrast", 0.8, None)),
        (("ShearY", 0.9, 8), ("Invert", 0.4, None)),
        (("ShearY", 0.9, 5), ("Solarize", 0.2, 6)),
        (("Invert", 0.9, None), ("AutoContrast", 0.8, None)),
        (("Equalize", 0.6, None), ("Rotate", 0.9, 3)),
        (("ShearX", 0.9, 4), ("Solarize", 0.3, 3)),
        (("ShearY", 0.8, 8), ("Invert", 0.7, None)),
        (("Equalize", 0.9, None), ("TranslateY", 0.6, 6)),
        (("Invert", 0.9, None), ("Equalize", 0.6, None)),
        (("Contrast", 0.3, 3), ("Rotate", 0.8, 4)),
        (("Invert", 0.8, None), ("TranslateY", 0.0, 2)),
        (("ShearY", 0.7, 6), ("Solarize", 0.4, 8)),
        (("Invert", 0.6, None), ("Rotate", 0.8, 4)),
        (("ShearY", 0.3, 7), ("TranslateX", 0.9, 3)),
        (("ShearX", 0.1, 6), ("Invert", 0.6, None)),
        (("Solarize", 0.7, 2), ("TranslateY", 0.6, 7)),
        (("ShearY", 0.8, 4), ("Invert", 0.8, None)),
        (("ShearX", 0.7, 9), ("TranslateY", 0.8, 3)),
        (("ShearY", 0.8, 5), ("AutoContrast", 0.7, None)),
        (("ShearX", 0.7, 2), ("Invert", 0.1, None)),
    ],
}


def _magnitude(name: str, level: int, h: int, w: int) -> float:
    """torchvision's 10-bin magnitude tables."""
    bins = np.arange(10)
    table = {
        "ShearX": np.linspace(0.0, 0.3, 10),
        "ShearY": np.linspace(0.0, 0.3, 10),
        "TranslateX": np.linspace(0.0, 150.0 / 331.0 * w, 10),
        "TranslateY": np.linspace(0.0, 150.0 / 331.0 * h, 10),
        "Rotate": np.linspace(0.0, 30.0, 10),
        "Brightness": np.linspace(0.0, 0.9, 10),
        "Color": np.linspace(0.0, 0.9, 10),
        "Contrast": np.linspace(0.0, 0.9, 10),
        "Sharpness": np.linspace(0.0, 0.9, 10),
        "Posterize": 8 - np.round(bins / ((10 - 1) / 4)).astype(int),
        "Solarize": np.linspace(255.0, 0.0, 10),
    }
    return float(table[name][level])


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


def _apply_aug(img: np.ndarray, name: str, mag: float, mode: int, fill: Any) -> np.ndarray:
    if name == "ShearX":
        return warp(img, (1, mag, 0, 0, 1, 0), img.shape[:2], mode, fill)
    if name == "ShearY":
        return warp(img, (1, 0, 0, mag, 1, 0), img.shape[:2], mode, fill)
    if name == "TranslateX":
        return warp(img, (1, 0, mag, 0, 1, 0), img.shape[:2], mode, fill)
    if name == "TranslateY":
        return warp(img, (1, 0, 0, 0, 1, mag), img.shape[:2], mode, fill)
    if name == "Rotate":
        return np_rotate(img, mag, mode, False, None, fill)
    if name == "Brightness":
        return np_brightness(img, 1.0 + mag)
    if name == "Color":
        return np_color(img, 1.0 + mag)
    if name == "Contrast":
        return np_contrast(img, 1.0 + mag)
    if name == "Sharpness":
        return np_sharpness(img, 1.0 + mag)
    if name == "Posterize":
        return posterize(img, int(mag))
    if name == "Solarize":
        return solarize(img, mag, 255)
    if name == "AutoContrast":
        return AutoContrast()._execute_numpy(img)
    if name == "Equalize":
        return Equalize()._execute_numpy(img)
    if name == "Invert":
        return 255 - img
    raise ValueError(f"AutoAugment: unknown operation {name!r}.")  # pragma: no cover


class AutoAugment(TensorOperation):
    """AutoAugment (Cubuk et al.) with the ImageNet, CIFAR-10 or SVHN policy."""

    def __init__(
        self,
        policy: AutoAugmentPolicy = AutoAugmentPolicy.IMAGENET,
        interpolation: Inter = Inter.NEAREST,
        fill_value: Any = 0,
    ) -> None:
        self.policy = check_enum("AutoAugment", policy, AutoAugmentPolicy, "policy")
        self.interpolation = _check_interpolation("AutoAugment", interpolation, warp_only=True)
        self.fill_value = check_fill("AutoAugment", fill_value)

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        _u8("AutoAugment", img)
        rng = self._rng()
        policy = _POLICIES[self.policy]
        sub = policy[int(rng.integers(len(policy)))]
        mode = _WARP_MODE[self.interpolation]
        fill = _fill_for(img, self.fill_value)
        h, w = img.shape[:2]
        for name, prob, level in sub:
            if rng.random() > prob:
                continue
            mag = 0.0 if level is None else _magnitude(name, level, h, w)
            if name in _SIGNED and rng.random() < 0.5:
                mag = -mag
            img = _apply_aug(img, name, mag, mode, fill)
        return img


class RandomSelectSubpolicy(TensorOperation):
    """Pick one sub-policy (a list of (op, prob)) at random and apply its ops in order."""

    def __init__(self, policy: list[list[tuple[Any, float]]]) -> None:
        if not isinstance(policy, list) or not policy:
            raise ValueError(
                "RandomSelectSubpolicy: policy must be a non-empty list of sub-policies."
            )
        for sub in policy:
            if not isinstance(sub, list) or not sub:
                raise ValueError("RandomSelectSubpolicy: each sub-policy must be a non-empty list.")
            for item in sub:
                if (
                    not isinstance(item, tuple)
                    or len(item) != 2
                    or not callable(item[0])
                    or not is_num(item[1])
                    or not 0 <= item[1] <= 1
                ):
                    raise ValueError(
                        f"RandomSelectSubpolicy: each entry must be (transform, prob in [0, 1]), "
                        f"got {item!r}."
                    )
        self.policy = policy

    def _execute_numpy(self, *args: Any) -> Any:
        rng = self._rng()
        sub = self.policy[int(rng.integers(len(self.policy)))]
        for op, prob in sub:
            if rng.random() < prob:
                args = _as_tuple(op(*args))
        return args if len(args) > 1 else args[0]


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
        self.interpolation = _check_interpolation(op, interpolation, warp_only=True)
        self.fill_value = check_fill(op, fill_value)

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        _u8("RandAugment", img)
        rng = self._rng()
        h, w = img.shape[:2]
        space = _rand_augment_space(self.num_magnitude_bins, h, w)
        names = list(space)
        mode = _WARP_MODE[self.interpolation]
        fill = _fill_for(img, self.fill_value)
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
        self.interpolation = _check_interpolation(op, interpolation, warp_only=True)
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
            img, name, mag, _WARP_MODE[self.interpolation], _fill_for(img, self.fill_value)
        )
