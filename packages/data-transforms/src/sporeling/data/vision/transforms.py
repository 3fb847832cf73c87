"""``mindspore.dataset.vision.transforms``: the module path of the unified vision transforms.

MindSpore 2.x scripts import ``mindspore.dataset.vision.transforms``; the classes are the
ones of :mod:`sporeling.data.vision`.
"""

from __future__ import annotations

from sporeling.data import vision as _vision

__all__ = list(_vision.__all__)
globals().update({name: getattr(_vision, name) for name in __all__})
