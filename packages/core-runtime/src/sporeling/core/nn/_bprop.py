"""A Cell's custom ``bprop(self, *inputs, out, dout)``: autodiff uses it instead of
differentiating ``construct``, as MindSpore does.

When gradients are being recorded, ``construct`` runs with recording off and its outputs are
linked to one tape node whose backward rule calls ``cell.bprop(*inputs, out, dout)``. The
rule is made of ops, so it works in eager mode and while tracing (GRAPH_MODE / ``jit``),
where the traced backward ops land in the same graph. As in MindSpore, ``bprop`` returns one
gradient per positional input (a tuple; a lone Tensor is accepted for a one-input cell);
gradients for non-Tensor inputs are ignored and the cell's own Parameters get no gradient
through it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd.tape import GradMode, Node
from ..tensor import Tensor

__all__ = ["has_bprop", "call_with_bprop"]


def has_bprop(cell: Any) -> bool:
    """Whether the cell's class defines ``bprop``."""
    return callable(getattr(type(cell), "bprop", None))


class _BpropRule:
    """Stands in for a primitive on the tape: ``vjp`` calls the cell's ``bprop``."""

    def __init__(self, cell: Any, args: tuple[Any, ...], positions: list[int], n_out: int):
        self.cell = cell
        self.args = args
        self.positions = positions
        self.multiple_results = n_out > 1
        self.name = f"{type(cell).__name__}.bprop"

    def vjp(self, ct: Any, *inputs: Tensor, out: Any, **_: Any) -> tuple[Any, ...]:
        args = list(self.args)
        for pos, t in zip(self.positions, inputs, strict=True):
            args[pos] = t
        if self.multiple_results:
            out, ct = tuple(out), tuple(ct)
        grads = self.cell.bprop(*args, out, ct)
        if isinstance(grads, Tensor):
            grads = (grads,)
        if not isinstance(grads, (tuple, list)) or len(grads) != len(args):
            raise ValueError(
                f"{self.name}: expected a tuple of {len(args)} gradients (one per input of "
                f"construct), got {_describe(grads)}"
            )
        result = []
        for pos, inp in zip(self.positions, inputs, strict=True):
            g = grads[pos]
            if g is None:
                result.append(None)
                continue
            if not isinstance(g, Tensor):
                g = Tensor(np.full(inp.shape, g, dtype=inp._data.dtype))
            if g.shape != inp.shape:
                raise ValueError(
                    f"{self.name}: the gradient of input {pos} has shape {g.shape}, expected "
                    f"the input's shape {inp.shape}"
                )
            result.append(g)
        return tuple(result)


def _describe(value: Any) -> str:
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)}"
    return type(value).__name__


def call_with_bprop(cell: Any, run: Any, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``run(*inputs, **kwargs)`` (the construct call) with ``cell.bprop`` as its gradient."""
    if not GradMode.enabled:
        return run(*inputs, **kwargs)
    GradMode.enabled = False
    try:
        output = run(*inputs, **kwargs)
    finally:
        GradMode.enabled = True
    positions = [i for i, a in enumerate(inputs) if isinstance(a, Tensor)]
    tensors = tuple(inputs[i] for i in positions)
    needs = tuple(t._node is not None or t._requires_grad for t in tensors)
    outs = list(output) if isinstance(output, (tuple, list)) else [output]
    if not any(needs) or not outs or not all(isinstance(o, Tensor) for o in outs):
        return output
    if not any(o.dtype.category == 2 for o in outs):
        return output
    rule = _BpropRule(cell, inputs, positions, len(outs))
    node = Node(rule, tensors, {}, [o._data for o in outs], needs, outs[0]._device)
    linked = [Tensor._wrap(o._data, o._device, node, i) for i, o in enumerate(outs)]
    if isinstance(output, (tuple, list)):
        return type(output)(linked)
    return linked[0]
