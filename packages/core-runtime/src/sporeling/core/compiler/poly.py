"""Shape-polymorphic graphs: one graph for every size an input signature leaves free.

``jit(fn, input_signature=(Tensor(shape=[None, 3], dtype=...),))`` (or ``Cell.set_inputs``)
declares axes of any size. Rather than trace and compile once per size, :func:`build` traces
``fn`` at a few synthetic sizes: a base size per free size ("symbol"), the base with one
symbol grown by one (for each symbol), all symbols grown by two, and the base again (which
must give the very same graph: a seed or counter that changes per trace is not a size).
When the traces record
the same primitives wired the same way, every parameter that differs (a reshape's shape, a
broadcast's target, a mean's element count, ...) is an affine function of the symbols,
fitted from the first traces and checked against the last. The result, a
:class:`PolyGraph`, runs any size: it reads the symbols off the input shapes and evaluates
each affine parameter before calling the kernels.

Free axes of equal size in the call that builds the graph are one symbol (a batch axis
shared by several inputs); a later call must keep them equal. Sizes 0 and 1 are not served
(a size-1 axis broadcasts and a squeeze would drop it): such calls, calls needing gradients
through the jitted function, and functions whose traces differ otherwise (data-dependent
Python, converted control flow, tensors made from shapes in Python) compile per size as
before. The optimisation passes specialise on shapes (fusion, memory plans, folding), so a
polymorphic graph runs its traced primitives as they are.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._eager import conform_dtype
from .._placeholder import Placeholder
from ..tensor import Tensor
from .graph import TracingError, Var

__all__ = ["PolyGraph", "build", "free_axes"]

_BASES = (7, 11, 13, 17, 19, 23)  # distinct base sizes, one per symbol


class _Affine:
    """``const + sum(coef[k] * n[k])`` over the symbols ``n``."""

    __slots__ = ("const", "coefs", "kind")

    def __init__(self, const: Any, coefs: tuple[Any, ...], kind: type) -> None:
        self.const, self.coefs, self.kind = const, coefs, kind

    def __call__(self, sizes: tuple[int, ...]) -> Any:
        return self.kind(self.const + sum(c * n for c, n in zip(self.coefs, sizes, strict=True)))


def free_axes(declared: tuple[Tensor, ...]) -> list[tuple[int, int]]:
    """(argument, axis) of every size the signature leaves free."""
    out = []
    for i, spec in enumerate(declared):
        data = spec._data
        if isinstance(data, Placeholder):
            out += [(i, a) for a, d in enumerate(data.shape) if d == -1]
    return out


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(
        v, (bool, np.bool_)
    )


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            isinstance(a, np.ndarray)
            and isinstance(b, np.ndarray)
            and a.shape == b.shape
            and a.dtype == b.dtype
            and bool(np.array_equal(a, b))
        )
    if type(a) is not type(b):
        return False
    try:
        eq = a == b
    except Exception:  # noqa: BLE001 - objects without a usable ==
        return False
    return eq if isinstance(eq, bool) else False


class _NotPolymorphic(Exception):
    pass


def _fit(base: Any, grown: list[Any], check: Any, origin: tuple[int, ...]) -> Any:
    """A template of ``base`` (traced at sizes ``origin``) whose numbers that vary are
    :class:`_Affine` (or raise)."""
    if _is_num(base):
        if not all(_is_num(g) for g in (*grown, check)):
            raise _NotPolymorphic
        coefs = tuple(g - base for g in grown)
        if all(c == 0 for c in coefs) and check == base:
            return base
        if check != base + 2 * sum(coefs):
            raise _NotPolymorphic  # not affine in the sizes
        kind = int if isinstance(base, (int, np.integer)) else float
        return _Affine(base - sum(c * n for c, n in zip(coefs, origin, strict=True)), coefs, kind)
    if isinstance(base, (tuple, list)):
        parts = [base, *grown, check]
        if any(type(p) is not type(base) or len(p) != len(base) for p in parts):
            raise _NotPolymorphic
        items = [_fit(b, [g[i] for g in grown], check[i], origin) for i, b in enumerate(base)]
        return type(base)(items)
    if isinstance(base, dict):
        parts = [base, *grown, check]
        if any(not isinstance(p, dict) or list(p) != list(base) for p in parts):
            raise _NotPolymorphic
        return {k: _fit(v, [g[k] for g in grown], check[k], origin) for k, v in base.items()}
    if all(_same(base, g) for g in (*grown, check)):
        return base
    raise _NotPolymorphic


def _has_affine(t: Any) -> bool:
    if isinstance(t, _Affine):
        return True
    if isinstance(t, (tuple, list)):
        return any(_has_affine(x) for x in t)
    if isinstance(t, dict):
        return any(_has_affine(x) for x in t.values())
    return False


def _instantiate(t: Any, sizes: tuple[int, ...]) -> Any:
    if isinstance(t, _Affine):
        return t(sizes)
    if isinstance(t, (tuple, list)):
        return type(t)(_instantiate(x, sizes) for x in t)
    if isinstance(t, dict):
        return {k: _instantiate(v, sizes) for k, v in t.items()}
    return t


class _Trace:
    """One trace, with every Var named by its position (inputs, captured, results)."""

    def __init__(self, tracer: Any, invars: list[Var], outvars: list[Any], tree: Any) -> None:
        slot: dict[int, int] = {v.id: i for i, v in enumerate(invars)}
        self.captured = list(tracer.captured.values())
        for v, _ in self.captured:
            slot[v.id] = len(slot)
        self.eqns = []
        for e in tracer.eqns:
            ins = tuple(slot[v.id] for v in e.inputs)
            outs = []
            for v in e.outputs:
                slot[v.id] = len(slot)
                outs.append(slot[v.id])
            self.eqns.append((e.prim, ins, e.params, tuple(outs), [v.dtype for v in e.outputs]))
        self.outs = [slot[v.id] if isinstance(v, Var) else ("const", v) for v in outvars]
        self.out_shapes = tuple(v.shape for v in outvars if isinstance(v, Var))
        self.out_dtypes = tuple(v.dtype for v in outvars if isinstance(v, Var))
        self.tree = tree
        self.n_slots = len(slot)


class PolyGraph:
    """A traced graph whose shape-dependent parameters are evaluated per call."""

    def __init__(
        self,
        base: _Trace,
        grown: list[_Trace],
        check: _Trace,
        groups: list[list[tuple[int, int]]],
        origin: tuple[int, ...],
    ) -> None:
        traces = [base, *grown, check]
        if any(len(t.eqns) != len(base.eqns) or t.n_slots != base.n_slots for t in traces):
            raise _NotPolymorphic
        if any(len(t.captured) != len(base.captured) for t in traces):
            raise _NotPolymorphic
        self.groups = groups
        # captured tensors: the same object in every trace (a Parameter, a closure's tensor),
        # or tensors made while tracing whose values are fixed or affine in the sizes
        self.captured: list[Tensor] = []
        self.inputs: list[tuple[int, Any]] = []
        for k, (_var, t) in enumerate(base.captured):
            others = [tr.captured[k][1] for tr in traces[1:]]
            slot = k + self._n_inputs(base)
            if all(o is t for o in others):
                self.inputs.append((slot, len(self.captured)))  # the call passes it
                self.captured.append(t)
                continue
            arrays = [np.asarray(x.asnumpy()) for x in (t, *others)]
            if any(a.dtype != arrays[0].dtype for a in arrays):
                raise _NotPolymorphic
            if all(a.shape == arrays[0].shape and np.array_equal(a, arrays[0]) for a in arrays):
                self.inputs.append((slot, t._data))
                continue
            if any(a.ndim != 0 for a in arrays):
                raise _NotPolymorphic
            vals = [a.item() for a in arrays]
            fitted = _fit(vals[0], vals[1:-1], vals[-1], origin)
            self.inputs.append((slot, (fitted, arrays[0].dtype)))
        self.steps = []
        for j, (prim, ins, params, outs, dtypes) in enumerate(base.eqns):
            for tr in traces[1:]:
                p2, ins2, _, outs2, _ = tr.eqns[j]
                if p2 is not prim or ins2 != ins or outs2 != outs:
                    raise _NotPolymorphic
            template = _fit(params, [g.eqns[j][2] for g in grown], check.eqns[j][2], origin)
            impl = prim.impl_for(base.device) if base.device is not None else prim.impls["any"]
            self.steps.append((impl, ins, template, _has_affine(template), outs, dtypes, prim))
        for tr in traces[1:]:
            for a, b in zip(base.outs, tr.outs, strict=True):
                if isinstance(a, int) != isinstance(b, int):
                    raise _NotPolymorphic
                if (isinstance(a, int) and a != b) or (
                    not isinstance(a, int) and not _same(a[1], b[1])
                ):
                    raise _NotPolymorphic
        #: the shapes and dtypes of the results, as functions of the sizes
        self.out_shapes = _fit(
            base.out_shapes, [g.out_shapes for g in grown], check.out_shapes, origin
        )
        self.out_dtypes = base.out_dtypes
        self.outs = base.outs
        self.tree = base.tree
        self.n_slots = base.n_slots
        self.n_inputs = self._n_inputs(base)
        self.device = base.device

    @staticmethod
    def _n_inputs(trace: _Trace) -> int:
        return trace.n_slots - len(trace.captured) - sum(len(e[3]) for e in trace.eqns)

    def sizes(self, shapes: list[tuple[int, ...]]) -> tuple[int, ...] | None:
        """The symbols' values for these input shapes, or None when this graph cannot serve
        them (a symbol's axes disagree, or a size below 2)."""
        out = []
        for group in self.groups:
            vals = {shapes[i][a] for i, a in group}
            if len(vals) != 1:
                return None
            (n,) = vals
            if n < 2:
                return None
            out.append(n)
        return tuple(out)

    def run(self, arrays: list[Any], sizes: tuple[int, ...]) -> list[Any]:
        """The results for the input arrays followed by the captured tensors' arrays."""
        xp = self.device.xp
        env: list[Any] = [None] * self.n_slots
        env[: self.n_inputs] = arrays[: self.n_inputs]
        for slot, src in self.inputs:
            if isinstance(src, int):
                env[slot] = arrays[self.n_inputs + src]
            elif isinstance(src, tuple):
                value, dtype = src
                env[slot] = xp.asarray(_instantiate(value, sizes), dtype=dtype)
            else:
                env[slot] = src
        for impl, ins, template, affine, outs, dtypes, prim in self.steps:
            params = _instantiate(template, sizes) if affine else template
            res = impl(xp, *[env[s] for s in ins], **params)
            if prim.multiple_results:
                for s, r, dt in zip(outs, res, dtypes, strict=True):
                    env[s] = conform_dtype(r, dt, xp)
            else:
                env[outs[0]] = conform_dtype(res, dtypes[0], xp)
        return [env[s] if isinstance(s, int) else s[1] for s in self.outs]


def build(
    trace: Callable[[list[Tensor]], tuple[Any, list[Var], list[Any], Any]],
    args: tuple[Tensor, ...],
    declared: tuple[Tensor, ...],
    device: Any,
) -> PolyGraph | None:
    """A :class:`PolyGraph` for ``trace`` (a function of symbolic leaves returning
    ``(tracer, invars, outvars, out_tree)``), or None when its traces do not agree."""
    axes = free_axes(declared)
    groups: dict[int, list[tuple[int, int]]] = {}
    for i, a in axes:
        groups.setdefault(args[i].shape[a], []).append((i, a))
    if not groups or len(groups) > len(_BASES) or min(groups) < 2:
        return None
    group_list = list(groups.values())

    def leaves(sizes: list[int]) -> list[Tensor]:
        out = []
        for i, t in enumerate(args):
            shape = list(t.shape)
            for g, members in enumerate(group_list):
                for j, a in members:
                    if j == i:
                        shape[a] = sizes[g]
            out.append(Tensor._wrap(Var(tuple(shape), t._data.dtype), t._device))
        return out

    base = [_BASES[g] for g in range(len(group_list))]
    try:
        runs = [_Trace(*trace(leaves(base)))]
        for g in range(len(group_list)):
            runs.append(_Trace(*trace(leaves([n + (k == g) for k, n in enumerate(base)]))))
        runs.append(_Trace(*trace(leaves([n + 2 for n in base]))))
        again = _Trace(*trace(leaves(base)))
        for r in (*runs, again):
            r.device = device
        # the base sizes traced again must give the very same graph: a parameter that changes
        # from trace to trace (a random op's seed, a counter) is not a function of the sizes
        PolyGraph(runs[0], [], again, [], ())
        return PolyGraph(runs[0], runs[1:-1], runs[-1], group_list, tuple(base))
    except (_NotPolymorphic, TracingError, ValueError, TypeError, IndexError):
        return None
