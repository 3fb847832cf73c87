"""Control flow on tensor values in graph mode: the ``cond`` and ``while_loop`` primitives.

The converter (:mod:`.convert`) rewrites a construct's ``if`` / ``while`` / ``for i in
range(...)`` statements into calls of :func:`if_`, :func:`while_` and :func:`for_range`, with
the branches and the loop's condition and body as local functions of the variables they
assign. Each helper looks at the condition when it runs: a Python value (or, eagerly, a
concrete tensor) runs the statement as Python would; a *traced* tensor traces each branch
(or the condition and the body) into a closed sub-graph, and the statement becomes one
``cond`` or ``while_loop`` equation holding them, as MindSpore's graph mode compiles it.

A sub-graph's inputs are explicit: loop variables, then every tensor its code read from
outside (values of the enclosing graph, Parameters, constants), so gradients reach them all.
Gradients: ``cond``'s is a ``cond`` of the branches' backward graphs (so it differentiates
again); ``while_loop``'s re-runs the loop keeping each iteration's variables and applies the
body's backward graph in reverse (first order only). Branch outputs must agree in structure,
shape and dtype, and loop variables must keep theirs; otherwise a :class:`TracingError` says
which variable differs (GRAPH_MODE then runs the cell eagerly, with a warning saying why).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._primitive import Primitive, ShapedArray, interpreter
from ..autograd.tape import GradMode, backward
from ..dtype import from_numpy
from ..tensor import Tensor
from .graph import Eqn, Graph, TracingError, Var
from .tracer import Tracer

__all__ = ["if_", "while_", "for_range", "and_", "or_", "not_", "ifexp", "UNDEFINED"]


class _Undefined:
    """A variable not bound (yet): assigned in a branch or loop body, not before it. One left
    unbound by an ``if`` on a tensor value (set in one branch only) raises on any use."""

    def __init__(self, reason: str = "") -> None:
        self.reason = reason

    def __repr__(self) -> str:
        return "<undefined>"

    def fail(self, *args: Any, **kwargs: Any) -> Any:
        raise TracingError(self.reason or "a variable was used before it was assigned")

    __getattr__ = __call__ = __getitem__ = __iter__ = __len__ = __bool__ = __index__ = fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = fail
    __rtruediv__ = __matmul__ = __rmatmul__ = __pow__ = __neg__ = __lt__ = __gt__ = fail
    __le__ = __ge__ = __array__ = fail


UNDEFINED = _Undefined()


def get(scope: dict[str, Any], name: str) -> Any:
    """``name``'s value in ``scope`` (``locals()``), or UNDEFINED."""
    return scope.get(name, UNDEFINED)


def _traced(x: Any) -> bool:
    return isinstance(x, Tensor) and isinstance(x._data, Var)


def _floating(t: Any) -> bool:
    return np.dtype(t.dtype if isinstance(t, Var) else t._data.dtype).kind in "fc"


# ---- sub-graphs -----------------------------------------------------------------------------


class _SubTracer(Tracer):
    """A tracer whose graph is closed: tensors from outside (symbolic values of the enclosing
    trace included) become captured inputs instead of being read as its own values."""

    def __init__(self, own: set[int]) -> None:
        super().__init__()
        self.own = own

    def var_of(self, t: Tensor) -> Var:
        data = t._data
        if isinstance(data, Var) and data.id in self.own:
            return data
        hit = self.captured.get(id(t))
        if hit is None:
            hit = (Var(data.shape, data.dtype), t)
            self.captured[id(t)] = hit
        return hit[0]

    def process(self, prim: Any, args: tuple[Any, ...], params: dict[str, Any]) -> Any:
        out = super().process(prim, args, params)
        self.own.update(v.id for v in self.eqns[-1].outputs)
        return out


class SubGraph:
    """A closed traced function: its raw equations (re-bound to differentiate it) and, built
    on first use, an optimised executable of a copy."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self._exe: Any = None
        self._vjp: SubGraph | None = None

    def __repr__(self) -> str:
        return f"<subgraph {len(self.graph.eqns)} eqns>"

    @property
    def out_avals(self) -> tuple[ShapedArray, ...]:
        return tuple(ShapedArray(v.shape, from_numpy(v.dtype)) for v in self.graph.outvars)

    @property
    def has_effects(self) -> bool:
        from .passes._util import never_touch

        return any(never_touch(e.prim) for e in self.graph.eqns)

    def run(self, arrays: list[Any]) -> list[Any]:
        if self._exe is None:
            from .executor import Executable
            from .passes import optimize

            g = self.graph
            copy = Graph(
                invars=list(g.invars),
                captured=list(g.captured),
                eqns=[Eqn(e.prim, list(e.inputs), dict(e.params), list(e.outputs)) for e in g.eqns],
                outvars=list(g.outvars),
                device=g.device,
            )
            self._exe = Executable(optimize(copy))
        return self._exe.run(arrays)

    def evaluate(self, inputs: list[Tensor]) -> list[Tensor]:
        """Bind the raw equations on ``inputs`` in the active interpreter (autograd sees them)."""
        g = self.graph
        env: dict[int, Tensor] = {v.id: t for v, t in zip(g.invars, inputs, strict=True)}
        env.update({v.id: t for v, t in g.captured})
        for e in g.eqns:
            res = e.prim.bind(*[env[v.id] for v in e.inputs], **e.params)
            for v, r in zip(e.outputs, res if e.prim.multiple_results else (res,), strict=True):
                env[v.id] = r
        return [env[v.id] for v in g.outvars]

    def vjp(self) -> SubGraph:
        """The backward graph: ``(*inputs, *output cotangents) -> one gradient per input``
        (zeros for inputs that are not floating point or that no output depends on)."""
        if self._vjp is None:
            g = self.graph
            n_in = len(g.invars)

            def bwd(*flat: Tensor) -> list[Tensor]:
                from ..ops import zeros_like

                leaves = [Tensor._wrap(t._data, t._device) for t in flat[:n_in]]
                for t in leaves:
                    t._requires_grad = _floating(t)
                outs = self.evaluate(leaves)
                pairs = [
                    (o, c)
                    for o, c in zip(outs, flat[n_in:], strict=True)
                    if _floating(o) and (o._node is not None or o._requires_grad)
                ]
                found = backward([o for o, _ in pairs], [c for _, c in pairs], leaves, False)
                return [found[id(t)][1] if id(t) in found else zeros_like(t) for t in leaves]

            avals = [(v.shape, v.dtype) for v in g.invars] + [(v.shape, v.dtype) for v in g.outvars]
            self._vjp, _ = _trace_closed(bwd, avals, g.device, grad=True, hoist=False)
        return self._vjp


def _trace_closed(
    fn: Any, avals: list[tuple[Any, Any]], device: Any, *, grad: bool, hoist: bool
) -> tuple[SubGraph, list[Tensor]]:
    """Trace ``fn(*symbolic inputs)`` (its result: a flat list of tensors) into a SubGraph.
    With ``hoist``, tensors it read from outside become extra inputs (returned, in order);
    otherwise they stay captured by reference."""
    sym = [Tensor._wrap(Var(shape, dtype), device) for shape, dtype in avals]
    tracer = _SubTracer({t._data.id for t in sym})
    prev = GradMode.enabled
    GradMode.enabled = grad
    try:
        with interpreter(tracer):
            outs = fn(*sym)
    finally:
        GradMode.enabled = prev
    outvars = [tracer.var_of(o) for o in outs]
    captured = list(tracer.captured.values())
    invars = [t._data for t in sym]
    free: list[Tensor] = []
    if hoist:
        invars += [v for v, _ in captured]
        free = [t for _, t in captured]
        captured = []
    graph = Graph(
        invars=invars, captured=captured, eqns=tracer.eqns, outvars=outvars, device=device
    )
    return SubGraph(graph), free


def _merge_inputs(parts: list[tuple[SubGraph, list[Tensor]]], n_fixed: int) -> list[Tensor]:
    """Give every sub-graph the same inputs: its fixed ones, then the union of the tensors any
    of them read from outside (an input a sub-graph does not read is a fresh unused Var)."""
    union: dict[int, Tensor] = {}
    for _, free in parts:
        for t in free:
            union.setdefault(id(t), t)
    for sg, free in parts:
        g = sg.graph
        mine = {id(t): v for t, v in zip(free, g.invars[n_fixed:], strict=True)}
        g.invars = g.invars[:n_fixed] + [
            mine.get(k, Var(t._data.shape, t._data.dtype)) for k, t in union.items()
        ]
    return list(union.values())


# ---- pytrees of branch results and loop variables --------------------------------------------


def _flatten(value: Any, leaves: list[Any]) -> Any:
    if isinstance(value, (tuple, list)):
        return (type(value), tuple(_flatten(v, leaves) for v in value))
    if isinstance(value, dict):
        return (dict, tuple(value), tuple(_flatten(v, leaves) for v in value.values()))
    leaves.append(value)
    return None


def _unflatten(tree: Any, it: Any) -> Any:
    if tree is None:
        return next(it)
    if tree[0] is dict:
        return {k: _unflatten(t, it) for k, t in zip(tree[1], tree[2], strict=True)}
    return tree[0](_unflatten(t, it) for t in tree[1])


def _is_number(x: Any) -> bool:
    return isinstance(x, (bool, int, float, np.number)) and not isinstance(x, Tensor)


def _leaf_names(tree: Any, names: tuple[str, ...]) -> list[str]:
    """A readable name per leaf of the flattened tuple of variables ``names``."""
    out: list[str] = []

    def walk(t: Any, path: str) -> None:
        if t is None:
            out.append(path)
        elif t[0] is dict:
            for k, sub in zip(t[1], t[2], strict=True):
                walk(sub, f"{path}[{k!r}]")
        else:
            for i, sub in enumerate(t[1]):
                walk(sub, f"{path}[{i}]" if path else names[i] if i < len(names) else f"#{i}")

    walk(tree, "")
    return out


def _as_pred(t: Tensor, what: str) -> Tensor:
    """A traced condition as a 0-d bool tensor (a tensor's truth value needs one element)."""
    from ..ops import not_equal, reshape

    if t.size != 1:
        raise ValueError(
            f"{what}: the truth value of a tensor with {t.size} elements is ambiguous; "
            "use .any() or .all()"
        )
    t = reshape(t, ())
    return t if t._data.dtype == np.bool_ else not_equal(t, 0)


# ---- cond -------------------------------------------------------------------------------------


def _cond_abstract(pred: ShapedArray, *ins: ShapedArray, branches: Any) -> Any:
    return branches[0].out_avals


def _cond_impl(xp: Any, pred: Any, *arrays: Any, branches: Any) -> tuple[Any, ...]:
    return tuple(branches[0 if bool(pred) else 1].run(list(arrays)))


def _cond_vjp(cts: Any, pred: Tensor, *ins: Tensor, out: Any, branches: Any) -> Any:
    cts = cts if isinstance(cts, tuple) else (cts,)
    back = (branches[0].vjp(), branches[1].vjp())
    grads = cond_p.bind(pred, *ins, *cts, branches=back)
    return (None, *[g if _floating(t) else None for g, t in zip(grads, ins, strict=True)])


cond_p = Primitive(
    "cond", "opaque", _cond_abstract, impl=_cond_impl, vjp=_cond_vjp, multiple_results=True
)
#: a cond whose branches hold effects or random draws: kept and ordered by every pass
cond_effect_p = Primitive(
    "cond_effect", "effect", _cond_abstract, impl=_cond_impl, vjp=_cond_vjp, multiple_results=True
)


def _cond(pred: Tensor, fns: tuple[Any, Any], names: tuple[str, ...], what: str) -> Any:
    device = pred._device
    traced = []
    for fn in fns:
        leaves: list[Any] = []
        state: dict[str, Any] = {}

        def flat(fn: Any = fn, leaves: list[Any] = leaves, state: dict[str, Any] = state) -> Any:
            state["tree"] = _flatten(fn(), leaves)
            return [x for x in leaves if isinstance(x, Tensor)]

        sg, free = _trace_closed(flat, [], device, grad=False, hoist=True)
        traced.append((sg, free, leaves, state["tree"]))
    (sg_t, free_t, leaves_t, tree_t), (sg_f, free_f, leaves_f, tree_f) = traced
    if tree_t != tree_f:
        raise TracingError(
            f"{what} on a tensor value: the branches give {', '.join(names)} different "
            "structures (tuple/list/dict shapes must match in both branches)"
        )
    labels = _leaf_names(tree_t, names)
    outs: list[Any] = []  # per leaf: a constant, or the index of a cond output
    out_t: list[Var] = []
    out_f: list[Var] = []
    tv = iter(sg_t.graph.outvars)
    fv = iter(sg_f.graph.outvars)
    for label, a, b in zip(labels, leaves_t, leaves_f, strict=True):
        va = next(tv) if isinstance(a, Tensor) else None
        vb = next(fv) if isinstance(b, Tensor) else None
        if va is None and vb is None:
            if a is b or (type(a) is type(b) and _is_number(a) and a == b):
                outs.append(("const", a))
                continue
            if not (_is_number(a) and _is_number(b)):
                if isinstance(a, _Undefined) or isinstance(b, _Undefined):
                    outs.append(("const", _one_branch(label, what)))
                    continue
                raise TracingError(
                    f"{what} on a tensor value: `{label}` is {a!r} in one branch and {b!r} in "
                    "the other; graph mode needs tensors (or equal constants) there"
                )
        known = va if va is not None else vb
        dtype = known.dtype if known is not None else None
        if (isinstance(a, _Undefined) or isinstance(b, _Undefined)) and not (
            label.endswith("__sp") and known is not None  # the converter's `return` value:
        ):  # a branch's own temporary                     # zeros where it is not set
            outs.append(("const", _one_branch(label, what)))
            continue
        if isinstance(a, _Undefined):
            va = _zeros_out(sg_t, free_t, known)
        if isinstance(b, _Undefined):
            vb = _zeros_out(sg_f, free_f, known)
        va = va if va is not None else _const_out(sg_t, free_t, a, dtype, label, what)
        vb = vb if vb is not None else _const_out(sg_f, free_f, b, dtype, label, what)
        if va.shape != vb.shape or va.dtype != vb.dtype:
            raise TracingError(
                f"{what} on a tensor value: `{label}` is {va.dtype}{list(va.shape)} in the true "
                f"branch and {vb.dtype}{list(vb.shape)} in the false branch; both must agree"
            )
        outs.append(("out", len(out_t)))
        out_t.append(va)
        out_f.append(vb)
    sg_t.graph.outvars, sg_f.graph.outvars = out_t, out_f
    free = _merge_inputs([(sg_t, free_t), (sg_f, free_f)], 0)
    if not out_t and not (sg_t.has_effects or sg_f.has_effects):
        results: tuple[Any, ...] = ()
    else:
        prim = cond_effect_p if sg_t.has_effects or sg_f.has_effects else cond_p
        results = prim.bind(pred, *free, branches=(sg_t, sg_f))
    flat = [r[1] if r[0] == "const" else results[r[1]] for r in outs]
    return _unflatten(tree_t, iter(flat))


def _zeros_out(sg: SubGraph, free: list[Tensor], like: Var) -> Var:
    """Zeros shaped like ``like`` as an output of a branch that leaves it unset."""
    t = Tensor(np.zeros(like.shape, like.dtype))
    v = Var(t._data.shape, t._data.dtype)
    sg.graph.invars.append(v)
    free.append(t)
    return v


def _one_branch(label: str, what: str) -> _Undefined:
    return _Undefined(
        f"{what} on a tensor value assigns `{label}` in only one branch, and it is used after "
        "the statement; give it a value before the statement"
    )


def _const_out(
    sg: SubGraph, free: list[Tensor], value: Any, dtype: Any, label: str, what: str
) -> Var:
    """A Python number returned by a branch (or loop body) as a tensor output of its graph."""
    if not _is_number(value):
        raise TracingError(
            f"{what} on a tensor value: `{label}` is a tensor on one side and {value!r} on the "
            "other; graph mode needs a tensor on both"
        )
    t = Tensor(np.asarray(value, dtype=dtype) if dtype is not None else value)
    v = Var(t._data.shape, t._data.dtype)
    sg.graph.invars.append(v)
    free.append(t)
    return v


def if_(
    test: Any, true_fn: Any, false_fn: Any, vals: tuple[Any, ...], names: tuple[str, ...],
    pure: bool = True,
) -> Any:  # fmt: skip
    """``if test: true_fn else false_fn``, each a function of the assigned variables' values
    ``vals`` returning their new values."""
    if not _traced(test):
        return true_fn(*vals) if test else false_fn(*vals)
    if not pure:
        raise TracingError(
            "an `if` on a tensor value assigns to an attribute or an item (`self.x = ...`, "
            "`x[i] = ...`) in a branch; graph mode can only compile branches that assign "
            "variables"
        )
    pred = _as_pred(test, "if")
    return _cond(pred, (lambda: true_fn(*vals), lambda: false_fn(*vals)), names, "an `if`")


def ifexp(test: Any, true_fn: Any, false_fn: Any) -> Any:
    """``true_fn() if test else false_fn()``."""
    if not _traced(test):
        return true_fn() if test else false_fn()
    pred = _as_pred(test, "conditional expression")
    fns = (lambda: (true_fn(),), lambda: (false_fn(),))
    return _cond(pred, fns, ("<value>",), "`x if c else y`")[0]


def and_(a: Any, b_fn: Any) -> Any:
    """``a and b`` in a condition: a logical and when ``a`` is a traced tensor."""
    if _traced(a):
        from ..ops import logical_and

        b = b_fn()
        return logical_and(_as_pred(a, "and"), _as_pred(b, "and") if isinstance(b, Tensor) else b)
    return a and b_fn()


def or_(a: Any, b_fn: Any) -> Any:
    """``a or b`` in a condition: a logical or when ``a`` is a traced tensor."""
    if _traced(a):
        from ..ops import logical_or

        b = b_fn()
        return logical_or(_as_pred(a, "or"), _as_pred(b, "or") if isinstance(b, Tensor) else b)
    return a or b_fn()


def not_(a: Any) -> Any:
    """``not a`` in a condition: a logical not when ``a`` is a traced tensor."""
    if _traced(a):
        from ..ops import logical_not

        return logical_not(_as_pred(a, "not"))
    return not a


def call(fn: Any) -> Any:
    """A call in converted code (user functions are converted too, see ``convert.call``)."""
    from .convert import call as convert_call

    return convert_call(fn)


def python_bool(test: Any, reason: str) -> Any:
    """The test of a statement the converter left as Python (``reason`` says why)."""
    if _traced(test):
        raise TracingError(f"cannot compile control flow on a tensor value: {reason}")
    return test


# ---- while loops ----------------------------------------------------------------------------


def _while_abstract(*avals: ShapedArray, cond: Any, body: Any, n_carry: int) -> Any:
    return tuple(avals[:n_carry])


def _run_loop(cond: SubGraph, body: SubGraph, carry: list[Any], rest: list[Any], trail: Any):
    while bool(cond.run(carry + rest)[0]):
        if trail is not None:
            trail.append(carry)
        carry = body.run(carry + rest)
    return carry


def _while_impl(xp: Any, *arrays: Any, cond: Any, body: Any, n_carry: int) -> tuple[Any, ...]:
    carry = _run_loop(cond, body, list(arrays[:n_carry]), list(arrays[n_carry:]), None)
    return tuple(carry)


def _while_vjp(cts: Any, *ins: Tensor, out: Any, cond: Any, body: Any, n_carry: int) -> Any:
    cts = cts if isinstance(cts, tuple) else (cts,)
    body.vjp()  # traced now, so errors show while compiling
    grads = while_grad_p.bind(*ins, *cts, cond=cond, body=body, n_carry=n_carry)
    return tuple(g if _floating(t) else None for g, t in zip(grads, ins, strict=True))


def _while_grad_abstract(*avals: ShapedArray, cond: Any, body: Any, n_carry: int) -> Any:
    return tuple(avals[: len(avals) - n_carry])


def _while_grad_impl(xp: Any, *arrays: Any, cond: Any, body: Any, n_carry: int) -> Any:
    """Run the loop again keeping each iteration's variables, then the body's backward graph
    over them in reverse; gradients of the values read from outside add up."""
    n_in = len(arrays) - n_carry
    rest = list(arrays[n_carry:n_in])
    trail: list[Any] = []
    _run_loop(cond, body, list(arrays[:n_carry]), rest, trail)
    back = body.vjp()
    ct = list(arrays[n_in:])
    acc = [xp.zeros_like(a) for a in rest]
    for carry in reversed(trail):
        g = back.run(carry + rest + ct)
        ct = g[:n_carry]
        acc = [a + b for a, b in zip(acc, g[n_carry:], strict=True)]
    return tuple(ct + acc)


def _closed_loop(cond_fn: Any, body_fn: Any, init: list[Tensor], device: Any) -> list[Tensor]:
    """``while cond_fn(*c): c = body_fn(*c)`` as a ``while_loop`` primitive (differentiable
    once more through its own rules); tensors the functions read from outside are inputs."""
    avals = [(t._data.shape, t._data.dtype) for t in init]
    sg_c, free_c = _trace_closed(cond_fn, avals, device, grad=False, hoist=True)
    sg_b, free_b = _trace_closed(body_fn, avals, device, grad=False, hoist=True)
    free = _merge_inputs([(sg_c, free_c), (sg_b, free_b)], len(avals))
    return list(while_p.bind(*init, *free, cond=sg_c, body=sg_b, n_carry=len(init)))


def _while_grad_composed(ins: tuple[Tensor, ...], cond: Any, body: Any, n_carry: int) -> Any:
    """What ``while_loop_grad`` computes, written with ``while_loop`` primitives: count the
    trip count T, then for t = T-1 .. 0 recompute the carry of iteration t from the initial
    one (an inner loop: no storage of the trajectory, O(T^2) body runs) and apply the body's
    backward graph. Its gradient is the second-order gradient of the loop."""
    from ..ops import zeros_like

    n_in = len(ins) - n_carry
    carry0, rest, ct0 = list(ins[:n_carry]), list(ins[n_carry:n_in]), list(ins[n_in:])
    device = carry0[0]._device
    zero = Tensor(np.asarray(0, np.int64), device=device)
    one = Tensor(np.asarray(1, np.int64), device=device)

    def counted(*c: Tensor) -> list[Tensor]:
        return [*body.evaluate(list(c[:-1]) + rest), c[-1] + one]

    def cond_at(*c: Tensor) -> list[Tensor]:
        return cond.evaluate(list(c[:-1]) + rest)

    trips = _closed_loop(cond_at, counted, [*carry0, zero], device)[-1]
    back = body.vjp()

    def outer_cond(*c: Tensor) -> list[Tensor]:
        return [c[0] < trips]

    def outer_body(*c: Tensor) -> list[Tensor]:
        j, ct, acc = c[0], list(c[1 : 1 + n_carry]), list(c[1 + n_carry :])
        t = trips - one - j

        def inner_cond(*d: Tensor) -> list[Tensor]:
            return [d[-1] < t]

        state = _closed_loop(inner_cond, counted, [*carry0, zero], device)[:-1]
        g = back.evaluate(state + rest + ct)
        return [j + one, *g[:n_carry], *[a + b for a, b in zip(acc, g[n_carry:], strict=True)]]

    acc0 = [zeros_like(r) for r in rest]
    final = _closed_loop(outer_cond, outer_body, [zero, *ct0, *acc0], device)
    return final[1:]


def _while_grad_vjp(cts: Any, *ins: Tensor, out: Any, cond: Any, body: Any, n_carry: int) -> Any:
    """Second order: differentiate :func:`_while_grad_composed` (recorded when this vjp is
    differentiated again)."""
    cts = cts if isinstance(cts, tuple) else (cts,)
    prev = GradMode.enabled
    GradMode.enabled = True
    try:
        outs = _while_grad_composed(ins, cond, body, n_carry)
    finally:
        GradMode.enabled = prev
    pairs = [
        (o, c)
        for o, c in zip(outs, cts, strict=True)
        if _floating(o) and c is not None and (o._node is not None or o._requires_grad)
    ]
    found = backward([o for o, _ in pairs], [c for _, c in pairs], list(ins), prev)
    return tuple(
        (found[id(t)][1] if id(t) in found else None) if _floating(t) else None for t in ins
    )


while_p = Primitive(
    "while_loop", "opaque", _while_abstract, impl=_while_impl, vjp=_while_vjp,
    multiple_results=True,
)  # fmt: skip
while_effect_p = Primitive(
    "while_loop_effect", "effect", _while_abstract, impl=_while_impl, vjp=_while_vjp,
    multiple_results=True,
)  # fmt: skip
while_grad_p = Primitive(
    "while_loop_grad", "opaque", _while_grad_abstract, impl=_while_grad_impl,
    vjp=_while_grad_vjp, multiple_results=True,
)  # fmt: skip


def while_(
    cond_fn: Any, body_fn: Any, vals: tuple[Any, ...], names: tuple[str, ...], pure: bool = True
) -> tuple[Any, ...]:
    """``while cond_fn(*vals): vals = body_fn(*vals)``. Iterations whose condition is a Python
    value run (unroll) in Python; from the first traced condition on, the rest of the loop is
    one ``while_loop`` equation."""
    vals = tuple(vals)
    while True:
        test = cond_fn(*vals)
        if _traced(test):
            if not pure:
                raise TracingError(
                    "a loop on a tensor value assigns to an attribute or an item "
                    "(`self.x = ...`, `x[i] = ...`) in its body; graph mode can only compile "
                    "loops that assign variables"
                )
            return _while_loop(cond_fn, body_fn, vals, names, test._device)
        if not test:
            return vals
        vals = tuple(body_fn(*vals))


def _while_loop(
    cond_fn: Any, body_fn: Any, vals: tuple[Any, ...], names: tuple[str, ...], device: Any
) -> tuple[Any, ...]:
    what = "a loop"
    leaves: list[Any] = []
    tree = _flatten(vals, leaves)
    labels = _leaf_names(tree, names)
    carry_ix = [i for i, x in enumerate(leaves) if isinstance(x, Tensor) or _is_number(x)]
    undefined = [i for i, x in enumerate(leaves) if isinstance(x, _Undefined)]
    init = list(leaves)
    for i in carry_ix:
        if not isinstance(init[i], Tensor):
            init[i] = Tensor(init[i])
    if undefined:  # first assigned in the body: one probing trace tells their types
        probe = _probe_body(body_fn, tree, init, carry_ix, device)
        for i in undefined:
            v = probe[i]
            if not isinstance(v, (Tensor, Var)):
                raise TracingError(
                    f"{what} on a tensor value: `{labels[i]}` is first assigned in the loop "
                    "and is not a tensor there; give it a value before the loop"
                )
            init[i] = Tensor(np.zeros(v.shape, v.dtype))
        carry_ix = sorted(carry_ix + undefined)
    avals = [(init[i]._data.shape, init[i]._data.dtype) for i in carry_ix]

    def rebuild(sym: tuple[Tensor, ...]) -> Any:
        values = list(init)
        for i, s in zip(carry_ix, sym, strict=True):
            values[i] = s
        return _unflatten(tree, iter(values))

    def cond_flat(*sym: Tensor) -> list[Tensor]:
        test = cond_fn(*rebuild(sym))
        if not isinstance(test, Tensor):
            test = Tensor(bool(test))
        return [_as_pred(test, "while")]

    def body_flat(*sym: Tensor) -> list[Tensor]:
        out_leaves: list[Any] = []
        if _flatten(tuple(body_fn(*rebuild(sym))), out_leaves) != tree:
            raise TracingError(f"{what} on a tensor value: a loop variable changes structure")
        outs = []
        for i, (old, new) in enumerate(zip(init, out_leaves, strict=True)):
            if i not in carry_ix:
                if new is not old and not (_is_number(new) and new == old):
                    raise TracingError(
                        f"{what} on a tensor value: `{labels[i]}` changes from {old!r} to "
                        f"{new!r} in the body; only tensors and numbers can change in such a loop"
                    )
                continue
            if _is_number(new):
                new = Tensor(np.asarray(new, dtype=old._data.dtype))
            if not isinstance(new, Tensor) or (new.shape, new._data.dtype) != (
                old.shape,
                old._data.dtype,
            ):
                if isinstance(new, Tensor):  # (a traced tensor's repr would need its value)
                    got = f"{new._data.dtype}{list(new.shape)}"
                else:
                    got = repr(new)
                raise TracingError(
                    f"{what} on a tensor value: `{labels[i]}` is {old._data.dtype}"
                    f"{list(old.shape)} before the body and {got} after it; a loop variable "
                    "must keep its shape and dtype"
                )
            outs.append(new)
        return outs

    sg_c, free_c = _trace_closed(cond_flat, avals, device, grad=False, hoist=True)
    sg_b, free_b = _trace_closed(body_flat, avals, device, grad=False, hoist=True)
    free = _merge_inputs([(sg_c, free_c), (sg_b, free_b)], len(avals))
    prim = while_effect_p if sg_c.has_effects or sg_b.has_effects else while_p
    carried = [init[i] for i in carry_ix]
    results = prim.bind(*carried, *free, cond=sg_c, body=sg_b, n_carry=len(carried))
    final = list(init)
    for i, r in zip(carry_ix, results, strict=True):
        final[i] = r
    return tuple(_unflatten(tree, iter(final)))


def _probe_body(body_fn: Any, tree: Any, init: list[Any], carry_ix: list[int], device: Any):
    """The body's results once, traced and thrown away (for variables first set in it)."""
    avals = [(init[i]._data.shape, init[i]._data.dtype) for i in carry_ix]
    found: list[Any] = []

    def run(*sym: Tensor) -> list[Tensor]:
        values = list(init)
        for i, s in zip(carry_ix, sym, strict=True):
            values[i] = s
        _flatten(tuple(body_fn(*_unflatten(tree, iter(values)))), found)
        return []

    _trace_closed(run, avals, device, grad=False, hoist=True)
    return [Var(x._data.shape, x._data.dtype) if isinstance(x, Tensor) else x for x in found]


def for_range(
    args: tuple[Any, ...], body_fn: Any, vals: tuple[Any, ...], names: tuple[str, ...],
    pure: bool = True,
) -> tuple[Any, ...]:  # fmt: skip
    """``for i in range(*args): vals = body_fn(i, *vals)``; returns ``(i, *vals)``. A traced
    bound makes it a ``while_loop`` over a counter; Python bounds unroll."""
    if not any(_traced(a) for a in args):
        bounds = [int(a) if isinstance(a, Tensor) else a for a in args]
        target, rest = vals[0], tuple(vals[1:])
        for i in range(*bounds):
            target = i
            rest = tuple(body_fn(i, *rest))
        return (target, *rest)
    start, stop, step = (0, args[0], 1) if len(args) == 1 else (*args, 1)[:3]
    if isinstance(step, Tensor) or not isinstance(step, int) or step == 0:
        raise TracingError(
            f"a `for` over range() with a tensor bound needs a non-zero Python int step, got "
            f"{step!r}"
        )
    typed = next(a for a in (start, stop) if isinstance(a, Tensor))
    from ..ops import cast

    def as_counter(x: Any) -> Tensor:
        if isinstance(x, Tensor):
            return cast(x, typed.dtype) if x.dtype != typed.dtype else x
        return Tensor(np.asarray(x, dtype=typed._data.dtype))

    first = as_counter(start)

    def cond(i: Tensor, target: Any, *rest: Any) -> Any:
        return i < stop if step > 0 else i > stop

    def body(i: Tensor, target: Any, *rest: Any) -> tuple[Any, ...]:
        return (i + step, i, *body_fn(i, *rest))

    out = while_(cond, body, (first, first, *vals[1:]), ("<range counter>", *names), pure)
    return tuple(out[1:])
