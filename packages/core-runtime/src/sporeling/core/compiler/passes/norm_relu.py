"""ReLU after batch norm, and ReLU's gradient, fused into the batch norm's kernels.

Three rewrites, in order (exact but for the gradient kernel's fast-math reassociation):

1. ``relu_grad(g, y)`` where ``relu(y)`` is computed before it reads the ReLU's output
   instead (``y > 0`` exactly where ``relu(y) > 0``): ``y`` then often has no reader but the
   ReLU, so a fused ``add + relu`` stores one tensor, not two (ResNet's residual adds).
2. ``relu(y)`` with ``(y, mean, var) = batch_norm_train(x, w, b)`` and no other reader of
   ``y`` becomes ``(z, mean, var) = batch_norm_relu(x, w, b)``: the ReLU happens in the
   batch norm's output pass.
3. ``batch_norm_grad(relu_grad(g, z), ...)`` with ``z`` a ``batch_norm_relu`` output and the
   masked gradient read nowhere else becomes ``batch_norm_relu_grad(g, ..., z)``: the mask
   is read in both passes of the batch norm's gradient instead of written and read back.

Float32/float64 only (other dtypes keep the ops); runs with the other kernel fusions
(``enable_graph_kernel``), before elementwise fusion.
"""

from __future__ import annotations

import numpy as np

from ...context import get_context
from ...ops.activation.elementwise import relu_grad_p, relu_p
from ...ops.activation.norm_relu import batch_norm_relu_grad_p, batch_norm_relu_p
from ...ops.activation.normalization import batch_norm_grad_p, batch_norm_train_p
from ..graph import Eqn, Graph, Var
from ._util import count_readers, tagged_like

__all__ = ["fuse_norm_relu"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def fuse_norm_relu(graph: Graph) -> Graph:
    if not get_context("enable_graph_kernel"):
        return graph
    eqns = graph.eqns
    # 1. relu_grad reads the ReLU's output
    relu_of: dict[int, tuple[int, Var]] = {}  # y id -> (index, relu(y))
    moved = 0
    for i, e in enumerate(eqns):
        if e.prim is relu_p and e.inputs[0].id not in relu_of:
            relu_of[e.inputs[0].id] = (i, e.outputs[0])
        elif e.prim is relu_grad_p:
            hit = relu_of.get(e.inputs[1].id)
            if hit is not None and hit[0] < i:
                new = Eqn(e.prim, [e.inputs[0], hit[1]], dict(e.params), list(e.outputs))
                eqns[i] = tagged_like([new], e)[0]
                moved += 1
    # 2. batch norm + ReLU
    readers = count_readers(graph)
    producer = {v.id: (i, e) for i, e in enumerate(eqns) for v in e.outputs}
    fused_z: set[int] = set()
    drop: set[int] = set()
    for i, e in enumerate(eqns):
        if e.prim is not relu_p:
            continue
        y = e.inputs[0]
        hit = producer.get(y.id)
        if hit is None or readers.get(y.id) != 1 or y.dtype not in _FLOATS:
            continue
        j, bn = hit
        if bn.prim is not batch_norm_train_p or bn.outputs[0] is not y:
            continue
        z = e.outputs[0]
        new = Eqn(batch_norm_relu_p, list(bn.inputs), dict(bn.params), [z, *bn.outputs[1:]])
        eqns[j] = tagged_like([new], bn)[0]
        drop.add(i)
        fused_z.add(z.id)
    # 3. its gradient
    readers = count_readers(graph)
    producer = {v.id: (i, e) for i, e in enumerate(eqns) for v in e.outputs}
    n_grads = 0
    for i, e in enumerate(eqns):
        if e.prim is not batch_norm_grad_p:
            continue
        gy = e.inputs[0]
        hit = producer.get(gy.id)
        if hit is None or readers.get(gy.id) != 1:
            continue
        j, rg = hit
        if rg.prim is not relu_grad_p or rg.inputs[1].id not in fused_z:
            continue
        ins = [rg.inputs[0], *e.inputs[1:], rg.inputs[1]]
        new = Eqn(batch_norm_relu_grad_p, ins, dict(e.params), list(e.outputs))
        eqns[i] = tagged_like([new], e)[0]
        drop.add(j)
        n_grads += 1
    graph.eqns = [e for i, e in enumerate(eqns) if i not in drop]
    graph.notes.append(
        f"norm+relu: relu_grad on relu output {moved}, fused {len(fused_z)} forward {n_grads} grad"
    )
    return graph
