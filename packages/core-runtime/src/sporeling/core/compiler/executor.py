"""Running a compiled graph: a flat loop over prepared equations, freeing buffers early.

Each equation's implementation is chosen once for the graph's device; at run time only the
kernel calls remain (no abstract checks, no Tensor objects, no autograd bookkeeping). A
value is dropped from the environment right after its last use so NumPy/CuPy can reuse the
memory for later results.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._eager import conform_dtype
from .graph import Graph, Var

__all__ = ["Executable"]


class Executable:
    """A graph bound to its device's kernels, ready to run on input arrays."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        device = graph.device
        self.xp = device.xp if device is not None else np
        slot: dict[int, int] = {}

        def index(v: Var) -> int:
            if v.id not in slot:
                slot[v.id] = len(slot)
            return slot[v.id]

        self.in_slots = [index(v) for v in graph.invars]
        self.captured = [(index(v), t) for v, t in graph.captured]
        self.consts = [(index(v), a) for v, a in graph.consts]
        steps = []
        for e in graph.eqns:
            impl = e.prim.impl_for(device) if device is not None else e.prim.impls["any"]
            if e.out_alias is not None:
                impl = _into(e, impl)
            params = {k: v for k, v in e.params.items()}
            steps.append(
                (
                    impl,
                    [index(v) for v in e.inputs],
                    params,
                    [index(v) for v in e.outputs],
                    e.prim.multiple_results,
                    [(v.dtype, v.shape) for v in e.outputs],
                )
            )
        self.out_slots = [index(v) if isinstance(v, Var) else None for v in graph.outvars]
        # last use of each slot, so the loop can release buffers as soon as possible
        last: dict[int, int] = {}
        for i, (_, ins, _, _, _, _) in enumerate(steps):
            for s in ins:
                last[s] = i
        keep = {s for s in self.out_slots if s is not None}
        self.steps = []
        for i, (impl, ins, params, outs, multi, meta) in enumerate(steps):
            free = [s for s in set(ins) if last.get(s) == i and s not in keep]
            self.steps.append((impl, ins, params, outs, multi, meta, free))
        self.n_slots = len(slot)

    def run(self, inputs: list[Any]) -> list[Any]:
        env: list[Any] = [None] * self.n_slots
        for s, a in zip(self.in_slots, inputs, strict=True):
            env[s] = a
        for s, t in self.captured:
            env[s] = t._data
        for s, a in self.consts:
            env[s] = a
        xp = self.xp
        for impl, ins, params, outs, multi, meta, free in self.steps:
            res = impl(xp, *[env[s] for s in ins], **params)
            if multi:
                for s, r, (dt, _shape) in zip(outs, res, meta, strict=True):
                    env[s] = conform_dtype(r, dt, xp)
            else:
                env[outs[0]] = conform_dtype(res, meta[0][0], xp)
            for s in free:
                env[s] = None
        return [
            env[s] if s is not None else v
            for s, v in zip(self.out_slots, self.graph.outvars, strict=True)
        ]


def _into(e: Any, impl: Any) -> Any:
    """``impl`` writing each aliased output into its (dying) input's buffer when it fits."""
    from .passes.reuse import write_into

    return write_into(e, impl)
