"""vmap's batching rules, each given to its primitive where the op is defined
(``Primitive(..., batch_rule=...)``); elementwise and reduction primitives without one use
the rule of their kind (:data:`BY_KIND`).

A rule is ``rule(prim, values, dims, ndims, params) -> result or None``: ``values`` are the
operands (a mapped one holds the whole batch on axis 0), ``dims`` 0 for a mapped operand and
None for an unmapped one, ``ndims`` the per-example ranks. None means the rule does not cover
this case: the primitive then runs once per example (see :mod:`.batching`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "elementwise_rule",
    "axis_rule",
    "last_axis_rule",
    "reshape_rule",
    "transpose_rule",
    "concat_rule",
    "matmul_rule",
    "BY_KIND",
]


def elementwise_rule(prim: Any, values: list[Any], dims: list[Any], ndims: list[int], params):
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


def axis_rule(prim: Any, values: list[Any], dims: list[Any], ndims: list[int], params):
    """Reductions and other one-input ops with an ``axis`` parameter: the axis moves by one."""
    if len(values) != 1 or "axis" not in params:
        return None
    axis = _shift_axis(params["axis"], ndims[0])
    if axis is None:
        return None
    return prim.bind(values[0], **{**params, "axis": axis})


def last_axis_rule(prim: Any, values: list[Any], dims: list[Any], ndims: list[int], params):
    """One-input ops along the last axis (sort): the leading batch axis is just another."""
    if len(values) != 1 or ndims[0] < 1:
        return None
    return prim.bind(values[0], **params)


def reshape_rule(prim: Any, values: list[Any], dims: list[Any], ndims: list[int], params):
    shape = params["shape"]
    return prim.bind(values[0], **{**params, "shape": (values[0].shape[0], *shape)})


def transpose_rule(prim: Any, values: list[Any], dims: list[Any], ndims: list[int], params):
    perm = tuple(int(p) % max(ndims[0], 1) + 1 for p in params["perm"])
    return prim.bind(values[0], **{**params, "perm": (0, *perm)})


def concat_rule(prim: Any, values: list[Any], dims: list[Any], ndims: list[int], params):
    if any(d is None for d in dims) or not isinstance(params.get("axis"), int):
        return None
    return prim.bind(*values, **{**params, "axis": params["axis"] % ndims[0] + 1})


def matmul_rule(prim: Any, values: list[Any], dims: list[Any], ndims: list[int], params):
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


#: the rule of a kind, for its primitives that define none
BY_KIND = {"elementwise": elementwise_rule, "reduce": axis_rule}
