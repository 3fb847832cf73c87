"""Kernels generated from elementwise primitives' scalar expressions.

Every elementwise primitive carries a scalar expression (``"1/(1+exp(-x))"``). This module
turns such an expression into a loop kernel for the CPU (Numba ``njit``) or the GPU (Numba
CUDA, which also runs on the CPU under ``NUMBA_ENABLE_CUDASIM=1`` for testing). The graph
compiler's fusion pass composes expressions of a chain of ops and compiles them here.

Expressions may use the inputs ``c x y`` (and ``a b ...`` for fused chains), numbers, Python
arithmetic/comparison operators, ``where(c, a, b)``, ``max``, ``min``, ``abs`` and any
function of Python's ``math`` module (``exp``, ``log1p``, ``erf``, ``tanh``, ...).
``SPORELING_DUMP_KERNELS=1`` prints each generated source.
"""

from __future__ import annotations

import ast
import math
import os
from typing import Any

import numpy as np

__all__ = [
    "UnsupportedExpression",
    "expression_inputs",
    "kernel_source",
    "compile_expression",
    "run_elementwise",
]

_BUILTINS = {"max", "min", "abs", "where", "float", "int", "bool"}
_ORDER = "cxyabdefghijklmnopqrstuvwz"


class UnsupportedExpression(ValueError):
    """The expression uses something the generator cannot compile."""


def _check(expr: str) -> ast.Expression:
    tree = ast.parse(expr, mode="eval")
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name):
                raise UnsupportedExpression(f"{expr!r}: only plain function calls are allowed")
            name = node.func.id
            if name not in _BUILTINS and not callable(getattr(math, name, None)):
                raise UnsupportedExpression(f"{expr!r}: unknown function {name!r}")
        elif isinstance(node, (ast.Attribute, ast.Subscript, ast.Lambda, ast.NamedExpr)):
            raise UnsupportedExpression(f"{expr!r}: {type(node).__name__} is not allowed")
    return tree


def expression_inputs(expr: str) -> tuple[str, ...]:
    """The input names an expression reads, in canonical order (``c``, ``x``, ``y``, ...)."""
    tree = _check(expr)
    calls = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call)}  # type: ignore[attr-defined]
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - calls
    bad = [n for n in names if len(n) != 1]
    if bad:
        raise UnsupportedExpression(f"{expr!r}: inputs must be single letters, got {bad}")
    return tuple(sorted(names, key=_ORDER.index))


class _ToNumba(ast.NodeTransformer):
    """``exp(x)`` -> ``math.exp(x)``; ``where(c, a, b)`` -> ``(a if c else b)``."""

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        name = node.func.id  # type: ignore[attr-defined]
        if name == "where":
            c, a, b = node.args
            return ast.IfExp(test=c, body=a, orelse=b)
        if name in _BUILTINS:
            return node
        node.func = ast.Attribute(value=ast.Name("math", ast.Load()), attr=name, ctx=ast.Load())
        return node


def kernel_source(expr: str, inputs: tuple[str, ...], target: str, name: str = "kernel") -> str:
    """Python source of a flat loop kernel ``kernel(*inputs, out)`` for ``target``."""
    body = ast.unparse(_ToNumba().visit(_check(expr)))
    loads = "; ".join(f"{v} = {v}_arr[i]" for v in inputs) or "pass"
    args = ", ".join(f"{v}_arr" for v in inputs)
    if target == "cpu":
        return (
            f"def {name}({args}, out):\n"
            f"    for i in range(out.size):\n"
            f"        {loads}\n"
            f"        out[i] = {body}\n"
        )
    if target == "cuda":
        return (
            f"def {name}({args}, out):\n"
            f"    i = cuda.grid(1)\n"
            f"    if i < out.size:\n"
            f"        {loads}\n"
            f"        out[i] = {body}\n"
        )
    raise ValueError(f"kernel_source: argument 'target' expected 'cpu' or 'cuda', got {target!r}")


# A Numba dispatcher: called directly on "cpu", launched as ``kernel[blocks, threads](...)``
# on "cuda" (numba ships no type information, so it stays Any).
Kernel = Any

_CACHE: dict[tuple[str, tuple[str, ...], str], Kernel] = {}


def compile_expression(expr: str, inputs: tuple[str, ...], target: str = "cpu") -> Kernel:
    """Compile (once per expression and target) the kernel for ``expr``."""
    key = (expr, inputs, target)
    fn = _CACHE.get(key)
    if fn is not None:
        return fn
    src = kernel_source(expr, inputs, target)
    if os.environ.get("SPORELING_DUMP_KERNELS", "") not in ("", "0"):
        print(f"# generated {target} kernel for {expr!r}\n{src}")
    namespace: dict[str, Any] = {"math": math}
    if target == "cuda":
        from numba import cuda

        namespace["cuda"] = cuda
    exec(compile(src, f"<sporeling kernel {expr}>", "exec"), namespace)  # noqa: S102 - our own source
    raw = namespace["kernel"]
    if target == "cpu":
        import numba

        fn = numba.njit(fastmath=False)(raw)
    else:
        from numba import cuda

        fn = cuda.jit(raw)
    _CACHE[key] = fn
    return fn


def run_elementwise(
    expr: str, arrays: list[Any], out_dtype: Any, target: str = "cpu", xp: Any = np
) -> Any:
    """Evaluate ``expr`` over broadcast ``arrays`` with a generated kernel; returns the result."""
    inputs = expression_inputs(expr)
    if len(inputs) != len(arrays):
        raise ValueError(f"run_elementwise: {expr!r} reads {len(inputs)} inputs, got {len(arrays)}")
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    flat = [xp.ascontiguousarray(xp.broadcast_to(a, shape)).reshape(-1) for a in arrays]
    out = xp.empty(int(np.prod(shape, dtype=np.int64)), dtype=out_dtype)
    kernel = compile_expression(expr, inputs, target)
    if target == "cpu":
        kernel(*flat, out)
    else:
        threads = 128
        blocks = max(1, (out.size + threads - 1) // threads)
        if xp is np:  # host arrays (CUDA simulator, or a test on a GPU): copy through
            from numba import cuda

            d_out = cuda.to_device(out)
            kernel[blocks, threads](*[cuda.to_device(f) for f in flat], d_out)
            out = d_out.copy_to_host()
        else:
            kernel[blocks, threads](*flat, out)
    return out.reshape(shape)
