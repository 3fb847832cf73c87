"""``vmap`` by batching rules: each primitive runs once over the whole batch.

While a mapped function runs, a :class:`BatchInterpreter` sits on top of the interpreter
stack. A mapped tensor is a Tensor whose ``_data`` is a :class:`Batched` (the per-example
shape and dtype, which the ops' Python code sees, around the full value with the batch on
axis 0). Each ``bind`` reaching the interpreter with a mapped input applies the primitive's
``batch_rule`` (a field of the Primitive, given where the op is defined; elementwise and
reduction primitives without one use their kind's, see :mod:`._batch_rules`) to the full
values, one call for the batch; a primitive without a rule (or a case its rule does not
cover) runs once per example and the results are stacked. Code that needs a mapped
tensor's value, or differentiates inside the mapped function, makes ``vmap`` run the whole
function once per example instead (the previous behaviour, so every function still maps).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._primitive import current_interpreter, interpreter
from ..tensor import Tensor
from ._batch_rules import BY_KIND

__all__ = ["Batched", "BatchInterpreter", "Unbatchable", "run_batched", "move_axis"]


def move_axis(t: Tensor, src: int, dst: int) -> Tensor:
    """``t`` with axis ``src`` moved to position ``dst``."""
    src, dst = src % t.ndim, dst % t.ndim
    if src == dst:
        return t
    from . import transpose

    order = [i for i in range(t.ndim) if i != src]
    order.insert(dst, src)
    return transpose(t, tuple(order))


class Unbatchable(Exception):
    """The mapped function did something only the per-example loop can do."""


class Batched:
    """The ``_data`` of a mapped tensor: per-example shape/dtype around the full value."""

    __slots__ = ("value", "shape", "dtype")

    def __init__(self, value: Tensor) -> None:
        self.value = value
        self.shape = tuple(value.shape[1:])
        self.dtype = value._data.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise Unbatchable("a mapped tensor's value was read")

    __array__ = get = tolist = item = copy = astype = reshape = __getitem__ = _refuse
    __float__ = __int__ = __bool__ = __len__ = __iter__ = _refuse


def _mapped(t: Any) -> bool:
    return isinstance(t, Tensor) and isinstance(t._data, Batched)


class BatchInterpreter:
    """Applies batching rules to primitives with mapped inputs (see the module docstring)."""

    def __init__(self, size: int, parent: Any) -> None:
        self.size = size
        self.parent = parent
        self.rule_calls = 0  # primitives run once over the batch
        self.loop_calls = 0  # primitives run once per example

    def process(self, prim: Any, args: tuple[Any, ...], params: dict[str, Any]) -> Any:
        if not any(_mapped(a) for a in args):
            with interpreter(self.parent):
                return prim.bind(*args, **params)
        if any(a._requires_grad or a._node is not None for a in args if _mapped(a)):
            raise Unbatchable("differentiation inside the mapped function")
        values = [a._data.value if _mapped(a) else a for a in args]
        dims = [0 if _mapped(a) else None for a in args]
        ndims = [a._data.ndim if _mapped(a) else getattr(a, "ndim", 0) for a in args]
        rule = prim.batch_rule or BY_KIND.get(prim.kind)
        out = None
        with interpreter(self.parent):
            if rule is not None:
                out = rule(prim, values, dims, ndims, params)
            if out is None:
                out = self._loop(prim, values, dims, params)
            else:
                self.rule_calls += 1
        if prim.multiple_results:
            return tuple(Tensor._wrap(Batched(o), o._device) for o in out)
        return Tensor._wrap(Batched(out), out._device)

    def _loop(self, prim: Any, values: list[Any], dims: list[Any], params: dict[str, Any]) -> Any:
        from . import stack

        self.loop_calls += 1
        results = []
        for i in range(self.size):
            ex = [v[i] if d is not None else v for v, d in zip(values, dims, strict=True)]
            results.append(prim.bind(*ex, **params))
        if prim.multiple_results:
            return tuple(stack([r[k] for r in results], 0) for k in range(len(results[0])))
        return stack(results, 0)


def run_batched(fn: Any, args: tuple[Any, ...], axes: tuple[Any, ...], size: int) -> Any:
    """``fn`` on mapped versions of ``args`` (mapped along ``axes``); the results with the
    batch on axis 0, or raises :class:`Unbatchable`."""
    parent = current_interpreter()
    interp = BatchInterpreter(size, parent)
    wrapped = []
    for a, ax in zip(args, axes, strict=True):
        if ax is None or not isinstance(a, Tensor):
            wrapped.append(a)
            continue
        full = move_axis(a, ax % a.ndim, 0)
        wrapped.append(Tensor._wrap(Batched(full), full._device))
    with interpreter(interp):
        result = fn(*wrapped)

    def unwrap(x: Any) -> Any:
        if _mapped(x):
            return x._data.value
        if isinstance(x, Tensor):  # not mapped: the same for every example
            from . import broadcast_to, expand_dims

            return broadcast_to(expand_dims(x, 0), (size, *x.shape))
        if isinstance(x, (tuple, list)):
            return type(x)(unwrap(v) for v in x)
        raise Unbatchable(f"the mapped function returned a {type(x).__name__}")

    return unwrap(result), interp
