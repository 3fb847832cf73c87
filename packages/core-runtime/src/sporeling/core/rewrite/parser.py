"""Parse a Cell's ``construct`` source into rewrite nodes.

Every statement is flattened so that each cell call, primitive call and function call is a
node of its own (``x = self.pool(self.relu(self.conv1(x)))`` gives three nodes), variables
are renamed so each is assigned once, and ``if``/``for`` over the network's Python values
(``if self.down is None``, ``for blk in self.blocks``, ``for i in range(3)``) are resolved
when the tree is built, as MindSpore's graph compiler resolves them. An ``if``/``for`` that
depends on the inputs stays one ``Python`` node. Statements that cannot be represented
(``while``, ``try``, ``with``, nested ``def``/``class``, ``global``, ``yield``, a ``return``
inside input-dependent control flow) raise :class:`RewriteError` naming the line.
"""

from __future__ import annotations

import ast
import copy
import inspect
import textwrap
from typing import Any

from .._primitive import Primitive
from ..nn.cell import Cell
from .node import Node, NodeType, _path_source
from .scoped_value import ScopedValue

__all__ = ["RewriteError", "ConstructParser", "is_network"]

_MAX_UNROLL = 512
_UNSUPPORTED = {
    ast.While: "a while loop",
    ast.Try: "a try statement",
    ast.With: "a with statement",
    ast.AsyncWith: "an async with statement",
    ast.AsyncFor: "an async for loop",
    ast.FunctionDef: "a nested function definition",
    ast.AsyncFunctionDef: "a nested function definition",
    ast.ClassDef: "a nested class definition",
    ast.Global: "a global statement",
    ast.Nonlocal: "a nonlocal statement",
    ast.Import: "an import statement",
    ast.ImportFrom: "an import statement",
    ast.Delete: "a del statement",
    ast.Match: "a match statement",
}
_BINOP_NAMES = {
    ast.Add: "add",
    ast.Sub: "sub",
    ast.Mult: "mul",
    ast.Div: "div",
    ast.FloorDiv: "floordiv",
    ast.Mod: "mod",
    ast.Pow: "pow",
    ast.MatMult: "matmul",
    ast.BitAnd: "and",
    ast.BitOr: "or",
}


class RewriteError(ValueError):
    """A network (or a statement of its ``construct``) the rewrite tree cannot represent."""


def is_network(cell: Cell) -> bool:
    """True for cells whose ``construct`` becomes a sub-tree: user-defined networks and
    ``SequentialCell`` (the core's layers are leaves)."""
    cls = type(cell)
    if cls.construct is Cell.construct:
        return False
    from ..nn.containers import SequentialCell

    if isinstance(cell, SequentialCell):
        return True
    return not cls.__module__.startswith("sporeling.core.")


def _loads(node: ast.AST) -> list[str]:
    seen: list[str] = []
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in seen:
            seen.append(n.id)
    return seen


def _stores(nodes: list[ast.stmt]) -> list[str]:
    seen: list[str] = []
    for stmt in nodes:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id not in seen:
                seen.append(n.id)
    return seen


class _Subst(ast.NodeTransformer):
    """Replace loads of names by expressions (loop unrolling) or by other names (SSA)."""

    def __init__(self, mapping: dict[str, ast.expr]) -> None:
        self.mapping = mapping

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.mapping and isinstance(node.ctx, ast.Load):
            return ast.copy_location(copy.deepcopy(self.mapping[node.id]), node)
        return node


class _Rename(ast.NodeTransformer):
    def __init__(self, loads: dict[str, str], stores: dict[str, str]) -> None:
        self.loads = loads
        self.stores = stores

    def visit_Name(self, node: ast.Name) -> ast.AST:
        table = self.stores if isinstance(node.ctx, ast.Store) else self.loads
        if node.id in table:
            return ast.copy_location(ast.Name(table[node.id], node.ctx), node)
        return node


class ConstructParser:
    """Turns one cell's ``construct`` into nodes (``SymbolTree.create`` drives it)."""

    def __init__(self, cell: Cell) -> None:
        self.cell = cell
        cls = type(cell)
        fn = cls.construct
        if fn is Cell.construct:
            raise RewriteError(f"{cls.__name__}: the cell defines no construct to rewrite")
        try:
            lines, start = inspect.getsourcelines(fn)
            self.filename = inspect.getsourcefile(fn) or "<unknown>"
        except (OSError, TypeError) as exc:
            raise RewriteError(
                f"{cls.__name__}.construct: its source is not available ({exc}); the rewrite "
                "tree parses construct's source, so define the class in a file"
            ) from exc
        self.first_line = start
        tree = ast.parse(textwrap.dedent("".join(lines)))
        fdef = tree.body[0]
        if not isinstance(fdef, ast.FunctionDef):
            raise RewriteError(f"{cls.__name__}.construct: expected a plain def, got {fdef!r}")
        self.fdef = fdef
        self.src_lines = textwrap.dedent("".join(lines)).splitlines()
        self.namespace: dict[str, Any] = dict(fn.__globals__)
        closure = inspect.getclosurevars(fn)
        self.namespace.update(closure.nonlocals)
        self.paths = {id(c): tuple(n.split(".")) for n, c in cell.cells_and_names() if n}
        self.current: dict[str, str] = {}  # source variable -> its latest SSA name
        self.used: set[str] = set()
        self.nodes: list[Node] = []
        self.returned = False

    # ---- helpers --------------------------------------------------------------------
    def where(self, node: ast.AST) -> str:
        line = getattr(node, "lineno", 1)
        text = self.src_lines[line - 1].strip() if line - 1 < len(self.src_lines) else ""
        return f"{self.filename}:{self.first_line + line - 1}: `{text}`"

    def error(self, node: ast.AST, why: str) -> RewriteError:
        return RewriteError(
            f"{type(self.cell).__name__}.construct at {self.where(node)}: cannot be represented "
            f"in a SymbolTree: {why}"
        )

    def unique(self, base: str) -> str:
        base = base if base.isidentifier() else "var"
        name, k = base, 0
        while name in self.used or name == "self":
            k += 1
            name = f"{base}_{k}"
        self.used.add(name)
        return name

    def is_static(self, expr: ast.AST) -> bool:
        """No local variable is read (so it can be evaluated now, from ``self`` and globals)."""
        for n in ast.walk(expr):
            if isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await, ast.NamedExpr, ast.Lambda)):
                return False
            if isinstance(n, ast.Name) and n.id != "self" and n.id in self.current:
                return False
            if isinstance(n, ast.Attribute) and n.attr == "training":
                return False  # the mode changes at run time (set_train)
        return True

    def evaluate(self, expr: ast.expr) -> tuple[bool, Any]:
        try:
            code = compile(ast.Expression(body=expr), "<rewrite>", "eval")
            return True, eval(code, self.namespace, {"self": self.cell})  # noqa: S307
        except Exception:  # noqa: BLE001 - not resolvable now: keep it as code
            return False, None

    def add(self, node: Node, lineno: int | None) -> Node:
        node._lineno = lineno
        self.nodes.append(node)
        return node

    # ---- entry ----------------------------------------------------------------------
    def parse(self) -> tuple[list[Node], ast.arguments]:
        args = self.fdef.args
        if args.vararg or args.kwarg or args.posonlyargs or args.kwonlyargs:
            raise self.error(
                self.fdef, "only plain positional parameters are supported in construct"
            )
        params = [a.arg for a in args.args]
        if not params or params[0] != "self":
            raise self.error(self.fdef, "construct's first parameter must be self")
        self.used.add("self")
        for i, p in enumerate(params[1:]):
            self.used.add(p)
            self.current[p] = p
            node = Node(NodeType.Input, f"input_{p}", [ScopedValue.create_naming_value(p)], [])
            node._attributes["position"] = i
            self.add(node, self.fdef.lineno)
        body = list(self.fdef.body)
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]  # docstring
        self.block(body)
        if not self.returned:
            self.add(Node(NodeType.Output, "return", [], []), None)
        return self.nodes, args

    def block(self, stmts: list[ast.stmt]) -> None:
        for stmt in stmts:
            if self.returned:
                return
            self.statement(stmt)

    # ---- statements -----------------------------------------------------------------
    def statement(self, stmt: ast.stmt) -> None:
        for kind, what in _UNSUPPORTED.items():
            if isinstance(stmt, kind):
                raise self.error(stmt, f"{what} is not supported")
        for n in ast.walk(stmt):
            if isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)):
                raise self.error(stmt, "yield/await is not supported")
        if isinstance(stmt, ast.Pass):
            return
        if isinstance(stmt, ast.Return):
            self.ret(stmt)
        elif isinstance(stmt, ast.AugAssign):
            target = stmt.target
            if isinstance(target, ast.Name):
                value = ast.BinOp(ast.Name(target.id, ast.Load()), stmt.op, stmt.value)
                self.statement(ast.copy_location(ast.Assign([target], value), stmt))
            else:
                self.python([stmt], stmt)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            self.assign(stmt)
        elif isinstance(stmt, ast.Expr):
            if isinstance(stmt.value, ast.Call):
                self.call(stmt.value, None, stmt, want_value=False)
            else:
                self.python([stmt], stmt)
        elif isinstance(stmt, ast.If):
            self.if_(stmt)
        elif isinstance(stmt, ast.For):
            self.for_(stmt)
        else:
            self.python([stmt], stmt)

    def ret(self, stmt: ast.Return) -> None:
        value = stmt.value
        if value is None:
            args: list[ScopedValue] = []
        elif isinstance(value, ast.Tuple):
            args = [self.value(e, stmt) for e in value.elts]
        else:
            args = [self.value(value, stmt)]
        out = Node(NodeType.Output, "return", [], args)
        out._attributes["tuple"] = isinstance(value, ast.Tuple)
        self.add(out, stmt.lineno)
        self.returned = True

    def assign(self, stmt: ast.Assign | ast.AnnAssign) -> None:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        value = stmt.value
        if value is None:
            return  # a bare annotation
        simple = len(targets) == 1 and _is_name_target(targets[0])
        if simple and isinstance(value, ast.Call):
            self.call(value, targets[0], stmt)
            return
        if simple and isinstance(value, ast.IfExp) and self.is_static(value.test):
            ok, test = self.evaluate(value.test)
            if ok:
                branch = value.body if test else value.orelse
                new = ast.copy_location(ast.Assign(targets, branch), stmt)
                self.assign(new)
                return
        if simple and isinstance(value, ast.Name) and value.id in self.current:
            # plain renaming `y = x`: a Python node keeps data flow explicit
            pass
        value = self.hoist(value, stmt)
        new_stmt = ast.copy_location(ast.Assign(targets, value), stmt)
        self.python([new_stmt], stmt)

    def if_(self, stmt: ast.If) -> None:
        if self.is_static(stmt.test):
            ok, test = self.evaluate(stmt.test)
            if ok:
                self.block(stmt.body if test else stmt.orelse)
                return
        self.opaque(stmt)

    def for_(self, stmt: ast.For) -> None:
        plan = self.unroll_plan(stmt)
        if plan is None:
            self.opaque(stmt)
            return
        for mapping in plan:
            body = [_Subst(mapping).visit(copy.deepcopy(s)) for s in stmt.body]
            self.block([ast.fix_missing_locations(b) for b in body])
            if self.returned:
                return

    def unroll_plan(self, stmt: ast.For) -> list[dict[str, ast.expr]] | None:
        if stmt.orelse or not self.is_static(stmt.iter):
            return None
        for n in ast.walk(ast.Module(body=stmt.body, type_ignores=[])):
            if isinstance(n, (ast.Break, ast.Continue)):
                return None
        names = _target_names(stmt.target)
        if names is None or set(names) & set(_stores(stmt.body)):
            return None
        ok, iterable = self.evaluate(stmt.iter)
        if not ok:
            return None
        try:
            items = list(iterable)
        except TypeError:
            return None
        if len(items) > _MAX_UNROLL:
            return None
        plan = []
        for item in items:
            parts = [item] if len(names) == 1 else item
            if len(names) > 1 and (not isinstance(item, tuple) or len(item) != len(names)):
                return None
            mapping = {}
            for name, part in zip(names, parts):
                expr = self.literal(part)
                if expr is None:
                    return None
                mapping[name] = expr
            plan.append(mapping)
        return plan

    def literal(self, value: Any) -> ast.expr | None:
        """An expression for an unrolled loop item: a sub-cell's path or a constant."""
        if isinstance(value, Cell):
            path = self.paths.get(id(value))
            return ast.parse(_path_source(path), mode="eval").body if path else None
        if value is None or isinstance(value, (bool, int, float, str)):
            return ast.Constant(value)
        if isinstance(value, tuple) and all(
            v is None or isinstance(v, (bool, int, float, str)) for v in value
        ):
            return ast.parse(repr(value), mode="eval").body
        return None

    def opaque(self, stmt: ast.stmt) -> None:
        """An input-dependent if/for: one Python node, variables renamed consistently."""
        for n in ast.walk(stmt):
            if isinstance(n, ast.Return):
                raise self.error(n, "a return inside control flow that depends on the inputs")
        self.python([stmt], stmt)

    # ---- expressions ----------------------------------------------------------------
    def value(self, expr: ast.expr, stmt: ast.stmt) -> ScopedValue:
        """A ScopedValue for an argument, emitting the nodes that compute it."""
        if isinstance(expr, ast.Name) and expr.id in self.current:
            return ScopedValue.create_naming_value(self.current[expr.id])
        if isinstance(expr, ast.Constant):
            return ScopedValue.create_variable_value(expr.value)
        if isinstance(expr, ast.IfExp) and self.is_static(expr.test):
            ok, test = self.evaluate(expr.test)
            if ok:
                return self.value(expr.body if test else expr.orelse, stmt)
        if self.is_static(expr) and not any(isinstance(n, ast.Call) for n in ast.walk(expr)):
            if (
                isinstance(expr, ast.Attribute)
                and isinstance(expr.value, ast.Name)
                and expr.value.id == "self"
            ):
                return ScopedValue.create_naming_value(expr.attr, "self")
            try:
                return ScopedValue.create_variable_value(ast.literal_eval(expr))
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                return ScopedValue.create_custom_value(ast.unparse(expr))
        if isinstance(expr, ast.Call):
            node = self.call(expr, None, stmt)
            return node._targets[0]
        new = self.hoist(expr, stmt)
        target = ast.Name(self.temp_name(new), ast.Store())
        node = self.python([ast.copy_location(ast.Assign([target], new), stmt)], stmt)
        return node._targets[0]

    def temp_name(self, expr: ast.expr) -> str:
        if isinstance(expr, ast.BinOp):
            return _BINOP_NAMES.get(type(expr.op), "binop")
        if isinstance(expr, ast.Attribute):
            return expr.attr
        if isinstance(expr, ast.Subscript):
            return "getitem"
        if isinstance(expr, ast.Tuple):
            return "tuple"
        if isinstance(expr, ast.UnaryOp):
            return "neg" if isinstance(expr.op, ast.USub) else "unary"
        return "tmp"

    def hoist(self, expr: ast.expr, stmt: ast.stmt) -> ast.expr:
        """Move the calls inside ``expr`` into nodes of their own (evaluation order kept);
        lambdas, comprehensions, ``and``/``or`` and input-dependent ``a if c else b`` are
        left whole so nothing runs that would not have run."""
        parser = self

        class Hoister(ast.NodeTransformer):
            def visit_Call(self, node: ast.Call) -> ast.AST:
                sv = parser.value(node, stmt)
                return ast.copy_location(ast.parse(sv.to_source(), mode="eval").body, node)

            def visit_IfExp(self, node: ast.IfExp) -> ast.AST:
                if parser.is_static(node.test):
                    ok, test = parser.evaluate(node.test)
                    if ok:
                        return self.visit(node.body if test else node.orelse)
                return node

            def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
                return node

            def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
                return node

            def generic_comp(self, node: ast.AST) -> ast.AST:
                return node

            visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = generic_comp

        return Hoister().visit(copy.deepcopy(expr))

    def call(
        self, call: ast.Call, target: ast.expr | None, stmt: ast.stmt, want_value: bool = True
    ) -> Node:
        func = call.func
        plain = not any(isinstance(a, ast.Starred) for a in call.args) and all(
            k.arg is not None for k in call.keywords
        )
        static_func = self.is_static(func)
        has_call = any(isinstance(n, ast.Call) and not _is_getattr(n) for n in ast.walk(func))
        if plain and static_func:
            ok, obj = (False, None) if has_call else self.evaluate(func)
            args = [self.value(a, stmt) for a in call.args]
            kwargs = {k.arg: self.value(k.value, stmt) for k in call.keywords if k.arg}
            if ok and isinstance(obj, Cell) and id(obj) in self.paths:
                path = self.paths[id(obj)]
                name = "_".join(path)
                if not name.isidentifier():
                    name = type(obj).__name__.lower()
                kind = NodeType.Tree if is_network(obj) else NodeType.CallCell
                node = Node(kind, self.unique(name), [], args, kwargs, None, obj)
                node._cell_path = path
                node._func = ScopedValue.create_naming_value(".".join(path), "self")
            else:
                src = ast.unparse(func)
                kind = NodeType.CallPrimitive if isinstance(obj, Primitive) else NodeType.CallMethod
                base = src.rsplit(".", 1)[-1].split("(")[0] or "call"
                node = Node(kind, self.unique(base), [], args, kwargs, None, obj if ok else None)
                node._func = ScopedValue.create_custom_value(src)
            if target is not None or want_value:
                node._targets = self.bind_targets(target, node._name)
            return self.add(node, stmt.lineno)
        # a call on a local value (x.reshape(...), blk(x)) or with *args: a Python node
        new = ast.Call(
            func=self.hoist(func, stmt),
            args=[self.hoist(a, stmt) for a in call.args],
            keywords=[ast.keyword(k.arg, self.hoist(k.value, stmt)) for k in call.keywords],
        )
        new = ast.copy_location(new, call)
        if target is None and not want_value:
            return self.python([ast.copy_location(ast.Expr(new), stmt)], stmt)
        tgt = target if target is not None else ast.Name(self.temp_name(func), ast.Store())
        return self.python([ast.copy_location(ast.Assign([tgt], new), stmt)], stmt)

    def bind_targets(self, target: ast.expr | None, default: str) -> list[ScopedValue]:
        if target is None:
            return [ScopedValue.create_naming_value(default)]
        names = _target_names(target) or []
        out = []
        for n in names:
            ssa = self.unique(n)
            self.current[n] = ssa
            out.append(ScopedValue.create_naming_value(ssa))
        return out

    def python(self, stmts: list[ast.stmt], where: ast.stmt) -> Node:
        """A node kept as Python syntax; its variables are renamed to SSA names."""
        loads = [n for s in stmts for n in _loads(s)]
        stores = _stores(stmts)
        inputs: list[str] = []
        load_map: dict[str, str] = {}
        for n in loads:
            if n in self.current and n not in load_map:
                load_map[n] = self.current[n]
                inputs.append(self.current[n])
        compound = any(isinstance(s, (ast.If, ast.For)) for s in stmts)
        prelude: list[ast.stmt] = []
        store_map: dict[str, str] = {}
        for n in stores:
            store_map[n] = self.unique(n)
        if compound:
            # inside a kept if/for a variable may be read after it is written: one name each,
            # initialised from the value it had before the block
            for n, new in store_map.items():
                if n in self.current:
                    init = ast.Assign([ast.Name(new, ast.Store())], ast.Name(n, ast.Load()))
                    prelude.append(init)
            body_loads = {n: store_map.get(n, load_map.get(n, n)) for n in set(loads)}
            renamed = [_Rename(body_loads, store_map).visit(copy.deepcopy(s)) for s in stmts]
            prelude = [_Rename(load_map, {}).visit(p) for p in prelude]
        else:
            renamed = [_Rename(load_map, store_map).visit(copy.deepcopy(s)) for s in stmts]
        for n, new in store_map.items():
            self.current[n] = new
        stmts_out = [ast.fix_missing_locations(s) for s in prelude + renamed]
        base = self.python_name(stmts[0])
        if list(store_map) == [base]:
            name = store_map[base]  # a temporary: the node is named like its value
        else:
            name = self.unique(base)
        node = Node(
            NodeType.Python,
            name,
            [ScopedValue.create_naming_value(s) for s in store_map.values()],
            [ScopedValue.create_naming_value(i) for i in inputs],
        )
        node._stmts = stmts_out
        node._py_inputs = list(inputs)
        node._py_targets = list(store_map.values())
        return self.add(node, where.lineno)

    def python_name(self, stmt: ast.stmt) -> str:
        if isinstance(stmt, ast.If):
            return "if_block"
        if isinstance(stmt, ast.For):
            return "for_block"
        if isinstance(stmt, ast.Assign):
            value = stmt.value
            if isinstance(value, ast.Call):
                return "call"
            return self.temp_name(value)
        return "python"


def _is_getattr(node: ast.Call) -> bool:
    """``getattr(self..., 'name')``: how a container's child is named in regenerated code."""
    return (
        isinstance(node.func, ast.Name)
        and node.func.id == "getattr"
        and len(node.args) == 2
        and isinstance(node.args[1], ast.Constant)
    )


def _is_name_target(target: ast.expr) -> bool:
    return _target_names(target) is not None


def _target_names(target: ast.expr) -> list[str] | None:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)) and all(
        isinstance(e, ast.Name) for e in target.elts
    ):
        return [e.id for e in target.elts]  # type: ignore[attr-defined]
    return None
