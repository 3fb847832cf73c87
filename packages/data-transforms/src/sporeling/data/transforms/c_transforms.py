"""Legacy ``mindspore.dataset.transforms.c_transforms`` (deprecated in 1.8).

The unified classes of :mod:`sporeling.data.transforms` with the C implementation pinned;
mixing them with unified ops in one ``map`` raises RuntimeError, as in MindSpore.
"""

from __future__ import annotations

from sporeling.data.transforms import transforms as _t
from sporeling.data.transforms.transforms import Relational
from sporeling.data.vision._legacy import build as _build

_NAMES = [
    "Compose", "Concatenate", "Duplicate", "Fill", "Mask", "OneHot", "PadEnd", "RandomApply",
    "RandomChoice", "Slice", "TypeCast", "Unique",
]  # fmt: skip

globals().update(_build(_NAMES, vars(_t), "C", __name__))
__all__ = [*sorted(_NAMES), "Relational"]
