"""``ops.composite`` (``C``): MindSpore's composite operations.

``GradOperation(get_all, get_by_list, sens_param)`` on the tape (the same machinery as
``grad``), ``HyperMap``/``Map`` over nested tuples and lists, and ``MultitypeFuncGraph``
dispatching on argument types ("Tensor", "Number", "Tuple", ...). The functional ops
MindSpore's ``composite`` also exports (``clip_by_global_norm``, ``normal``...) are here too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..autograd.functional import _differentiate
from ..tensor import Tensor
from .array import (
    clip_by_global_norm,
    clip_by_value,
    count_nonzero,
    repeat_elements,
    sequence_mask,
)
from .linalg import batch_dot, dot, tensor_dot
from .random import gamma, laplace, multinomial, normal, poisson, uniform

__all__ = [
    "GradOperation",
    "HyperMap",
    "Map",
    "MultitypeFuncGraph",
    "clip_by_global_norm",
    "clip_by_value",
    "count_nonzero",
    "tensor_dot",
    "dot",
    "batch_dot",
    "repeat_elements",
    "sequence_mask",
    "normal",
    "uniform",
    "gamma",
    "poisson",
    "laplace",
    "multinomial",
]


class GradOperation:
    """``GradOperation(get_all=False, get_by_list=False, sens_param=False)(net[, weights])``.

    The returned function gives: the gradient of the first input (default); a tuple for every
    input (``get_all``); a tuple for every weight (``get_by_list``); ``(inputs, weights)``
    with both. With ``sens_param`` the last positional argument is the output's sensitivity.
    """

    def __init__(self, get_all: bool = False, get_by_list: bool = False, sens_param: bool = False):
        for arg, value in (
            ("get_all", get_all),
            ("get_by_list", get_by_list),
            ("sens_param", sens_param),
        ):
            if not isinstance(value, bool):
                raise TypeError(f"GradOperation: argument '{arg}' expected a bool, got {value!r}")
        self.get_all = get_all
        self.get_by_list = get_by_list
        self.sens_param = sens_param

    def __call__(self, fn: Callable[..., Any], weights: Any = None) -> Callable[..., Any]:
        if not callable(fn):
            raise TypeError(f"GradOperation: argument 'fn' expected a callable, got {fn!r}")
        if self.get_by_list and weights is None:
            raise ValueError(
                "GradOperation(get_by_list=True): pass the weights, grad(net, weights)"
            )
        ws = weights if self.get_by_list else None

        def grad_fn(*args: Any, **kwargs: Any) -> Any:
            sens = None
            if self.sens_param:
                if not args:
                    raise TypeError("GradOperation(sens_param=True): the last input is the sens")
                args, sens = args[:-1], args[-1]
            if self.get_all:
                position: Any = tuple(range(len(args)))
            elif self.get_by_list:
                position = None
            else:
                position = 0
            if position is not None and not args:
                raise TypeError("GradOperation: the function needs an input to differentiate")
            _, grads, _ = _differentiate(fn, position, ws, False, sens, args, kwargs)
            if self.get_all and not isinstance(grads, tuple):
                grads = (grads,)
            if self.get_all and self.get_by_list:
                return grads
            return grads

        return grad_fn


_TYPE_NAMES = {
    "Tensor": lambda v: isinstance(v, Tensor),
    "Number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "Int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "Float": lambda v: isinstance(v, float),
    "Bool": lambda v: isinstance(v, bool),
    "String": lambda v: isinstance(v, str),
    "Tuple": lambda v: isinstance(v, tuple),
    "List": lambda v: isinstance(v, list),
    "Dict": lambda v: isinstance(v, dict),
    "None": lambda v: v is None,
    "Function": callable,
    "RowTensor": lambda v: type(v).__name__ == "RowTensor",
    "COOTensor": lambda v: type(v).__name__ == "COOTensor",
    "CSRTensor": lambda v: type(v).__name__ == "CSRTensor",
}


class MultitypeFuncGraph:
    """A function with one implementation per argument-type signature.

    >>> add = MultitypeFuncGraph("add")
    >>> @add.register("Number", "Number")
    ... def _(x, y): return x + y
    >>> add(1, 2)
    3
    """

    def __init__(self, name: str, read_value: bool = False) -> None:
        self.name = name
        self.read_value = read_value
        self.entries: list[tuple[tuple[str, ...], Callable[..., Any]]] = []

    def register(self, *type_names: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        names = tuple(n if isinstance(n, str) else type(n).__name__ for n in type_names)
        for n in names:
            if n not in _TYPE_NAMES:
                raise ValueError(
                    f"MultitypeFuncGraph {self.name!r}: unknown type name {n!r}; known "
                    f"names are {sorted(_TYPE_NAMES)}"
                )

        def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
            self.entries.append((names, fn))
            return fn

        return deco

    def __call__(self, *args: Any) -> Any:
        for names, fn in self.entries:
            if len(names) == len(args) and all(
                _TYPE_NAMES[n](a) for n, a in zip(names, args, strict=True)
            ):
                return fn(*args)
        got = ", ".join(type(a).__name__ for a in args)
        raise TypeError(
            f"MultitypeFuncGraph {self.name!r}: no implementation registered for ({got}); "
            f"registered: {[n for n, _ in self.entries]}"
        )


def _hyper(fn: Callable[..., Any], args: tuple[Any, ...], recurse: bool, reverse: bool) -> Any:
    first = args[0]
    if isinstance(first, (tuple, list)):
        n = len(first)
        for a in args[1:]:
            if not isinstance(a, (tuple, list)) or len(a) != n:
                raise ValueError(
                    f"HyperMap: the sequences must have one length, got {n} and {_len(a)}"
                )
        idx = range(n - 1, -1, -1) if reverse else range(n)
        out = {}
        for i in idx:
            items = tuple(a[i] for a in args)
            out[i] = _hyper(fn, items, recurse, reverse) if recurse else fn(*items)
        return type(first)(out[i] for i in range(n))
    if isinstance(first, dict):
        return {k: _hyper(fn, tuple(a[k] for a in args), recurse, reverse) for k in first}
    return fn(*args)


def _len(a: Any) -> Any:
    return len(a) if isinstance(a, (tuple, list)) else type(a).__name__


class HyperMap:
    """``HyperMap(ops=None, reverse=False)``: apply ``ops`` leaf-wise over nested sequences."""

    _recurse = True

    def __init__(self, ops: Any = None, reverse: bool = False) -> None:
        self.ops = ops
        self.reverse = reverse

    def __call__(self, *args: Any) -> Any:
        fn = self.ops
        if fn is None:
            if not args:
                raise TypeError(f"{type(self).__name__}: give the function, then the sequences")
            fn, args = args[0], args[1:]
        if not args:
            raise TypeError(f"{type(self).__name__}: no sequences to map over")
        return _hyper(fn, args, self._recurse, self.reverse)


class Map(HyperMap):
    """``Map(ops=None, reverse=False)``: apply ``ops`` to the items of the (flat) sequences."""

    _recurse = False
