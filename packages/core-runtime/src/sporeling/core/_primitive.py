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
* ``kind`` — one of :class:`Kind` (a closed set: ``"elementwise"``, ``"reduce"``,
  ``"movement"``, ``"opaque"``, ``"random"``, ``"creation"``, ``"effect"``) for the graph
  compiler's passes; any other value is refused at registration.

What the graph compiler knows about an op lives here too, so that no pass keeps a table
keyed by op names (a missing entry there silently skipped an optimisation):

* ``scalar`` — for elementwise ops, a scalar expression over ``x`` (unary) or ``x, y``
  (binary), e.g. ``"1/(1+exp(-x))"``, from which the fuser generates kernels. Numeric
  params appear by name (``"where(x > 0, x, alpha * x)"``) and are substituted.
* ``scalar_rule(params)`` — for an op whose scalar form depends on a non-numeric param
  (gelu's ``approximate``, cast's ``dtype``): the expression for those params, or None
  when they cannot fuse.
* ``ufunc`` — the name of the array-module ufunc the impl is exactly (``"add"``), so the
  buffer-reuse pass can call it with ``out=`` an input buffer that dies there.
* ``cpu_into(xp, *arrays, out=buf, **params)`` — a CPU implementation that writes its one
  result into a given buffer (``out=None``: allocate); the memory plan gives such ops
  buffers of its arena.
* ``fresh`` — results are always new arrays, never an input or a view of one (default:
  true when ``ufunc`` or ``cpu_into`` is given).
* ``pinned`` — calls are never removed, merged, folded or moved across one another
  (default: true for the ``"effect"`` and ``"random"`` kinds; collectives set it too).
* ``decomposition`` — a :class:`Decomposition`: the op written with other ops, and when the
  graph compiler should use that form (so a row op fuses with its neighbours).
* ``with_bias`` — the primitive computing this op plus a bias vector along the last axis
  (``dense`` -> ``dense_bias``): the bias pass folds ``add(op(...), b)`` into it.
* ``reduction`` — for reductions, the monoid over the reduced axes (``"sum"``, ``"max"``,
  ``"min"``): the fuser turns such reductions into row or column steps of its kernels.
* ``same_order`` — the result is the input's elements in the same (C) order under another
  shape (``reshape``): values, and rows of the fuser's row kernels, pass through unchanged.

``bind`` hands a call to the active interpreter (eager by default). Ops never branch on
the interpreter or device outside their impls.
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .dtype import DType, from_numpy

__all__ = [
    "Decomposition",
    "Kind",
    "Primitive",
    "ShapedArray",
    "StaticParams",
    "REGISTRY",
    "current_interpreter",
    "interpreter",
]

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


class StaticParams(dict):  # type: ignore[type-arg]
    """A primitive's parameters built once by a hot op wrapper and passed to every call
    (``x.sum()``, ``reshape`` to a shape seen before), never mutated afterwards.

    An ordinary ``dict`` everywhere; the eager fast path keys its plans by the small int
    ``token`` instead of building and hashing ``tuple(params.items())`` per call (~0.15 us
    of a ~1 us tiny op). Two objects with equal items have different tokens: separate plans
    for one signature, which the plan memo allows."""

    __slots__ = ("token",)
    _tokens = itertools.count(1)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.token = next(StaticParams._tokens)


class Kind(enum.StrEnum):
    """The closed set of primitive kinds the graph compiler's passes distinguish."""

    ELEMENTWISE = "elementwise"  # one result element per (broadcast) input element
    REDUCE = "reduce"  # sums, maxima... over axes
    MOVEMENT = "movement"  # reshapes, transposes, broadcasts, slices
    OPAQUE = "opaque"  # anything else with a hand-written kernel (matmul, conv, softmax)
    RANDOM = "random"  # draws from the global generator: never merged or reordered
    CREATION = "creation"  # new arrays from params alone (zeros, arange)
    EFFECT = "effect"  # writes into existing state (assign, optimizer steps)
    FUSED = "fused"  # a kernel the fusion pass generated (never registered)


@dataclass(frozen=True)
class Decomposition:
    """An op written with other ops, kept beside the op it replaces.

    ``rule(*tensors, **params)`` returns a tuple of Tensors, one per result of the op (it
    receives the params named in ``params``). ``when(inputs, params)`` (inputs have
    ``shape``, ``ndim`` and ``dtype``) says whether the graph compiler should expand an
    equation into the rule, typically where the parts fuse with their neighbours.
    """

    rule: Callable[..., tuple[Any, ...]]
    when: Callable[[Any, dict[str, Any]], bool]
    params: tuple[str, ...] = ()


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
        scalar_rule: Callable[[dict[str, Any]], str | None] | None = None,
        ufunc: str | None = None,
        cpu_into: Impl | None = None,
        fresh: bool | None = None,
        pinned: bool | None = None,
        decomposition: Decomposition | None = None,
        with_bias: Primitive | None = None,
        reduction: str | None = None,
        same_order: bool = False,
        batch_rule: Callable[..., Any] | None = None,
    ) -> None:
        if name in REGISTRY:
            raise ValueError(f"primitive {name!r} is already registered")
        try:
            known = Kind(kind)
        except ValueError:
            raise ValueError(
                f"primitive {name!r}: argument 'kind' expected one of "
                f"{[k.value for k in Kind if k is not Kind.FUSED]}, got {kind!r}"
            ) from None
        if known is Kind.FUSED:
            raise ValueError(f"primitive {name!r}: kind 'fused' is for generated kernels only")
        self.name = name
        self.kind = known
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
        self.scalar_rule = scalar_rule
        self.ufunc = ufunc
        self.cpu_into = cpu_into
        self.fresh = (ufunc is not None or cpu_into is not None) if fresh is None else fresh
        self.pinned = known in (Kind.EFFECT, Kind.RANDOM) if pinned is None else pinned
        self.decomposition = decomposition
        self.with_bias = with_bias
        if reduction not in (None, "sum", "max", "min"):
            raise ValueError(
                f"primitive {name!r}: argument 'reduction' expected 'sum', 'max', 'min' or "
                f"None, got {reduction!r}"
            )
        self.reduction = reduction
        self.same_order = same_order
        #: vmap's rule ``(prim, values, dims, ndims, params) -> result or None`` (see
        #: ops/_batch_rules.py); None: the rule of the kind, if any, else once per example
        self.batch_rule = batch_rule
        self._abstract_cache: dict[Any, Any] = {}
        self._impl_by_device: dict[Any, Impl] = {}  # memo of impl_for
        self._eager_plans: dict[Any, Any] = {}  # the eager fast path's memo (_eager.py)
        #: optional ``(impl, arrays, params) -> fn(*arrays)`` (or None: no specialization)
        #: computing what ``impl(xp, *arrays, **params)`` does for that signature, with the
        #: array module and parameters bound: the eager fast path's plan calls it (a ufunc
        #: or a bound method saves the Python frames of a hot op's impl)
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
