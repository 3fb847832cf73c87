"""Source conversion: a construct's ``if`` / ``while`` / ``for i in range`` become calls of the
control-flow helpers in :mod:`.control_flow`, so a tensor-valued condition compiles.

Used only when tracing met a tensor's value (a :class:`TracingError`): ``jit`` then traces
again with :func:`converting` on, where every Cell's ``construct`` (and the jitted function)
runs in its converted form. Converted code does what the source says for Python conditions,
so cells that never branch on tensors trace as before.

The rewrite (Python's ``ast``):

* ``if c: A else: B`` becomes two local functions of the variables A and B assign, and
  ``(v1, v2) = if_(c, a_fn, b_fn, (v1, v2), ...)``; ``while c: A`` likewise with a condition
  function and a body function; ``for i in range(...)`` with a body function of ``i``.
  ``x if c else y``, and ``and`` / ``or`` / ``not`` in conditions, are converted too.
* ``return`` inside an ``if`` is lifted first: the statements after the ``if`` move into the
  branch that does not return, and every branch assigns one result returned at the end.
* A statement it cannot express (``break`` / ``continue`` / ``return`` inside a loop, ``del``,
  ``global`` / ``nonlocal``, ``yield``) stays Python, with its condition checked: a tensor
  there raises a TracingError naming the construct, so GRAPH_MODE runs the cell eagerly with
  a warning saying why. So does a function whose source cannot be read.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import sys
import textwrap
import threading
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from . import control_flow

__all__ = ["converting", "is_converting", "converted"]

_RT = "__sp_ctl"  # the name the converted code calls the helpers by
_PREFIX = "__sp_"  # the converter's own names (never loop or branch variables)
_RET = "sp_return_value__"

_TYPE_PARAMS: dict[str, Any] = {"type_params": []} if sys.version_info >= (3, 12) else {}
_STATE = threading.local()
_CACHE: dict[Any, Any] = {}  # code object -> factory, or the reason it cannot be converted


@contextmanager
def converting() -> Iterator[list[str]]:
    """Within it, Cells run their converted construct; yields the notes of functions that
    could not be converted."""
    from ..nn.cell import CONSTRUCT_TRANSFORMS

    prev = getattr(_STATE, "notes", None)
    _STATE.notes = notes = [] if prev is None else prev
    CONSTRUCT_TRANSFORMS.append(call)
    try:
        yield notes
    finally:
        CONSTRUCT_TRANSFORMS.pop()
        _STATE.notes = prev


def is_converting() -> bool:
    return getattr(_STATE, "notes", None) is not None


def converted(fn: Any) -> Any:
    """``fn`` (a function or bound method) with its control flow converted; ``fn`` itself when
    there is nothing to convert or it cannot be (the reason goes to the notes)."""
    func = getattr(fn, "__func__", fn)
    code = getattr(func, "__code__", None)
    if code is None or not isinstance(func, types.FunctionType):
        return fn
    if _library(func):  # grad(f), vmap(f), ...: the user functions it closes over
        return _closing_over_converted(fn, func)
    entry = _CACHE.get(code)
    if entry is None:
        try:
            entry = _build(func)
        except Exception as exc:  # no source, syntax the rewrite does not handle, ...
            entry = f"{getattr(func, '__qualname__', func)}: {type(exc).__name__}: {exc}"
        _CACHE[code] = entry
    if isinstance(entry, str):
        notes = getattr(_STATE, "notes", None)
        if notes is not None and entry not in notes and entry != "":
            notes.append(entry)
        return fn
    try:
        cells = [c.cell_contents for c in func.__closure__ or ()]
    except ValueError:  # a free variable not bound yet
        return fn
    new = entry(control_flow, *cells)
    new.__defaults__ = func.__defaults__
    new.__kwdefaults__ = func.__kwdefaults__
    new.__qualname__ = func.__qualname__
    if isinstance(fn, types.MethodType):
        return types.MethodType(new, fn.__self__)
    return new


def _library(func: Any) -> bool:
    """Sporeling's own functions and cells are written without control flow on tensor values
    (and stay exactly as written); so are generators and coroutines."""
    module = func.__globals__.get("__name__") or ""  # not __module__: functools.wraps copies it
    return module.startswith("sporeling.") or bool(func.__code__.co_flags & 0x2A0)


def _closing_over_converted(fn: Any, func: Any, depth: int = 0) -> Any:
    """A library function (``grad(f)``'s closure) rebuilt around converted versions of the
    user functions in its closure cells; ``fn`` itself when there are none."""
    if not func.__closure__ or depth > 2:
        return fn
    cells = []
    changed = False
    for cell in func.__closure__:
        try:
            value = cell.cell_contents
        except ValueError:  # not bound yet
            return fn
        new = value
        if isinstance(value, (types.FunctionType, types.MethodType)):
            inner = getattr(value, "__func__", value)
            if _library(inner):
                new = _closing_over_converted(value, inner, depth + 1)
            else:
                new = converted(value)
        changed = changed or new is not value
        cells.append(types.CellType(new))
    if not changed:
        return fn
    rebuilt = types.FunctionType(
        func.__code__, func.__globals__, func.__name__, func.__defaults__, tuple(cells)
    )
    rebuilt.__kwdefaults__ = func.__kwdefaults__
    rebuilt.__dict__.update(func.__dict__)
    if isinstance(fn, types.MethodType):
        return types.MethodType(rebuilt, fn.__self__)
    return rebuilt


def call(fn: Any) -> Any:
    """What a call in converted code calls: user functions converted too (as MindSpore's graph
    mode parses every function a construct calls)."""
    if isinstance(fn, (types.FunctionType, types.MethodType)) and is_converting():
        return converted(fn)
    return fn


def _build(func: Any) -> Any:
    # the code's own source (not that of the function functools.wraps names in __wrapped__)
    src = textwrap.dedent(inspect.getsource(func.__code__))
    tree = ast.parse(src)
    fdef = tree.body[0]
    if not isinstance(fdef, ast.FunctionDef):
        raise ValueError("only functions defined with `def` are converted")
    for node in ast.walk(fdef):
        for ident in _identifiers(node):
            if ident.startswith("__") and not ident.endswith("__"):
                raise ValueError(f"private name {ident} (name mangling) is not converted")
    fdef.decorator_list = []
    conv = _Converter()
    fdef.body = _lift_returns(_loop_returns(fdef.body))
    fdef = conv.visit(fdef)
    if not conv.changed:
        return ""  # nothing to convert: the original runs
    freevars = list(func.__code__.co_freevars)
    factory = ast.FunctionDef(
        name=_PREFIX + "factory",
        args=_arguments([_RT, *freevars]),
        body=[fdef, ast.Return(ast.Name(fdef.name, ast.Load()))],
        decorator_list=[],
        returns=None,
        **_TYPE_PARAMS,
    )
    module = ast.Module([factory], type_ignores=[])
    ast.fix_missing_locations(module)
    ast.increment_lineno(module, func.__code__.co_firstlineno - 1)
    filename = func.__code__.co_filename
    ns: dict[str, Any] = {}
    exec(compile(module, filename, "exec"), func.__globals__, ns)  # noqa: S102
    return ns[_PREFIX + "factory"]


def _identifiers(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    return []


# ---- analysis ---------------------------------------------------------------------------------


def _walk_local(stmts: list[ast.stmt]) -> Iterator[ast.AST]:
    """Every node of ``stmts`` outside nested functions, lambdas, classes and comprehensions."""
    todo: list[ast.AST] = list(stmts)
    scopes = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
    comps = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, scopes + comps):
            continue
        todo.extend(ast.iter_child_nodes(node))


def _assigned(stmts: list[ast.stmt]) -> set[str]:
    names: set[str] = set()
    for node in _walk_local(stmts):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or (
            isinstance(node, ast.ExceptHandler) and node.name
        ):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return {n for n in names if not n.startswith(_PREFIX)}


def _mutates(stmts: list[ast.stmt]) -> bool:
    """Whether ``stmts`` assign to an attribute or an item (not expressible in a branch)."""
    return any(
        isinstance(n, (ast.Attribute, ast.Subscript)) and isinstance(n.ctx, (ast.Store, ast.Del))
        for n in _walk_local(stmts)
    )


def _escape(stmts: list[ast.stmt], in_loop: bool) -> str | None:
    """Why ``stmts`` cannot become a function body (``in_loop``: they are a loop's body, so
    ``break``/``continue`` at this level leave it), or None."""
    loops = (ast.For, ast.While, ast.AsyncFor)
    todo: list[tuple[ast.AST, bool]] = [(s, False) for s in stmts]
    while todo:
        node, nested_loop = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, ast.Return):
            return "`return` inside a loop (or an `if` the converter could not restructure)"
        if isinstance(node, (ast.Yield, ast.YieldFrom, ast.Await)):
            return f"`{type(node).__name__.lower()}` in a branch or loop"
        if isinstance(node, (ast.Global, ast.Nonlocal, ast.Delete)):
            return f"`{type(node).__name__.lower()}` in a branch or loop"
        if isinstance(node, (ast.Break, ast.Continue)) and not nested_loop:
            kw = "break" if isinstance(node, ast.Break) else "continue"
            where = "a loop whose condition is" if in_loop else "an `if` on"
            return f"`{kw}` in {where} a tensor value"
        inner = nested_loop or isinstance(node, loops)
        todo.extend((c, inner) for c in ast.iter_child_nodes(node))
    return None


# ---- `return` inside `if` -----------------------------------------------------------------------


def _has_return(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Return) for n in _walk_local([node]))  # type: ignore[list-item]


def _always_returns(stmts: list[ast.stmt]) -> bool:
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, ast.Return):
        return True
    return isinstance(last, ast.If) and _always_returns(last.body) and _always_returns(last.orelse)


def _normalize(stmts: list[ast.stmt]) -> list[ast.stmt] | None:
    """``stmts`` with every ``return`` at the end of a path through ``if`` statements (the
    statements after an ``if`` copied into its branches that do not return), or None."""
    for i, s in enumerate(stmts):
        if isinstance(s, ast.Return):
            return stmts[: i + 1]
        if not _has_return(s):
            continue
        if not isinstance(s, ast.If):
            return None  # a return inside a loop, with or try
        rest = stmts[i + 1 :]
        body = _normalize(s.body if _always_returns(s.body) else s.body + rest)
        orelse = _normalize(s.orelse if _always_returns(s.orelse) else s.orelse + rest)
        if body is None or orelse is None:
            return None
        return [*stmts[:i], ast.If(s.test, body, orelse)]
    return stmts


def _assign_result(stmts: list[ast.stmt]) -> list[ast.stmt]:
    last = stmts[-1]
    if isinstance(last, ast.Return):
        value = last.value if last.value is not None else ast.Constant(None)
        return [*stmts[:-1], ast.Assign([ast.Name(_RET, ast.Store())], value)]
    assert isinstance(last, ast.If)
    new_if = ast.If(last.test, _assign_result(last.body), _assign_result(last.orelse))
    return [*stmts[:-1], new_if]


def _lift_returns(body: list[ast.stmt]) -> list[ast.stmt]:
    if not any(isinstance(s, ast.If) and _has_return(s) for s in body):
        return body
    norm = _normalize(body)
    if norm is None or not norm or not isinstance(norm[-1], ast.If):
        return body
    if not _always_returns(norm):
        return body
    return [*_assign_result(norm), ast.Return(ast.Name(_RET, ast.Load()))]


# ---- `break` / `continue` as flags -------------------------------------------------------------


def _exits(node: ast.AST) -> bool:
    """Whether ``node`` holds a ``break`` or ``continue`` of the loop being rewritten (not of
    a loop nested in it, nor inside a nested function)."""
    loops = (ast.For, ast.While, ast.AsyncFor)
    scopes = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
    if isinstance(node, (ast.Break, ast.Continue)):
        return True
    if isinstance(node, loops + scopes):
        return False
    return any(_exits(c) for c in ast.iter_child_nodes(node))


def _flag_set(name: str) -> ast.stmt:
    return ast.Assign([ast.Name(name, ast.Store())], ast.Constant(True))


def _still_running(brk: str, cont: str) -> ast.expr:
    either = ast.BoolOp(ast.Or(), [ast.Name(brk, ast.Load()), ast.Name(cont, ast.Load())])
    return ast.UnaryOp(ast.Not(), either)


def _flagged(stmts: list[ast.stmt], brk: str, cont: str) -> list[ast.stmt]:
    """``stmts`` with ``break`` / ``continue`` (of this loop) replaced by setting ``brk`` /
    ``cont``, and every statement after one that may set them run only while neither is
    set (``if not (brk or cont): ...``): the loop's remaining body is skipped, as the jump
    would."""
    out: list[ast.stmt] = []
    for i, st in enumerate(stmts):
        if isinstance(st, ast.Break):
            out.append(_flag_set(brk))
            return out  # what follows a jump never runs
        if isinstance(st, ast.Continue):
            out.append(_flag_set(cont))
            return out
        if not _exits(st):
            out.append(st)
            continue
        if isinstance(st, ast.If):
            st = ast.If(st.test, _flagged(st.body, brk, cont), _flagged(st.orelse, brk, cont))
        elif isinstance(st, (ast.With, ast.Try)):
            return []  # left alone: the caller keeps the original loop (and its reason)
        out.append(st)
        rest = stmts[i + 1 :]
        if rest:
            out.append(ast.If(_still_running(brk, cont), _flagged(rest, brk, cont), []))
        return out
    return out


# ---- `return` inside a loop ---------------------------------------------------------------------


def _returns_here(node: ast.AST) -> bool:
    """A ``return`` in ``node`` outside nested functions and nested loops."""
    if isinstance(node, ast.Return):
        return True
    skip = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
    skip += (ast.For, ast.While, ast.AsyncFor)
    return any(not isinstance(c, skip) and _returns_here(c) for c in ast.iter_child_nodes(node))


class _ReturnToBreak(ast.NodeTransformer):
    """``return v`` -> ``flag = True; value = v; break`` (not inside nested scopes or loops)."""

    def __init__(self, flag: str, value: str) -> None:
        self.flag, self.value = flag, value

    def visit_Return(self, node: ast.Return) -> Any:
        value = node.value if node.value is not None else ast.Constant(None)
        return [
            ast.Assign([ast.Name(self.flag, ast.Store())], ast.Constant(True)),
            ast.Assign([ast.Name(self.value, ast.Store())], value),
            ast.Break(),
        ]

    def _skip(self, node: ast.AST) -> ast.AST:
        return node

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = _skip
    visit_For = visit_While = visit_AsyncFor = _skip


def _loop_returns(body: list[ast.stmt]) -> list[ast.stmt]:
    """Top-level ``while`` / ``for ... in range(...)`` loops that ``return`` from inside:
    the ``return`` sets a flag and the value and breaks out (``break`` becomes a flag in
    turn), and ``if flag: return value`` follows the loop (then lifted like any ``if``)."""
    out: list[ast.stmt] = []
    for i, st in enumerate(body):
        loop = isinstance(st, ast.While) or (
            isinstance(st, ast.For)
            and isinstance(st.iter, ast.Call)
            and isinstance(st.iter.func, ast.Name)
            and st.iter.func.id == "range"
        )
        if not loop or st.orelse or not any(_returns_here(s) for s in st.body):
            out.append(st)
            continue
        flag, value = f"loop_returned_{i}__sp", f"loop_result_{i}__sp"
        visitor = _ReturnToBreak(flag, value)
        new_body: list[ast.stmt] = []
        for s in st.body:
            res = visitor.visit(s)
            new_body.extend(res if isinstance(res, list) else [res])
        st.body = new_body
        out.append(ast.Assign([ast.Name(flag, ast.Store())], ast.Constant(False)))
        out.append(st)
        rest = _loop_returns(body[i + 1 :])
        ret = ast.Return(ast.Name(value, ast.Load()))
        out.append(ast.If(ast.Name(flag, ast.Load()), [ret], rest or [ast.Return(None)]))
        return out
    return out


# ---- the rewrite ------------------------------------------------------------------------------


def _arguments(names: list[str]) -> ast.arguments:
    return ast.arguments(
        posonlyargs=[],
        args=[ast.arg(n) for n in names],
        vararg=None,
        kwonlyargs=[],
        kw_defaults=[],
        kwarg=None,
        defaults=[],
    )


def _rt(attr: str) -> ast.Attribute:
    return ast.Attribute(ast.Name(_RT, ast.Load()), attr, ast.Load())


def _call(attr: str, *args: ast.expr) -> ast.Call:
    return ast.Call(_rt(attr), list(args), [])


def _lambda(body: ast.expr) -> ast.Lambda:
    return ast.Lambda(_arguments([]), body)


def _loads(names: list[str]) -> ast.Tuple:
    return ast.Tuple([ast.Name(n, ast.Load()) for n in names], ast.Load())


def _current(names: list[str]) -> ast.Tuple:
    """``(get(locals(), 'a'), ...)``: each variable's value, or UNDEFINED if not bound yet."""
    scope = ast.Call(ast.Name("locals", ast.Load()), [], [])
    return ast.Tuple([_call("get", scope, ast.Constant(n)) for n in names], ast.Load())


def _def(name: str, params: list[str], body: list[ast.stmt], result: ast.expr) -> ast.FunctionDef:
    return ast.FunctionDef(
        name=name,
        args=_arguments(params),
        body=[*body, ast.Return(result)],
        decorator_list=[],
        returns=None,
        **_TYPE_PARAMS,
    )


def _bind(names: list[str], value: ast.expr) -> ast.stmt:
    if not names:
        return ast.Expr(value)
    target = ast.Tuple([ast.Name(n, ast.Store()) for n in names], ast.Store())
    return ast.Assign([target], value)


class _Test(ast.NodeTransformer):
    """``and`` / ``or`` / ``not`` in a condition: logical ops when operands are tensors."""

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.expr:
        self.generic_visit(node)
        attr = "and_" if isinstance(node.op, ast.And) else "or_"
        out = node.values[-1]
        for value in reversed(node.values[:-1]):
            out = _call(attr, value, _lambda(out))
        return out

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.expr:
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return _call("not_", node.operand)
        return node


def _test(expr: ast.expr) -> ast.expr:
    return _Test().visit(expr)


class _Converter(ast.NodeTransformer):
    def __init__(self) -> None:
        self.count = 0
        self.changed = False

    def _name(self, kind: str) -> str:
        self.count += 1
        return f"{_PREFIX}{kind}_{self.count}"

    def _guard(self, node: ast.If | ast.While, reason: str) -> ast.stmt:
        node.test = _call("python_bool", node.test, ast.Constant(reason))
        return node

    def visit_Call(self, node: ast.Call) -> ast.expr:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and hasattr(builtins, node.func.id):
            return node  # range(), len(), super() (whose zero-argument form needs its frame)
        self.changed = True
        node.func = _call("call", node.func)
        return node

    def visit_IfExp(self, node: ast.IfExp) -> ast.expr:
        self.generic_visit(node)
        self.changed = True
        return _call("ifexp", _test(node.test), _lambda(node.body), _lambda(node.orelse))

    def visit_If(self, node: ast.If) -> Any:
        self.generic_visit(node)
        reason = _escape(node.body + node.orelse, in_loop=False)
        if reason is not None:
            return self._guard(node, reason)
        self.changed = True
        names = sorted(_assigned(node.body) | _assigned(node.orelse))
        t, f = self._name("then"), self._name("else")
        call = _call(
            "if_",
            _test(node.test),
            ast.Name(t, ast.Load()),
            ast.Name(f, ast.Load()),
            _current(names),
            ast.Constant(tuple(names)),
            ast.Constant(not _mutates(node.body + node.orelse)),
        )
        return [
            _def(t, names, node.body, _loads(names)),
            _def(f, names, node.orelse or [ast.Pass()], _loads(names)),
            _bind(names, call),
        ]

    def _without_jumps(self, body: list[ast.stmt]) -> tuple[list[ast.stmt], str, str] | None:
        """The loop body with its ``break`` / ``continue`` turned into flags (None when it
        has none, or one inside ``with`` / ``try``)."""
        if not any(_exits(st) for st in body):
            return None
        n = self.count = self.count + 1
        brk, cont = f"loop_break_{n}__sp", f"loop_continue_{n}__sp"
        flagged = _flagged(body, brk, cont)
        if not flagged or any(_exits(st) for st in flagged):
            return None
        reset = ast.Assign([ast.Name(cont, ast.Store())], ast.Constant(False))
        return [reset, *flagged], brk, cont

    def visit_While(self, node: ast.While) -> Any:
        if not node.orelse:
            rewritten = self._without_jumps(node.body)
            if rewritten is not None:  # `while test:` -> `while not brk and test:`
                body, brk, cont = rewritten
                test = ast.BoolOp(
                    ast.And(), [ast.UnaryOp(ast.Not(), ast.Name(brk, ast.Load())), node.test]
                )
                init = [
                    ast.Assign([ast.Name(brk, ast.Store())], ast.Constant(False)),
                    ast.Assign([ast.Name(cont, ast.Store())], ast.Constant(False)),
                ]
                loop = ast.While(test, body, [])
                converted = self.visit_While(loop)
                return [*init, *(converted if isinstance(converted, list) else [converted])]
        self.generic_visit(node)
        reason = "`while ... else`" if node.orelse else _escape(node.body, in_loop=True)
        if reason is not None:
            return self._guard(node, reason)
        self.changed = True
        names = sorted(_assigned(node.body))
        c, b = self._name("cond"), self._name("body")
        call = _call(
            "while_",
            ast.Name(c, ast.Load()),
            ast.Name(b, ast.Load()),
            _current(names),
            ast.Constant(tuple(names)),
            ast.Constant(not _mutates(node.body)),
        )
        return [
            _def(c, names, [], _test(node.test)),
            _def(b, names, node.body, _loads(names)),
            _bind(names, call),
        ]

    def visit_For(self, node: ast.For) -> Any:
        over_range = (
            isinstance(node.iter, ast.Call)
            and isinstance(node.iter.func, ast.Name)
            and node.iter.func.id == "range"
        )
        # (only over range(...): an iterator may be endless or have effects per item)
        if over_range and not node.orelse:
            rewritten = self._without_jumps(node.body)
            if rewritten is not None:  # the iterations after a `break` do nothing
                body, brk, cont = rewritten
                guarded = ast.If(ast.UnaryOp(ast.Not(), ast.Name(brk, ast.Load())), body, [])
                init = [
                    ast.Assign([ast.Name(brk, ast.Store())], ast.Constant(False)),
                    ast.Assign([ast.Name(cont, ast.Store())], ast.Constant(False)),
                ]
                loop = ast.For(node.target, node.iter, [guarded], [], node.type_comment)
                converted = self.visit_For(loop)
                return [*init, *(converted if isinstance(converted, list) else [converted])]
        self.generic_visit(node)
        it = node.iter
        if not (
            isinstance(it, ast.Call)
            and isinstance(it.func, ast.Name)
            and it.func.id == "range"
            and not it.keywords
            and 1 <= len(it.args) <= 3
            and not any(isinstance(a, ast.Starred) for a in it.args)
            and isinstance(node.target, ast.Name)
            and not node.orelse
            and _escape(node.body, in_loop=True) is None
        ):
            return node  # iterates in Python (unrolled while tracing)
        self.changed = True
        target = node.target.id
        names = sorted(_assigned(node.body) - {target})
        b = self._name("for")
        call = _call(
            "for_range",
            ast.Tuple(list(it.args), ast.Load()),
            ast.Name(b, ast.Load()),
            _current([target, *names]),
            ast.Constant(tuple(names)),
            ast.Constant(not _mutates(node.body)),
        )
        return [_def(b, [target, *names], node.body, _loads(names)), _bind([target, *names], call)]
