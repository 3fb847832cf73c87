"""Rematerialisation: a ``recompute()`` cell's values are computed again for the backward pass
instead of living from the forward to the backward (MindSpore's graph-mode recompute).

While tracing, each outermost call of a recomputed cell tags the equations it records with a
region id, and equations recorded with gradient recording off (a first-order backward sweep)
are marked ``backward`` (:mod:`..tracer`). A region's value is *kept* when a graph output or
a forward equation outside the region reads it (the next layer reads the cell's output: it
is the next cell's saved input). A backward equation reading any other value of a region
reads a copy instead: the value's equation is copied just before the first backward reader
that needs it, with its inputs copied the same way back to kept values, values from outside
the region and Parameters. The originals then die inside the forward (the executor frees a
value after its last reader), and the copies live only through the cell's backward.

Not copied (their values are kept, as without recompute): random draws (dropout masks, so
the replay is the forward bit for bit), effects, collectives and nested compiled calls
(``_util.never_touch``), and an equation reading a buffer that an effect writes between the
original and the copy's place (an optimizer updating a weight inside the differentiated
function). Gradients recorded for a second order (``create_graph``) are not marked
``backward``: such graphs keep every value.
"""

from __future__ import annotations

from typing import Any

from ..graph import Eqn, Graph, Var
from ._util import never_touch
from .dce import dead_code_elimination

__all__ = ["rematerialise"]


def rematerialise(graph: Graph) -> Graph:
    eqns = graph.eqns
    producer: dict[int, tuple[int, Eqn]] = {}  # Var id -> (position, equation) in a region
    for i, e in enumerate(eqns):
        if e.remat is not None:
            for v in e.outputs:
                producer[v.id] = (i, e)
    if not producer:
        return graph
    kept = {v.id for v in graph.outvars if isinstance(v, Var)}
    effects: dict[int, list[int]] = {}  # Var id -> positions of the effects taking it
    for i, e in enumerate(eqns):
        if not e.backward:
            kept.update(v.id for v in e.inputs if _outside(producer, v, e))
        if e.prim.kind == "effect":
            for v in e.inputs:
                effects.setdefault(v.id, []).append(i)
    copies: dict[int, Var] = {}
    out: list[Eqn] = []

    def copyable(v: Var, at: int) -> bool:
        hit = producer.get(v.id)
        if hit is None or v.id in kept:
            return False
        pos, e = hit
        if never_touch(e.prim):
            return False
        return not any(pos < j < at for u in e.inputs for j in effects.get(u.id, ()))

    def copy(v: Var, at: int) -> Var:
        """``v`` recomputed before position ``at``: the equations it needs, in graph order."""
        need: dict[int, Eqn] = {}
        todo = [v]
        while todo:
            w = todo.pop()
            if w.id in copies or not copyable(w, at):
                continue
            pos, e = producer[w.id]
            if pos not in need:
                need[pos] = e
                todo += e.inputs
        for pos in sorted(need):
            e = need[pos]
            c = Eqn(
                e.prim,
                [copies.get(u.id, u) for u in e.inputs],
                dict(e.params),
                [Var(o.shape, o.dtype) for o in e.outputs],
                backward=True,
            )
            out.append(c)
            copies.update((o.id, n) for o, n in zip(e.outputs, c.outputs, strict=True))
        return copies.get(v.id, v)

    n = len(eqns)
    for i, e in enumerate(eqns):
        if e.backward:
            e.inputs = [copy(v, i) if _outside(producer, v, e) else v for v in e.inputs]
        out.append(e)
    graph.eqns = out
    graph.notes.append(f"remat copied {len(out) - n}")
    return dead_code_elimination(graph)  # what only the backward read is computed there now


def _outside(producer: dict[int, Any], v: Var, reader: Eqn) -> bool:
    """Whether ``v`` comes from a region other than ``reader``'s."""
    hit = producer.get(v.id)
    return hit is not None and hit[1].remat != reader.remat
