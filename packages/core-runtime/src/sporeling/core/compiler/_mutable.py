"""``mutable``: mark inputs of a compiled function as variables rather than constants.

``jit`` treats Python scalars, tuples, lists and dicts as constants of the compiled graph
(a new value compiles a new graph). ``mutable(x)`` turns such an input into a graph input:
calling again with new values of the same shapes reuses the graph, and gradients flow to the
tensors inside. MindSpore 1.8 accepted a Tensor (returned unchanged) or a tuple/list/dict
whose leaves are all Tensors; 2.x added scalars (alone or as leaves, which become 0-d
tensor inputs of the graph) and ``dynamic_len`` (a sequence of elements of one kind).
"""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor

__all__ = ["mutable", "is_mutable"]


class MutableTuple(tuple):  # noqa: SLOT001 - needs an attribute
    __ms_mutable__ = True
    __ms_dynamic_len__ = False


class MutableList(list):
    __ms_mutable__ = True
    __ms_dynamic_len__ = False


class MutableDict(dict):
    __ms_mutable__ = True
    __ms_dynamic_len__ = False


class MutableInt(int):
    __ms_mutable__ = True


class MutableFloat(float):
    __ms_mutable__ = True


class MutableBool(int):  # bool cannot be subclassed
    __ms_mutable__ = True


def _check_leaves(value: Any, path: str) -> None:
    if isinstance(value, (Tensor, int, float)):  # scalar leaves: MindSpore 2.x
        return
    if isinstance(value, (tuple, list)):
        for i, v in enumerate(value):
            _check_leaves(v, f"{path}[{i}]")
        return
    if isinstance(value, dict):
        for k, v in value.items():
            _check_leaves(v, f"{path}[{k!r}]")
        return
    raise TypeError(
        f"mutable: every element of 'input_data' must be a Tensor or a Python scalar, "
        f"but {path} is {type(value).__name__}"
    )


def _check_dynamic_len(value: Any) -> None:
    """A dynamic-length sequence holds elements of one kind (one shape and dtype)."""

    def kind(v: Any) -> Any:
        if isinstance(v, Tensor):
            return ("Tensor", v.shape, v.dtype)
        return type(v).__name__

    kinds = [kind(v) for v in value]
    for i, k in enumerate(kinds[1:], 1):
        if k != kinds[0]:
            raise ValueError(
                "mutable: with dynamic_len=True every element of 'input_data' must have the "
                f"same type, shape and dtype, but element 0 is {kinds[0]} and element {i} is {k}"
            )


def mutable(input_data: Any, dynamic_len: bool = False) -> Any:
    """Mark ``input_data`` (Tensor, scalar, or tuple/list/dict of them) as a variable.

    ``dynamic_len=True`` marks a sequence whose length may change between calls; graphs are
    compiled for static shapes, so a new length compiles once more (the reason is logged).

    >>> from sporeling.core import Tensor
    >>> pair = mutable((Tensor([1.0]), Tensor([2.0])))
    >>> is_mutable(pair)
    True
    """
    if not isinstance(dynamic_len, bool):
        raise TypeError(f"mutable: argument 'dynamic_len' expected a bool, got {dynamic_len!r}")
    if dynamic_len and not isinstance(input_data, (tuple, list)):
        raise TypeError("mutable: dynamic_len=True needs a tuple or list 'input_data'")
    if dynamic_len:
        _check_dynamic_len(input_data)
    if isinstance(input_data, Tensor):
        return input_data
    if isinstance(input_data, bool):
        return MutableBool(input_data)
    if isinstance(input_data, int):
        return MutableInt(input_data)
    if isinstance(input_data, float):
        return MutableFloat(input_data)
    if isinstance(input_data, (tuple, list, dict)):
        _check_leaves(input_data, "input_data")
        cls = {tuple: MutableTuple, list: MutableList, dict: MutableDict}[
            tuple
            if isinstance(input_data, tuple)
            else list
            if isinstance(input_data, list)
            else dict
        ]
        out = cls(input_data)
        out.__ms_dynamic_len__ = bool(dynamic_len)
        return out
    raise TypeError(
        "mutable: argument 'input_data' expected a Tensor, a Python scalar, or a tuple/list/dict "
        f"of them, got {type(input_data).__name__}"
    )


def is_mutable(value: Any) -> bool:
    return bool(getattr(value, "__ms_mutable__", False))
