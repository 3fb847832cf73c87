"""``vmap`` by batching rules: each primitive runs once over the whole batch.

While a mapped function runs, a :class:`BatchInterpreter` sits on top of the interpreter
stack. A mapped tensor is a Tensor whose ``_data`` is a :class:`Batched` (the per-example
shape and dtype, which the ops' Python code sees, around the full value with the batch on
axis 0). Each ``bind`` reaching the interpreter with a mapped input applies the primitive's
``batch_rule`` (an attribute on the Primitive, set below for the elementwise, reduction,
reshape/transpose/concat and matrix-product primitives) to the full values, one call for
the batch; a primitive without a rule (or a case its rule does not cover) runs once per
example and the results are stacked. Code that needs a mapped tensor's value, or
differentiates inside the mapped function, makes ``vmap`` run the whole function once per
example instead (the previous behaviour, so every function still maps).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._primitive import REGISTRY, current_interpreter, interpreter
from ..tensor import Tensor

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
        rule = getattr(prim, "batch_rule", None)
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


# ---- rules: (prim, values, dims, per-example ndims, params) -> full result, or None -----------


def _elementwise_rule(prim: Any, values: list[Any], dims: list[Any], ndims: list[int], params):
    """Batched operands get singleton axes after the batch axis up to the widest operand's
    rank; unmapped ones broadcast from the right as they would per example."""
    from . import reshape

    if any(k in params for k in ("axis", "axes", "shape", "perm", "dim")):
        return None  # a parameter that names axes: not a plain elementwise op
    rank = max(ndims)
    ins = []
    for v, d, nd in zip(values, dims, ndims, strict=True):
        if d is not None and nd < rank:
            v = reshape(v, (v.shape[0], *(1,) * (rank - nd), *v.shape[1:]))
        ins.append(v)
    return prim.bind(*ins, **params)


def _shift_axis(axis: Any, nd: int) -> Any:
    if isinstance(axis, (int, np.integer)):
        return int(axis) % max(nd, 1) + 1
    if isinstance(axis, tuple) and axis and all(isinstance(a, (int, np.integer)) for a in axis):
        return tuple(int(a) % max(nd, 1) + 1 for a in axis)
    return None


def _axis_rule(prim: Any, values: list[Any], dims: list[Any], ndims: list[int], params):
    """Reductions and other one-input ops with an ``axis`` parameter: the axis moves by one."""
    if len(values) != 1 or "axis" not in params:
        return None
    axis = _shift_axis(params["axis"], ndims[0])
    if axis is None:
        return None
    return prim.bind(values[0], **{**params, "axis": axis})


def _last_axis_rule(prim: Any, values: list[Any], dims: list[Any], ndims: list[int], params):
    """One-input ops along the last axis (sort): the leading batch axis is just another."""
    if len(values) != 1 or ndims[0] < 1:
        return None
    return prim.bind(values[0], **params)


def _reshape_rule(prim: Any, values: list[Any], dims: list[Any], ndims: list[int], params):
    shape = params["shape"]
    return prim.bind(values[0], **{**params, "shape": (values[0].shape[0], *shape)})


def _transpose_rule(prim: Any, values: list[Any], dims: list[Any], ndims: list[int], params):
    perm = tuple(int(p) % max(ndims[0], 1) + 1 for p in params["perm"])
    return prim.bind(values[0], **{**params, "perm": (0, *perm)})


def _concat_rule(prim: Any, values: list[Any], dims: list[Any], ndims: list[int], params):
    if any(d is None for d in dims) or not isinstance(params.get("axis"), int):
        return None
    return prim.bind(*values, **{**params, "axis": params["axis"] % ndims[0] + 1})


def _matmul_rule(prim: Any, values: list[Any], dims: list[Any], ndims: list[int], params):
    """Matrix products broadcast over leading axes: the batch axis is one of them when both
    operands are at least matrices (and an unmapped one is exactly a matrix)."""
    if min(ndims) < 2:
        return None
    if all(d is not None for d in dims):
        if ndims[0] != ndims[1]:
            return None
    elif any(nd != 2 for d, nd in zip(dims, ndims, strict=True) if d is None):
        return None
    return prim.bind(*values, **params)


_BY_NAME = {
    **{n: _axis_rule for n in ("softmax", "log_softmax", "cumsum", "cumprod")},
    "sort": _last_axis_rule,
    "reshape": _reshape_rule,
    "transpose": _transpose_rule,
    "concat": _concat_rule,
    "matmul": _matmul_rule,
}


def _install() -> None:
    for prim in REGISTRY.values():
        rule = _BY_NAME.get(prim.name)
        if rule is None and prim.kind == "elementwise":
            rule = _elementwise_rule
        elif rule is None and prim.kind == "reduce":
            rule = _axis_rule
        if rule is not None and getattr(prim, "batch_rule", None) is None:
            prim.batch_rule = rule


_install()
