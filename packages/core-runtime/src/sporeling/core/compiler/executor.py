"""Running a compiled graph: a flat loop over prepared equations, freeing buffers early.

Each equation's implementation is chosen once for the graph's device; at run time only the
kernel calls remain (no abstract checks, no Tensor objects, no autograd bookkeeping). A
value is dropped from the environment right after its last use so NumPy/CuPy can reuse the
memory for later results. On the CPU, large intermediates that fused kernels and matrix
products produce are written into buffers of a reused arena instead (:mod:`.memory`).

Graph outputs cannot live in the arena (the caller keeps them), but a large output of a
fused kernel whose array the caller has dropped by the next call is written into again
(:meth:`Executable._recycled`): the caller's reference count says it is free. A fresh
array over glibc's mmap threshold (32 MiB) is mapped anew each call and every page
faults on its first write: the ``ln(gelu(x*w+b))`` gradient of x (8192x1024 float32)
took ~2.5 ms of such faults per step (benchmarks/README.md "ln(gelu) chain, session 9").
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from .._backend import is_host
from .._eager import conform_dtype
from .graph import Graph, Var
from .memory import PLANNED_MIN_BYTES, MemoryPlan, plan_memory

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
        outvars = {v.id for v in graph.outvars if isinstance(v, Var)}
        # per equation: its fused kernel's full outputs that are large graph outputs
        self.recyclable: list[list[int]] = [
            [k for k in range(len(e.prim.out_meta)) if e.outputs[k].id in outvars
             and e.outputs[k].nbytes >= PLANNED_MIN_BYTES]
            if self.plan is not None and e.prim.kind == "fused" else []
            for e in graph.eqns
        ]  # fmt: skip
        self._spare: dict[tuple[int, int], list[Any]] = {}  # (equation, output): arrays
        steps = []
        for i, e in enumerate(graph.eqns):
            impl = e.prim.impl_for(device) if device is not None else e.prim.impls["any"]
            if self.plan is not None and (self.plan.by_eqn[i] is not None or self.recyclable[i]):
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
        recycle = self.recyclable
        for i, (impl, ins, params, outs, multi, meta, free) in enumerate(self.steps):
            given = arena[i] if arena is not None else None
            if recycle[i]:
                given = self._recycled(i, given, meta)
            if given is not None:
                res = impl(xp, *[env[s] for s in ins], out=given, **params)
            else:
                res = impl(xp, *[env[s] for s in ins], **params)
            if multi:
                for s, r, (dt, _shape) in zip(outs, res, meta, strict=True):
                    env[s] = conform_dtype(r, dt, xp)
            else:
                env[outs[0]] = conform_dtype(res, meta[0][0], xp)
            for s in free:
                env[s] = None
            if recycle[i]:
                self._keep(i, env, outs)
        return [
            env[s] if s is not None else v
            for s, v in zip(self.out_slots, self.graph.outvars, strict=True)
        ]

    def _recycled(self, i: int, given: Any, meta: Any) -> Any:
        """The ``out`` list for equation ``i``: its arena buffers (``given``) and, for each
        recyclable output, the array it returned before if nothing else refers to it now
        (its owner, the array that holds the memory: every view refers to it)."""
        out = list(given) if given is not None else [None] * len(meta)
        for k in self.recyclable[i]:
            spare = self._spare.get((i, k))
            if not spare:
                continue
            try:
                owner = spare.pop()
            except IndexError:  # another thread's run took it
                continue
            dt, shape = meta[k]
            # referred to by `owner` and getrefcount's argument only: the caller dropped it
            if (
                sys.getrefcount(owner) == 2
                and owner.dtype == dt
                and owner.size == int(np.prod(shape, dtype=np.int64))
                and owner.flags.c_contiguous
                and owner.flags.writeable
            ):
                out[k] = owner
        return out if any(b is not None for b in out) else None

    def _keep(self, i: int, env: list[Any], outs: list[int]) -> None:
        """Remember equation ``i``'s recyclable outputs (their owners) for the next call."""
        for k in self.recyclable[i]:
            owner = env[outs[k]]
            while isinstance(getattr(owner, "base", None), np.ndarray):
                owner = owner.base
            # only an array that owns its memory: every view of that memory refers to it
            if type(owner) is np.ndarray and owner.base is None:
                spare = self._spare.setdefault((i, k), [])
                if len(spare) < 2:  # runs in flight on other threads may each keep one
                    spare.append(owner)


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
