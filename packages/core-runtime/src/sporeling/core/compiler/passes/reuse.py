"""Buffer reuse: an elementwise result is written into an input buffer that dies there.

An input qualifies when this equation is its last use, it has the output's shape and dtype,
and its buffer is provably private: produced by a fused kernel or a primitive whose results
are always new arrays (``Primitive.fresh``: ufuncs, matrix products — a Dense layer's bias
is added in place — reductions) and read only by such equations, which never return views
of it. The equation itself is a fused kernel or an elementwise primitive that names its
array-module ufunc (``Primitive.ufunc``), called with ``out=``. Graph inputs, captured
tensors, constants and graph outputs never qualify.
At run time the buffer must also be C-contiguous and writeable, else a fresh one is used.
"""

from __future__ import annotations

from typing import Any

from ..graph import Graph, Var

__all__ = ["buffer_reuse", "write_into"]


def _fresh(prim: Any) -> bool:
    return prim.kind == "fused" or prim.fresh


def _ufunc(prim: Any) -> str | None:
    return prim.ufunc if prim.kind == "elementwise" else None


def buffer_reuse(graph: Graph) -> Graph:
    protected = {v.id for v in graph.invars}
    protected |= {v.id for v, _ in graph.captured} | {v.id for v, _ in graph.consts}
    protected |= {v.id for v in graph.outvars if isinstance(v, Var)}
    producer: dict[int, Any] = {}
    last: dict[int, int] = {}
    safe_readers: dict[int, bool] = {}
    for i, e in enumerate(graph.eqns):
        for v in e.outputs:
            producer[v.id] = e
        for v in e.inputs:
            last[v.id] = i
            ok = _fresh(e.prim)
            safe_readers[v.id] = safe_readers.get(v.id, True) and ok
    n = 0
    for i, e in enumerate(graph.eqns):
        if e.prim.kind == "fused":
            candidates = e.outputs[: e.prim.n_full]
        elif _ufunc(e.prim) is not None and len(e.outputs) == 1:
            candidates = e.outputs
        else:
            continue
        alias: list[int | None] = [None] * len(e.outputs)
        taken: set[int] = set()
        for k, out in enumerate(candidates):
            for j, v in enumerate(e.inputs):
                if (
                    j not in taken
                    and v.id not in protected
                    and v.shape == out.shape
                    and v.dtype == out.dtype
                    and last.get(v.id) == i
                    and safe_readers.get(v.id, False)
                    and v.id in producer
                    and _fresh(producer[v.id].prim)
                    and sum(1 for w in e.inputs if w.id == v.id) == 1
                ):
                    alias[k] = j
                    taken.add(j)
                    break
        if taken:
            e.out_alias = tuple(alias)
            n += 1
    graph.notes.append(f"reuse in-place {n}")
    return graph


def write_into(e: Any, impl: Any) -> Any:
    """An impl for equation ``e`` that writes its outputs into the aliased input buffers."""
    alias = e.out_alias
    if e.prim.kind == "fused":

        def run_fused(xp: Any, *arrays: Any, **params: Any) -> Any:
            return impl(xp, *arrays, outs=[None if j is None else arrays[j] for j in alias])

        return run_fused
    ufunc_name = e.prim.ufunc
    j = alias[0]

    def run_ufunc(xp: Any, *arrays: Any, **params: Any) -> Any:
        buf = arrays[j]
        if buf.flags.writeable:
            return getattr(xp, ufunc_name)(*arrays, out=buf)
        return impl(xp, *arrays, **params)

    return run_ufunc
