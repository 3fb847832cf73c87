"""The Hybrid DSL validator: MindSpore's allowed and forbidden constructs, on the AST.

Allowed (as in MindSpore 1.8): inputs are the function's positional arguments;
``output_tensor(shape, dtype)`` declares an output and ``allocate(shape, dtype)`` a
temporary; scalars are declared by their first assignment and live in the loop level where
that happens; expressions are scalar-indexed (``c[i, j] = a[i, j] + b[i, j]``), with
``+ - * /`` (and ``// %``), comparisons, ``if``/``else`` and conditional expressions;
loops are ``for`` over ``range``, ``grid``, ``serial``, ``vectorize``, ``parallel`` or
``reduce``; ``with attr(...)`` / ``with block_realize(t)`` scopes; the intrinsics of
:data:`INTRINSICS`; only ``.shape`` (with a fixed index) and ``.dtype`` attributes; the
return value is a name or a tuple of names, each an input (an in-place output) or an
``output_tensor``, and every ``output_tensor`` must be returned.

Everything else is rejected with :class:`DSLTypeError` (a construct the DSL lacks) or
:class:`DSLValueError` (a misuse), pointing at the source line.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import dataclass, field
from typing import Any

from ._errors import DSLTypeError, DSLValueError, HybridDSLError

__all__ = ["KernelInfo", "parse_kernel", "INTRINSICS", "LOOP_KEYWORDS", "CASTS"]

LOOP_KEYWORDS = ("range", "grid", "serial", "vectorize", "parallel", "reduce")
CASTS = ("int8", "int16", "int32", "int64", "float16", "float32", "float64")
MATH = (
    "sqrt", "sign", "log", "exp", "tanh", "abs", "power", "floor",
    "rsqrt", "erf", "isnan", "isinf", "isfinite", "sin", "cos", "atan", "ceil", "trunc",
    "round", "ceil_div", "atan2", "expm1",
)  # fmt: skip
BUILTINS = ("max", "min", "len")
INTRINSICS = frozenset(MATH + CASTS + BUILTINS)
DECLS = ("output_tensor", "allocate")
SCOPES = ("attr", "block_realize")
_ALLOWED_BINOPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod)
_AUG_OPS = (ast.Add, ast.Sub, ast.Mult, ast.Div)


@dataclass
class KernelInfo:
    """What the validator learned about a kernel."""

    name: str
    filename: str
    first_line: int  # line of the ``def`` in the file
    tree: ast.FunctionDef  # line numbers are the file's
    args: list[str]
    outputs: list[str]  # returned names, in order
    declared_outputs: list[str]  # output_tensor names
    temps: list[str]  # allocate names
    inplace: list[int] = field(default_factory=list)  # input positions returned as outputs

    @property
    def n_outputs(self) -> int:
        return len(self.outputs)


def _source_of(fn: Any) -> tuple[str, str, int]:
    try:
        lines, start = inspect.getsourcelines(fn)
        filename = inspect.getsourcefile(fn) or "<unknown>"
    except (OSError, TypeError) as exc:
        raise DSLValueError(
            getattr(fn, "__name__", repr(fn)),
            "its source code is not available (the Hybrid DSL compiles from source); define "
            "it in a file, not in an interactive prompt or exec()",
            code="hybrid-no-source",
        ) from exc
    return textwrap.dedent("".join(lines)), filename, start


def parse_kernel(fn: Any) -> KernelInfo:
    """Parse and validate ``fn`` as a Hybrid DSL function."""
    src, filename, start = _source_of(fn)
    tree = ast.parse(src)
    ast.increment_lineno(tree, start - 1)
    fdef = tree.body[0]
    if not isinstance(fdef, ast.FunctionDef):
        raise DSLTypeError(
            getattr(fn, "__name__", "?"), "expected a plain function definition",
            code="hybrid-not-a-function", filename=filename, lineno=start,
        )  # fmt: skip
    lines = src.splitlines()
    return _Validator(fdef, filename, start, lines).run()


class _Scope:
    def __init__(self) -> None:
        self.names: dict[str, str] = {}  # name -> kind


class _Validator:
    def __init__(self, fdef: ast.FunctionDef, filename: str, start: int, lines: list[str]):
        self.fdef = fdef
        self.filename = filename
        self.start = start
        self.lines = lines
        self.scopes: list[_Scope] = []
        self.dead: dict[str, int] = {}  # scalars whose scope ended -> line declared
        self.outputs: list[str] = []
        self.temps: list[str] = []
        self.args: list[str] = []

    # ---- errors -------------------------------------------------------------------------
    def _err(self, cls: type[HybridDSLError], node: ast.AST, msg: str, code: str) -> Exception:
        lineno = getattr(node, "lineno", self.start)
        idx = lineno - self.start
        line = self.lines[idx] if 0 <= idx < len(self.lines) else ""
        return cls(
            self.fdef.name, msg, code=code, filename=self.filename, lineno=lineno,
            col=getattr(node, "col_offset", 0), source_line=line,
        )  # fmt: skip

    def type_error(self, node: ast.AST, msg: str, code: str) -> Exception:
        return self._err(DSLTypeError, node, msg, code)

    def value_error(self, node: ast.AST, msg: str, code: str) -> Exception:
        return self._err(DSLValueError, node, msg, code)

    # ---- symbols ------------------------------------------------------------------------
    def lookup(self, name: str) -> str | None:
        for scope in reversed(self.scopes):
            if name in scope.names:
                return scope.names[name]
        return None

    def declare(self, name: str, kind: str) -> None:
        self.scopes[-1].names[name] = kind

    def push(self) -> None:
        self.scopes.append(_Scope())

    def pop(self) -> None:
        scope = self.scopes.pop()
        for name, kind in scope.names.items():
            if kind == "scalar":
                self.dead[name] = 1

    # ---- entry --------------------------------------------------------------------------
    def run(self) -> KernelInfo:
        f = self.fdef
        a = f.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.defaults or a.kw_defaults:
            raise self.value_error(
                f, "kernel arguments must be plain positional tensors (no *args, **kwargs, "
                "keyword-only arguments or defaults)", "hybrid-arguments",
            )  # fmt: skip
        self.push()
        for arg in [*a.posonlyargs, *a.args]:
            self.args.append(arg.arg)
            self.declare(arg.arg, "input")
        body = list(f.body)
        if body and _is_docstring(body[0]):
            body = body[1:]
        if not body or not isinstance(body[-1], ast.Return):
            raise self.value_error(
                body[-1] if body else f,
                "the kernel must end with `return <outputs>` (a name or a tuple of names)",
                "hybrid-missing-return",
            )
        for stmt in body[:-1]:
            self.stmt(stmt)
        returned = self.check_return(body[-1])
        missing = [o for o in self.outputs if o not in returned]
        if missing:
            raise self.value_error(
                body[-1], f"every output_tensor must be returned; {missing} is not",
                "hybrid-unreturned-output",
            )  # fmt: skip
        inplace = [self.args.index(r) for r in returned if r in self.args]
        return KernelInfo(
            name=f.name, filename=self.filename, first_line=self.start, tree=f,
            args=self.args, outputs=returned, declared_outputs=self.outputs,
            temps=self.temps, inplace=inplace,
        )  # fmt: skip

    def check_return(self, node: ast.Return) -> list[str]:
        val = node.value
        elts = val.elts if isinstance(val, ast.Tuple) else [val]
        names = []
        for e in elts:
            if not isinstance(e, ast.Name):
                raise self.value_error(
                    e if e is not None else node,
                    "the return value must be a name or a tuple of names of output tensors",
                    "hybrid-return-value",
                )
            kind = self.lookup(e.id)
            if kind not in ("input", "output"):
                what = "undefined" if kind is None else f"a {kind}"
                raise self.value_error(
                    e, f"'{e.id}' is {what}; only inputs (in-place) and output_tensor "
                    "results can be returned", "hybrid-return-value",
                )  # fmt: skip
            names.append(e.id)
        return names

    # ---- statements ---------------------------------------------------------------------
    def stmt(self, s: ast.stmt) -> None:
        if isinstance(s, ast.Assign):
            self.assign(s)
        elif isinstance(s, ast.AugAssign):
            self.aug_assign(s)
        elif isinstance(s, ast.For):
            self.for_(s)
        elif isinstance(s, ast.If):
            self.expr(s.test)
            for branch in (s.body, s.orelse):
                self.push()
                for b in branch:
                    self.stmt(b)
                self.pop()
        elif isinstance(s, ast.With):
            self.with_(s)
        elif isinstance(s, ast.Pass):
            pass
        elif isinstance(s, ast.While):
            raise self.type_error(
                s, "`while` loops are not supported; use `for` with range/serial/parallel/...",
                "hybrid-while",
            )  # fmt: skip
        elif isinstance(s, ast.Break):
            raise self.type_error(s, "`break` is not supported", "hybrid-break")
        elif isinstance(s, ast.Continue):
            raise self.type_error(s, "`continue` is not supported", "hybrid-continue")
        elif isinstance(s, ast.Return):
            raise self.value_error(
                s, "`return` is only allowed as the last statement of the kernel",
                "hybrid-early-return",
            )  # fmt: skip
        elif isinstance(s, ast.Expr):
            if isinstance(s.value, ast.Call):
                self.expr(s.value)  # raises for anything but an allowed call
            raise self.value_error(
                s, "an expression statement has no effect in the Hybrid DSL; assign its "
                "value to a tensor element or a scalar", "hybrid-expression-statement",
            )  # fmt: skip
        else:
            raise self.type_error(
                s, f"`{type(s).__name__}` statements are not supported in the Hybrid DSL",
                "hybrid-unsupported-statement",
            )  # fmt: skip

    def assign(self, s: ast.Assign) -> None:
        if len(s.targets) != 1:
            raise self.value_error(s, "chained assignment is not supported", "hybrid-assign")
        target = s.targets[0]
        if isinstance(target, ast.Name):
            name = target.id
            kind = self.lookup(name)
            val = s.value
            if (
                isinstance(val, ast.Call)
                and isinstance(val.func, ast.Name)
                and val.func.id in DECLS
            ):
                if kind is not None:
                    raise self.value_error(
                        s, f"'{name}' is already defined (a {kind}); a tensor's shape and "
                        "dtype are fixed once declared", "hybrid-redefinition",
                    )  # fmt: skip
                self.declaration(val, name)
                return
            if kind in ("input", "output", "temp"):
                raise self.value_error(
                    s, f"'{name}' is a tensor and cannot be reassigned; write its elements "
                    f"({name}[i] = ...)", "hybrid-redefinition",
                )  # fmt: skip
            if kind in ("loop", "index"):
                raise self.value_error(
                    s, f"loop variable '{name}' cannot be reassigned", "hybrid-loop-var"
                )
            if isinstance(val, ast.Name) and self.lookup(val.id) in ("input", "output", "temp"):
                raise self.value_error(
                    val, f"'{val.id}' is a tensor; tensors cannot be aliased or assigned "
                    "whole (no tensorised expressions)", "hybrid-tensorised",
                )  # fmt: skip
            self.expr(val)
            if kind is None:
                self.dead.pop(name, None)
                self.declare(name, "scalar")
            return
        if isinstance(target, ast.Subscript):
            self.element(target)
            self.expr(s.value)
            return
        raise self.value_error(
            target, "only a name or a tensor element can be assigned (no tuple unpacking or "
            "attributes)", "hybrid-assign",
        )  # fmt: skip

    def aug_assign(self, s: ast.AugAssign) -> None:
        if not isinstance(s.op, _AUG_OPS):
            raise self.value_error(
                s, f"operator {type(s.op).__name__}= is not supported; use += -= *= /=",
                "hybrid-operator",
            )  # fmt: skip
        t = s.target
        if isinstance(t, ast.Name):
            kind = self.lookup(t.id)
            if kind in ("loop", "index"):
                raise self.value_error(
                    s, f"loop variable '{t.id}' cannot be reassigned", "hybrid-loop-var"
                )
            if kind != "scalar":
                self.name_load(t)  # raises the right error
                raise self.value_error(
                    s, f"'{t.id}' is a tensor; update its elements", "hybrid-tensorised"
                )
        elif isinstance(t, ast.Subscript):
            self.element(t)
        else:
            raise self.value_error(t, "unsupported assignment target", "hybrid-assign")
        self.expr(s.value)

    def declaration(self, call: ast.Call, name: str) -> None:
        fname = call.func.id  # type: ignore[attr-defined]
        if fname == "output_tensor" and len(self.scopes) != 1:
            raise self.value_error(
                call, "output_tensor must be declared at the kernel's top level, not inside a "
                "loop or branch", "hybrid-output-scope",
            )  # fmt: skip
        args = list(call.args) + [k.value for k in call.keywords]
        if len(args) != 2:
            raise self.value_error(
                call, f"{fname}(shape, dtype) takes 2 arguments, got {len(args)}",
                "hybrid-declaration",
            )  # fmt: skip
        shape, dtype = args
        if isinstance(shape, (ast.Tuple, ast.List)):
            for e in shape.elts:
                self.expr(e)
        else:
            self.expr(shape, allow_shape=True)
        literal = isinstance(dtype, ast.Constant) and isinstance(dtype.value, str)
        if not (literal or (isinstance(dtype, ast.Name) and dtype.id in CASTS)):
            self.expr(dtype, allow_dtype=True)
        if fname == "output_tensor":
            self.outputs.append(name)
            self.declare(name, "output")
        else:
            self.temps.append(name)
            self.declare(name, "temp")

    def for_(self, s: ast.For) -> None:
        if s.orelse:
            raise self.type_error(s, "`for ... else` is not supported", "hybrid-for-else")
        if not isinstance(s.target, ast.Name):
            raise self.value_error(
                s.target, "the loop variable must be a single name", "hybrid-loop-var"
            )
        it = s.iter
        if not (
            isinstance(it, ast.Call)
            and isinstance(it.func, ast.Name)
            and it.func.id in LOOP_KEYWORDS
        ):
            raise self.value_error(
                it, f"loops must iterate over one of {', '.join(LOOP_KEYWORDS)}",
                "hybrid-loop-iterator",
            )  # fmt: skip
        if it.keywords:
            raise self.value_error(it, "loop iterators take no keywords", "hybrid-loop-iterator")
        n = len(it.args)
        if it.func.id == "grid":
            if n != 1:
                raise self.value_error(it, "grid(shape) takes one shape", "hybrid-loop-iterator")
            g = it.args[0]
            if isinstance(g, (ast.Tuple, ast.List)):
                for e in g.elts:
                    self.expr(e)
            else:
                self.expr(g, allow_shape=True)
        else:
            if not 1 <= n <= 3:
                raise self.value_error(
                    it, f"{it.func.id}() takes 1 to 3 bounds, got {n}", "hybrid-loop-iterator"
                )
            for e in it.args:
                self.expr(e)
        name = s.target.id
        if self.lookup(name) is not None:
            raise self.value_error(
                s.target, f"loop variable '{name}' shadows an existing name", "hybrid-loop-var"
            )
        self.push()
        self.declare(name, "index" if it.func.id == "grid" else "loop")
        for b in s.body:
            self.stmt(b)
        self.pop()

    def with_(self, s: ast.With) -> None:
        for item in s.items:
            c = item.context_expr
            if item.optional_vars is not None or not (
                isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id in SCOPES
            ):
                raise self.value_error(
                    s, "only `with attr(key, value):` and `with block_realize(tensor):` are "
                    "supported", "hybrid-with",
                )  # fmt: skip
            if c.func.id == "attr":
                if len(c.args) != 2 or not all(isinstance(a, ast.Constant) for a in c.args):
                    raise self.value_error(
                        c, "attr(key, value) takes a string key and a str/number/bool value",
                        "hybrid-with",
                    )  # fmt: skip
            else:
                if len(c.args) != 1 or not (
                    isinstance(c.args[0], ast.Name)
                    and self.lookup(c.args[0].id) in ("input", "output", "temp")
                ):
                    raise self.value_error(
                        c, "block_realize(tensor) takes one tensor", "hybrid-with"
                    )
        for b in s.body:
            self.stmt(b)

    # ---- expressions --------------------------------------------------------------------
    def element(self, node: ast.Subscript) -> None:
        """``t[i, j]`` where ``t`` is a tensor (or ``idx[k]`` of a grid index)."""
        base = node.value
        if not isinstance(base, ast.Name):
            raise self.value_error(
                node, "only tensors and grid indices can be indexed", "hybrid-subscript"
            )
        kind = self.lookup(base.id)
        if kind is None:
            self.name_load(base)
        if kind == "index":
            if not (isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, int)):
                raise self.value_error(
                    node, f"a grid index is indexed with a fixed integer ({base.id}[0], ...)",
                    "hybrid-subscript",
                )  # fmt: skip
            return
        if kind not in ("input", "output", "temp"):
            raise self.value_error(
                node, f"'{base.id}' is a {kind}, not a tensor; it cannot be indexed",
                "hybrid-subscript",
            )  # fmt: skip
        idx = node.slice
        elts = idx.elts if isinstance(idx, ast.Tuple) else [idx]
        for e in elts:
            if isinstance(e, ast.Slice):
                raise self.value_error(
                    e, "slices are not allowed; index every dimension with a scalar "
                    "(no tensorised expressions)", "hybrid-slice",
                )  # fmt: skip
            if isinstance(e, ast.Name) and self.lookup(e.id) == "index":
                continue
            self.expr(e)

    def name_load(self, node: ast.Name) -> str:
        kind = self.lookup(node.id)
        if kind is None:
            if node.id in self.dead:
                raise self.value_error(
                    node, f"scalar '{node.id}' is used outside the loop level where it was "
                    "first assigned; declare it before the loop", "hybrid-scalar-scope",
                )  # fmt: skip
            raise self.value_error(
                node, f"'{node.id}' is not defined in the kernel (globals and closures are "
                "not visible to the Hybrid DSL)", "hybrid-undefined-name",
            )  # fmt: skip
        return kind

    def expr(self, e: ast.expr, allow_shape: bool = False, allow_dtype: bool = False) -> None:
        if isinstance(e, ast.Constant):
            if isinstance(e.value, (bool, int, float)):
                return
            raise self.value_error(
                e, f"constant {e.value!r} is not allowed here (only numbers)", "hybrid-constant"
            )
        if isinstance(e, ast.Name):
            kind = self.name_load(e)
            if kind in ("input", "output", "temp"):
                raise self.value_error(
                    e, f"'{e.id}' is a tensor; expressions are scalar-indexed only (write "
                    f"{e.id}[i, ...]; no tensorised expressions)", "hybrid-tensorised",
                )  # fmt: skip
            return
        if isinstance(e, ast.BinOp):
            if not isinstance(e.op, _ALLOWED_BINOPS):
                hint = " (use power(a, b))" if isinstance(e.op, ast.Pow) else ""
                raise self.value_error(
                    e, f"operator {type(e.op).__name__} is not supported{hint}",
                    "hybrid-operator",
                )  # fmt: skip
            self.expr(e.left)
            self.expr(e.right)
            return
        if isinstance(e, ast.UnaryOp):
            if isinstance(e.op, ast.Invert):
                raise self.value_error(e, "operator ~ is not supported", "hybrid-operator")
            self.expr(e.operand)
            return
        if isinstance(e, ast.Compare):
            self.expr(e.left)
            for c in e.comparators:
                self.expr(c)
            for op in e.ops:
                if isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)):
                    raise self.value_error(
                        e, f"comparison {type(op).__name__} is not supported", "hybrid-operator"
                    )
            return
        if isinstance(e, ast.BoolOp):
            for v in e.values:
                self.expr(v)
            return
        if isinstance(e, ast.IfExp):
            self.expr(e.test)
            self.expr(e.body)
            self.expr(e.orelse)
            return
        if isinstance(e, ast.Subscript):
            if isinstance(e.value, ast.Attribute):
                self.attribute(e.value, indexed=True)
                if not (isinstance(e.slice, ast.Constant) and isinstance(e.slice.value, int)):
                    raise self.value_error(
                        e, "shape elements must use fixed indices (x.shape[0], not "
                        "x.shape[i])", "hybrid-shape-index",
                    )  # fmt: skip
                return
            self.element(e)
            return
        if isinstance(e, ast.Attribute):
            self.attribute(e, indexed=False, allow_shape=allow_shape, allow_dtype=allow_dtype)
            return
        if isinstance(e, ast.Call):
            self.call(e)
            return
        if isinstance(e, (ast.Tuple, ast.List)):
            raise self.value_error(
                e, "tuples and lists are only allowed as shapes and return values",
                "hybrid-tuple",
            )  # fmt: skip
        raise self.type_error(
            e, f"`{type(e).__name__}` expressions are not supported in the Hybrid DSL",
            "hybrid-unsupported-expression",
        )  # fmt: skip

    def attribute(
        self, e: ast.Attribute, indexed: bool, allow_shape: bool = False, allow_dtype: bool = False
    ) -> None:
        if e.attr not in ("shape", "dtype"):
            raise self.value_error(
                e, f"attribute .{e.attr} is not allowed; only .shape and .dtype",
                "hybrid-attribute",
            )  # fmt: skip
        if not isinstance(e.value, ast.Name) or self.lookup(e.value.id) not in (
            "input", "output", "temp",
        ):  # fmt: skip
            raise self.value_error(e, f".{e.attr} is only available on tensors", "hybrid-attribute")
        if e.attr == "shape" and not (indexed or allow_shape):
            raise self.value_error(
                e, "a whole .shape is only allowed as a declaration or grid shape; index it "
                "with a fixed integer", "hybrid-shape-index",
            )  # fmt: skip
        if e.attr == "dtype" and not allow_dtype:
            raise self.value_error(
                e, ".dtype is only allowed as a declaration's dtype", "hybrid-attribute"
            )

    def call(self, e: ast.Call) -> None:
        if not isinstance(e.func, ast.Name):
            raise self.value_error(
                e, "only the DSL's intrinsic functions can be called (no methods)",
                "hybrid-unsupported-call",
            )  # fmt: skip
        name = e.func.id
        if name in DECLS:
            raise self.value_error(
                e, f"{name}(...) must be assigned directly to a new name", "hybrid-declaration"
            )
        if name in LOOP_KEYWORDS or name in SCOPES:
            raise self.value_error(
                e, f"{name}(...) is only allowed as a `for` iterator or `with` scope",
                "hybrid-unsupported-call",
            )  # fmt: skip
        if name not in INTRINSICS:
            raise self.value_error(
                e, f"call to unsupported function '{name}'; the DSL's intrinsics are "
                f"{', '.join(sorted(INTRINSICS))}", "hybrid-unsupported-call",
            )  # fmt: skip
        if e.keywords:
            raise self.value_error(e, f"{name}() takes no keywords", "hybrid-unsupported-call")
        if name == "len":
            if len(e.args) != 1 or not isinstance(e.args[0], ast.Name):
                raise self.value_error(e, "len() takes one tensor", "hybrid-unsupported-call")
            self.name_load(e.args[0])
            return
        for a in e.args:
            self.expr(a)


def _is_docstring(s: ast.stmt) -> bool:
    return (
        isinstance(s, ast.Expr)
        and isinstance(s.value, ast.Constant)
        and isinstance(s.value.value, str)
    )
