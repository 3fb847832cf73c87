"""``jit``: compile a function or Cell into a graph once per input signature.

Signature: every Tensor argument contributes (shape, dtype, device); tensors inside
``mutable`` containers and mutable scalars are graph inputs too. Other Python values — and
tensors inside plain tuples/lists/dicts — are constants of the signature (MindSpore's graph
mode semantics). A cache maps signatures to compiled graphs; each recompile logs which input
changed, and exceeding ``SPORELING_RECOMPILE_BUDGET`` (default 8) warns once.

``SPORELING_DUMP_IR=1`` prints each graph before and after the passes (and, with
``SPORELING_DUMP_KERNELS=1``, generated kernel sources).

Under autograd (a jitted call whose inputs or captured Parameters need gradients) the call
is one primitive, ``jit_call``, whose backward is itself a compiled graph (forward
recomputation + backward), so ``grad(jit(f))`` runs as two graphs and ``jit(grad(f))`` — or
a whole training step — as one.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
import warnings
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from .._backend import get_device
from .._primitive import Primitive, ShapedArray, current_interpreter, interpreter
from ..autograd.tape import GradMode, backward
from ..context import get_context
from ..dtype import from_numpy
from ..tensor import Tensor
from . import poly as _poly
from ._mutable import is_mutable
from ._reasons import describe_recompile
from .control_flow import _Undefined
from .convert import converted, converting, is_converting
from .executor import Executable
from .graph import Graph, TracingError, Var
from .tracer import Tracer

__all__ = ["jit", "JitFunction", "compile_stats"]

log = logging.getLogger("sporeling.jit")

_STATS = {"compiles": 0, "cache_hits": 0}
_MISS = object()


def compile_stats() -> dict[str, int]:
    """Process-wide counters: graphs compiled and cache hits."""
    return dict(_STATS)


# ---- flattening arguments into (signature, tensor leaves) --------------------------------


def _flatten(value: Any, leaves: list[Tensor], mut: bool = False) -> Any:
    """A hashable description of ``value``; graph-input tensors are appended to ``leaves``."""
    if isinstance(value, Tensor):  # every Tensor argument is a graph input
        leaves.append(value)
        return ("T", value.shape, str(value._data.dtype), value._device.name)
    mut = mut or is_mutable(value)
    if isinstance(value, (tuple, list)):
        kind = "M" if mut else "C"
        if not mut:
            # tensors inside plain containers are constants of the signature (by identity)
            return (kind, type(value).__name__, tuple(_const_or_flat(v, leaves) for v in value))
        dyn = getattr(value, "__ms_dynamic_len__", False)
        return (kind, type(value).__name__, dyn, tuple(_flatten(v, leaves, True) for v in value))
    if isinstance(value, dict):
        keys = tuple(value)
        if not mut:
            return ("D", keys, tuple(_const_or_flat(value[k], leaves) for k in keys))
        return ("MD", keys, tuple(_flatten(value[k], leaves, True) for k in keys))
    if mut and isinstance(value, (int, float)):
        leaves.append(Tensor(float(value) if isinstance(value, float) else int(value)))
        return ("S", type(value).__name__)
    try:
        hash(value)
        return ("V", type(value).__name__, value)
    except TypeError:
        return ("O", id(value))


def _const_or_flat(value: Any, leaves: list[Tensor]) -> Any:
    if isinstance(value, Tensor):
        return ("K", id(value), value.shape, str(value._data.dtype))
    return _flatten(value, leaves)


def _rebuild(desc: Any, original: Any, it: Any) -> Any:
    """``original`` with graph-input tensors replaced by the next items of ``it``."""
    kind = desc[0]
    if kind == "T":
        return next(it)
    if kind == "S":
        return next(it)
    if kind in ("C", "M"):
        parts = desc[2] if kind == "C" else desc[3]
        items = [_rebuild(d, o, it) for d, o in zip(parts, original, strict=True)]
        return type(original)(items)
    if kind in ("D", "MD"):
        return type(original)(
            (k, _rebuild(d, original[k], it)) for k, d in zip(desc[1], desc[2], strict=True)
        )
    return original


# ---- compile-time constants -----------------------------------------------------------------


def _refs(pair: tuple[Any, Any]) -> int:
    return sys.getrefcount(pair[1])


def _data_refs(pair: tuple[Any, Any]) -> int:
    return sys.getrefcount(pair[1]._data)


def _graph_only(captured: list[tuple[Var, Tensor]]) -> set[int]:
    """Ids of captured Vars whose tensors only the graph references.

    Such a tensor was made while tracing (``Tensor(2.0)``, the 0-d operand of ``x * 2``,
    ``ops.ones(...)`` in Python code) and dropped by the traced code: nobody else can reach
    it, so its value is fixed and constant folding may read it. Parameters and any tensor
    held elsewhere (a closure, a Cell attribute, an argument tuple, an effect's target) have
    more references and stay live inputs, re-read on every call. Counts are compared with a
    probe stored the same way, so the test does not depend on interpreter details; a tensor
    kept alive by a reference cycle merely misses folding.
    """
    import numpy as np

    probe = (None, Tensor._wrap(np.empty(1), None))  # type: ignore[arg-type]
    base, base_data = _refs(probe), _data_refs(probe)
    out = set()
    for pair in captured:
        if (
            type(pair[1]) is Tensor
            and getattr(pair[1]._data, "base", 0) is None
            and _refs(pair) <= base
            and _data_refs(pair) <= base_data
        ):
            out.add(pair[0].id)
    return out


# ---- flattening outputs --------------------------------------------------------------------


def _out_tree(value: Any, out: list[Any], tracer: Tracer) -> Any:
    if isinstance(value, Tensor):
        data = value._data
        out.append(data if isinstance(data, Var) else tracer.var_of(value))
        return ("T",)
    if isinstance(value, (tuple, list)):
        return (type(value), tuple(_out_tree(v, out, tracer) for v in value))
    if isinstance(value, dict):
        return (dict, tuple(value), tuple(_out_tree(v, out, tracer) for v in value.values()))
    if isinstance(value, _Undefined):
        value.fail()  # a variable an `if` on a tensor value set in one branch only
    return ("V", value)


def _build_out(tree: Any, it: Any) -> Any:
    if tree[0] == "T":
        return next(it)
    if tree[0] == "V":
        return tree[1]
    if tree[0] is dict:
        return {k: _build_out(t, it) for k, t in zip(tree[1], tree[2], strict=True)}
    return tree[0](_build_out(t, it) for t in tree[1])


# ---- the compiled function -----------------------------------------------------------------


class _Compiled:
    """One signature's graph, executable and bookkeeping."""

    def __init__(self, graph: Graph, out_tree: Any, captured: list[Tensor]) -> None:
        self.graph = graph
        self.exe = Executable(graph)
        self.out_tree = out_tree
        self.captured = captured
        self.avals = tuple(
            ShapedArray(v.shape, from_numpy(v.dtype)) if isinstance(v, Var) else None
            for v in graph.outvars
        )


class JitFunction:
    """A function (or Cell) compiled on first call per input signature."""

    def __init__(
        self, fn: Callable[..., Any], cell: Any = None, input_signature: Any = None
    ) -> None:
        self.fn = fn
        self.cell = cell
        self.input_signature = _as_signature(input_signature)
        # signature -> graph, least recently used first; bounded (SPORELING_JIT_CACHE_SIZE)
        self._cache: OrderedDict[Any, _Compiled] = OrderedDict()
        self._evict_warned = False
        self._last_key: Any = None
        self._backward: dict[Any, JitFunction] = {}
        self.compile_count = 0
        self.recompile_reasons: list[str] = []
        self._warned = False
        self._convert = False  # its control flow needed converting: trace converted at once
        # signature with its free sizes masked -> shape-polymorphic graph (None: not one)
        self._poly: dict[Any, Any] = {}
        functools.update_wrapper(self, fn)

    def __repr__(self) -> str:
        return f"<jit {getattr(self.fn, '__qualname__', self.fn)} ({len(self._cache)} graphs)>"

    def __get__(self, obj: Any, objtype: Any = None) -> Any:  # decorating methods
        if obj is None:
            return self
        bound = obj.__dict__.get("_jit_bound_" + self.fn.__name__)
        if bound is None:
            bound = JitFunction(self.fn.__get__(obj, objtype), cell=obj)
            obj.__dict__["_jit_bound_" + self.fn.__name__] = bound
        return bound

    # -- signature -------------------------------------------------------------------------
    def _signature(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, list[Tensor]]:
        leaves: list[Tensor] = []
        desc = (
            tuple(_flatten(a, leaves) for a in args),
            tuple((k, _flatten(v, leaves)) for k, v in sorted(kwargs.items())),
        )
        mode = None
        if self.cell is not None and hasattr(self.cell, "cells_and_names"):
            mode = tuple(c.training for _, c in self.cell.cells_and_names())
        # fusion is decided at compile time, so the switch is part of the signature
        return (desc, mode, get_context("enable_graph_kernel")), leaves

    # -- compile ---------------------------------------------------------------------------
    def _compile(
        self, key: Any, args: tuple[Any, ...], kwargs: dict[str, Any], leaves: list[Tensor]
    ) -> _Compiled:
        if self._last_key is not None:
            reason = describe_recompile(self._last_key, key, self.fn)
            self.recompile_reasons.append(reason)
            log.info("jit %s: recompiling (%s)", getattr(self.fn, "__qualname__", "fn"), reason)
        budget = int(os.environ.get("SPORELING_RECOMPILE_BUDGET", "8"))
        if self._last_key is not None and _dynamic_change(self._declared(), self._last_key, key):
            budget = self.compile_count + 2  # a size the signature declares dynamic: expected
        if self.compile_count >= budget and not self._warned:
            self._warned = True
            warnings.warn(
                f"jit {getattr(self.fn, '__qualname__', 'fn')}: compiled {self.compile_count + 1} "
                f"graphs, over the recompile budget of {budget} (SPORELING_RECOMPILE_BUDGET); "
                f"last reason: {self.recompile_reasons[-1] if self.recompile_reasons else 'n/a'}. "
                "Wrap changing Python values in mutable(...) or keep shapes fixed.",
                RuntimeWarning,
                stacklevel=3,
            )
        if self._convert:
            with converting() as notes:
                tracer, invars, outvars, tree = self._trace(key, args, kwargs, leaves, notes)
        else:
            try:
                tracer, invars, outvars, tree = self._trace(key, args, kwargs, leaves, None)
            except TracingError:
                # control flow on a tensor value: trace again with if/while/for converted
                # into cond / while_loop primitives (see .convert)
                with converting() as notes:
                    tracer, invars, outvars, tree = self._trace(key, args, kwargs, leaves, notes)
                self._convert = True
        captured = list(tracer.captured.values())
        devices = [t._device for t in leaves] + [t._device for _, t in captured]
        graph = Graph(
            invars=invars,
            captured=captured,
            eqns=tracer.eqns,
            outvars=outvars,
            out_tree=tree,
            device=devices[0] if devices else get_device(None),
            constant_ids=_graph_only(captured),
        )
        from .passes import optimize

        dump = os.environ.get("SPORELING_DUMP_IR", "") not in ("", "0")
        if dump:
            print(
                f"# IR of {getattr(self.fn, '__qualname__', 'fn')} before passes\n{graph.pretty()}"
            )
        graph = optimize(graph)
        if dump:
            print(f"# after passes ({'; '.join(graph.notes)})\n{graph.pretty()}")
        compiled = _Compiled(graph, tree, [t for _, t in graph.captured])
        self.compile_count += 1
        _STATS["compiles"] += 1
        return compiled

    def _trace(
        self,
        key: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        leaves: list[Tensor],
        notes: list[str] | None,
    ) -> tuple[Tracer, list[Any], list[Any], Any]:
        """Trace once on symbolic inputs; ``notes`` is not None in a converting trace (it
        collects functions that could not be converted, named in the error if it fails)."""
        tracer = Tracer()
        sym = [Tensor._wrap(Var(t.shape, t._data.dtype), t._device) for t in leaves]
        it = iter(sym)
        targs = tuple(_rebuild(d, a, it) for d, a in zip(key[0][0], args, strict=True))
        tkw = {k: _rebuild(d, kwargs[k], it) for k, d in key[0][1]}
        try:
            with interpreter(tracer):
                result = self._call_fn(*targs, **tkw)
        except TracingError as exc:
            if notes:
                raise TracingError(f"{exc} (not converted: {'; '.join(notes)})") from exc
            raise
        outvars: list[Any] = []
        tree = _out_tree(result, outvars, tracer)
        # locals die on return, so only the graph still holds trace-time tensors
        return tracer, [t._data for t in sym], outvars, tree

    def _call_fn(self, *args: Any, **kwargs: Any) -> Any:
        """``fn``, converted when a converting trace is on (a Cell's construct is converted
        where it runs, in ``Cell._run_construct``)."""
        return _maybe_converted(self.fn)(*args, **kwargs)

    def _declared(self) -> tuple[Tensor, ...] | None:
        """The input signature: given to jit, or set on the cell (``Cell.set_inputs``)."""
        if self.input_signature is not None:
            return self.input_signature
        if self.cell is not None:
            return _as_signature(self.cell.__dict__.get("_input_signature"))
        return None

    def _lookup(
        self, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[Any, _Compiled, list[Tensor]]:
        declared = self._declared()
        if declared is not None:
            _check_signature(self.fn, declared, args)
        key, leaves = self._signature(args, kwargs)
        compiled = self._cache.get(key)
        if compiled is None:
            compiled = self._compile(key, args, kwargs, leaves)
            self._cache[key] = compiled
            self._evict()
        else:
            self._cache.move_to_end(key)
            _STATS["cache_hits"] += 1
        self._last_key = key
        return key, compiled, leaves

    def _evict(self) -> None:
        """Drop the least recently used graphs beyond the cache size (each holds its plan and
        buffers: an unbounded cache grows with every new shape), warning once."""
        size = max(1, int(os.environ.get("SPORELING_JIT_CACHE_SIZE", "64")))
        while len(self._cache) > size:
            old, _ = self._cache.popitem(last=False)
            self._backward.pop(old, None)
            if not self._evict_warned:
                self._evict_warned = True
                warnings.warn(
                    f"jit {getattr(self.fn, '__qualname__', 'fn')}: more than {size} compiled "
                    "graphs (SPORELING_JIT_CACHE_SIZE); evicting the least recently used. "
                    "Wrap changing Python values in mutable(...) or keep shapes fixed.",
                    RuntimeWarning,
                    stacklevel=4,
                )

    # -- call ------------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if isinstance(current_interpreter(), Tracer):
            return self.fn(*args, **kwargs)  # inside another trace: inline
        result = self._poly_call(args, kwargs)
        if result is not _MISS:
            return result
        key, compiled, leaves = self._lookup(args, kwargs)
        captured = compiled.captured
        needs_grad = GradMode.enabled and any(
            t._node is not None or t._requires_grad for t in (*leaves, *captured)
        )
        if needs_grad:
            outs = jit_call_p.bind(*leaves, *captured, fn=self, key=key)
        else:
            device = compiled.graph.device
            for t in leaves:
                if t._device is not device:
                    raise ValueError(
                        f"jit: input tensors must be on {device.name} (the graph's device), "
                        f"got one on {t.device}"
                    )
            arrays = compiled.exe.run([t._data for t in leaves])
            outs = [
                Tensor._wrap(a, device) if av is not None else a
                for a, av in zip(arrays, compiled.avals, strict=True)
            ]
        return _build_out(compiled.out_tree, iter(outs))

    def _poly_call(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Run through the signature's shape-polymorphic graph (see :mod:`.poly`), or
        return ``_MISS`` for the per-size path."""
        declared = self._declared()
        if declared is None or kwargs or len(args) != len(declared):
            return _MISS
        free = set(_poly.free_axes(declared))
        if not free or not all(type(a) is Tensor or isinstance(a, Tensor) for a in args):
            return _MISS
        _check_signature(self.fn, declared, args)
        key, leaves = self._signature(args, kwargs)
        if len(leaves) != len(args):
            return _MISS
        masked = tuple(
            (d[0], tuple(-1 if (i, a) in free else n for a, n in enumerate(d[1])), *d[2:])
            for i, d in enumerate(key[0][0])
        )
        pkey = (masked, *key[1:])
        graph = self._poly.get(pkey, _MISS)
        if graph is _MISS:
            if any(args[i].shape[a] < 2 for i, a in free):
                return _MISS  # sizes 0 and 1 do not build one (see .poly)
            graph = _poly.build(
                lambda lv: self._trace(key, args, kwargs, lv, None), args, declared,
                args[0]._device,
            )  # fmt: skip
            self._poly[pkey] = graph
            if graph is not None:
                self.compile_count += 1
                _STATS["compiles"] += 1
                log.info("jit %s: one graph for every size of %s", self.__qualname__, sorted(free))
        if graph is None:
            return _MISS
        sizes = graph.sizes([t.shape for t in args])
        if sizes is None or any(t._device is not graph.device for t in args):
            return _MISS
        _STATS["cache_hits"] += 1
        captured = graph.captured
        if GradMode.enabled and any(
            t._node is not None or t._requires_grad for t in (*args, *captured)
        ):
            results = iter(poly_call_p.bind(*args, *captured, fn=self, graph=graph, sizes=sizes))
            outs = [next(results) if isinstance(s, int) else s[1] for s in graph.outs]
        else:
            arrays = graph.run([t._data for t in (*args, *captured)], sizes)
            outs = [
                Tensor._wrap(a, graph.device) if isinstance(s, int) else a
                for a, s in zip(arrays, graph.outs, strict=True)
            ]
        return _build_out(graph.tree, iter(outs))

    def backward_fn(self, key: Any) -> JitFunction:
        """The compiled backward of signature ``key`` (forward recomputation + vjp)."""
        bwd = self._backward.get(key)
        if bwd is None:
            compiled = self._cache[key]
            n_leaves = len(compiled.graph.invars)
            n_captured = len(compiled.captured)
            fn = self.fn
            arg_desc, kw_desc = key[0]

            captured_objs = compiled.captured

            def backward_graph(*flat: Any) -> tuple[Any, ...]:
                leaves = [_as_leaf(t) for t in flat[:n_leaves]]
                cts = list(flat[n_leaves + n_captured :])
                it = iter(leaves)
                targs = tuple(_from_desc(d, it) for d in arg_desc)
                # fn reads the captured tensors (Parameters) by reference: point them at this
                # call's inputs while it runs, so they are the gradient targets.
                saved = [(t._data, t._node, t._index, t._requires_grad) for t in captured_objs]
                prev = GradMode.enabled
                GradMode.enabled = True
                try:
                    for t, src in zip(
                        captured_objs, flat[n_leaves : n_leaves + n_captured], strict=True
                    ):
                        t._data, t._node, t._index = src._data, None, 0
                        t._requires_grad = True
                    kw = {k: _from_desc(d, it) for k, d in kw_desc}
                    result = _maybe_converted(fn)(*targs, **kw)
                    outs = [o for o in _tensors_of(result)]
                    pairs = [
                        (o, c)
                        for o, c in zip(outs, cts, strict=True)
                        if o.dtype.category >= 2 and (o._node is not None or o._requires_grad)
                    ]
                    targets = leaves + list(captured_objs)
                    found = backward(
                        [o for o, _ in pairs], [c for _, c in pairs], targets, create_graph=False
                    )
                    grads = tuple(found[id(t)][1] if id(t) in found else _zeros(t) for t in targets)
                finally:
                    GradMode.enabled = prev
                    for t, (d, nd, ix, rg) in zip(captured_objs, saved, strict=True):
                        t._data, t._node, t._index, t._requires_grad = d, nd, ix, rg
                return grads

            bwd = JitFunction(backward_graph)
            bwd._convert = self._convert
            self._backward[key] = bwd
        return bwd


def _as_signature(sig: Any) -> tuple[Tensor, ...] | None:
    if sig is None:
        return None
    sig = (sig,) if isinstance(sig, Tensor) else tuple(sig)
    for i, t in enumerate(sig):
        if not isinstance(t, Tensor):
            raise TypeError(
                f"jit: input_signature[{i}] expected a Tensor (e.g. Tensor(shape=[None, 3], "
                f"dtype=ms.float32)), got {type(t).__name__}"
            )
    return sig


def _check_signature(fn: Any, declared: tuple[Tensor, ...], args: tuple[Any, ...]) -> None:
    """Each positional argument fits its declared tensor (None/-1 sizes are free)."""
    from .._placeholder import Placeholder

    name = getattr(fn, "__qualname__", "fn")
    if len(args) != len(declared):
        raise TypeError(
            f"jit {name}: the input signature declares {len(declared)} tensors, got "
            f"{len(args)} positional arguments"
        )
    for i, (spec, arg) in enumerate(zip(declared, args, strict=True)):
        if not isinstance(arg, Tensor):
            raise TypeError(
                f"jit {name}: argument {i} expected a Tensor (the input signature declares "
                f"{spec!r}), got {type(arg).__name__}"
            )
        data = spec._data
        want = data if isinstance(data, Placeholder) else Placeholder(data.shape, data.dtype)
        why = want.matches(arg.shape, arg._data.dtype)
        if why is not None:
            raise ValueError(f"jit {name}: argument {i} has {why} by the input signature {spec!r}")


def _dynamic_change(declared: Any, old: Any, new: Any) -> bool:
    """Whether only sizes the signature leaves free changed between two signatures."""
    if declared is None:
        return False
    (old_args, old_kw), old_rest = old[0], old[1:]
    (new_args, new_kw), new_rest = new[0], new[1:]
    if old_kw != new_kw or old_rest != new_rest or len(old_args) != len(new_args):
        return False
    for i, (a, b) in enumerate(zip(old_args, new_args, strict=True)):
        if a == b:
            continue
        if i >= len(declared) or a[0] != "T" or b[0] != "T" or a[2:] != b[2:]:
            return False
        shape = declared[i]._data.shape
        if any(x != y and shape[k] != -1 for k, (x, y) in enumerate(zip(a[1], b[1], strict=True))):
            return False
    return True


def _maybe_converted(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` converted during a converting trace (a Cell's ``_run_construct`` is left alone:
    it converts the construct it runs)."""
    if is_converting() and getattr(fn, "__name__", "") != "_run_construct":
        return converted(fn)
    return fn


def _from_desc(desc: Any, it: Any) -> Any:
    """Rebuild an argument from its signature alone (for the backward graph)."""
    from . import _mutable as m

    kind = desc[0]
    if kind in ("T", "S"):
        return next(it)
    if kind == "V":
        return desc[2]
    if kind in ("C", "M"):
        parts = desc[2] if kind == "C" else desc[3]
        items = [_from_desc(d, it) for d in parts]
        types = {
            "tuple": tuple,
            "list": list,
            "MutableTuple": m.MutableTuple,
            "MutableList": m.MutableList,
        }
        return types.get(desc[1], tuple)(items)
    if kind in ("D", "MD"):
        out = {k: _from_desc(d, it) for k, d in zip(desc[1], desc[2], strict=True)}
        return m.MutableDict(out) if kind == "MD" else out
    raise TypeError(
        "jit: gradients through a compiled function need arguments that are Tensors, "
        "mutable containers or hashable constants; got an argument described as "
        f"{desc!r}. Call grad inside the jitted function instead (jit(grad(f)))."
    )


def _as_leaf(t: Tensor) -> Tensor:
    leaf = Tensor._wrap(t._data, t._device)
    leaf._requires_grad = True
    return leaf


def _zeros(t: Tensor) -> Tensor:
    from ..ops import zeros_like

    return zeros_like(t)


def _tensors_of(value: Any) -> list[Tensor]:
    if isinstance(value, Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _tensors_of(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors_of(v)]
    return []


# ---- the primitive a compiled call becomes under autograd ----------------------------------


def _call_abstract(*avals: ShapedArray, fn: JitFunction, key: Any) -> tuple[ShapedArray, ...]:
    return tuple(a for a in fn._cache[key].avals if a is not None)


def _call_impl(xp: Any, *arrays: Any, fn: JitFunction, key: Any) -> tuple[Any, ...]:
    compiled = fn._cache[key]
    n = len(compiled.graph.invars)
    saved = [t._data for t in compiled.captured]
    try:
        for t, a in zip(compiled.captured, arrays[n:], strict=True):
            t._data = a  # same arrays, passed explicitly so the tape sees them as inputs
        outs = compiled.exe.run(list(arrays[:n]))
    finally:
        for t, a in zip(compiled.captured, saved, strict=True):
            t._data = a
    return tuple(o for o, av in zip(outs, compiled.avals, strict=True) if av is not None)


def _call_vjp(cts: Any, *inputs: Tensor, out: Any, fn: JitFunction, key: Any) -> tuple[Any, ...]:
    cts = cts if isinstance(cts, tuple) else (cts,)
    if GradMode.enabled:
        return _recorded_vjp(cts, inputs, fn, key)
    return tuple(fn.backward_fn(key)(*inputs, *cts))


def _recorded_vjp(
    cts: tuple[Any, ...], inputs: tuple[Tensor, ...], fn: JitFunction, key: Any
) -> tuple[Any, ...]:
    """The vjp of a compiled call when that vjp is itself differentiated (a second-order
    gradient, ``create_graph``): ``fn`` runs eagerly on the call's own inputs and its backward
    is recorded, so the gradient stays connected to the inputs and to the Parameters ``fn``
    reads. The compiled backward cannot do this: it starts from detached copies."""
    compiled = fn._cache[key]
    n_leaves = len(compiled.graph.invars)
    arg_desc, kw_desc = key[0]
    it = iter(inputs[:n_leaves])
    args = tuple(_from_desc(d, it) for d in arg_desc)
    kwargs = {k: _from_desc(d, it) for k, d in kw_desc}
    outs = _tensors_of(fn.fn(*args, **kwargs))
    return _input_grads(outs, cts, inputs, create_graph=True)


def _input_grads(
    outs: Any, cts: tuple[Any, ...], inputs: tuple[Tensor, ...], create_graph: bool
) -> tuple[Any, ...]:
    """The gradients of ``inputs`` from the eagerly recomputed ``outs`` and their cotangents
    (zeros for an input the outputs do not depend on)."""
    pairs = [
        (o, c)
        for o, c in zip(outs, cts, strict=True)
        if o.dtype.category >= 2 and (o._node is not None or o._requires_grad)
    ]
    targets = list(inputs)
    found = backward(
        [o for o, _ in pairs], [c for _, c in pairs], targets, create_graph=create_graph
    )
    return tuple(found[id(t)][1] if id(t) in found else _zeros(t) for t in targets)


def _poly_abstract(*avals: ShapedArray, fn: Any, graph: Any, sizes: Any) -> Any:
    shapes = _poly._instantiate(graph.out_shapes, sizes)
    return tuple(
        ShapedArray(tuple(sh), from_numpy(dt))
        for sh, dt in zip(shapes, graph.out_dtypes, strict=True)
    )


def _poly_impl(xp: Any, *arrays: Any, fn: Any, graph: Any, sizes: Any) -> tuple[Any, ...]:
    outs = graph.run(list(arrays), sizes)
    return tuple(o for o, s in zip(outs, graph.outs, strict=True) if isinstance(s, int))


def _poly_vjp(cts: Any, *inputs: Tensor, out: Any, fn: Any, graph: Any, sizes: Any) -> Any:
    """The vjp of a polymorphic call: ``fn`` runs again eagerly on the call's inputs and
    autograd differentiates it (recorded when this vjp is itself differentiated)."""
    cts = cts if isinstance(cts, tuple) else (cts,)
    n = len(inputs) - len(graph.captured)
    prev = GradMode.enabled
    GradMode.enabled = True
    try:
        outs = _tensors_of(fn.fn(*inputs[:n]))
    finally:
        GradMode.enabled = prev
    return _input_grads(outs, cts, inputs, create_graph=prev)


#: a shape-polymorphic compiled call under autograd (see :mod:`.poly`)
poly_call_p = Primitive(
    "jit_poly_call",
    "opaque",
    _poly_abstract,
    impl=_poly_impl,
    vjp=_poly_vjp,
    multiple_results=True,
    pinned=True,
)

jit_call_p = Primitive(
    "jit_call",
    "opaque",
    _call_abstract,
    impl=_call_impl,
    vjp=_call_vjp,
    multiple_results=True,
    pinned=True,  # a nested compiled call: its graph was optimised on its own
)


def jit(fn: Any = None, *, input_signature: Any = None, **options: Any) -> Any:
    """Compile ``fn`` (a function or a Cell) into a graph per input signature.

    Usable as ``@jit``, ``jit(fn)`` or ``jit(cell)``. ``input_signature`` (MindSpore's): one
    Tensor per positional argument, ``Tensor(shape=[None, 3], dtype=...)`` leaving the
    ``None`` sizes free; each call's tensors are checked against it (rank, fixed sizes,
    dtype), and one graph serves every free size where the function's traces differ only by
    those sizes (:mod:`.poly`; otherwise a graph per size, outside the recompile budget).

    >>> from sporeling.core import Tensor, ops
    >>> f = jit(lambda x: ops.exp(x) * 2)
    >>> f(Tensor([0.0])).tolist()
    [2.0]
    """
    if fn is None:
        return lambda f: jit(f, input_signature=input_signature, **options)
    if isinstance(fn, JitFunction):
        return fn
    from ..nn.cell import Cell

    if isinstance(fn, Cell):
        return JitFunction(fn.construct, cell=fn, input_signature=input_signature)
    if not callable(fn):
        raise TypeError(
            f"jit: argument 'fn' expected a function or a Cell, got {type(fn).__name__}"
        )
    return JitFunction(fn, input_signature=input_signature)
