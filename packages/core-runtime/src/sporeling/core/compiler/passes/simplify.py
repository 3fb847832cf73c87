"""Algebraic simplification: ``x * 1`` is ``x``.

Differentiating ``reduce_sum(y)`` seeds backward with a broadcast of ones, and the chain rule
then multiplies every cotangent by it: a full pass over memory that changes nothing. After
constant folding, a ``mul`` whose one input is known to hold only ones (a constant, or a
``broadcast_to``/``reshape`` of one) and whose result has the other input's shape and dtype
is dropped, and its readers read the other input. Graph outputs are left alone (they must
not come back as an alias of an input).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ops._elementwise import mul_p
from ..graph import Graph, Var

__all__ = ["algebraic_simplification"]


def _keeps_values(prim: Any) -> bool:
    """Every result element is an input element: a reshape, or an op whose scalar form is
    the input itself (broadcast_to; cast, where 1 stays 1)."""
    return bool(prim.same_order or prim.scalar == "x")


def algebraic_simplification(graph: Graph) -> Graph:
    ones = {v.id for v, a in graph.consts if _all_ones(a)}
    ones |= {v.id for v, t in graph.captured if v.id in graph.constant_ids and _all_ones(t._data)}
    outs = {v.id for v in graph.outvars if isinstance(v, Var)}
    alias: dict[int, Var] = {}
    kept = []
    for e in graph.eqns:
        if alias:
            e.inputs = [alias.get(v.id, v) for v in e.inputs]
        if len(e.inputs) == 1 and e.inputs[0].id in ones and _keeps_values(e.prim):
            ones.add(e.outputs[0].id)
        if e.prim is mul_p and len(e.inputs) == 2 and e.outputs[0].id not in outs:
            a, b = e.inputs
            out = e.outputs[0]
            for one, other in ((a, b), (b, a)):
                if one.id in ones and other.shape == out.shape and other.dtype == out.dtype:
                    alias[out.id] = other
                    break
            if out.id in alias:
                continue
        kept.append(e)
    graph.notes.append(f"simplify dropped {len(graph.eqns) - len(kept)}")
    graph.eqns = kept
    return graph


def _all_ones(arr: Any) -> bool:
    if getattr(arr, "size", 0) == 0 or arr.size > 1 << 16:
        return False
    try:
        return bool((np.asarray(arr) == 1).all())
    except (TypeError, ValueError):  # device arrays NumPy cannot read: no simplification
        return False
