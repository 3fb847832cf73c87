"""Running a compiled graph: a flat loop over prepared equations, freeing buffers early.

Each equation's implementation is chosen once for the graph's device; at run time only the
kernel calls remain (no abstract checks, no Tensor objects, no autograd bookkeeping). A
value is dropped from the environment right after its last use so NumPy/CuPy can reuse the
memory for later results. On the CPU, large intermediates that fused kernels and matrix
products produce are written into buffers of a reused arena instead (:mod:`.memory`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._backend import is_host
from .._eager import conform_dtype
from .graph import Graph, Var
from .memory import MemoryPlan, plan_memory

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
        self.plan: MemoryPlan | None = plan_memory(graph) if is_host(self.xp) else None
        self._arenas: list[Any] = []  # one per run in flight (runs on several threads)
        steps = []
        for i, e in enumerate(graph.eqns):
            impl = e.prim.impl_for(device) if device is not None else e.prim.impls["any"]
            if self.plan is not None and self.plan.by_eqn[i] is not None:
                impl = _writing_into_given(e, impl)
            elif e.out_alias is not None:
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
        if self.plan is None:  # not on the CPU
            return self._run(inputs, None)
        from ..kernels.cpu.blas import split_products

        with split_products():
            if not self.plan.buffers:
                return self._run(inputs, None)
            try:
                arena = self._arenas.pop()
            except IndexError:
                arena = self.plan.new_arena(self.graph)
            try:
                return self._run(inputs, arena)
            finally:
                self._arenas.append(arena)

    def _run(self, inputs: list[Any], arena: list[Any] | None) -> list[Any]:
        env: list[Any] = [None] * self.n_slots
        for s, a in zip(self.in_slots, inputs, strict=True):
            env[s] = a
        for s, t in self.captured:
            env[s] = t._data
        for s, a in self.consts:
            env[s] = a
        xp = self.xp
        for i, (impl, ins, params, outs, multi, meta, free) in enumerate(self.steps):
            if arena is not None and arena[i] is not None:
                res = impl(xp, *[env[s] for s in ins], out=arena[i], **params)
            else:
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


def _writing_into_given(e: Any, impl: Any) -> Any:
    """``impl`` also accepting ``out=`` (a buffer or None per output) from the memory plan;
    outputs without one may still be written into a dying input (buffer reuse). Primitives
    write through their ``cpu_into`` implementation."""
    if e.prim.kind == "fused":
        alias = e.out_alias or ()

        def run_fused(xp: Any, *arrays: Any, out: Any = None, **params: Any) -> Any:
            outs = list(out) if out is not None else [None] * len(e.outputs)
            for k, j in enumerate(alias):
                if j is not None and outs[k] is None:
                    outs[k] = arrays[j]
            return impl(xp, *arrays, outs=outs)

        return run_fused
    into = e.prim.cpu_into
    if into is None:
        raise AssertionError(f"memory plan: {e.prim.name} cannot write into a given buffer")
    return lambda xp, *arrays, out=None, **params: into(
        xp, *arrays, out=None if out is None else out[0], **params
    )


def _into(e: Any, impl: Any) -> Any:
    """``impl`` writing each aliased output into its (dying) input's buffer when it fits."""
    from .passes.reuse import write_into

    return write_into(e, impl)
