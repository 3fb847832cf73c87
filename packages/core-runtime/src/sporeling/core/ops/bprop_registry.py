"""``bprop_getters``: MindSpore's registry of hand-written gradients for primitive classes.

``@bprop_getters.register(MyOp)`` (the class, an instance, or the primitive's name) on a
function ``get_bprop(self)`` that returns ``bprop(*inputs, out, dout)``: calls of ``MyOp``
instances (user ``PrimitiveWithInfer`` / ``PrimitiveWithCheck`` subclasses) then run with
gradient recording off and link their outputs to one tape node whose backward calls that
``bprop``, which returns one gradient per input. The rule is made of ops, so it also works
while tracing (GRAPH_MODE / ``jit``). Importable as MindSpore's
``ops._grad.grad_base.bprop_getters``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..autograd.tape import GradMode, Node
from ..tensor import Tensor

__all__ = ["bprop_getters", "call_with_registered_bprop", "Registry"]


class Registry:
    """Primitive class (or name) -> ``get_bprop(prim)``."""

    def __init__(self) -> None:
        self._getters: dict[Any, Callable[..., Any]] = {}

    @staticmethod
    def _key(target: Any) -> Any:
        if isinstance(target, str):
            return target
        if isinstance(target, type):
            return target
        return type(target)

    def register(self, target: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Decorator: ``get_bprop(self)`` for the primitive class (or name) ``target``."""

        def deco(getter: Callable[..., Any]) -> Callable[..., Any]:
            if not callable(getter):
                raise TypeError(f"bprop_getters.register: expected a function, got {getter!r}")
            self._getters[self._key(target)] = getter
            return getter

        return deco

    def get(self, prim: Any) -> Callable[..., Any] | None:
        """The getter registered for ``prim``'s class (or a base class, or its name)."""
        for cls in type(prim).__mro__:
            if cls in self._getters:
                return self._getters[cls]
        return self._getters.get(getattr(prim, "name", None))

    def __contains__(self, target: Any) -> bool:
        return self._key(target) in self._getters


bprop_getters = Registry()


class _RegisteredRule:
    """Stands in for a primitive on the tape: ``vjp`` calls the registered bprop."""

    def __init__(
        self, prim: Any, bprop: Any, args: tuple[Any, ...], positions: list[int], n_out: int
    ):
        self.bprop = bprop
        self.args = args
        self.positions = positions
        self.multiple_results = n_out > 1
        self.name = f"{getattr(prim, 'name', type(prim).__name__)} (registered bprop)"

    def vjp(self, ct: Any, *inputs: Tensor, out: Any, **_: Any) -> tuple[Any, ...]:
        args = list(self.args)
        for pos, t in zip(self.positions, inputs, strict=True):
            args[pos] = t
        if self.multiple_results:
            out, ct = tuple(out), tuple(ct)
        grads = self.bprop(*args, out, ct)
        if isinstance(grads, Tensor):
            grads = (grads,)
        if not isinstance(grads, (tuple, list)) or len(grads) != len(args):
            raise ValueError(
                f"{self.name}: expected a tuple of {len(args)} gradients (one per input), got "
                f"{type(grads).__name__}"
                + (f" of {len(grads)}" if isinstance(grads, (tuple, list)) else "")
            )
        result = []
        for pos, inp in zip(self.positions, inputs, strict=True):
            g = grads[pos]
            if g is not None and not isinstance(g, Tensor):
                g = Tensor(np.full(inp.shape, g, dtype=inp._data.dtype))
            if g is not None and g.shape != inp.shape:
                raise ValueError(
                    f"{self.name}: the gradient of input {pos} has shape {g.shape}, expected "
                    f"the input's shape {inp.shape}"
                )
            result.append(g)
        return tuple(result)


def call_with_registered_bprop(prim: Any, run: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    """``run(*args)``, with the bprop registered for ``prim`` (if any) as its gradient."""
    getter = bprop_getters.get(prim)
    if getter is None or not GradMode.enabled:
        return run(*args)
    positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
    tensors = tuple(args[i] for i in positions)
    needs = tuple(t._node is not None or t._requires_grad for t in tensors)
    if not any(needs):
        return run(*args)
    GradMode.enabled = False
    try:
        output = run(*args)
    finally:
        GradMode.enabled = True
    outs = list(output) if isinstance(output, (tuple, list)) else [output]
    if not outs or not all(isinstance(o, Tensor) for o in outs):
        return output
    if not any(o.dtype.category == 2 for o in outs):
        return output
    rule = _RegisteredRule(prim, getter(prim), args, positions, len(outs))
    node = Node(rule, tensors, {}, [o._data for o in outs], needs, outs[0]._device)
    linked = [Tensor._wrap(o._data, o._device, node, i) for i, o in enumerate(outs)]
    if isinstance(output, (tuple, list)):
        return type(output)(linked)
    return linked[0]
