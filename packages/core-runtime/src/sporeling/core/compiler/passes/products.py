"""Transposed products: ``transpose(matmul(a, b))`` over the last two axes becomes
``matmul(transpose(b), transpose(a))`` (``(AB)^T = B^T A^T``).

An attention backward makes the key gradient this way: the product's gradient with respect
to ``k^T``, transposed back. As a transposed view it reached the next copy (the QKV split's
gradient) with a stride along its last axis, and NumPy copied it element by element (0.33 ms
for a 16x4x128x64 float32 gradient, 0.08 ms contiguous). Rewritten, the product itself comes
out contiguous, and the transposed operands are views the BLAS reads through its transpose
flags. Only where the product has no other reader and is not a graph output, both operands
are at least 2-d, and the permutation keeps every batch axis in place.
"""

from __future__ import annotations

from ...ops._core import transpose_p
from ...ops._matmul import matmul_p
from ..graph import Eqn, Graph, Var
from ._util import count_readers, tagged_like

__all__ = ["transpose_products"]


def _swap_last_two(ndim: int) -> tuple[int, ...]:
    return (*range(ndim - 2), ndim - 1, ndim - 2)


def transpose_products(graph: Graph) -> Graph:
    readers = count_readers(graph)
    products = {e.outputs[0].id: e for e in graph.eqns if e.prim is matmul_p}
    rewritten: dict[int, list[Eqn]] = {}  # id(equation) -> its replacement ([]: dropped)
    for e in graph.eqns:
        if e.prim is not transpose_p or len(e.inputs) != 1:
            continue
        src = e.inputs[0]
        m = products.get(src.id)
        if m is None or readers.get(src.id) != 1 or len(m.inputs) != 2:
            continue
        a, b = m.inputs
        nd = src.ndim
        if a.ndim < 2 or b.ndim < 2 or tuple(e.params["perm"]) != _swap_last_two(nd):
            continue
        bt = Var((*b.shape[:-2], b.shape[-1], b.shape[-2]), b.dtype)
        at = Var((*a.shape[:-2], a.shape[-1], a.shape[-2]), a.dtype)
        rewritten[id(m)] = []
        rewritten[id(e)] = tagged_like(
            [
                Eqn(transpose_p, [b], {"perm": _swap_last_two(b.ndim)}, [bt]),
                Eqn(transpose_p, [a], {"perm": _swap_last_two(a.ndim)}, [at]),
                Eqn(m.prim, [bt, at], dict(m.params), [e.outputs[0]]),
            ],
            e,  # computed where the transpose was
        )
    eqns: list[Eqn] = []
    for e in graph.eqns:
        eqns += rewritten.get(id(e), [e])
    graph.eqns = eqns
    graph.notes.append(f"products transposed {len(rewritten) // 2}")
    return graph
