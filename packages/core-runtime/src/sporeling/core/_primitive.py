"""The op registry: one :class:`Primitive` per operation, shared by every execution mode.

A primitive holds small rules (as in JAX):

* ``abstract(*avals, **params)`` — shapes/dtypes in, :class:`ShapedArray`\\ (s) out. User
  errors (bad shapes, dtypes, axes) are raised here, before any kernel runs.
* ``impls`` — one implementation per device kind (``"cpu"``, ``"gpu"``) and/or a generic
  ``"any"`` implementation written against the array module ``xp``; each is called as
  ``impl(xp, *arrays, **params)`` and returns an array (or a tuple for multi-output ops).
* ``vjp(cotangent, *inputs, out=..., **params)`` — the backward rule written with ops,
  so that gradients are themselves differentiable (second order) and traceable. It
  returns one entry per input: a Tensor, ``None`` (no gradient) or a zero-argument
  callable that computes it, so that unneeded gradients are never computed.
* ``kind`` — ``"elementwise"``, ``"reduce"``, ``"movement"``, ``"opaque"``, ``"random"``,
  ``"creation"`` — for the graph compiler's fusion passes.
* ``scalar`` — for elementwise ops, a scalar expression over ``x`` (unary) or ``x, y``
  (binary), e.g. ``"1/(1+exp(-x))"``, from which the fuser generates kernels.

``bind`` hands a call to the active interpreter (eager by default). Ops never branch on
the interpreter or device outside their impls.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .dtype import DType, from_numpy

__all__ = ["Primitive", "ShapedArray", "REGISTRY", "current_interpreter", "interpreter"]

REGISTRY: dict[str, Primitive] = {}


class ShapedArray:
    """The abstract value of a tensor: its shape and dtype (no data)."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape: tuple[int, ...], dtype: DType) -> None:
        self.shape = tuple(int(s) for s in shape)
        self.dtype = dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, ShapedArray)
            and self.shape == other.shape
            and self.dtype == other.dtype
        )

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype))

    def __repr__(self) -> str:
        return f"ShapedArray({self.shape}, {self.dtype})"


Impl = Callable[..., Any]


class Primitive:
    """One registered operation (see the module docstring for its rules)."""

    def __init__(
        self,
        name: str,
        kind: str,
        abstract: Callable[..., Any],
        impl: Impl | None = None,
        *,
        cpu: Impl | None = None,
        gpu: Impl | None = None,
        vjp: Callable[..., Any] | None = None,
        scalar: str | None = None,
        multiple_results: bool = False,
    ) -> None:
        if name in REGISTRY:
            raise ValueError(f"primitive {name!r} is already registered")
        self.name = name
        self.kind = kind
        self.abstract = abstract
        self.impls: dict[str, Impl] = {}
        if impl is not None:
            self.impls["any"] = impl
        if cpu is not None:
            self.impls["cpu"] = cpu
        if gpu is not None:
            self.impls["gpu"] = gpu
        self.vjp = vjp
        self.scalar = scalar
        self.multiple_results = multiple_results
        self._abstract_cache: dict[Any, Any] = {}
        self._impl_by_device: dict[Any, Impl] = {}  # memo of impl_for
        self._eager_plans: dict[Any, Any] = {}  # the eager fast path's memo (_eager.py)
        #: optional ``(impl, arrays, params) -> fn(xp, *arrays)`` with the parameters bound,
        #: for the eager fast path's plan (saves the ``**params`` call of a hot op), or None
        self.eager_specialize: Callable[..., Any] | None = None
        REGISTRY[name] = self

    def __repr__(self) -> str:
        return f"<primitive {self.name} ({self.kind})>"

    def def_impl(self, device_kind: str) -> Callable[[Impl], Impl]:
        """Decorator adding an implementation for ``"cpu"``, ``"gpu"`` or ``"any"``."""

        def register(fn: Impl) -> Impl:
            self.impls[device_kind] = fn
            self._impl_by_device.clear()
            self._eager_plans.clear()
            return fn

        return register

    def impl_for(self, device: Any) -> Impl:
        """Pick the implementation for a device (the GPU stand-in prefers generic code)."""
        impls = self.impls
        order = ("any", "gpu") if getattr(device, "standin", False) else (device.kind, "any")
        for key in order:
            fn = impls.get(key)
            if fn is not None:
                return fn
        raise RuntimeError(f"{self.name} has no implementation for {device.name}")

    def abstract_eval(self, shapes_dtypes: tuple[Any, ...], params: dict[str, Any]) -> Any:
        """Run the abstract rule, memoized on input shapes/dtypes and (hashable) params."""
        try:
            key = (shapes_dtypes, tuple(params.items()))
            return self._abstract_cache[key]
        except KeyError:
            pass
        except TypeError:  # unhashable params: no memo
            key = None
        avals = [ShapedArray(shape, from_numpy(dt)) for shape, dt in shapes_dtypes]
        out = self.abstract(*avals, **params)
        if key is not None:
            if len(self._abstract_cache) > 4096:
                self._abstract_cache.clear()
            self._abstract_cache[key] = out
        return out

    def bind(self, *args: Any, **params: Any) -> Any:
        """Apply the op to Tensors ``args`` with static ``params`` in the active interpreter."""
        return _STATE[-1].process(self, args, params)


# The interpreter stack: eager execution at the bottom; graph tracing (and anything else
# that wants to see primitive calls) pushes itself on top while it runs.
_STATE: list[Any] = []


def current_interpreter() -> Any:
    return _STATE[-1]


class interpreter:  # noqa: N801 - used as a context manager like a function
    """``with interpreter(obj):`` routes every ``bind`` to ``obj.process`` meanwhile."""

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __enter__(self) -> Any:
        _STATE.append(self.obj)
        return self.obj

    def __exit__(self, *exc: Any) -> None:
        _STATE.pop()
