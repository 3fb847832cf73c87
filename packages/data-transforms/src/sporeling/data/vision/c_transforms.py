"""Legacy `mindspore.dataset.vision.c_transforms` (deprecated in 1.8): NumPy implementations.

Do not mix these with `sporeling.data.vision` ops in one `map`: that raises
RuntimeError, as in MindSpore.
"""

from __future__ import annotations

from sporeling.data import vision as _v
from sporeling.data.vision._legacy import build as _build
from sporeling.data.vision.utils import (  # noqa: F401
    AutoAugmentPolicy,
    Border,
    ConvertMode,
    ImageBatchFormat,
    Inter,
    SliceMode,
)

_NAMES = [
    "AdjustGamma", "AutoAugment", "AutoContrast", "BoundingBoxAugment", "CenterCrop",
    "ConvertColor", "Crop", "CutOut", "Decode", "Equalize", "GaussianBlur", "HorizontalFlip",
    "HWC2CHW", "Invert", "Normalize", "NormalizePad", "Pad", "PadToSize",
    "RandomAdjustSharpness", "RandomAffine", "RandomAutoContrast", "RandomColor",
    "RandomColorAdjust", "RandomCrop", "RandomCropDecodeResize", "RandomCropWithBBox",
    "RandomEqualize", "RandomHorizontalFlip", "RandomHorizontalFlipWithBBox", "RandomInvert",
    "RandomLighting", "RandomPosterize", "RandomResize", "RandomResizedCrop",
    "RandomResizedCropWithBBox", "RandomResizeWithBBox", "RandomRotation",
    "RandomSelectSubpolicy", "RandomSharpness", "RandomSolarize", "RandomVerticalFlip",
    "RandomVerticalFlipWithBBox", "Rescale", "Resize", "ResizeWithBBox", "Rotate",
    "SlicePatches", "UniformAugment", "VerticalFlip",
]  # fmt: skip

globals().update(_build(_NAMES, vars(_v), "C", __name__))
__all__ = sorted(_NAMES) + ["AutoAugmentPolicy", "Border", "ConvertMode", "ImageBatchFormat",
                            "Inter", "SliceMode"]  # fmt: skip
