"""Checks of a hybrid kernel that need its inputs' ranks and dtypes, done once per input
signature before any execution: every tensor is indexed with as many indices as it has
dimensions, and no float value is stored into an integer or bool tensor (MindSpore's DSL
refuses the implicit cast; NumPy and Numba would truncate silently). Without them a rank
mistake surfaces as a raw Numba TypingError naming no kernel line.

The inference is deliberately partial: a rank or a kind it cannot tell (an unusual shape
expression, an intrinsic whose result kind depends on the NumPy version) is skipped, never
guessed.
"""

from __future__ import annotations

import ast
import linecache
from typing import Any

import numpy as np

from ._errors import DSLTypeError, DSLValueError, HybridDSLError
from ._validate import CASTS, DECLS, KernelInfo

__all__ = ["check_signature"]

_FLOAT_CALLS = frozenset(
    {"sqrt", "log", "exp", "tanh", "rsqrt", "erf", "sin", "cos", "atan", "atan2", "expm1"}
)
_BOOL_CALLS = frozenset({"isnan", "isinf", "isfinite"})
_SAME_CALLS = frozenset({"abs", "sign", "max", "min"})


def _kind(dtype: Any) -> str | None:
    try:
        k = np.dtype(getattr(dtype, "np", dtype)).kind
    except TypeError:
        return None
    return {"f": "f", "i": "i", "u": "i", "b": "b"}.get(k)


def _join(*kinds: str | None) -> str | None:
    if "f" in kinds:
        return "f"
    if None in kinds:
        return None
    return "i" if "i" in kinds else "b"


class _Checker:
    def __init__(self, info: KernelInfo, ndims: list[int], dtypes: list[Any]) -> None:
        self.info = info
        self.rank: dict[str, int | None] = dict(zip(info.args, ndims))
        self.tkind: dict[str, str | None] = {a: _kind(d) for a, d in zip(info.args, dtypes)}
        self.skind: dict[str, str | None] = {}  # scalars and loop variables
        self.grid: dict[str, int | None] = {}  # grid index variables -> rank

    def error(self, cls: type[HybridDSLError], node: ast.AST, msg: str, code: str) -> Exception:
        line = linecache.getline(self.info.filename, getattr(node, "lineno", 0)).rstrip("\n")
        return cls(
            self.info.name, msg, code=code, filename=self.info.filename,
            lineno=getattr(node, "lineno", None), col=getattr(node, "col_offset", 0),
            source_line=line,
        )  # fmt: skip

    # ---- ranks and kinds of declarations --------------------------------------------------
    def shape_rank(self, s: ast.expr) -> int | None:
        if isinstance(s, (ast.Tuple, ast.List)):
            return len(s.elts)
        if isinstance(s, ast.Attribute) and s.attr == "shape" and isinstance(s.value, ast.Name):
            return self.rank.get(s.value.id)
        if isinstance(s, (ast.Constant, ast.Name, ast.BinOp, ast.Call)):
            if isinstance(s, ast.Name) and s.id in self.rank:
                return None
            return 1  # a single size
        return None

    def dtype_kind(self, d: ast.expr) -> str | None:
        if isinstance(d, ast.Constant) and isinstance(d.value, str):
            return _kind(d.value)
        if isinstance(d, ast.Name) and d.id in CASTS:
            return _kind(d.id)
        if isinstance(d, ast.Attribute) and d.attr == "dtype" and isinstance(d.value, ast.Name):
            return self.tkind.get(d.value.id)
        return None

    # ---- expressions ----------------------------------------------------------------------
    def kind(self, e: ast.expr) -> str | None:
        if isinstance(e, ast.Constant):
            v = e.value
            return "b" if isinstance(v, bool) else "f" if isinstance(v, float) else "i"
        if isinstance(e, ast.Name):
            return self.skind.get(e.id)
        if isinstance(e, ast.Subscript):
            self.subscript(e)
            if isinstance(e.value, ast.Name) and e.value.id in self.tkind:
                return self.tkind[e.value.id]
            return "i"  # x.shape[k] or a grid index component
        if isinstance(e, ast.Attribute):
            return "i" if e.attr == "shape" else None
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Name):
            args = [self.kind(a) for a in e.args]
            name = e.func.id
            if name in CASTS:
                return _kind(name)
            if name in _FLOAT_CALLS:
                return "f"
            if name in _BOOL_CALLS:
                return "b"
            if name in _SAME_CALLS:
                return _join(*args)
            if name == "len":
                return "i"
            if name in ("power", "ceil_div"):
                return _join(*args)
            return "f" if "f" in args else None  # floor/ceil/trunc/round of ints: unsure
        if isinstance(e, ast.BinOp):
            left, right = self.kind(e.left), self.kind(e.right)
            if isinstance(e.op, ast.Div):
                return "f"
            return _join(left, right)
        if isinstance(e, ast.UnaryOp):
            inner = self.kind(e.operand)
            return "b" if isinstance(e.op, ast.Not) else inner
        if isinstance(e, (ast.Compare, ast.BoolOp)):
            for sub in ast.iter_child_nodes(e):
                if isinstance(sub, ast.expr):
                    self.kind(sub)
            return "b"
        if isinstance(e, ast.IfExp):
            self.kind(e.test)
            return _join(self.kind(e.body), self.kind(e.orelse))
        for sub in ast.iter_child_nodes(e):
            if isinstance(sub, ast.expr):
                self.kind(sub)
        return None

    def subscript(self, node: ast.Subscript) -> None:
        if not isinstance(node.value, ast.Name) or node.value.id not in self.rank:
            return
        name = node.value.id
        want = self.rank[name]
        idx = node.slice
        elts = idx.elts if isinstance(idx, ast.Tuple) else [idx]
        got: int | None = len(elts)
        if len(elts) == 1 and isinstance(idx, ast.Name) and idx.id in self.grid:
            got = self.grid[idx.id]
        for e in elts:
            self.kind(e)
        if want is not None and got is not None and want != got:
            raise self.error(
                DSLValueError, node,
                f"'{name}' has {want} dimension{'s' * (want != 1)} for these inputs but is "
                f"indexed with {got} ind{'ices' if got != 1 else 'ex'}", "hybrid-rank",
            )  # fmt: skip

    # ---- statements -----------------------------------------------------------------------
    def store(self, target: ast.expr, value_kind: str | None, node: ast.stmt) -> None:
        if isinstance(target, ast.Name):
            old = self.skind.get(target.id, value_kind)
            self.skind[target.id] = _join(old, value_kind) if target.id in self.skind else old
            return
        if not isinstance(target, ast.Subscript):
            return
        self.subscript(target)
        name = target.value.id if isinstance(target.value, ast.Name) else None
        tk = self.tkind.get(name) if name else None
        if value_kind == "f" and tk in ("i", "b"):
            raise self.error(
                DSLTypeError, node,
                f"a float value is stored into '{name}', a{'n integer' if tk == 'i' else ' bool'}"
                " tensor; cast it explicitly (e.g. int32(...)) as MindSpore's DSL requires",
                "hybrid-implicit-cast",
            )  # fmt: skip

    def stmt(self, s: ast.stmt) -> None:
        if isinstance(s, ast.Assign):
            call = s.value
            target = s.targets[0]
            if (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Name)
                and call.func.id in DECLS
                and isinstance(target, ast.Name)
            ):
                args = list(call.args) + [k.value for k in call.keywords]
                self.rank[target.id] = self.shape_rank(args[0]) if args else None
                self.tkind[target.id] = self.dtype_kind(args[1]) if len(args) > 1 else None
                return
            self.store(target, self.kind(s.value), s)
        elif isinstance(s, ast.AugAssign):
            value = self.kind(s.value)
            if isinstance(s.op, ast.Div):
                value = "f"
            self.store(s.target, value, s)
        elif isinstance(s, ast.For):
            var = s.target.id if isinstance(s.target, ast.Name) else None
            it = s.iter
            func = it.func.id if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) else ""
            for a in getattr(it, "args", []):
                self.kind(a)
            if var is not None:
                if func == "grid" and it.args:  # type: ignore[attr-defined]
                    self.grid[var] = self.shape_rank(it.args[0])  # type: ignore[attr-defined]
                else:
                    self.skind[var] = "i"
            for b in s.body:
                self.stmt(b)
        elif isinstance(s, ast.If):
            self.kind(s.test)
            for b in s.body + s.orelse:
                self.stmt(b)
        elif isinstance(s, ast.With):
            for b in s.body:
                self.stmt(b)
        elif isinstance(s, ast.Return) and s.value is not None:
            return
        elif isinstance(s, ast.Expr):
            self.kind(s.value)


def check_signature(info: KernelInfo, ndims: list[int], dtypes: list[Any]) -> None:
    """Raise a DSL error naming the kernel line if inputs of these ranks and dtypes would
    index a tensor with the wrong number of indices or store a float into an int tensor."""
    checker = _Checker(info, ndims, dtypes)
    for _ in range(2):  # twice, so scalars updated later in a loop are known on top
        for s in info.tree.body:
            checker.stmt(s)
