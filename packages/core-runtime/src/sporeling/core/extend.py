"""The public extension API: what a package outside the core needs to define its own ops.

Custom-op and the suites build on these names instead of the core's private modules, so
the core can reorganise its internals without breaking them.

* :class:`Primitive` — one registered operation: its abstract (shape/dtype) rule, its
  per-device implementations, its backward rule and its kind (see its docstring).
* :class:`ShapedArray` — the abstract value an abstract rule takes and returns.
* :func:`as_tensor` — ``as_tensor(value, op, arg)`` turns an argument (Tensor, array,
  Python number) into a Tensor, with the error naming ``op`` and ``arg`` that the core's
  own ops give.
* :func:`registered_primitives` — a read-only view of every registered primitive by name.
* :func:`is_host` and :func:`scatter_at` — the backend helper: whether an implementation's
  ``xp`` is NumPy (host arrays, where Numba kernels apply) or CuPy, and an unbuffered
  scatter (``ufunc.at`` / ``cupyx.scatter_*``) that works on both.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from ._backend import is_host, scatter_at
from ._primitive import REGISTRY, Primitive, ShapedArray
from .ops._core import as_tensor

__all__ = [
    "Primitive",
    "ShapedArray",
    "as_tensor",
    "registered_primitives",
    "is_host",
    "scatter_at",
]


def registered_primitives() -> Mapping[str, Primitive]:
    """Every registered primitive by name (a live, read-only view of the registry)."""
    return MappingProxyType(REGISTRY)
