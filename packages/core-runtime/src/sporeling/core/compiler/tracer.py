"""Tracing: run a Python function once on symbolic tensors and record every primitive call.

The :class:`Tracer` is an interpreter (see ``_primitive.py``): while it is active, ``bind``
records an :class:`~.graph.Eqn` instead of computing. Tensors whose ``_data`` is a
:class:`~.graph.Var` are symbolic; concrete tensors met on the way (Parameters, constants
made by Python code) are *captured* by reference. Autograd keeps working — nodes are
recorded exactly as in eager mode — so ``grad`` inside a traced function adds its backward
ops to the same graph.

Equations recorded while a ``recompute()`` cell's construct runs carry that call's region id
(:meth:`Tracer.recompute_region`), and those recorded with gradient recording off (a
first-order backward sweep) are marked ``backward``: the rematerialisation pass
(:mod:`.passes.remat`) reads both.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .._backend import get_device
from ..autograd.tape import GradMode, Node
from ..errors import describe
from ..tensor import Tensor
from .graph import Eqn, Var

__all__ = ["Tracer"]


class Tracer:
    """Records primitive calls on symbolic tensors into equations."""

    def __init__(self) -> None:
        self.eqns: list[Eqn] = []
        self.captured: dict[int, tuple[Var, Tensor]] = {}
        self.region: int | None = None  # the outermost recompute cell call being traced
        self._regions = 0

    @contextmanager
    def recompute_region(self) -> Iterator[None]:
        """Tag what a recomputed cell's construct records (cells inside it share the tag)."""
        if self.region is not None:
            yield
            return
        self.region = self._regions
        self._regions += 1
        try:
            yield
        finally:
            self.region = None

    def var_of(self, t: Tensor) -> Var:
        data = t._data
        if isinstance(data, Var):
            return data
        hit = self.captured.get(id(t))
        if hit is None:
            hit = (Var(data.shape, data.dtype), t)
            self.captured[id(t)] = hit
        return hit[0]

    def process(self, prim: Any, args: tuple[Any, ...], params: dict[str, Any]) -> Any:
        device = None
        track = False
        in_vars = []
        for i, a in enumerate(args):
            if not isinstance(a, Tensor):
                raise TypeError(f"{prim.name}: input {i} expected a Tensor, got {describe(a)}")
            if device is None:
                device = a._device
            elif a._device is not device:
                raise ValueError(
                    f"{prim.name}: all inputs must be on one device, but input 0 is on "
                    f"{args[0].device} and input {i} is on {a.device}"
                )
            in_vars.append(self.var_of(a))
            if a._node is not None or a._requires_grad:
                track = True
        if device is None:
            device = get_device(params.get("device"))
        sig = tuple((v.shape, v.dtype) for v in in_vars)
        aval = prim.abstract_eval(sig, params)
        avals = aval if prim.multiple_results else (aval,)
        outs = [Var(av.shape, av.dtype.np) for av in avals]
        self.eqns.append(
            Eqn(prim, in_vars, params, outs, remat=self.region, backward=not GradMode.enabled)
        )
        floating = any(av.dtype.category >= 2 for av in avals)
        node = None
        if track and floating and GradMode.enabled and prim.vjp is not None:
            needs = tuple(a._node is not None or a._requires_grad for a in args)
            node = Node(prim, args, params, list(outs), needs, device)
        wrapped = [Tensor._wrap(v, device, node, i) for i, v in enumerate(outs)]
        return tuple(wrapped) if prim.multiple_results else wrapped[0]
