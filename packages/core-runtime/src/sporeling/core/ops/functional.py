"""``ops.functional`` (``F``): MindSpore's functional namespace, as scripts import it.

Every functional op of :mod:`sporeling.core.ops`, plus the names 1.8 code reaches for here:
``F.depend``, ``F.stop_gradient``, ``F.dtype``, ``F.identity``, ``F.mixed_precision_cast``,
``F.tensor_add`` and friends, ``F.scalar_to_array``, ``F.make_tuple``, ``F.partial``.
"""

from __future__ import annotations

from typing import Any

from .. import ops as _ops
from ..tensor import Tensor


def dtype(x: Tensor) -> Any:
    """The dtype of ``x`` (MindSpore's ``F.dtype``)."""
    return x.dtype


def identity(x: Any) -> Any:
    """``x`` itself (a new Tensor object sharing no autograd history is not needed here)."""
    return x


def mixed_precision_cast(dst_type: Any, x: Any) -> Any:
    """Cast the floating tensors in ``x`` (nested tuples/lists/dicts too) to ``dst_type``."""
    if isinstance(x, Tensor):
        return _ops.cast(x, dst_type) if x.dtype.category == 2 else x
    if isinstance(x, (tuple, list)):
        return type(x)(mixed_precision_cast(dst_type, v) for v in x)
    if isinstance(x, dict):
        return {k: mixed_precision_cast(dst_type, v) for k, v in x.items()}
    return x


def tensor_pow(x: Any, y: Any) -> Tensor:
    return _ops.pow(x, y)


_NAMES = [
    n
    for n in dir(_ops)
    if not n.startswith("_") and n[0].islower() and n not in ("functional", "composite")
]
globals().update({n: getattr(_ops, n) for n in _NAMES if n not in globals()})
__all__ = sorted({*_NAMES, "dtype", "identity", "mixed_precision_cast", "tensor_pow"})
