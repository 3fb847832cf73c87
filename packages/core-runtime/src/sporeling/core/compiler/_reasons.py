"""Why a jitted function compiled again: one line naming the input that changed and how.

A signature (see :mod:`.api`) is ``((args, kwargs), training flags, fusion switch)``, with
each argument described by a tagged tuple: ``("T", shape, dtype, device)`` for a graph-input
Tensor, ``("S", type)`` for a mutable scalar, ``("V", type, value)`` for a constant,
``("K", id, shape, dtype)`` for a Tensor inside a plain container (a constant by identity),
``("O", id)`` for an unhashable object, ``("C"|"M", type, [dynamic,] items)`` for plain or
mutable tuples/lists and ``("D"|"MD", keys, items)`` for dicts.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["describe_recompile"]

_KINDS = {
    "T": "a Tensor",
    "S": "a mutable scalar",
    "V": "a constant",
    "K": "a Tensor inside a plain container",
    "O": "an unhashable object",
    "C": "a plain container",
    "M": "a mutable container",
    "D": "a plain dict",
    "MD": "a mutable dict",
}
_HINT = "Python values are constants of the graph: wrap it in mutable(...) to make it an input"


def _param_names(fn: Callable[..., Any]) -> list[str]:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # builtins and the like
        return []
    return [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _items(desc: tuple[Any, ...]) -> tuple[Any, ...]:
    return desc[3] if desc[0] == "M" else desc[2]


def _leaf_change(old: Any, new: Any, path: str) -> str:
    """What differs between two descriptions of one argument (``path`` names it)."""
    kind = old[0]
    if kind != new[0]:
        return f"{path}: {_KINDS.get(kind, kind)} -> {_KINDS.get(new[0], new[0])}"
    if kind == "T":
        for field, a, b in zip(("shape", "dtype", "device"), old[1:], new[1:], strict=True):
            if a != b:
                return f"{path}: {field} {a} -> {b}"
    if kind == "V":
        if old[1] != new[1]:
            return f"{path}: a Python {old[1]} -> {new[1]}"
        return f"{path}: value {old[2]!r} -> {new[2]!r} ({_HINT})"
    if kind == "S":
        return f"{path}: a mutable {old[1]} -> {new[1]}"
    if kind == "K":
        if old[2:] != new[2:]:
            return f"{path}: shape/dtype {old[2:]} -> {new[2:]}"
        return (
            f"{path}: another Tensor object inside a plain tuple/list/dict (these are "
            "constants by identity: pass the container through mutable(...))"
        )
    if kind == "O":
        return f"{path}: another unhashable object (constants are compared by identity)"
    if kind in ("C", "M"):
        if old[1] != new[1]:
            return f"{path}: a {old[1]} -> a {new[1]}"
        a, b = _items(old), _items(new)
        if len(a) != len(b):
            return f"{path}: length {len(a)} -> {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                return _leaf_change(x, y, f"{path}[{i}]")
    if kind in ("D", "MD"):
        if old[1] != new[1]:
            return f"{path}: keys {list(old[1])} -> {list(new[1])}"
        for k, x, y in zip(old[1], old[2], new[2], strict=True):
            if x != y:
                return _leaf_change(x, y, f"{path}[{k!r}]")
    return f"{path}: {old!r} -> {new!r}"


def describe_recompile(old: Sequence[Any], new: Sequence[Any], fn: Callable[..., Any]) -> str:
    """One line: which input of ``fn`` (by parameter name where known) changed, and how."""
    (old_args, old_kw), old_mode, old_fuse = old
    (new_args, new_kw), new_mode, new_fuse = new
    if len(old_args) != len(new_args):
        return f"{len(old_args)} -> {len(new_args)} positional arguments"
    names = _param_names(fn)
    for i, (a, b) in enumerate(zip(old_args, new_args, strict=True)):
        if a != b:
            name = f"argument {i} ({names[i]})" if i < len(names) else f"argument {i}"
            return _leaf_change(a, b, name)
    if [k for k, _ in old_kw] != [k for k, _ in new_kw]:
        return f"keyword arguments {[k for k, _ in old_kw]} -> {[k for k, _ in new_kw]}"
    for (k, a), (_, b) in zip(old_kw, new_kw, strict=True):
        if a != b:
            return _leaf_change(a, b, f"keyword argument {k!r}")
    if old_mode != new_mode:
        return "a cell's training flag changed (set_train): each mode has its own graph"
    if old_fuse != new_fuse:
        return f"enable_graph_kernel {old_fuse} -> {new_fuse}"
    return "signature changed"
