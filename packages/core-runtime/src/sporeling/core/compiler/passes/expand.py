"""Expanding row ops: softmax, log-softmax and layer norm (forward and backward) over the last
axis are rewritten as the reductions and elementwise ops they are made of, so fusion can put
them in one row kernel with their neighbours (the GELU before a layer norm, the scale and mask
before an attention softmax, the bias and scale gradients after a layer-norm backward).
Exact GELU becomes ``x * Phi(x)``, so a training graph computes ``Phi(x)`` once for the
forward and the gradient.

Each rule is an op-level composite traced on the equation's own input Vars; its constants
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

from ..._primitive import interpreter
from ...autograd.tape import GradMode
from ...context import get_context
from ...tensor import Tensor
from ..graph import Eqn, Graph, Var
from ..tracer import Tracer

__all__ = ["expand_row_ops"]

_FLOATS = {np.dtype("float32"), np.dtype("float64")}


def _softmax(x: Tensor) -> tuple[Tensor, ...]:
    from ... import ops

    e = ops.exp(x - ops.amax(x, -1, keep_dims=True))
    return (e / ops.reduce_sum(e, -1, keep_dims=True),)


def _log_softmax(x: Tensor) -> tuple[Tensor, ...]:
    from ... import ops

    d = x - ops.amax(x, -1, keep_dims=True)
    return (d - ops.log(ops.reduce_sum(ops.exp(d), -1, keep_dims=True)),)


def _layer_norm(x: Tensor, gamma: Tensor, beta: Tensor, *, epsilon: float) -> tuple[Tensor, ...]:
    """Statistics in float64, like the hand-written kernel: rows with a large common offset
    keep their variance (a float32 mean would be off by an ulp of the offset)."""
    from ... import dtype, ops

    inv_n = 1.0 / x.shape[-1]
    x64 = ops.cast(x, dtype.float64)
    mean = ops.reduce_sum(x64, -1, keep_dims=True) * inv_n
    d = x64 - mean
    var = ops.reduce_sum(d * d, -1, keep_dims=True) * inv_n
    y = ops.cast(d * (1.0 / ops.sqrt(var + epsilon)), x.dtype) * gamma + beta
    return y, ops.cast(mean, x.dtype), ops.cast(var, x.dtype)


def _gelu(x: Tensor) -> tuple[Tensor, ...]:
    """``x * Phi(x)`` as eager mode computes it: the gradient's ``Phi(x)`` then merges with
    the forward's (CSE), so the forward kernel stores it and the backward kernel reads it
    instead of evaluating erfc again (the costliest part of a GELU gradient)."""
    from ...ops.activation.elementwise import ndtr_p

    return (x * ndtr_p.bind(x),)


def _layer_norm_grad(*args: Tensor, epsilon: float) -> tuple[Tensor, ...]:
    from ...ops.activation.normalization import _ln_grad_composite

    nd = args[3].ndim
    return _ln_grad_composite(*args, begin_norm_axis=nd - 1, begin_params_axis=nd - 1,
                              epsilon=epsilon)  # fmt: skip


def _last_axis(e: Eqn) -> bool:
    return bool(e.params.get("axis") == (e.inputs[0].ndim - 1,))


def _norm_last(e: Eqn, x_index: int) -> bool:
    last = e.inputs[x_index].ndim - 1
    return e.params.get("begin_norm_axis") == last and e.params.get("begin_params_axis") == last


#: primitive name -> (applies to this equation?, composite, parameters it takes)
_RULES: dict[str, tuple[Callable[[Eqn], bool], Callable[..., tuple[Tensor, ...]], tuple[str, ...]]]
_RULES = {
    "softmax": (_last_axis, _softmax, ()),
    "log_softmax": (_last_axis, _log_softmax, ()),
    "layer_norm": (lambda e: _norm_last(e, 0), _layer_norm, ("epsilon",)),
    "layer_norm_grad": (lambda e: _norm_last(e, 3), _layer_norm_grad, ("epsilon",)),
    "gelu": (lambda e: e.params.get("approximate") == "none", _gelu, ()),
}


def expand_row_ops(graph: Graph) -> Graph:
    on_gpu = graph.device is not None and graph.device.xp is not np
    if not get_context("enable_graph_kernel") or on_gpu:
        return graph
    eqns: list[Eqn] = []
    n = 0
    for e in graph.eqns:
        rule = _RULES.get(e.prim.name)
        floats = all(v.dtype in _FLOATS for v in (*e.inputs, *e.outputs))
        if rule is None or not floats or not e.inputs[0].ndim or not rule[0](e):
            eqns.append(e)
            continue
        expanded = _trace(graph, e, rule[1], {k: e.params[k] for k in rule[2]})
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
    return tracer.eqns
