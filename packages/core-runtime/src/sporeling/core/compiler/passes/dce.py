"""Dead-code elimination: drop equations whose outputs nothing uses (effects are kept)."""

from __future__ import annotations

from ..graph import Graph, Var

__all__ = ["dead_code_elimination"]

#: primitive kinds whose calls matter even when their outputs are unused
EFFECT_KINDS = {"effect", "random"}


def dead_code_elimination(graph: Graph) -> Graph:
    live = {v.id for v in graph.outvars if isinstance(v, Var)}
    kept = []
    for e in reversed(graph.eqns):
        if e.prim.kind in EFFECT_KINDS or any(v.id in live for v in e.outputs):
            kept.append(e)
            live.update(v.id for v in e.inputs)
    removed = len(graph.eqns) - len(kept)
    graph.eqns = kept[::-1]
    graph.captured = [(v, t) for v, t in graph.captured if v.id in live]
    graph.notes.append(f"dce removed {removed}")
    return graph
