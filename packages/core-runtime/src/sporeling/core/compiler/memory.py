"""Static memory plan: the large intermediates of a CPU graph live in buffers kept across calls.

A fresh NumPy array for every intermediate costs a page fault per 4 KiB page each time the
allocator hands the memory back to the kernel and takes it again (glibc trims freed heap memory
over 16 MiB and maps large blocks anew): a GPT training step faulted 11,000 times, ~45 MiB,
about 50 ms of its 400. Like MindSpore's static memory reuse, a compiled graph here gives each
large value its producer writes into a buffer of an *arena* that the next call uses again, and
values whose lifetimes do not overlap share one buffer.

A value qualifies when its producer can write into a given buffer (a fused kernel's full
outputs, a primitive with ``cpu_into``: matrix products) and no graph output is, or may be a
view of, it. Lifetimes follow views: any reader other than a fused kernel or a primitive whose
results are always new arrays (``Primitive.fresh``) may return a view of its input, so the
buffer stays taken until the last reader of any such value. A buffer is given again only to
values produced strictly after its last reader, so a kernel never writes over its own inputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .graph import Graph, Var

__all__ = ["MemoryPlan", "plan_memory", "PLANNED_MIN_BYTES"]

#: smaller values come from malloc's free lists without page faults; they stay fresh arrays
PLANNED_MIN_BYTES = 1 << 16


def _writes_into(e: Any) -> list[int]:
    """Indices of ``e``'s outputs that its producer can write into a given buffer."""
    if e.prim.kind == "fused":
        return list(range(len(e.prim.out_meta)))
    if e.prim.cpu_into is not None:
        return [0]
    return []


def _fresh_results(e: Any) -> bool:
    return e.prim.kind == "fused" or e.prim.fresh


@dataclass
class MemoryPlan:
    """Buffer ``(nbytes, dtype)`` specs and, per equation, the buffer of each output (or None)."""

    buffers: list[tuple[int, np.dtype]]
    by_eqn: list[tuple[int | None, ...] | None]

    @property
    def planned_values(self) -> int:
        return sum(b is not None for outs in self.by_eqn if outs for b in outs)

    def new_arena(self, graph: Graph) -> list[list[Any] | None]:
        """Fresh buffers, as each equation's per-output views (None: allocate as usual)."""
        flat = [np.empty(n // dt.itemsize, dt) for n, dt in self.buffers]
        views: list[list[Any] | None] = []
        for e, outs in zip(graph.eqns, self.by_eqn, strict=True):
            if outs is None:
                views.append(None)
                continue
            pairs = zip(e.outputs, outs, strict=True)
            views.append([None if b is None else flat[b].reshape(v.shape) for v, b in pairs])
        return views


def plan_memory(graph: Graph, min_bytes: int | None = None) -> MemoryPlan:
    """Assign the graph's private intermediates of at least ``min_bytes`` (default
    :data:`PLANNED_MIN_BYTES`, read at call time) to shared buffers by lifetime."""
    if min_bytes is None:
        min_bytes = PLANNED_MIN_BYTES
    eqns = graph.eqns
    n = len(eqns)
    outputs = {v.id for v in graph.outvars if isinstance(v, Var)}
    readers: dict[int, list[int]] = {}
    for i, e in enumerate(eqns):
        for v in e.inputs:
            readers.setdefault(v.id, []).append(i)

    end_memo: dict[int, int] = {}

    def end(v: Var, depth: int = 0) -> int:
        """Last step that may touch ``v``'s memory: its readers, and readers of any value that
        may be a view of it; ``n`` when a graph output may be such a value."""
        if v.id in outputs:
            return n
        if v.id in end_memo:
            return end_memo[v.id]
        last = -1
        for i in readers.get(v.id, ()):
            last = max(last, i)
            e = eqns[i]
            aliased = e.out_alias or ()
            for k, w in enumerate(e.outputs):
                j = aliased[k] if k < len(aliased) else None
                into_v = j is not None and e.inputs[j] is v
                if into_v or not _fresh_results(e):
                    last = max(last, end(w, depth + 1) if depth < 500 else n)
        end_memo[v.id] = last
        return last

    buffers: list[tuple[int, np.dtype]] = []
    free: dict[tuple[int, str], list[int]] = {}
    releases: dict[int, list[int]] = {}  # step -> buffers free again after it
    by_eqn: list[tuple[int | None, ...] | None] = []
    for i, e in enumerate(eqns):
        for b in releases.pop(i - 1, ()):
            n_bytes, dt = buffers[b]
            free.setdefault((n_bytes, dt.str), []).append(b)
        chosen: list[int | None] = [None] * len(e.outputs)
        aliased = e.out_alias or ()
        for k in _writes_into(e):
            v = e.outputs[k]
            if v.nbytes < min_bytes or (k < len(aliased) and aliased[k] is not None):
                continue
            last = max(end(v), i)  # an output nobody reads is still written here
            if last >= n:
                continue
            key = (v.nbytes, v.dtype.str)
            pool = free.get(key)
            if pool:
                b = pool.pop()
            else:
                b = len(buffers)
                buffers.append((v.nbytes, v.dtype))
            chosen[k] = b
            releases.setdefault(max(last, i), []).append(b)
        by_eqn.append(tuple(chosen) if any(b is not None for b in chosen) else None)
    return MemoryPlan(buffers, by_eqn)
