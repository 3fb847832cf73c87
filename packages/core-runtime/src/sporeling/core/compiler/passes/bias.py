"""Folding a bias into its product: ``add(dense(x, w), b)`` with ``b`` a vector along the last
axis becomes ``dense_bias(x, w, b)`` (the product primitive's ``with_bias``), whose CPU kernel
adds ``b`` to each block of the product right after computing it, while the block is in cache
(the separate add read and wrote the whole product again: 0.8 ms for a 2048x768 float32 QKV
projection). It runs before fusion: fused into a GELU instead, the add's result was still
stored for the backward (GELU forward 2.7 -> 2.3 ms on 2048x1024, the product's bias 0.2 ms).
Only where the product has no other reader, is not a graph output, and ``b`` exists before the
product; CPU only.
"""

from __future__ import annotations

from ..._backend import is_host
from ...ops._elementwise import add_p
from ..graph import Eqn, Graph, Var
from ._util import count_readers

__all__ = ["fold_dense_bias"]


def fold_dense_bias(graph: Graph) -> Graph:
    if graph.device is not None and not is_host(graph.device.xp):
        return graph
    readers = count_readers(graph, outputs=False)
    outputs = {v.id for v in graph.outvars if isinstance(v, Var)}
    producer: dict[int, int] = {}
    defined_at: dict[int, int] = {}
    for i, e in enumerate(graph.eqns):
        for v in e.outputs:
            producer[v.id] = i
            defined_at[v.id] = i
    replace: dict[int, Eqn] = {}  # dense index -> folded equation
    drop: set[int] = set()  # add indices
    for i, e in enumerate(graph.eqns):
        if e.prim is not add_p or len(e.inputs) != 2:
            continue
        for a, b in (e.inputs, e.inputs[::-1]):
            j = producer.get(a.id)
            if j is None or j in replace:
                continue
            d = graph.eqns[j]
            folded = getattr(d.prim, "with_bias", None)
            if folded is None:
                continue
            if (
                readers.get(a.id) != 1
                or a.id in outputs
                or b.shape != (a.shape[-1],)
                or b.dtype != a.dtype
                or e.outputs[0].shape != a.shape
                or defined_at.get(b.id, -1) >= j
            ):
                continue
            replace[j] = Eqn(folded, [*d.inputs, b], dict(d.params), [e.outputs[0]])
            drop.add(i)
            break
    graph.eqns = [replace.get(i, e) for i, e in enumerate(graph.eqns) if i not in drop]
    graph.notes.append(f"bias folded {len(drop)}")
    return graph
