"""Three executions of one Hybrid DSL function: NumPy-interpreted, Numba CPU, Numba CUDA.

All three start from the same *normalized* AST (:func:`normalize`), in which number
literals in value expressions are typed as MindSpore documents (float literals are
``float32``, integer literals ``int32``). Because NumPy scalars and Numba follow the same
promotion rules for typed operands, the interpreted and compiled kernels then compute in
the same dtypes and give the same results (bit for bit for ``+ - * /``; transcendental
intrinsics may differ in the last ulp between NumPy's and LLVM's implementations).

* interpreted (:func:`interpreted`): compiled from the normalized AST with the original
  file name and line numbers, so a debugger steps through the user's source; intrinsics
  are NumPy functions, loop variables NumPy ``int64``.
* CPU (:func:`cpu_source`): ``parallel`` -> ``prange`` (outermost only; Numba runs nested
  pranges serially), ``vectorize``/``serial``/``reduce``/``range`` -> ``range`` (LLVM
  vectorizes simple inner loops; ``reduce`` loops keep the interpreted accumulation order
  unless ``fastmath`` is asked for), ``grid`` -> ``np.ndindex``.
* CUDA (:func:`cuda_source`): each top-level nest of up to three perfectly nested
  ``parallel`` loops becomes one kernel on a 1-3-d grid (the innermost loop on ``x`` for
  coalescing); other top-level statements run in a one-thread kernel; a host launcher
  allocates outputs and copies host inputs through.

Scheduling hints beyond MindSpore's (``compile_attrs``): ``unroll={var: n}``,
``tile={var: n}`` (CPU), ``order=[vars]`` (loop interchange of a perfect nest),
``parallel=False``, ``fastmath=True``, ``threads=n`` (CUDA block size).
"""

from __future__ import annotations

import ast
import contextlib
import copy
import itertools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ._errors import DSLValueError
from ._validate import CASTS, DECLS, KernelInfo

__all__ = ["normalize", "interpreted", "skeleton", "cpu_source", "cuda_source", "HINT_KEYS"]

HINT_KEYS = frozenset(
    {"unroll", "tile", "order", "parallel", "fastmath", "threads", "cache", "boundscheck"}
)
FASTMATH = {"nsz", "arcp", "contract", "afn", "reassoc"}  # as sporeling.core's kernels


def _name(id_: str) -> ast.Name:
    return ast.Name(id=id_, ctx=ast.Load())


def _call(func: str | ast.expr, args: list[ast.expr]) -> ast.Call:
    f = _name(func) if isinstance(func, str) else func
    return ast.Call(func=f, args=args, keywords=[])


def _attr(dotted: str) -> ast.expr:
    parts = dotted.split(".")
    node: ast.expr = _name(parts[0])
    for p in parts[1:]:
        node = ast.Attribute(value=node, attr=p, ctx=ast.Load())
    return node


def _is_decl(s: ast.stmt) -> bool:
    return (
        isinstance(s, ast.Assign)
        and isinstance(s.value, ast.Call)
        and isinstance(s.value.func, ast.Name)
        and s.value.func.id in DECLS
    )


def _loop_kind(s: ast.For) -> str:
    return s.iter.func.id  # type: ignore[attr-defined]


# ---- normalization: typed literals ------------------------------------------------------


def _wrap_value(e: ast.expr) -> ast.expr:
    """Type the number literals of a value expression (not indices, not shapes)."""
    if isinstance(e, ast.Constant):
        if isinstance(e.value, bool) or not isinstance(e.value, (int, float)):
            return e
        cast = "float32" if isinstance(e.value, float) else "int32"
        return ast.copy_location(_call(cast, [e]), e)
    if isinstance(e, (ast.Subscript, ast.Attribute, ast.Name)):
        return e
    if isinstance(e, ast.Call):
        fname = e.func.id  # type: ignore[attr-defined]
        if fname in CASTS or fname == "len":
            e.args = [a if isinstance(a, ast.Constant) else _wrap_value(a) for a in e.args]
        else:
            e.args = [_wrap_value(a) for a in e.args]
        return e
    for fld, value in ast.iter_fields(e):
        if isinstance(value, ast.expr):
            setattr(e, fld, _wrap_value(value))
        elif isinstance(value, list):
            setattr(e, fld, [_wrap_value(v) if isinstance(v, ast.expr) else v for v in value])
    return e


def _norm_block(stmts: list[ast.stmt]) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for s in stmts:
        if isinstance(s, ast.Expr):  # docstring
            continue
        if isinstance(s, ast.Assign) and not _is_decl(s) or isinstance(s, ast.AugAssign):
            s.value = _wrap_value(s.value)
        elif isinstance(s, ast.For):
            s.body = _norm_block(s.body)
        elif isinstance(s, ast.If):
            s.test = _wrap_value(s.test)
            s.body = _norm_block(s.body) or [ast.Pass()]
            s.orelse = _norm_block(s.orelse)
        elif isinstance(s, ast.With):
            s.body = _norm_block(s.body) or [ast.Pass()]
        out.append(s)
    return out


def normalize(info: KernelInfo) -> ast.FunctionDef:
    """A copy of the kernel's AST with typed literals, no decorators and no docstring."""
    f = copy.deepcopy(info.tree)
    f.decorator_list = []
    f.returns = None
    f.body = _norm_block(f.body)
    return f


# ---- interpreted (NumPy) ----------------------------------------------------------------


def _np_dtype(dtype: Any) -> np.dtype:
    np_attr = getattr(dtype, "np", None)  # a sporeling DType
    return np.dtype(np_attr if np_attr is not None else dtype)


def _shape_tuple(shape: Any) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(s) for s in shape)


def _loop(*bounds: Any) -> Any:
    return map(np.int64, range(*(int(b) for b in bounds)))


def _grid(shape: Any) -> Any:
    return itertools.product(*(_loop(n) for n in _shape_tuple(shape)))


def _erf(x: Any) -> Any:
    r = math.erf(x)
    return type(x)(r) if isinstance(x, np.floating) else np.float64(r)


def _cast(t: Any) -> Callable[[Any], Any]:
    return lambda x: t(x)


PY_INTRINSICS: dict[str, Any] = {
    "sqrt": np.sqrt, "sign": np.sign, "log": np.log, "exp": np.exp, "tanh": np.tanh,
    "abs": np.abs, "power": np.power, "floor": np.floor, "rsqrt": lambda x: np.reciprocal(
        np.sqrt(x)), "erf": _erf, "isnan": np.isnan, "isinf": np.isinf,
    "isfinite": np.isfinite, "sin": np.sin, "cos": np.cos, "atan": np.arctan, "ceil": np.ceil,
    "trunc": np.trunc, "round": np.rint, "ceil_div": lambda a, b: (a + b - 1) // b,
    "atan2": np.arctan2, "expm1": np.expm1, "max": max, "min": min,
    "len": lambda x: np.int64(len(x)),
    **{c: getattr(np, c) for c in CASTS},
    **{k: _loop for k in ("range", "serial", "vectorize", "parallel", "reduce")},
    "grid": _grid,
    "output_tensor": lambda shape, dtype: np.zeros(_shape_tuple(shape), _np_dtype(dtype)),
    "allocate": lambda shape, dtype: np.zeros(_shape_tuple(shape), _np_dtype(dtype)),
    "attr": lambda key, value: contextlib.nullcontext(),
    "block_realize": lambda t: contextlib.nullcontext(),
    "_shape": lambda x: tuple(np.int64(s) for s in x.shape),
}  # fmt: skip


class _ShapeCalls(ast.NodeTransformer):
    """``x.shape`` -> ``_shape(x)`` (NumPy int64 sizes, as Numba sees them)."""

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        if node.attr == "shape":
            return ast.copy_location(_call("_shape", [node.value]), node)
        return node


def _compile_function(f: ast.FunctionDef, filename: str, namespace: dict[str, Any]) -> Any:
    mod = ast.Module(body=[f], type_ignores=[])
    ast.fix_missing_locations(mod)
    exec(compile(mod, filename, "exec"), namespace)  # noqa: S102 - the user's own kernel
    return namespace[f.name]


def interpreted(info: KernelInfo) -> Any:
    """The kernel as a plain Python function over NumPy arrays (debuggable)."""
    f = _ShapeCalls().visit(normalize(info))
    return _compile_function(f, info.filename, dict(PY_INTRINSICS))


def skeleton(info: KernelInfo) -> Any:
    """The kernel without its loops: declarations, top-level scalars and the return.

    Run on zero-filled (zero-stride) inputs it gives the outputs' shapes and dtypes
    without executing the loop nest, however large the inputs are.
    """
    f = _ShapeCalls().visit(normalize(info))
    f.body = [
        s
        for s in f.body
        if isinstance(s, ast.Return)
        or (isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name))
    ]
    ns = dict(PY_INTRINSICS)
    for decl in DECLS:
        ns[decl] = lambda shape, dtype: np.broadcast_to(
            np.zeros((), _np_dtype(dtype)), _shape_tuple(shape)
        )
    return _compile_function(f, info.filename, ns)


# ---- scheduling hints ---------------------------------------------------------------------


def _bounds(s: ast.For) -> tuple[ast.expr, ast.expr, ast.expr | None]:
    args = s.iter.args  # type: ignore[attr-defined]
    if len(args) == 1:
        return ast.Constant(0), args[0], None
    return args[0], args[1], (args[2] if len(args) == 3 else None)


def _names_in(e: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(e) if isinstance(n, ast.Name)}


class _Subst(ast.NodeTransformer):
    def __init__(self, name: str, value: ast.expr) -> None:
        self.name, self.value = name, value

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id == self.name and isinstance(node.ctx, ast.Load):
            return copy.deepcopy(self.value)
        return node


def _perfect_chain(s: ast.For, names: set[str]) -> list[ast.For]:
    chain = [s]
    while (
        len(chain[-1].body) == 1
        and isinstance(chain[-1].body[0], ast.For)
        and chain[-1].body[0].target.id in names  # type: ignore[attr-defined]
    ):
        chain.append(chain[-1].body[0])
    return chain


class _Hints:
    def __init__(self, info: KernelInfo, attrs: dict[str, Any], target: str) -> None:
        self.info = info
        self.unroll: dict[str, int] = dict(attrs.get("unroll") or {})
        self.tile: dict[str, int] = dict(attrs.get("tile") or {}) if target == "cpu" else {}
        self.order: list[str] = list(attrs.get("order") or [])

    def error(self, msg: str) -> DSLValueError:
        return DSLValueError(
            self.info.name, msg, code="hybrid-hint", filename=self.info.filename,
            lineno=self.info.first_line,
        )  # fmt: skip

    def block(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for s in stmts:
            out.extend(self.stmt(s))
        return out

    def stmt(self, s: ast.stmt) -> list[ast.stmt]:
        if isinstance(s, ast.If):
            s.body, s.orelse = self.block(s.body), self.block(s.orelse)
            return [s]
        if isinstance(s, ast.With):
            s.body = self.block(s.body)
            return [s]
        if not isinstance(s, ast.For):
            return [s]
        var = s.target.id  # type: ignore[attr-defined]
        if self.order and var in self.order:
            s = self.reorder(s)
            var = s.target.id  # type: ignore[attr-defined]
        if var in self.tile:
            return self.tiled(s)
        s.body = self.block(s.body)
        if var in self.unroll:
            return self.unrolled(s, int(self.unroll[var]))
        return [s]

    def reorder(self, s: ast.For) -> ast.For:
        chain = _perfect_chain(s, set(self.order))
        vars_ = [c.target.id for c in chain]  # type: ignore[attr-defined]
        if sorted(vars_) != sorted(self.order):
            raise self.error(
                f"order={self.order}: loops {self.order} must be perfectly nested (each loop's "
                f"body only the next loop); found the nest {vars_}"
            )
        for c in chain:
            if _names_in(c.iter) & set(vars_):
                raise self.error(f"order={self.order}: a loop bound depends on another loop")
        by_var = {c.target.id: c for c in chain}  # type: ignore[attr-defined]
        inner = chain[-1].body
        new = None
        for v in reversed(self.order):
            c = copy.copy(by_var[v])
            c.body = [new] if new is not None else inner
            new = c
        self.order = []  # applied
        assert new is not None
        return new

    def tiled(self, s: ast.For) -> list[ast.stmt]:
        chain = _perfect_chain(s, set(self.tile))
        vars_ = [c.target.id for c in chain]  # type: ignore[attr-defined]
        inner = self.block(chain[-1].body)
        outer_loops: list[ast.For] = []
        point_loops: list[ast.For] = []
        for c in chain:
            lo, hi, step = _bounds(c)
            if step is not None or _names_in(c.iter) & set(vars_):
                raise self.error(f"tile: loop '{c.target.id}' has a step or dependent bounds")  # type: ignore[attr-defined]
            v = c.target.id  # type: ignore[attr-defined]
            t = int(self.tile[v])
            tv = f"{v}__tile"
            ntiles = ast.BinOp(
                ast.BinOp(ast.BinOp(hi, ast.Sub(), lo), ast.Add(), ast.Constant(t - 1)),
                ast.FloorDiv(), ast.Constant(t),
            )  # fmt: skip
            outer_loops.append(
                ast.For(
                    target=ast.Name(tv, ast.Store()),
                    iter=_call(c.iter.func.id, [ntiles]),  # type: ignore[attr-defined]
                    body=[],
                    orelse=[],
                )  # fmt: skip
            )
            start = ast.BinOp(copy.deepcopy(lo), ast.Add(),
                              ast.BinOp(_name(tv), ast.Mult(), ast.Constant(t)))  # fmt: skip
            stop = _call("min", [ast.BinOp(start, ast.Add(), ast.Constant(t)), hi])
            point_loops.append(
                ast.For(
                    target=ast.Name(v, ast.Store()),
                    iter=_call("serial", [copy.deepcopy(start), stop]),
                    body=[],
                    orelse=[],
                )  # fmt: skip
            )
        loops = outer_loops + point_loops
        for a, b in itertools.pairwise(loops):
            a.body = [b]
        loops[-1].body = inner
        return [loops[0]]

    def unrolled(self, s: ast.For, factor: int) -> list[ast.stmt]:
        lo, hi, step = _bounds(s)
        if step is not None or factor < 2:
            return [s]
        v = s.target.id  # type: ignore[attr-defined]
        uv = f"{v}__unroll"
        n = ast.BinOp(hi, ast.Sub(), lo)
        main_stop = ast.BinOp(hi, ast.Sub(), ast.BinOp(n, ast.Mod(), ast.Constant(factor)))
        body: list[ast.stmt] = []
        for k in range(factor):
            val = ast.BinOp(_name(uv), ast.Add(), ast.Constant(k))
            body.extend(_Subst(v, val).visit(copy.deepcopy(b)) for b in s.body)
        main = ast.For(
            target=ast.Name(uv, ast.Store()),
            iter=_call("serial", [copy.deepcopy(lo), main_stop, ast.Constant(factor)]),
            body=body, orelse=[],
        )  # fmt: skip
        rest = ast.For(
            target=s.target, iter=_call("serial", [copy.deepcopy(main_stop), hi]),
            body=s.body, orelse=[],
        )  # fmt: skip
        return [main, rest]


def apply_hints(info: KernelInfo, f: ast.FunctionDef, attrs: dict[str, Any], target: str) -> None:
    if attrs.get("unroll") or attrs.get("tile") or attrs.get("order"):
        f.body = _Hints(info, attrs, target).block(f.body)


# ---- CPU (Numba) --------------------------------------------------------------------------

_CPU_CALLS = {
    "sqrt": "np.sqrt", "sign": "np.sign", "log": "np.log", "exp": "np.exp", "tanh": "np.tanh",
    "abs": "np.abs", "power": "np.power", "floor": "np.floor", "erf": "math.erf",
    "isnan": "np.isnan", "isinf": "np.isinf", "isfinite": "np.isfinite", "sin": "np.sin",
    "cos": "np.cos", "atan": "np.arctan", "ceil": "np.ceil", "trunc": "np.trunc",
    "round": "np.rint", "atan2": "np.arctan2", "expm1": "np.expm1", "max": "max",
    "min": "min", "len": "len", **{c: f"np.{c}" for c in CASTS},
}  # fmt: skip
_CUDA_CALLS = {
    "sqrt": "math.sqrt", "log": "math.log", "exp": "math.exp", "tanh": "math.tanh",
    "abs": "abs", "power": "math.pow", "floor": "math.floor", "erf": "math.erf",
    "isnan": "math.isnan", "isinf": "math.isinf", "isfinite": "math.isfinite",
    "sin": "math.sin", "cos": "math.cos", "atan": "math.atan", "ceil": "math.ceil",
    "trunc": "math.trunc", "round": "round", "atan2": "math.atan2", "expm1": "math.expm1",
    "max": "max", "min": "min", "len": "len", "sign": "_sign", "rsqrt": "_rsqrt",
    **{c: f"numba.{c}" for c in CASTS},
}  # fmt: skip


def _dtype_expr(d: ast.expr) -> ast.expr:
    if isinstance(d, ast.Constant) and isinstance(d.value, str):
        return _attr(f"np.{np.dtype(d.value).name}")
    if isinstance(d, ast.Name) and d.id in CASTS:
        return _attr(f"np.{d.id}")
    return d


def _shape_expr(s: ast.expr) -> ast.expr:
    if isinstance(s, ast.List):
        return ast.Tuple(elts=s.elts, ctx=ast.Load())
    if isinstance(s, ast.Tuple) or (isinstance(s, ast.Attribute) and s.attr == "shape"):
        return s
    return ast.Tuple(elts=[s], ctx=ast.Load())


class _Lower(ast.NodeTransformer):
    """Intrinsic calls, declarations and loop keywords -> Numba (CPU or CUDA device) code."""

    def __init__(self, target: str, parallel: bool, info: KernelInfo) -> None:
        self.target = target
        self.parallel = parallel
        self.info = info
        self.in_prange = False
        self.used_prange = False
        self.depth = 0

    def error(self, node: ast.AST, msg: str) -> DSLValueError:
        return DSLValueError(
            self.info.name, msg, code="hybrid-cuda-unsupported", filename=self.info.filename,
            lineno=getattr(node, "lineno", None),
        )  # fmt: skip

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        name = node.func.id  # type: ignore[attr-defined]
        table = _CPU_CALLS if self.target == "cpu" else _CUDA_CALLS
        if name == "rsqrt" and self.target == "cpu":
            return _call("np.reciprocal", [_call("np.sqrt", node.args)])
        if name == "ceil_div":
            a, b = node.args
            return ast.BinOp(ast.BinOp(ast.BinOp(a, ast.Add(), b), ast.Sub(), ast.Constant(1)),
                             ast.FloorDiv(), copy.deepcopy(b))  # fmt: skip
        if name in table:
            node.func = _attr(table[name])
        return node

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        if _is_decl(node):
            call: ast.Call = node.value  # type: ignore[assignment]
            args = list(call.args) + [k.value for k in call.keywords]
            if self.target == "cuda":
                if call.func.id == "allocate" and self.depth:  # type: ignore[attr-defined]
                    raise self.error(node, "allocate() inside a loop is not supported on GPU; "
                                     "declare temporaries at the kernel's top level")  # fmt: skip
                func = _attr("cuda.device_array")
            else:
                func = _attr("np.empty")
            node.value = _call(func, [_shape_expr(args[0]), _dtype_expr(args[1])])
            return node
        self.generic_visit(node)
        return node

    def visit_With(self, node: ast.With) -> Any:
        return [self.visit(s) for s in node.body]

    def visit_For(self, node: ast.For) -> Any:
        kind = _loop_kind(node)
        args = [self.visit(a) for a in node.iter.args]  # type: ignore[attr-defined]
        outer_prange = self.in_prange
        if kind == "grid":
            if self.target == "cuda":
                raise self.error(node, "grid() loops are not supported by the CUDA backend; "
                                 "write nested parallel/range loops")  # fmt: skip
            node.iter = _call("np.ndindex", [_shape_expr(args[0])])
        elif kind == "parallel" and self.parallel and not self.in_prange:
            node.iter = _call("prange", args)
            self.in_prange = self.used_prange = True
        else:
            node.iter = _call("range", args)
        self.depth += 1
        node.body = [s for b in node.body for s in _as_list(self.visit(b))]
        self.depth -= 1
        self.in_prange = outer_prange
        return node


def _as_list(x: Any) -> list[Any]:
    return x if isinstance(x, list) else [x]


def _header(info: KernelInfo, target: str) -> str:
    return (
        f"# Generated by sporeling.customop from {info.filename}:{info.first_line}, kernel "
        f"'{info.name}' (target {target}).\n# Do not edit: regenerated from the DSL source."
        "\nimport math\n\nimport numba\nimport numpy as np\nfrom numba import prange\n"
    )


_CPU_BOUNDS = """

@numba.njit(inline="always")
def _ck(i, n, flag):
    # an index out of [-n, n) is recorded and replaced by 0 (a raise inside a prange loop
    # would make Numba run it serially; its own boundscheck skips prange loops)
    if i < -n or i >= n:
        flag[0] = 1
        return i - i  # 0 of i's type (a prange index is unsigned)
    return i


@numba.njit(inline="always")
def _inb(i, n):
    return -n <= i < n
"""


class _BoundsCheck(ast.NodeTransformer):
    """Every tensor index checked: loads take ``_ck`` (recorded, replaced by 0), stores run
    only when their indices are in range; the kernel raises IndexError before returning."""

    def __init__(self, tensors: set[str]) -> None:
        self.tensors = tensors

    def _elts(self, node: ast.Subscript) -> list[ast.expr] | None:
        if not (isinstance(node.value, ast.Name) and node.value.id in self.tensors):
            return None
        idx = node.slice
        if isinstance(idx, ast.Name):  # a grid index tuple: in range of its grid
            return None
        return list(idx.elts) if isinstance(idx, ast.Tuple) else [idx]

    def _dim(self, node: ast.Subscript, k: int) -> ast.expr:
        shape = ast.Attribute(value=copy.deepcopy(node.value), attr="shape", ctx=ast.Load())
        return ast.Subscript(value=shape, slice=ast.Constant(k), ctx=ast.Load())

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        self.generic_visit(node)
        elts = self._elts(node)
        if elts is None or not isinstance(node.ctx, ast.Load):
            return node
        checked = [_call("_ck", [e, self._dim(node, k), _name("_oob")]) for k, e in enumerate(elts)]
        node.slice = ast.Tuple(elts=checked, ctx=ast.Load()) if len(checked) > 1 else checked[0]
        return node

    def _guarded(self, node: ast.Assign | ast.AugAssign, target: ast.expr) -> ast.AST:
        node.value = self.visit(node.value)
        if not isinstance(target, ast.Subscript):
            return node
        elts = self._elts(target)
        target.slice = self.visit(target.slice)
        if elts is None:
            return node
        elts = list(target.slice.elts) if isinstance(target.slice, ast.Tuple) else [target.slice]
        conds: list[ast.expr] = [
            _call("_inb", [copy.deepcopy(e), self._dim(target, k)]) for k, e in enumerate(elts)
        ]
        test = conds[0] if len(conds) == 1 else ast.BoolOp(op=ast.And(), values=conds)
        flag = ast.parse("_oob[0] = 1").body[0]
        return ast.copy_location(ast.If(test=test, body=[node], orelse=[flag]), node)

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        return self._guarded(node, node.targets[0])

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        return self._guarded(node, node.target)

    def visit_Return(self, node: ast.Return) -> Any:
        check = ast.parse(
            "if _oob[0]:\n    raise IndexError('an index is out of bounds in the compiled kernel')"
        ).body[0]
        return [check, node]


def _add_bounds_checks(info: KernelInfo, f: ast.FunctionDef) -> None:
    tensors = set(info.args) | set(info.declared_outputs) | set(info.temps)
    f.body = [s for b in f.body for s in _as_list(_BoundsCheck(tensors).visit(b))]
    f.body.insert(0, ast.parse("_oob = np.zeros(1, np.int64)").body[0])


def cpu_source(info: KernelInfo, attrs: dict[str, Any]) -> tuple[str, bool]:
    """Source of a module defining the Numba CPU kernel ``info.name``; and whether it is
    parallel."""
    f = normalize(info)
    apply_hints(info, f, attrs, "cpu")
    low = _Lower("cpu", bool(attrs.get("parallel", True)), info)
    f.body = [s for b in f.body for s in _as_list(low.visit(b))]
    fast = "FASTMATH" if attrs.get("fastmath") else "False"
    cache = bool(attrs.get("cache", True))
    # Bounds checks on unless turned off: an index past the end would read or write
    # another array's memory silently, or kill the process.
    check = bool(attrs.get("boundscheck", True))
    if check:
        _add_bounds_checks(info, f)
    deco = f"@numba.njit(cache={cache}, parallel={low.used_prange}, fastmath={fast}, nogil=True)"
    mod = ast.Module(body=[f], type_ignores=[])
    ast.fix_missing_locations(mod)
    # Numba takes fastmath flags as a set (a list fails at compile time)
    src = _header(info, "cpu") + (_CPU_BOUNDS if check else "")
    src += f"\nFASTMATH = set({sorted(FASTMATH)!r})\n\n\n{deco}\n"
    return src + ast.unparse(mod) + "\n", low.used_prange


# ---- CUDA (Numba) -------------------------------------------------------------------------

_CUDA_HELPERS = """
@cuda.jit(device=True)
def _sign(x):
    return 1 if x > 0 else (-1 if x < 0 else 0)


@cuda.jit(device=True)
def _rsqrt(x):
    return 1 / math.sqrt(x)
"""


def _mutated(f: ast.FunctionDef) -> set[str]:
    """Scalar names assigned more than once or inside loops/branches."""
    seen: set[str] = set()
    mutated: set[str] = set()
    top = set(map(id, f.body))
    for node in ast.walk(f):
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            mutated.add(node.target.id)
        elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            n = node.targets[0].id
            if n in seen or id(node) not in top:
                mutated.add(n)
            seen.add(n)
    return mutated


def cuda_source(info: KernelInfo, attrs: dict[str, Any]) -> str:
    """Source of a module with CUDA kernels and a host ``launch(*inputs)`` function."""
    f = normalize(info)
    apply_hints(info, f, attrs, "cuda")
    body = [s for s in f.body if not isinstance(s, ast.Return)]
    flat: list[ast.stmt] = []
    for s in body:  # inline top-level `with` scopes
        flat.extend(s.body if isinstance(s, ast.With) else [s])
    ret: ast.Return = f.body[-1]  # type: ignore[assignment]
    mutated = _mutated(f)
    tensors = list(info.args) + info.declared_outputs + info.temps
    params = ", ".join(tensors)
    threads = int(attrs.get("threads", 256))

    hoisted: list[ast.stmt] = []  # scalars of shapes only: computed on host and in kernels
    host: list[str] = []
    kernels: list[str] = []
    serial: list[ast.stmt] = []

    def low(stmts: list[ast.stmt]) -> list[ast.stmt]:
        lw = _Lower("cuda", False, info)
        lw.depth = 1
        return [s for b in copy.deepcopy(stmts) for s in _as_list(lw.visit(b))]

    def emit(kbody: list[ast.stmt], dims: int, launch: str) -> None:
        name = f"_k{len(kernels)}"
        fn = ast.FunctionDef(
            name=name, args=ast.arguments(posonlyargs=[], args=[ast.arg(t) for t in tensors],
                                          kwonlyargs=[], kw_defaults=[], defaults=[]),
            body=kbody, decorator_list=[_attr("cuda.jit")], returns=None,
        )  # fmt: skip
        mod = ast.Module(body=[fn], type_ignores=[])
        ast.fix_missing_locations(mod)
        kernels.append(ast.unparse(mod))
        host.append(launch.replace("KERNEL", name))

    def flush_serial() -> None:
        if not serial:
            return
        guard = ast.If(test=ast.Compare(_call("cuda.grid", [ast.Constant(1)]), [ast.Eq()],
                                        [ast.Constant(0)]),
                       body=low(hoisted) + low(serial), orelse=[])  # fmt: skip
        emit([guard], 1, f"KERNEL[1, 1]({params})")
        serial.clear()

    for s in flat:
        if _is_decl(s):
            (decl,) = low([s])
            host.append(ast.unparse(decl))
            continue
        if (
            isinstance(s, ast.Assign)
            and isinstance(s.targets[0], ast.Name)
            and s.targets[0].id not in mutated
            and not any(
                isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name)
                for n in ast.walk(s.value)
            )
        ):
            hoisted.append(s)
            (lowered,) = low([s])
            host.append(ast.unparse(lowered))
            continue
        if isinstance(s, ast.For) and _loop_kind(s) == "parallel" and _bounds(s)[2] is None:
            flush_serial()
            chain = [s]
            while (
                len(chain) < 3
                and len(chain[-1].body) == 1
                and isinstance(chain[-1].body[0], ast.For)
                and _loop_kind(chain[-1].body[0]) == "parallel"
                and _bounds(chain[-1].body[0])[2] is None
                and not _names_in(chain[-1].body[0].iter) & {c.target.id for c in chain}  # type: ignore[attr-defined]
            ):
                chain.append(chain[-1].body[0])
            d = len(chain)
            los = [ast.unparse(low([ast.Expr(_bounds(c)[0])])[0]) for c in chain]
            his = [ast.unparse(low([ast.Expr(_bounds(c)[1])])[0]) for c in chain]
            lines = [f"_g = cuda.grid({d})"]
            for k, c in enumerate(chain):
                comp = "_g" if d == 1 else f"_g[{d - 1 - k}]"
                lines.append(f"{c.target.id} = {comp} + ({los[k]})")  # type: ignore[attr-defined]
            cond = " and ".join(f"{c.target.id} < ({his[k]})" for k, c in enumerate(chain))  # type: ignore[attr-defined]
            pre = [ast.parse(x).body[0] for x in lines]
            guard = ast.If(test=ast.parse(cond, mode="eval").body, body=low(chain[-1].body),
                           orelse=[])  # fmt: skip
            exts = [f"max(({his[k]}) - ({los[k]}), 0)" for k in range(d)]
            if d == 1:
                tpb = f"({threads},)"
                blocks = f"((_e[0] + {threads - 1}) // {threads},)"
            elif d == 2:
                tpb, blocks = "(16, 16)", "((_e[1] + 15) // 16, (_e[0] + 15) // 16)"
            else:
                tpb = "(8, 8, 4)"
                blocks = "((_e[2] + 7) // 8, (_e[1] + 7) // 8, (_e[0] + 3) // 4)"
            launch = (
                f"_e = ({', '.join(exts)},)\nif min(_e) > 0:\n    KERNEL[{blocks}, {tpb}]({params})"
            )
            emit(low(hoisted) + pre + [guard], d, launch)
            continue
        serial.append(s)
    flush_serial()

    outs = [e.id for e in (ret.value.elts if isinstance(ret.value, ast.Tuple) else [ret.value])]  # type: ignore[union-attr]
    ins = list(info.args)
    lines = [f"def launch({', '.join(ins)}):"]
    first = ins[0] if ins else None
    lines.append(f"    _host = {('not _on_device(' + first + ')') if first else 'True'}")
    if ins:
        lines.append(f"    _orig = ({', '.join(ins)},)")
        lines.append("    if _host:")
        for a in ins:
            lines.append(f"        {a} = cuda.to_device(np.ascontiguousarray({a}))")
    for h in host:
        lines.extend("    " + x for x in h.splitlines())
    lines.append("    if _host:")
    for o in outs:
        if o in ins:
            lines.append(f"        _orig[{ins.index(o)}][...] = {o}.copy_to_host()")
            lines.append(f"        {o} = _orig[{ins.index(o)}]")
        else:
            lines.append(f"        {o} = {o}.copy_to_host()")
    lines.append(f"    return {', '.join(outs)}{',' if len(outs) == 1 else ''}")
    launcher = "\n".join(lines)
    on_device = (
        "def _on_device(a):\n"
        "    return getattr(a, '__cuda_array_interface__', None) is not None "
        "and not isinstance(a, np.ndarray)\n"
    )
    return (
        _header(info, "cuda")
        + "from numba import cuda\n"
        + _CUDA_HELPERS
        + "\n\n"
        + on_device
        + "\n\n"
        + "\n\n\n".join(kernels)
        + "\n\n\n"
        + launcher
        + "\n"
    )
