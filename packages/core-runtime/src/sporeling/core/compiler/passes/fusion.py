"""Elementwise fusion: chains of elementwise ops (and broadcasts) become one generated kernel.

Walking the equations in order, an elementwise equation joins the open group that produced
one of its inputs when its output has the group's shape (inputs may be smaller: they are
read with broadcast indexing, not materialised). A ``reduce_sum``/``reduce_max`` over the
last axis of a group value (or of any value: it then starts a group) joins as a *row*
reduction; elementwise ops may then use its result — per row, in its ``(..., 1)`` form — in
a later pass over the row, and ops on row values alone compute one value per row. Such a
group becomes a multi-pass row kernel (:mod:`..kernels.codegen_rows`: softmax, layer norm,
their gradients and whatever surrounds them). A ``reduce_sum`` over every axis but the last
(bias and scale gradients) or over every axis (a loss) joins as a *column* epilogue. A group
closes when anything outside it reads one of its values (a reduction's result included),
and every group closes at an effect or a random draw, so a fused kernel — placed where its
last member was — never moves work across them.

Each group with two or more elementwise members, or one and a reduction, becomes one
equation of a generated :class:`FusedPrimitive` (kind ``"fused"``): the members' scalar
expressions, with parameters substituted, are composed into a
:class:`~..kernels.codegen.FusedProgram` (one pass) or a
:class:`~..kernels.codegen_rows.RowProgram` and compiled by Numba (CPU, cached on disk) or
Numba CUDA (GPU). Values used only inside the group are never written to memory.
``set_context(enable_graph_kernel=False)`` turns the pass off.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._backend import is_host
from ...context import get_context
from ...kernels import codegen
from ...kernels.codegen_rows import RowProgram, RowStep, run_rows
from ..graph import Graph, Var
from ._util import ORDERED_KINDS, params_key

__all__ = ["elementwise_fusion", "FusedPrimitive", "fusible_expression"]

_DTYPES = {np.dtype(t) for t in ("float32", "float64", "int32", "int64", "bool")}
_FLOATS = {np.dtype("float32"), np.dtype("float64")}
#: the reductions (``Primitive.reduction``) the generated row kernels implement
_ROW_REDUCTIONS = ("sum", "max")
_SCALAR_KINDS = ("elementwise", "movement")
_EXPR_MEMO: dict[Any, Any] = {}


def fusible_expression(e: Any) -> tuple[str, tuple[str, ...]] | None:
    """``(expr, input names)`` of an elementwise equation, parameters substituted, or None
    when it cannot be fused (no scalar form, unsupported dtype or parameter)."""
    if any(v.dtype not in _DTYPES for v in (*e.inputs, *e.outputs)):
        return None
    prim = e.prim
    # a movement op with a scalar form fuses too: broadcast_to is "x", read with broadcast
    # indexing
    if prim.kind not in _SCALAR_KINDS or not prim.scalar or prim.multiple_results:
        return None
    pk = params_key(e.params)
    key = (prim.name, pk, len(e.inputs))
    if pk is not None and key in _EXPR_MEMO:
        return _EXPR_MEMO[key]
    found = _expression(prim, e.params, len(e.inputs))
    if pk is not None:
        _EXPR_MEMO[key] = found
    return found


def _expression(prim: Any, params: dict[str, Any], n_inputs: int) -> Any:
    """The primitive's scalar form for these params (``scalar_rule`` where it has one),
    numeric params substituted by value."""
    rule = prim.scalar_rule
    expr = prim.scalar if rule is None else rule(params)
    if expr is None:
        return None
    mapping = {}
    for k, val in params.items():
        if type(val) in (int, float):
            mapping[k] = repr(float(val))
        elif rule is None:  # a param only a scalar_rule can express
            return None
    if mapping:
        expr = codegen.substitute(expr, mapping)
    try:
        names = codegen.expression_inputs(expr)
    except (codegen.UnsupportedExpression, SyntaxError):
        return None
    if len(names) != n_inputs:
        return None
    return expr, names


class _Group:
    __slots__ = ("shape", "members", "state", "n_ew", "temps", "rows", "columns")

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = shape
        self.members: list[Any] = []
        self.temps: set[int] = set()  # ids of the Vars its elementwise members produce
        self.rows: set[int] = set()  # ids of its row values (row reductions and their uses)
        self.state = "open"  # "closed" when read outside, "merged" into another group
        self.n_ew = 0
        self.columns: dict[int, str] = {}  # id(eqn) -> "col" | "all", the column epilogues

    @property
    def row_shape(self) -> tuple[int, ...]:
        return (*self.shape[:-1], 1)

    def absorb(self, other: _Group) -> None:
        self.members += other.members
        self.n_ew += other.n_ew
        self.temps |= other.temps
        self.rows |= other.rows
        self.columns.update(other.columns)
        other.state = "merged"


class _Fuser:
    """Walks the equations once, growing groups (see the module docstring)."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.owner: dict[int, _Group] = {}  # Var id -> the group that computes it
        self.groups: list[_Group] = []
        self.exprs: dict[int, Any] = {}  # id(eqn) -> (expr, names)
        self.col_owner: dict[int, _Group] = {}  # column results: final after the whole kernel
        #: the pass of a row kernel from which a value can be used (reductions: the next one)
        self.avail: dict[int, int] = {}

    def run(self) -> list[_Group]:
        order = {id(e): i for i, e in enumerate(self.graph.eqns)}
        for e in self.graph.eqns:
            for v in e.inputs:
                if v.id in self.col_owner:
                    self.col_owner[v.id].state = "closed"
            if not self._join(e):
                for v in e.inputs:
                    if v.id in self.owner:
                        self.owner[v.id].state = "closed"
                if e.prim.kind in ORDERED_KINDS:
                    for g in self.groups:
                        if g.state == "open":  # a merged group must stay merged
                            g.state = "closed"
        live = [g for g in self.groups if g.state != "merged"]
        for g in live:
            g.members.sort(key=lambda m: order[id(m)])
        return [g for g in live if g.n_ew >= 2 or (g.n_ew and len(g.members) > g.n_ew)]

    def _open(self, v: Any) -> _Group | None:
        g = self.owner.get(v.id)
        return g if g is not None and g.state == "open" else None

    def _add(self, g: _Group, e: Any, out: Any, avail: int, row: bool) -> None:
        g.members.append(e)
        self.owner[out.id] = g
        self.avail[out.id] = avail
        (g.rows if row else g.temps).add(out.id)

    def _join(self, e: Any) -> bool:
        """Add ``e`` to a group; False when it cannot be fused."""
        col = _column_target(e, self.owner)
        if col is not None:
            g, how = col
            g.members.append(e)
            g.columns[id(e)] = how
            self.col_owner[e.outputs[0].id] = g
            return True
        red = _reduction_target(e, self.owner)
        if red is not None:
            self._add(red, e, e.outputs[0], self.avail.get(e.inputs[0].id, 0) + 1, row=True)
            return True
        if _starts_row_group(e, self.owner):  # softmax's max of its input, say: its readers join
            g = _Group(e.inputs[0].shape)
            self.groups.append(g)
            self._add(g, e, e.outputs[0], 1, row=True)
            return True
        if e.prim.same_order and len(e.inputs) == 1:
            rg = self._open(e.inputs[0])
            out = e.outputs[0]
            if rg is not None and e.inputs[0].id in rg.rows and out.shape == rg.row_shape:
                self.exprs[id(e)] = ("x", ("x",))  # the same row value, with a trailing 1
                self._add(rg, e, out, self.avail[e.inputs[0].id], row=True)
                return True
            return False
        found = fusible_expression(e)
        if found is None:
            return False
        out = e.outputs[0]
        cands = {id(self.owner[v.id]): self.owner[v.id] for v in e.inputs if v.id in self.owner}
        join = [g for g in cands.values() if g.state == "open" and g.shape == out.shape]
        row = not join and [
            g for g in cands.values() if g.state == "open" and _row_member(g, e)
        ]  # fmt: skip
        if row:  # a scalar per row, computed from the group's row values
            join = row[:1]
            if any(v.id in self.owner and self.owner[v.id] is not join[0] for v in e.inputs):
                return False  # reads another group's value: leave both as they are
        for g in join:  # row values broadcast per row only in their (..., 1) form
            want = out.shape if row else g.row_shape
            if any(v.id in g.rows and v.shape != want for v in e.inputs):
                return False
        for g in cands.values():
            if g not in join:
                g.state = "closed"
        if join:
            g = join[0]
            for other in join[1:]:  # e reads several open groups: they become one
                for m in other.members:
                    for v in m.outputs:
                        if v.id in self.owner:
                            self.owner[v.id] = g
                        if v.id in self.col_owner:
                            self.col_owner[v.id] = g
                g.absorb(other)
        else:
            g = _Group(out.shape)
            self.groups.append(g)
        self.exprs[id(e)] = found
        avail = max((self.avail.get(v.id, 0) for v in e.inputs if v.id in self.owner), default=0)
        self._add(g, e, out, avail, row=bool(row))
        g.n_ew += 1
        return True


def elementwise_fusion(graph: Graph) -> Graph:
    if not get_context("enable_graph_kernel"):
        graph.notes.append("fusion off (enable_graph_kernel=False)")
        return graph
    fuser = _Fuser(graph)
    live = fuser.run()
    exprs = fuser.exprs
    last = {id(g.members[-1]): g for g in live}
    fused_ids = {id(m) for g in live for m in g.members}
    outvars = {v.id for v in graph.outvars if isinstance(v, Var)}
    readers: dict[int, list[Any]] = {}
    for e in graph.eqns:
        for v in e.inputs:
            readers.setdefault(v.id, []).append(e)
    eqns = []
    n_fused = 0
    for e in graph.eqns:
        if id(e) in last:
            eqns.append(_build(last[id(e)], exprs, fuser.avail, readers, outvars, graph.device))
            n_fused += len(last[id(e)].members)
        elif id(e) not in fused_ids:
            eqns.append(e)
    graph.notes.append(f"fusion joined {n_fused} eqns into {len(live)} kernels")
    graph.eqns = eqns
    return graph


def _row_member(g: _Group, e: Any) -> bool:
    """Whether elementwise ``e`` computes one value per row of ``g`` from its row values:
    in the ``(..., 1)`` form, or without the last axis when every other input is a scalar
    (other inputs would line up with the wrong axis)."""
    out = e.outputs[0]
    if not any(v.id in g.rows for v in e.inputs):
        return False
    if out.shape == g.row_shape:
        return True
    return out.shape == g.shape[:-1] and all(v.id in g.rows or v.size == 1 for v in e.inputs)


def _row_reduction(prim: Any) -> str | None:
    """``prim``'s reduction when a row kernel can compute it, else None."""
    r = getattr(prim, "reduction", None)
    return r if r in _ROW_REDUCTIONS else None


def _starts_row_group(e: Any, owner: dict[int, _Group]) -> bool:
    """A last-axis sum/max of a value no group computes (a graph input, an opaque op's
    result) starts a row group; the group is kept only if elementwise work joins it."""
    if _row_reduction(e.prim) is None or len(e.inputs) != 1 or e.inputs[0].id in owner:
        return False
    v = e.inputs[0]
    return (
        v.ndim >= 1
        and v.dtype in _FLOATS
        and e.outputs[0].dtype == v.dtype
        and e.params.get("axis") == (v.ndim - 1,)
    )


def _reduction_target(e: Any, owner: dict[int, _Group]) -> _Group | None:
    """The group a last-axis sum/max of one of its values joins as an epilogue, or None."""
    if _row_reduction(e.prim) is None or len(e.inputs) != 1:
        return None
    v = e.inputs[0]
    g = owner.get(v.id)
    if g is None or g.state != "open" or v.id not in g.temps or not g.shape:
        return None
    if e.params.get("axis") != (len(g.shape) - 1,) or v.dtype not in _FLOATS:
        return None
    if e.outputs[0].dtype != v.dtype:
        return None
    return g


def _column_target(e: Any, owner: dict[int, _Group]) -> tuple[_Group, str] | None:
    """The group whose value ``e`` sums over every axis but the last (``"col"``) or over
    every axis (``"all"``), with the group's shape of two or more axes; else None."""
    if getattr(e.prim, "reduction", None) != "sum" or len(e.inputs) != 1:
        return None
    v = e.inputs[0]
    g = owner.get(v.id)
    if g is None or g.state != "open" or v.id not in g.temps:
        return None
    nd = len(g.shape)
    if nd < 2 or v.dtype not in _FLOATS or e.outputs[0].dtype != v.dtype:
        return None
    axis = e.params.get("axis")
    if axis == tuple(range(nd - 1)):
        return g, "col"
    if axis == tuple(range(nd)):
        return g, "all"
    return None


def _build(
    g: _Group,
    exprs: dict[int, Any],
    avail: dict[int, int],
    readers: dict[int, list[Any]],
    outvars: set[int],
    device: Any,
) -> Any:
    from ..graph import Eqn

    members = g.members
    inside = {id(m) for m in members}
    produced: dict[int, int] = {}  # Var id -> index of the value (t<index>) computing it
    inputs: list[Var] = []
    in_index: dict[int, int] = {}
    steps: list[RowStep] = []
    outs: list[Var] = []
    out_steps: list[int] = []
    rows: list[Var] = []
    row_steps: list[int] = []
    cols: list[int] = []
    col_vars: list[Var] = []

    def ref(v: Var) -> str:
        if v.id in produced:
            return f"t{produced[v.id]}"
        if v.id not in in_index:
            in_index[v.id] = len(inputs)
            inputs.append(v)
        return f"v{in_index[v.id]}"

    for m in members:
        out = m.outputs[0]
        if id(m) in g.columns:
            cols.append(produced[m.inputs[0].id])
            col_vars.append(out)
            continue
        dt = _cast_name(out.dtype)
        if out.id in g.rows and _row_reduction(m.prim) is not None:
            if m.inputs[0].id not in produced:  # the group's first member: read its input
                steps.append(RowStep("elem", 0, _cast_name(m.inputs[0].dtype), ref(m.inputs[0])))
                produced[m.inputs[0].id] = len(steps) - 1
            src = produced[m.inputs[0].id]
            steps.append(RowStep(m.prim.reduction, steps[src].phase, dt, source=src))
        else:
            expr, names = exprs[id(m)]
            mapping = {n: ref(v) for n, v in zip(names, m.inputs, strict=True)}
            kind = "row" if out.id in g.rows else "elem"
            steps.append(RowStep(kind, avail[out.id], dt, codegen.substitute(expr, mapping)))
        produced[out.id] = len(steps) - 1
        if out.id in outvars or any(id(r) not in inside for r in readers.get(out.id, ())):
            if out.id in g.rows:
                rows.append(out)
                row_steps.append(len(steps) - 1)
            else:
                outs.append(out)
                out_steps.append(len(steps) - 1)
    sizes, spans = _loop(g.shape, inputs, last_apart=bool(g.rows or cols))
    prog: Any
    if g.rows:
        prog = RowProgram(
            len(sizes), spans, tuple(steps), tuple(out_steps), tuple(row_steps), tuple(cols)
        )
    else:
        temps = tuple((st.dtype, st.expr) for st in steps)
        prog = codegen.FusedProgram(len(sizes), spans, temps, tuple(out_steps), tuple(cols))
    in_shapes = [tuple(n for n, f in zip(sizes, sp, strict=True) if f) or (1,) for sp in spans]
    col_all = [g.columns[id(m)] == "all" for m in members if id(m) in g.columns]
    prim = FusedPrimitive(prog, sizes, in_shapes, outs, rows, members, device)
    prim.set_columns(col_vars, col_all)
    prim.inputs = inputs
    return Eqn(prim, inputs, {}, [*outs, *rows, *col_vars])


def _loop(
    shape: tuple[int, ...], inputs: list[Var], last_apart: bool
) -> tuple[tuple[int, ...], tuple[tuple[bool, ...], ...]]:
    """The loop nest of a group: its shape without size-1 dimensions, neighbours that every
    input spans alike merged, and (``last_apart``: row kernels, column sums) the last axis
    kept as a dimension of its own. Returns the sizes and, per input, the spanned dims."""
    nd = len(shape)
    pats = []
    for v in inputs:
        s = (1,) * (nd - len(v.shape)) + v.shape
        pats.append([s[d] == shape[d] and shape[d] != 1 for d in range(nd)])
    loop: list[list[Any]] = []
    for d in range(nd):
        last = last_apart and d == nd - 1
        if shape[d] == 1 and not last:
            continue
        flags = tuple(p[d] for p in pats)
        if loop and loop[-1][1] == flags and not last:
            loop[-1][0] *= shape[d]
        else:
            loop.append([shape[d], flags])
    sizes = tuple(int(n) for n, _ in loop)
    return sizes, tuple(tuple(f[k] for _, f in loop) for k in range(len(inputs)))


def _cast_name(dt: np.dtype) -> str:
    return "bool_" if dt == np.bool_ else dt.name


class FusedPrimitive:
    """A generated primitive running one fused group (not registered: one per group)."""

    kind = "fused"
    multiple_results = True
    vjp = None
    scalar = None

    def __init__(
        self,
        program: codegen.FusedProgram | RowProgram,
        loop: tuple[int, ...],
        in_shapes: list[tuple[int, ...]],
        outs: list[Var],
        reds: list[Var],
        members: list[Any],
        device: Any,
    ) -> None:
        self.program = program
        self.loop = loop or (1,)
        self.in_shapes = in_shapes
        self.results = [*outs, *reds]
        self.inputs: list[Var] = []
        self.out_meta = [(v.shape, v.dtype) for v in outs]
        self.red_meta = [(v.shape, v.dtype) for v in reds]
        self.red_shape = self.loop[:-1] or (1,)
        self.col_meta: list[tuple[tuple[int, ...], Any, bool]] = []
        self.members = members
        self.device = device
        # Outputs written at the loop's full shape may reuse a dying input's buffer on the GPU
        # (one thread per element), unless a later pass of a row kernel reads that input after
        # the output was written. Not on the CPU: a store that may overlap a load makes LLVM
        # run the scalar copy of the loop (6-10x slower than the vectorised one).
        several = isinstance(program, RowProgram) and program.n_passes > 1
        on_cpu = device is None or is_host(device.xp)
        self.n_full = 0 if several or on_cpu else len(outs)
        self.name = "fused[" + ",".join(m.prim.name for m in members) + "]"
        self.impls = {"any": self.run}
        # the fields passes read on a Primitive (a generated kernel is never registered)
        self.fresh = True
        self.ufunc = self.cpu_into = self.scalar = self.scalar_rule = None
        self.decomposition = self.with_bias = self.reduction = None
        self.pinned = self.same_order = False
        self._warm = False
        self._fallback = False

    def set_columns(self, cols: list[Var], summed_up: list[bool]) -> None:
        """Column epilogues: results ``cols``, each also summed to a scalar where
        ``summed_up`` (a reduction over every axis)."""
        self.results += cols
        self.col_meta = [(v.shape, v.dtype, a) for v, a in zip(cols, summed_up, strict=True)]

    def __repr__(self) -> str:
        return f"<primitive {self.name} (fused)>"

    def impl_for(self, device: Any) -> Any:
        return self.run

    def run(self, xp: Any, *arrays: Any, outs: Any = None) -> tuple[Any, ...]:
        if self._fallback:
            return self._interpret(xp, arrays)
        loop = self.loop
        ins = [
            xp.ascontiguousarray(a).reshape(s) for a, s in zip(arrays, self.in_shapes, strict=True)
        ]
        full = []
        for k, (_shape, dt) in enumerate(self.out_meta):
            buf = outs[k] if outs is not None else None
            if (
                buf is not None
                and buf.dtype == dt
                and buf.flags.c_contiguous
                and buf.flags.writeable
            ):
                full.append(buf.reshape(loop))
            else:
                full.append(xp.empty(loop, dt))
        reds = [xp.empty(self.red_shape, dt) for _, dt in self.red_meta]
        cols = [xp.empty(loop[-1], np.float64) for _ in self.col_meta]
        target = "cpu" if is_host(xp) else "cuda"
        if not self._warm:
            try:  # first call compiles (or loads from the disk cache) on this thread
                self._launch(loop, ins, full, reds, cols, target, xp, threads=1)
            except Exception:  # an expression Numba cannot type: run the ops one by one
                self._fallback = True
                return self._interpret(xp, arrays)
            self._warm = True
        else:
            self._launch(loop, ins, full, reds, cols, target, xp)
        res = [a.reshape(s) for a, (s, _) in zip(full, self.out_meta, strict=True)]
        res += [a.reshape(s) for a, (s, _) in zip(reds, self.red_meta, strict=True)]
        for c, (s, dt, summed_up) in zip(cols, self.col_meta, strict=True):
            res.append((c.sum() if summed_up else c).astype(dt).reshape(s))
        return tuple(res)

    def _launch(
        self, loop: Any, ins: Any, full: Any, reds: Any, cols: Any, target: str, xp: Any,
        threads: int | None = None,
    ) -> None:  # fmt: skip
        if isinstance(self.program, RowProgram):
            run_rows(self.program, loop, ins, full, reds, cols, target, xp, threads)
        else:
            codegen.run_fused(self.program, loop, ins, full, target, xp, threads, columns=cols)

    def _interpret(self, xp: Any, arrays: tuple[Any, ...]) -> tuple[Any, ...]:
        """The unfused reference: the members' own impls in order."""
        env = {v.id: a for v, a in zip(self.inputs, arrays, strict=True)}
        for m in self.members:
            impl = m.prim.impl_for(self.device) if self.device is not None else m.prim.impls["any"]
            r = impl(xp, *[env[v.id] for v in m.inputs], **m.params)
            env[m.outputs[0].id] = xp.asarray(r).astype(m.outputs[0].dtype, copy=False)
        return tuple(env[v.id] for v in self.results)
