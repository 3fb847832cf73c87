"""Expanding ops into their parts: an equation whose primitive has a
:class:`~..._primitive.Decomposition` that applies to it (its ``when``) is rewritten as the
ops its rule is made of, so fusion can put them in one kernel with their neighbours.
Softmax, log-softmax and layer norm (forward and backward) over the last axis become the
reductions and elementwise ops of one row kernel (with the GELU before a layer norm, the
scale and mask before an attention softmax, the bias and scale gradients after a layer-norm
backward); exact GELU becomes ``x * Phi(x)``, so a training graph computes ``Phi(x)`` once
for the forward and the gradient. The rules live beside their ops, not here.

Each rule is traced on the equation's own input Vars; its constants
(``1/n``, ``epsilon``) become graph constants and its results take over the equation's
output Vars. Only float32/float64 equations over the last axis are expanded, only while
fusion is on (``enable_graph_kernel``: without fusion the hand-written kernels are faster)
and only on the CPU: a generated GPU row kernel runs one thread per row, which has not been
measured against CuPy's kernels on a real GPU yet.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..._backend import is_host
from ..._primitive import interpreter
from ...autograd.tape import GradMode
from ...context import get_context
from ...tensor import Tensor
from ..graph import Eqn, Graph, Var
from ..tracer import Tracer
from ._util import tagged_like

__all__ = ["expand_row_ops"]

_FLOATS = {np.dtype("float32"), np.dtype("float64")}


def expand_row_ops(graph: Graph) -> Graph:
    on_gpu = graph.device is not None and not is_host(graph.device.xp)
    if not get_context("enable_graph_kernel") or on_gpu:
        return graph
    eqns: list[Eqn] = []
    n = 0
    for e in graph.eqns:
        d = getattr(e.prim, "decomposition", None)
        floats = all(v.dtype in _FLOATS for v in (*e.inputs, *e.outputs))
        if d is None or not floats or not e.inputs[0].ndim or not d.when(e.inputs, e.params):
            eqns.append(e)
            continue
        expanded = _trace(graph, e, d.rule, {k: e.params[k] for k in d.params})
        if expanded is None:
            eqns.append(e)
            continue
        eqns += expanded
        n += 1
    graph.notes.append(f"expand rewrote {n}")
    graph.eqns = eqns
    return graph


def _trace(
    graph: Graph, e: Eqn, composite: Callable[..., tuple[Tensor, ...]], params: dict[str, Any]
) -> list[Eqn] | None:
    """The composite's equations on ``e``'s inputs, writing ``e``'s outputs; None when the
    composite does not produce a fresh value for every output."""
    tracer = Tracer()
    args = [Tensor._wrap(v, graph.device) for v in e.inputs]
    prev = GradMode.enabled
    GradMode.enabled = False
    try:
        with interpreter(tracer):
            results = composite(*args, **params)
    finally:
        GradMode.enabled = prev
    produced = {v.id for s in tracer.eqns for v in s.outputs}
    outs = [r._data for r in results]
    if len(outs) != len(e.outputs) or any(
        not isinstance(v, Var) or v.id not in produced or v.shape != o.shape or v.dtype != o.dtype
        for v, o in zip(outs, e.outputs, strict=True)
    ):
        return None
    rename = {v.id: o for v, o in zip(outs, e.outputs, strict=True)}
    for s in tracer.eqns:
        s.inputs = [rename.get(v.id, v) for v in s.inputs]
        s.outputs = [rename.get(v.id, v) for v in s.outputs]
    graph.consts += [(v, t._data) for v, t in tracer.captured.values()]
    return tagged_like(tracer.eqns, e)
