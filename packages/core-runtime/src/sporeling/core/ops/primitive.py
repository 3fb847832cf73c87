"""MindSpore's operator-class base: ``Primitive``, ``PrimitiveWithInfer``, ``prim_attr_register``.

A primitive *class* is a thin front for one functional op: its ``__init__`` takes the op's
attributes (``MatMul(transpose_b=True)``), ``__call__`` takes the tensors and calls the
functional op, which binds the op's one registered primitive. So the class, the function and
the graph compiler share one definition (``ops.operations`` builds the classes from a
table). User primitives written for MindSpore subclass ``PrimitiveWithInfer`` with
``@prim_attr_register`` on ``__init__``; here they run their ``__call__`` (or, if they only
give ``infer_value``, that), after ``infer_shape``/``infer_dtype`` check the inputs.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable
from typing import Any

from .. import _hooks

__all__ = [
    "Primitive",
    "PrimitiveWithInfer",
    "PrimitiveWithCheck",
    "prim_attr_register",
    "constexpr",
]

_WARNED: set[str] = set()


def _warn_once(key: str, message: str) -> None:
    if key not in _WARNED:
        _WARNED.add(key)
        warnings.warn(message, UserWarning, stacklevel=3)


class Primitive:
    """Base of operator classes: a name, attributes (``attrs``) and ``shard`` strategies."""

    def __init__(self, name: str | None = None) -> None:
        self.name = name or type(self).__name__
        self.attrs: dict[str, Any] = {}
        self.instance_name = ""
        self.in_strategy: Any = None
        self.out_strategy: Any = None
        self.input_names: list[str] = []
        self.output_names: list[str] = []

    # ---- MindSpore's attribute API ----------------------------------------------------------
    def add_prim_attr(self, name: str, value: Any) -> Primitive:
        self.attrs[name] = value
        return self

    def del_prim_attr(self, name: str) -> Primitive:
        self.attrs.pop(name, None)
        return self

    def set_prim_instance_name(self, instance_name: str) -> Primitive:
        self.instance_name = instance_name
        return self

    def init_prim_io_names(self, inputs: list[str], outputs: list[str]) -> None:
        self.input_names, self.output_names = list(inputs), list(outputs)

    def set_stage(self, stage: int) -> Primitive:
        self.add_prim_attr("stage", stage)
        return self

    def recompute(self, mode: bool = True) -> Primitive:
        """Accepted: eager autodiff keeps what backward needs; nothing is recomputed."""
        self.add_prim_attr("recompute", mode)
        return self

    def update_parameter(self) -> bool:
        return False

    def check_elim(self, *args: Any) -> tuple[bool, Any]:
        return False, None

    # ---- sharding ---------------------------------------------------------------------------
    def shard(self, in_strategy: Any = None, out_strategy: Any = None) -> Primitive:
        """``op.shard(((1, 2), (2, 1)))``: split this op over the ranks (semi-auto parallel).

        Ops with a sharded implementation (``parallel.shard``: MatMul, BatchMatMul, Gather and
        the elementwise ones listed there) run it; for the others the strategy is recorded and
        the op computes its whole result on every rank (same values), with a warning.
        """
        self.in_strategy, self.out_strategy = in_strategy, out_strategy
        self.add_prim_attr("in_strategy", in_strategy)
        sharded = _hooks.parallel.sharded_primitive(self.name)
        if sharded is not None:
            kwargs = {k: self.attrs[k] for k in ("transpose_a", "transpose_b") if k in self.attrs}
            op = sharded(**kwargs) if kwargs else sharded()
            self._sharded = op.shard(in_strategy, out_strategy)
        else:
            _warn_once(
                f"shard:{self.name}",
                f"{self.name}.shard: no sharded implementation here; the strategy is recorded "
                "and the op computes its whole result on every rank (the same values)",
            )
        return self

    def __call__(self, *args: Any) -> Any:
        raise TypeError(f"{self.name}: this primitive has no implementation (define __call__)")

    def __repr__(self) -> str:
        attrs = ", ".join(f"{k}={v!r}" for k, v in self.attrs.items())
        return f"Prim[{self.name}]<{attrs}>" if attrs else f"Prim[{self.name}]"


class PrimitiveWithCheck(Primitive):
    """A user primitive with ``check_shape``/``check_dtype`` run before its ``__call__``."""

    def _check_inputs(self, args: tuple[Any, ...]) -> None:
        shapes = [tuple(a.shape) if hasattr(a, "shape") else None for a in args]
        dtypes = [getattr(a, "dtype", type(a)) for a in args]
        if hasattr(self, "check_shape"):
            self.check_shape(*shapes)
        if hasattr(self, "check_dtype"):
            self.check_dtype(*dtypes)


class PrimitiveWithInfer(PrimitiveWithCheck):
    """A user primitive with ``infer_shape``/``infer_dtype`` (run first, to check inputs)
    and either its own ``__call__`` or ``infer_value`` computing the result."""

    def _check_inputs(self, args: tuple[Any, ...]) -> None:
        shapes = [list(a.shape) if hasattr(a, "shape") else None for a in args]
        dtypes = [getattr(a, "dtype", type(a)) for a in args]
        if type(self).infer_shape is not PrimitiveWithInfer.infer_shape:
            self.infer_shape(*shapes)
        if type(self).infer_dtype is not PrimitiveWithInfer.infer_dtype:
            self.infer_dtype(*dtypes)

    def infer_shape(self, *args: Any) -> Any:
        return args[0] if args else None

    def infer_dtype(self, *args: Any) -> Any:
        return args[0] if args else None

    def __call__(self, *args: Any) -> Any:
        self._check_inputs(args)
        infer_value = getattr(self, "infer_value", None)
        if infer_value is None:
            raise TypeError(
                f"{self.name}: a PrimitiveWithInfer needs a kernel; here define "
                "__call__(self, *inputs) (or infer_value) computing it with sporeling ops"
            )
        from .bprop_registry import call_with_registered_bprop

        return call_with_registered_bprop(self, infer_value, args)


def _checked_call(call: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(call)
    def wrapper(self: Any, *args: Any) -> Any:
        from .bprop_registry import call_with_registered_bprop

        self._check_inputs(args)
        return call_with_registered_bprop(self, lambda *xs: call(self, *xs), args)

    wrapper._checked = True  # type: ignore[attr-defined]
    return wrapper


def _init_subclass(cls: type) -> None:
    call = cls.__dict__.get("__call__")
    if call is not None and not getattr(call, "_checked", False):
        cls.__call__ = _checked_call(call)  # type: ignore[attr-defined]


PrimitiveWithCheck.__init_subclass__ = classmethod(  # type: ignore[assignment]
    lambda cls, **kw: _init_subclass(cls)
)


def prim_attr_register(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Decorator for a primitive's ``__init__``: its arguments become attributes
    (``self.axis`` and ``self.attrs['axis']``), as in MindSpore."""
    sig = inspect.signature(fn)

    @functools.wraps(fn)
    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        Primitive.__init__(self, type(self).__name__)
        bound = sig.bind(self, *args, **kwargs)
        bound.apply_defaults()
        for name, value in list(bound.arguments.items())[1:]:
            setattr(self, name, value)
            self.add_prim_attr(name, value)
        fn(self, *args, **kwargs)

    return init


def constexpr(fn: Callable[..., Any] | None = None, **_: Any) -> Any:
    """MindSpore's ``constexpr``: a function of constants, run as plain Python here."""
    if fn is None:
        return lambda f: f
    return fn
