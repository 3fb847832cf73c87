"""Automatic backward for Hybrid DSL kernels (elementwise and reduction patterns).

For a kernel without ``bprop``, the backward is itself a generated Hybrid DSL kernel
``bwd(inputs..., dout__<out>...) -> grad__<input>...`` (so it runs compiled on CPU and GPU,
and is differentiable again the same way). It mirrors the forward loop nest, keeping per
input only the statements that contribute to it, and turns each write into scatter-adds:

* ``o[I] = e`` (a pure write) and ``o[I] = o[I] + e`` / ``o[I] += e`` / ``-=`` (a
  reduction into an output), and a scalar accumulator ``acc = e0; acc = acc + e;
  o[I] = acc``, each add ``dout__o[I] * de/dx[J]`` into ``grad__x[J]`` for every
  ``x[J]`` read in ``e`` (symbolic derivative over ``+ - * /``, the math intrinsics,
  ``max``/``min``, conditional expressions and ``if`` statements);
* scalar temporaries assigned once are substituted into later expressions.

Loops of the backward nest are ``parallel`` where every gradient write indexes with the
loop variable itself (no two iterations touch one element), ``serial`` otherwise.
Anything else (reading an output, ``*=``, temporaries, in-place outputs, ``//``/``%`` of
a differentiated value) raises :class:`AutodiffError` naming the construct and line.
"""

from __future__ import annotations

import ast
import copy
from typing import Any, overload

from ._cache import load_module
from ._errors import AutodiffError
from ._validate import CASTS, DECLS, KernelInfo

__all__ = ["derive_backward"]

_ZERO_DERIV = {"sign", "floor", "ceil", "trunc", "round", "isnan", "isinf", "isfinite",
               "len", "ceil_div"}  # fmt: skip


def _c(v: float) -> ast.expr:
    return ast.Constant(v)


def _call(name: str, *args: ast.expr) -> ast.expr:
    return ast.Call(func=ast.Name(name, ast.Load()), args=list(args), keywords=[])


def _bin(a: ast.expr, op: ast.operator, b: ast.expr) -> ast.expr:
    return ast.BinOp(left=a, op=op, right=b)


def _mul(a: ast.expr | None, b: ast.expr | None) -> ast.expr | None:
    if a is None or b is None:
        return None
    if isinstance(a, ast.Constant) and a.value == 1.0:
        return b
    if isinstance(b, ast.Constant) and b.value == 1.0:
        return a
    return _bin(a, ast.Mult(), b)


def _add(a: ast.expr | None, b: ast.expr | None) -> ast.expr | None:
    if a is None:
        return b
    if b is None:
        return a
    return _bin(a, ast.Add(), b)


@overload
def _neg(a: ast.expr) -> ast.expr: ...
@overload
def _neg(a: ast.expr | None) -> ast.expr | None: ...
def _neg(a: ast.expr | None) -> ast.expr | None:
    return None if a is None else ast.UnaryOp(op=ast.USub(), operand=a)


def _cp(e: ast.expr) -> ast.expr:
    return copy.deepcopy(e)


class _Deriver:
    def __init__(self, info: KernelInfo, ndims: tuple[int, ...]) -> None:
        self.info = info
        self.ndims = ndims
        self.inputs = list(info.args)
        self.outputs = set(info.declared_outputs)
        self.acc_target: dict[str, tuple[str, ast.expr]] = {}  # scalar -> (output, index)
        self.line = info.first_line

    def fail(self, node: ast.AST | None, msg: str) -> AutodiffError:
        line = getattr(node, "lineno", self.line)
        return AutodiffError(
            f"Custom '{self.info.name}': cannot derive an automatic backward: {msg} (line "
            f"{line} of {self.info.filename}); pass bprop=(inputs..., out, dout) -> tuple of "
            "gradients"
        )

    # ---- symbolic derivative -----------------------------------------------------------
    def d(self, e: ast.expr, key: tuple[str, str]) -> ast.expr | None:
        if isinstance(e, ast.Constant):
            return None
        if isinstance(e, ast.Name):
            if e.id in self.acc_target:
                raise self.fail(e, f"accumulator '{e.id}' is used inside an expression")
            return None
        if isinstance(e, ast.Subscript):
            base = e.value
            if isinstance(base, ast.Name) and base.id in self.outputs:
                raise self.fail(e, f"output '{base.id}' is read in an expression")
            if isinstance(base, ast.Name) and (base.id, ast.dump(e.slice)) == key:
                return _c(1.0)
            return None
        if isinstance(e, (ast.Attribute, ast.Compare, ast.BoolOp)):
            return None
        if isinstance(e, ast.UnaryOp):
            if isinstance(e.op, ast.USub):
                return _neg(self.d(e.operand, key))
            return self.d(e.operand, key) if isinstance(e.op, ast.UAdd) else None
        if isinstance(e, ast.IfExp):
            a, b = self.d(e.body, key), self.d(e.orelse, key)
            if a is None and b is None:
                return None
            return ast.IfExp(test=_cp(e.test), body=a or _c(0.0), orelse=b or _c(0.0))
        if isinstance(e, ast.BinOp):
            l, r = e.left, e.right
            dl, dr = self.d(l, key), self.d(r, key)
            if isinstance(e.op, ast.Add):
                return _add(dl, dr)
            if isinstance(e.op, ast.Sub):
                return _add(dl, _neg(dr))
            if isinstance(e.op, ast.Mult):
                return _add(_mul(dl, _cp(r)), _mul(_cp(l), dr))
            if isinstance(e.op, ast.Div):
                t1 = None if dl is None else _bin(dl, ast.Div(), _cp(r))
                t2 = None
                if dr is not None:
                    t2 = _neg(_bin(_mul(_cp(l), dr), ast.Div(), _bin(_cp(r), ast.Mult(), _cp(r))))  # type: ignore[arg-type]
                return _add(t1, t2)
            if dl is None and dr is None:
                return None
            raise self.fail(e, f"operator {type(e.op).__name__} of a differentiated value")
        if isinstance(e, ast.Call):
            return self.d_call(e, key)
        raise self.fail(e, f"{type(e).__name__} expressions")

    def d_call(self, e: ast.Call, key: tuple[str, str]) -> ast.expr | None:
        name = e.func.id  # type: ignore[attr-defined]
        args = e.args
        if name in _ZERO_DERIV:
            return None
        if name in CASTS:
            return self.d(args[0], key)
        if name in ("max", "min"):
            a, b = args
            da, db = self.d(a, key), self.d(b, key)
            if da is None and db is None:
                return None
            op = ast.GtE() if name == "max" else ast.LtE()
            test = ast.Compare(left=_cp(a), ops=[op], comparators=[_cp(b)])
            return ast.IfExp(test=test, body=da or _c(0.0), orelse=db or _c(0.0))
        if name in ("power", "atan2"):
            a, b = args
            da, db = self.d(a, key), self.d(b, key)
            if name == "power":
                pw = _call("power", _cp(a), _bin(_cp(b), ast.Sub(), _c(1.0)))
                t1 = _mul(da, _bin(_cp(b), ast.Mult(), pw))
                t2 = _mul(
                    db, _bin(_call("power", _cp(a), _cp(b)), ast.Mult(), _call("log", _cp(a)))
                )
                return _add(t1, t2)
            den = _bin(
                _bin(_cp(a), ast.Mult(), _cp(a)), ast.Add(), _bin(_cp(b), ast.Mult(), _cp(b))
            )
            num = _add(_mul(_cp(b), da), _neg(_mul(_cp(a), db)))
            return None if num is None else _bin(num, ast.Div(), den)
        (u,) = args
        du = self.d(u, key)
        if du is None:
            return None
        local = {
            "sqrt": lambda: _bin(_c(0.5), ast.Div(), _call("sqrt", _cp(u))),
            "exp": lambda: _call("exp", _cp(u)),
            "expm1": lambda: _call("exp", _cp(u)),
            "log": lambda: _bin(_c(1.0), ast.Div(), _cp(u)),
            "tanh": lambda: _bin(
                _c(1.0), ast.Sub(), _bin(_call("tanh", _cp(u)), ast.Mult(), _call("tanh", _cp(u)))
            ),  # fmt: skip
            "abs": lambda: _call("sign", _cp(u)),
            "sin": lambda: _call("cos", _cp(u)),
            "cos": lambda: _neg(_call("sin", _cp(u))),
            "atan": lambda: _bin(
                _c(1.0), ast.Div(), _bin(_c(1.0), ast.Add(), _bin(_cp(u), ast.Mult(), _cp(u)))
            ),  # fmt: skip
            "erf": lambda: _bin(
                _c(1.1283791670955126),
                ast.Mult(),
                _call("exp", _neg(_bin(_cp(u), ast.Mult(), _cp(u)))),
            ),  # fmt: skip
            "rsqrt": lambda: _bin(
                _c(-0.5), ast.Mult(), _bin(_call("rsqrt", _cp(u)), ast.Div(), _cp(u))
            ),  # fmt: skip
        }
        if name not in local:
            raise self.fail(e, f"the derivative of {name}()")
        return _mul(du, local[name]())

    # ---- substitution of scalar temporaries ------------------------------------------------
    def subst(self, e: ast.expr, env: dict[str, ast.expr]) -> ast.expr:
        outputs = self.outputs

        class T(ast.NodeTransformer):
            def visit_Name(self, node: ast.Name) -> ast.AST:
                if node.id in env:
                    return _cp(env[node.id])
                return node

            def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
                if isinstance(node.value, ast.Name) and node.value.id in outputs:
                    return ast.Attribute(value=ast.Name(f"dout__{node.value.id}", ast.Load()),
                                         attr=node.attr, ctx=ast.Load())  # fmt: skip
                self.generic_visit(node)
                return node

        return T().visit(_cp(e))

    # ---- statements -----------------------------------------------------------------------
    def contributions(
        self, e: ast.expr, dout: ast.expr, sign: float, out: dict[str, list[ast.stmt]]
    ) -> None:
        keys: list[tuple[tuple[str, str], ast.expr]] = []
        for n in ast.walk(e):
            if (
                isinstance(n, ast.Subscript)
                and isinstance(n.value, ast.Name)
                and n.value.id in self.inputs
            ):
                k = (n.value.id, ast.dump(n.slice))
                if k not in [kk for kk, _ in keys]:
                    keys.append((k, n.slice))
        for (x, _), idx in keys:
            part = self.d(e, (x, _))
            if part is None:
                continue
            term = _bin(_cp(dout), ast.Mult(), part)
            if sign < 0:
                term = ast.UnaryOp(op=ast.USub(), operand=term)
            target = ast.Subscript(value=ast.Name(f"grad__{x}", ast.Load()), slice=_cp(idx),
                                   ctx=ast.Load())  # fmt: skip
            store = copy.deepcopy(target)
            store.ctx = ast.Store()
            out.setdefault(x, []).append(
                ast.Assign(targets=[store], value=_bin(target, ast.Add(), term), lineno=0)
            )

    def block(self, stmts: list[ast.stmt], env: dict[str, ast.expr]) -> dict[str, list[ast.stmt]]:
        env = dict(env)
        out: dict[str, list[ast.stmt]] = {}
        for s in stmts:
            if isinstance(s, (ast.Expr, ast.Return, ast.Pass)):
                continue
            if (
                isinstance(s, ast.Assign)
                and isinstance(s.value, ast.Call)
                and isinstance(s.value.func, ast.Name)
                and s.value.func.id in DECLS
            ):
                continue
            if isinstance(s, ast.With):
                for k, v in self.block(s.body, env).items():
                    out.setdefault(k, []).extend(v)
                continue
            if isinstance(s, ast.For):
                it = self.subst(s.iter, env)
                it.func = ast.Name("serial", ast.Load())  # type: ignore[attr-defined]
                for k, v in self.block(s.body, env).items():
                    out.setdefault(k, []).append(
                        ast.For(target=_cp(s.target), iter=_cp(it), body=v, orelse=[], lineno=0)
                    )
                continue
            if isinstance(s, ast.If):
                test = self.subst(s.test, env)
                a, b = self.block(s.body, env), self.block(s.orelse, env)
                for k in {*a, *b}:
                    body = a.get(k) or [ast.Pass()]
                    out.setdefault(k, []).append(ast.If(test=_cp(test), body=body,
                                                        orelse=b.get(k, [])))  # fmt: skip
                continue
            self.assignment(s, env, out)
        return out

    def assignment(
        self, s: ast.stmt, env: dict[str, ast.expr], out: dict[str, list[ast.stmt]]
    ) -> None:
        target: ast.expr
        if isinstance(s, ast.AugAssign):
            target, value = s.target, s.value
            if not isinstance(s.op, (ast.Add, ast.Sub)):
                raise self.fail(s, f"{type(s.op).__name__}= updates")
            sign = 1.0 if isinstance(s.op, ast.Add) else -1.0
            self.accumulate(s, target, self.subst(value, env), sign, env, out)
            return
        assert isinstance(s, ast.Assign)
        target, value = s.targets[0], s.value
        if isinstance(target, ast.Name):
            name = target.id
            if name in self.acc_target:
                v = value
                if (
                    isinstance(v, ast.BinOp)
                    and isinstance(v.op, (ast.Add, ast.Sub))
                    and (isinstance(v.left, ast.Name) and v.left.id == name)
                ):
                    sign = 1.0 if isinstance(v.op, ast.Add) else -1.0
                    self.accumulate(s, target, self.subst(v.right, env), sign, env, out)
                elif (
                    isinstance(v, ast.BinOp)
                    and isinstance(v.op, ast.Add)
                    and (isinstance(v.right, ast.Name) and v.right.id == name)
                ):
                    self.accumulate(s, target, self.subst(v.left, env), 1.0, env, out)
                else:  # (re)initialisation: a contribution of its own
                    self.accumulate(s, target, self.subst(v, env), 1.0, env, out)
                return
            if name in env:
                raise self.fail(s, f"scalar '{name}' is assigned more than once")
            env[name] = self.subst(value, env)
            return
        if not (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)):
            raise self.fail(s, "an assignment target")
        o = target.value.id
        if o not in self.outputs:
            raise self.fail(s, f"a write to '{o}' (only output tensors can be written)")
        if isinstance(value, ast.Name) and value.id in self.acc_target:
            return  # written out by the accumulator's contributions
        v = value
        same = ast.dump(target.slice)
        if isinstance(v, ast.BinOp) and isinstance(v.op, (ast.Add, ast.Sub)):
            if _is_elem(v.left, o, same):
                sign = 1.0 if isinstance(v.op, ast.Add) else -1.0
                self.accumulate(s, target, self.subst(v.right, env), sign, env, out)
                return
            if isinstance(v.op, ast.Add) and _is_elem(v.right, o, same):
                self.accumulate(s, target, self.subst(v.left, env), 1.0, env, out)
                return
        self.accumulate(s, target, self.subst(v, env), 1.0, env, out)

    def accumulate(
        self, s: ast.stmt, target: ast.expr, e: ast.expr, sign: float,
        env: dict[str, ast.expr], out: dict[str, list[ast.stmt]],
    ) -> None:  # fmt: skip
        if isinstance(target, ast.Name):
            if target.id not in self.acc_target:
                raise self.fail(s, f"scalar '{target.id}' is updated but never written to an "
                                "output")  # fmt: skip
            o, idx = self.acc_target[target.id]
        else:
            assert isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)
            o, idx = target.value.id, self.subst(target.slice, env)
        dout = ast.Subscript(value=ast.Name(f"dout__{o}", ast.Load()), slice=_cp(idx),
                             ctx=ast.Load())  # fmt: skip
        self.contributions(e, dout, sign, out)

    def check_scans(self) -> None:
        """An accumulator must be written out outside the loops that accumulate into it
        (``acc += x[i]; y[i] = acc`` inside one loop is a scan, not a reduction)."""
        loops: dict[int, list[int]] = {}

        def visit(node: ast.AST, chain: list[int]) -> None:
            for child in ast.iter_child_nodes(node):
                loops[id(child)] = chain
                visit(child, [*chain, id(child)] if isinstance(child, ast.For) else chain)

        visit(self.info.tree, [])
        writes = {}
        for n in ast.walk(self.info.tree):
            if (
                isinstance(n, ast.Assign)
                and isinstance(n.value, ast.Name)
                and (n.value.id in self.acc_target and isinstance(n.targets[0], ast.Subscript))
            ):
                writes[n.value.id] = loops[id(n)]
        for n in ast.walk(self.info.tree):
            t = n.targets[0] if isinstance(n, ast.Assign) else getattr(n, "target", None)
            if (
                isinstance(n, (ast.Assign, ast.AugAssign))
                and isinstance(t, ast.Name)
                and (t.id in writes)
            ):
                w, a = writes[t.id], loops[id(n)]
                if (
                    a[: len(w)] != w
                    or (len(a) == len(w) and isinstance(n, ast.AugAssign))
                    or (len(a) == len(w) and self._reads(n, t.id))
                ):
                    raise self.fail(n, f"accumulator '{t.id}' is written out inside the loop "
                                    "that accumulates it (a scan)")  # fmt: skip

    @staticmethod
    def _reads(n: ast.AST, name: str) -> bool:
        value = getattr(n, "value", None)
        return value is not None and any(
            isinstance(x, ast.Name) and x.id == name for x in ast.walk(value)
        )

    # ---- entry ----------------------------------------------------------------------------
    def run(self) -> tuple[str, list[int]]:
        info = self.info
        if info.temps:
            raise self.fail(None, "allocate() temporaries")
        if info.inplace:
            raise self.fail(None, "in-place outputs (a returned input)")
        for n in ast.walk(info.tree):  # accumulators: scalars written out as `o[I] = acc`
            if (
                isinstance(n, ast.Assign)
                and isinstance(n.targets[0], ast.Subscript)
                and isinstance(n.value, ast.Name)
                and isinstance(n.targets[0].value, ast.Name)
                and n.targets[0].value.id in self.outputs
            ):
                if n.value.id in self.acc_target:
                    raise self.fail(n, f"accumulator '{n.value.id}' is written out twice")
                self.acc_target[n.value.id] = (n.targets[0].value.id, n.targets[0].slice)
        self.check_scans()
        nests = self.block(info.tree.body, {})
        if not nests:
            raise self.fail(None, "no output depends on an input")
        positions = [i for i, x in enumerate(self.inputs) if x in nests]
        body: list[str] = []
        for i in positions:
            x = self.inputs[i]
            nd = self.ndims[i]
            if nd == 0:
                raise self.fail(None, f"input '{x}' is 0-d")
            g = f"grad__{x}"
            body.append(f"{g} = output_tensor({x}.shape, {x}.dtype)")
            ind = "    "
            zs = [f"_z{k}" for k in range(nd)]
            for k in range(nd):
                body.append(f"{ind * k}for _z{k} in parallel({x}.shape[{k}]):")
            body.append(f"{ind * nd}{g}[{', '.join(zs)}] = 0")
            for s in nests[x]:
                _parallelize(s, g)
                mod = ast.Module(body=[s], type_ignores=[])
                ast.fix_missing_locations(mod)
                body.extend(ast.unparse(mod).splitlines())
        douts = [f"dout__{o}" for o in info.outputs]
        rets = ", ".join(f"grad__{self.inputs[i]}" for i in positions)
        args = ", ".join([*self.inputs, *douts])
        src = f"def bwd_{info.name}({args}):\n" + "".join(f"    {b}\n" for b in body)
        src += f"    return {rets}\n"
        return src, positions


def _is_elem(e: ast.expr, name: str, idx_dump: str) -> bool:
    return (
        isinstance(e, ast.Subscript)
        and isinstance(e.value, ast.Name)
        and e.value.id == name
        and ast.dump(e.slice) == idx_dump
    )


def _writes_index_with(s: ast.AST, g: str, var: str) -> bool:
    for n in ast.walk(s):
        if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id == g:
            elts = n.slice.elts if isinstance(n.slice, ast.Tuple) else [n.slice]
            if not any(isinstance(e, ast.Name) and e.id == var for e in elts):
                return False
    return True


def _parallelize(s: ast.stmt, g: str) -> None:
    """Mark the leading perfect nest ``parallel`` where each gradient write uses the loop
    variable as an index (so iterations touch distinct elements)."""
    while isinstance(s, ast.For) and _writes_index_with(s, g, s.target.id):  # type: ignore[attr-defined]
        s.iter.func = ast.Name("parallel", ast.Load())  # type: ignore[attr-defined]
        if len(s.body) != 1:
            break
        s = s.body[0]


def derive_backward(kernel: Any, ndims: tuple[int, ...]) -> tuple[Any, list[int]]:
    """A HybridKernel computing the input gradients of ``kernel``, and their positions."""
    from ._dsl import HybridKernel

    src, positions = _Deriver(kernel.info, ndims).run()
    header = (
        f"# Automatic backward of hybrid kernel '{kernel.info.name}' "
        f"({kernel.info.filename}:{kernel.info.first_line}); generated by sporeling.customop.\n"
    )
    mod = load_module(header + src, f"bwd_{kernel.info.name}")
    fn = getattr(mod, f"bwd_{kernel.info.name}")
    return HybridKernel(fn, compile_attrs={"parallel": True}), positions
