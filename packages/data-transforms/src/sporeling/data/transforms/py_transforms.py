"""Legacy ``mindspore.dataset.transforms.py_transforms`` (deprecated in 1.8).

The unified classes of :mod:`sporeling.data.transforms` with the Python implementation
pinned (``OneHotOp`` is ``OneHot``); mixing them with unified ops in one ``map`` raises
RuntimeError, as in MindSpore.
"""

from __future__ import annotations

from sporeling.data.transforms import transforms as _t
from sporeling.data.vision._legacy import build as _build

_NAMES = ["Compose", "OneHotOp", "RandomApply", "RandomChoice", "RandomOrder"]

_source = dict(vars(_t))
_source["OneHotOp"] = _t.OneHot
globals().update(_build(_NAMES, _source, "PY", __name__))
__all__ = sorted(_NAMES)
