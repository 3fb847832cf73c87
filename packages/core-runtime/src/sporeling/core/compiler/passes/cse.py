"""Common-subexpression elimination: one equation per (primitive, inputs, parameters).

Equal small constants (folded values, scalar operands made while tracing) count as the same
input, so ``x * 2`` written twice becomes one multiplication. Random draws, effects and
collectives are never merged, and an effect ends every earlier equation's reuse: it may have
changed a captured buffer that a later, identical-looking equation reads again.
"""

from __future__ import annotations

from typing import Any

from ..graph import Graph, Var
from ._util import never_touch, params_key

__all__ = ["common_subexpression_elimination"]

#: constants up to this many elements are compared by value
_BY_VALUE = 16


def common_subexpression_elimination(graph: Graph) -> Graph:
    canon: dict[int, Var] = {}
    by_value: dict[Any, Var] = {}
    fixed = [(v, a) for v, a in graph.consts]
    fixed += [(v, t._data) for v, t in graph.captured if v.id in graph.constant_ids]
    for v, a in fixed:
        if v.size <= _BY_VALUE and type(a).__module__ == "numpy":
            key = (v.dtype.str, v.shape, a.tobytes())
            canon[v.id] = by_value.setdefault(key, v)
    outs = {v.id for v in graph.outvars if isinstance(v, Var)}
    table: dict[Any, Any] = {}
    kept = []
    merged = 0
    for e in graph.eqns:
        e.inputs = [canon.get(v.id, v) for v in e.inputs]
        if never_touch(e.prim):
            if e.prim.kind == "effect":
                table.clear()
            kept.append(e)
            continue
        pk = params_key(e.params)
        if pk is None or any(v.id in outs for v in e.outputs):
            kept.append(e)
            continue
        key = (e.prim, tuple(v.id for v in e.inputs), pk)
        prev = table.get(key)
        if prev is None:
            table[key] = e
            kept.append(e)
            continue
        for a, b in zip(e.outputs, prev.outputs, strict=True):
            canon[a.id] = b
        merged += 1
    graph.eqns = kept
    graph.outvars = [canon.get(v.id, v) if isinstance(v, Var) else v for v in graph.outvars]
    graph.notes.append(f"cse merged {merged}")
    return graph
