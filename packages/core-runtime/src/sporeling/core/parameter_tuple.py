"""``ParameterTuple``: an immutable tuple of Parameters that can clone itself (optimizer state).

As in MindSpore 1.8, ``ParameterTuple(params).clone(prefix, init)`` builds one new Parameter
per element, named ``"<prefix>.<name>"``, with the same shape, dtype and device, filled from
``init`` (``'same'`` copies the values; any :func:`~sporeling.core.initializer.initializer`
spec such as ``'zeros'``, ``'ones'`` or a number fills them).

>>> from sporeling.core import Parameter, ParameterTuple
>>> w = Parameter([1.0, 2.0], name="fc.weight")
>>> ParameterTuple([w]).clone("moment1", init="zeros")[0].name
'moment1.fc.weight'
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .errors import describe
from .tensor import Parameter, Tensor

__all__ = ["ParameterTuple"]


class ParameterTuple(tuple[Parameter, ...]):
    """A tuple whose elements are all :class:`Parameter` objects."""

    def __new__(cls, iterable: Iterable[Parameter] = ()) -> ParameterTuple:
        items = tuple(iterable)
        for i, p in enumerate(items):
            if not isinstance(p, Parameter):
                raise TypeError(
                    f"ParameterTuple: element {i} expected a Parameter, got {describe(p)}"
                )
        return super().__new__(cls, items)

    def clone(self, prefix: str, init: Any = "same") -> ParameterTuple:
        """New Parameters ``"<prefix>.<name>"`` shaped like these, filled from ``init``."""
        if not isinstance(prefix, str) or not prefix:
            raise ValueError(
                f"ParameterTuple.clone: argument 'prefix' expected a non-empty str, got {prefix!r}"
            )
        out = []
        for p in self:
            if isinstance(init, str) and init == "same":
                data = p._data.copy()
            else:
                from .initializer import initializer

                host = initializer(init, p.shape, p.dtype)._data
                data = p._device.asarray(host)
            clone = Parameter(Tensor._wrap(data, p._device), f"{prefix}.{p.name}", p.requires_grad)
            out.append(clone)
        return ParameterTuple(out)

    def __repr__(self) -> str:
        return f"ParameterTuple({', '.join(p.name for p in self)})"
