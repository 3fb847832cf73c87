"""Helpers shared by the passes."""

from __future__ import annotations

from typing import Any

from ..graph import Eqn, Graph, Var

#: kinds whose calls are never removed, merged, folded or moved across one another
ORDERED_KINDS = frozenset({"effect", "random"})


def never_touch(prim: Any) -> bool:
    """Effects, random draws, collectives and nested compiled calls (``Primitive.pinned``):
    left exactly as traced."""
    return prim.kind in ORDERED_KINDS or bool(getattr(prim, "pinned", False))


def tagged_like(new: list[Eqn], old: Eqn) -> list[Eqn]:
    """``new`` (equations replacing ``old``) with ``old``'s recompute region and backward mark."""
    for e in new:
        e.remat, e.backward = old.remat, old.backward
    return new


def params_key(params: dict[str, Any]) -> tuple[Any, ...] | None:
    """A hashable key of an equation's parameters (types included: ``1 != 1.0 != True``),
    or None when a value is unhashable."""
    key = tuple((k, type(v), v) for k, v in sorted(params.items()))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def count_readers(graph: Graph, outputs: bool = True) -> dict[int, int]:
    """Var id -> how many equation inputs read it (plus one per graph output, if
    ``outputs``): a value read once, by the equation at hand, may be rewritten there."""
    readers: dict[int, int] = {}
    for e in graph.eqns:
        for v in e.inputs:
            readers[v.id] = readers.get(v.id, 0) + 1
    if outputs:
        for v in graph.outvars:
            if isinstance(v, Var):
                readers[v.id] = readers.get(v.id, 0) + 1
    return readers
