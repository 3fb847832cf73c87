"""Constant folding: equations whose inputs are all compile-time constants run once, now.

Compile-time constants are the captured tensors only the graph holds (made while tracing,
see ``api._graph_only``) and the results of folded equations. Parameters and any tensor held
elsewhere are read afresh on every call and never folded, so updating them between calls
changes the result. Effects, random draws, collectives and graph outputs are left alone;
results larger than :data:`MAX_ELEMENTS` stay computed (no big arrays pinned in the graph).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..graph import Graph, Var
from ._util import never_touch

__all__ = ["constant_folding", "MAX_ELEMENTS"]

MAX_ELEMENTS = 1 << 16


def constant_folding(graph: Graph) -> Graph:
    device = graph.device
    xp = device.xp if device is not None else np
    known: dict[int, Any] = {v.id: a for v, a in graph.consts}
    known.update({v.id: t._data for v, t in graph.captured if v.id in graph.constant_ids})
    outs = {v.id for v in graph.outvars if isinstance(v, Var)}
    new: list[tuple[Var, Any]] = []
    kept = []
    for e in graph.eqns:
        if (
            never_touch(e.prim)
            or not all(v.id in known for v in e.inputs)
            or any(v.id in outs or v.size > MAX_ELEMENTS for v in e.outputs)
        ):
            kept.append(e)
            continue
        impl = e.prim.impl_for(device) if device is not None else e.prim.impls["any"]
        try:
            res = impl(xp, *[known[v.id] for v in e.inputs], **e.params)
        except Exception:  # leave it to run time, where the error (if any) is reported
            kept.append(e)
            continue
        results = res if e.prim.multiple_results else (res,)
        for v, r in zip(e.outputs, results, strict=True):
            arr = xp.array(r, dtype=v.dtype).reshape(v.shape)  # an owned copy, never a view
            known[v.id] = arr
            new.append((v, arr))
    used = {v.id for e in kept for v in e.inputs}
    graph.consts += [(v, a) for v, a in new if v.id in used]
    graph.notes.append(f"fold evaluated {len(graph.eqns) - len(kept)}")
    graph.eqns = kept
    return graph
