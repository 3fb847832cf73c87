"""Legacy `mindspore.dataset.vision.py_transforms` (deprecated in 1.8): Pillow implementations.

Do not mix these with `sporeling.data.vision` ops in one `map`: that raises
RuntimeError, as in MindSpore.
"""

from __future__ import annotations

from typing import Any

from sporeling.data import vision as _v
from sporeling.data.vision._legacy import build as _build
from sporeling.data.vision.utils import Border, Inter  # noqa: F401

_NAMES = [
    "AdjustGamma", "AutoContrast", "CenterCrop", "Cutout", "Decode", "Equalize", "FiveCrop",
    "Grayscale", "HsvToRgb", "HWC2CHW", "Invert", "LinearTransformation", "MixUp",
    "Normalize", "NormalizePad", "Pad", "RandomAffine", "RandomColor", "RandomColorAdjust",
    "RandomCrop", "RandomErasing", "RandomGrayscale", "RandomHorizontalFlip",
    "RandomLighting", "RandomPerspective", "RandomResizedCrop", "RandomRotation",
    "RandomSharpness", "RandomVerticalFlip", "Resize", "RgbToHsv", "TenCrop", "ToPIL",
    "ToTensor", "ToType", "UniformAugment",
]  # fmt: skip

_source = dict(vars(_v))
_source["Cutout"] = _v.CutOut
globals().update(_build(_NAMES, _source, "PY", __name__))


class Normalize(globals()["Normalize"]):  # type: ignore[misc]
    """Legacy Python Normalize works on CHW arrays (after ToTensor)."""

    def __init__(self, mean: Any, std: Any) -> None:
        super().__init__(mean, std, is_hwc=False)


__all__ = sorted(_NAMES) + ["Border", "Inter"]
