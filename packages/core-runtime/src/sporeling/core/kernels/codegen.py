"""Kernels generated from elementwise primitives' scalar expressions.

Every elementwise primitive carries a scalar expression (``"1/(1+exp(-x))"``). This module
turns such an expression into a loop kernel for the CPU (Numba ``njit``) or the GPU (Numba
CUDA, which also runs on the CPU under ``NUMBA_ENABLE_CUDASIM=1`` for testing). The graph
compiler's fusion pass composes expressions of a chain of ops and compiles them here.

Expressions may use the inputs ``c x y`` (and ``a b ...`` for fused chains), numbers, Python
arithmetic/comparison operators, ``where(c, a, b)``, ``max``, ``min``, ``abs`` and any
function of Python's ``math`` module (``exp``, ``log1p``, ``erf``, ``tanh``, ...).
``f32(e)`` marks a part whose numbers are float32 in float32 CPU kernels: Numba promotes a
float32 combined with a Python number to float64, so without it ``1 / (1 + exp(-x))`` runs
its add and division on half-width float64 vectors (1.6x slower); elsewhere ``f32(e)`` is
``e``. An op opts in where float32 arithmetic is what its eager kernel does too (the exact
GELU's ``erf(x * 0.7071067811865476)`` does not: a float32 constant there would cost the
lower tail its accuracy).
``SPORELING_DUMP_KERNELS=1`` prints each generated source.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import math
import os
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .cpu import vecmath
from .cpu.vecmath import MATH_EQUIVALENTS

__all__ = [
    "UnsupportedExpression",
    "expression_inputs",
    "kernel_source",
    "compile_expression",
    "run_elementwise",
    "substitute",
    "FusedProgram",
    "fused_source",
    "compile_fused",
    "run_fused",
]

_BUILTINS = {"max", "min", "abs", "where", "float", "int", "bool"}
#: ``f32(e)``: ``e`` with its numbers as float32 constants in float32 CPU kernels
_FLOAT32_PART = "f32"
#: functions that are neither builtins nor ``math``'s: name -> (definition in ``math`` terms,
#: the :mod:`.cpu.vecmath` function float32 CPU kernels call instead)
_COMPOSITES = {"ndtr": ("0.5 * erfc(-({}) * 0.7071067811865476)", "vndtr")}
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
            known = name in _BUILTINS or name in _COMPOSITES or name == _FLOAT32_PART
            if not known and not callable(getattr(math, name, None)):
                raise UnsupportedExpression(f"{expr!r}: unknown function {name!r}")
        elif isinstance(node, (ast.Attribute, ast.Subscript, ast.Lambda, ast.NamedExpr)):
            raise UnsupportedExpression(f"{expr!r}: {type(node).__name__} is not allowed")
    return tree


def expression_inputs(expr: str) -> tuple[str, ...]:
    """The input names an expression reads, in canonical order (``c``, ``x``, ``y``, ...)."""
    tree = _check(expr)
    calls = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call)}  # type: ignore[attr-defined]
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - calls
    bad = sorted(n for n in names if len(n) != 1)  # sorted: the same message in every process
    if bad:
        raise UnsupportedExpression(f"{expr!r}: inputs must be single letters, got {bad}")
    return tuple(sorted(names, key=_ORDER.index))


def _is_one(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) in (int, float) and node.value == 1


def _call_of(node: ast.AST, name: str) -> ast.expr | None:
    """The argument of ``name(arg)`` if ``node`` is that call, else None."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name:
        return node.args[0] if len(node.args) == 1 else None
    return None


def _vm_call(name: str, arg: ast.expr) -> ast.Call:
    return ast.Call(ast.Attribute(ast.Name("_vm", ast.Load()), name, ast.Load()), [arg], [])


class _ToNumba(ast.NodeTransformer):
    """``exp(x)`` -> ``math.exp(x)``; ``where(c, a, b)`` -> ``(a if c else b)``.

    With ``float32=True`` (CPU temps computed in float32), the functions of
    :data:`~.cpu.vecmath.MATH_EQUIVALENTS` become their vectorising float32 versions
    (``_vm.vexp(x)``, and ``ndtr(x)`` ``_vm.vndtr(x)``; elsewhere ``ndtr`` is written out
    with ``math.erfc``), and ``log(1 + e)``, ``1 + erf(e)``, ``1 - erf(e)`` become ``log1p(e)``,
    ``erfc(-e)``, ``erfc(e)``: rounding ``1 + e`` or ``erf(e)`` to float32 first would cancel
    the accuracy that the float64 ``math`` versions kept (softplus, GELU's erf form).
    """

    def __init__(self, float32: bool = False) -> None:
        self.float32 = float32

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        if self.float32 and isinstance(node.op, (ast.Add, ast.Sub)):
            erf = _call_of(node.right, "erf") if _is_one(node.left) else None
            if erf is None and isinstance(node.op, ast.Add) and _is_one(node.right):
                erf = _call_of(node.left, "erf")
            if erf is not None:
                if isinstance(node.op, ast.Add):
                    erf = ast.UnaryOp(ast.USub(), erf)
                return _vm_call(MATH_EQUIVALENTS["erfc"], self.visit(erf))
        self.generic_visit(node)
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        name = node.func.id  # type: ignore[attr-defined]
        arg = node.args[0] if len(node.args) == 1 else None
        if name == _FLOAT32_PART:
            if arg is None:
                raise UnsupportedExpression(f"{_FLOAT32_PART}() takes one argument")
            inner = self.visit(arg)  # the rewrites first: they look for a literal 1
            return _Float32Numbers().visit(inner) if self.float32 else inner
        if (
            self.float32
            and name == "log"
            and isinstance(arg, ast.BinOp)
            and isinstance(arg.op, ast.Add)
            and (_is_one(arg.left) or _is_one(arg.right))
        ):
            rest = arg.right if _is_one(arg.left) else arg.left
            return _vm_call(MATH_EQUIVALENTS["log1p"], self.visit(rest))
        if name in _COMPOSITES and arg is not None:
            definition, vectorised = _COMPOSITES[name]
            if self.float32:
                return _vm_call(vectorised, self.visit(arg))
            return self.visit(ast.parse(definition.format(ast.unparse(arg)), mode="eval").body)
        self.generic_visit(node)
        if name == "where":
            c, a, b = node.args
            return ast.IfExp(test=c, body=a, orelse=b)
        if name in _BUILTINS:
            return node
        if self.float32 and name in MATH_EQUIVALENTS:
            return _vm_call(MATH_EQUIVALENTS[name], node.args[0])
        node.func = ast.Attribute(value=ast.Name("math", ast.Load()), attr=name, ctx=ast.Load())
        return node


class _Float32Numbers(ast.NodeTransformer):
    """Every int or float literal ``c`` becomes ``_as_float32(c)`` (a float32 constant)."""

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if type(node.value) in (int, float):
            return ast.Call(ast.Name("_as_float32", ast.Load()), [node], [])
        return node


def scalar_code(expr: str, dtype: str, target: str) -> str:
    """Numba source for ``expr`` whose result is rounded to ``dtype`` (a NumPy dtype name):
    float32 on ``"cpu"`` computes ``exp``, ``erf``... with :mod:`.cpu.vecmath` (the kernel
    module needs :data:`CPU_PRELUDE`), anything else with ``math``."""
    float32 = dtype == "float32" and target == "cpu"
    return ast.unparse(_ToNumba(float32).visit(ast.parse(expr, mode="eval")))


def kernel_source(
    expr: str, inputs: tuple[str, ...], target: str, name: str = "kernel", float32: bool = False
) -> str:
    """Python source of a flat loop kernel ``kernel(*inputs, out)`` for ``target``;
    ``float32`` (CPU only) computes ``exp``, ``erf``... with :mod:`.cpu.vecmath`."""
    body = ast.unparse(_ToNumba(float32 and target == "cpu").visit(_check(expr)))
    loads = "; ".join(f"{v} = {v}_arr[i]" for v in inputs) or "pass"
    args = ", ".join(f"{v}_arr" for v in inputs)
    if target == "cpu":
        return (
            f"def {name}({args}, out):\n"
            f"    _vm.wide_vectors()\n"
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

_CACHE: dict[tuple[str, tuple[str, ...], str, bool], Kernel] = {}


def compile_expression(
    expr: str, inputs: tuple[str, ...], target: str = "cpu", float32: bool = False
) -> Kernel:
    """Compile (once per expression, target and ``float32``) the kernel for ``expr``."""
    key = (expr, inputs, target, float32)
    fn = _CACHE.get(key)
    if fn is not None:
        return fn
    src = kernel_source(expr, inputs, target, float32=float32)
    if os.environ.get("SPORELING_DUMP_KERNELS", "") not in ("", "0"):
        print(f"# generated {target} kernel for {expr!r}\n{src}")
    namespace: dict[str, Any] = {"math": math, "_vm": vecmath, "_as_float32": np.float32}
    if target == "cuda":
        from numba import cuda

        namespace["cuda"] = cuda
    exec(compile(src, f"<sporeling kernel {expr}>", "exec"), namespace)  # noqa: S102 - our own source
    raw = namespace["kernel"]
    if target == "cpu":
        import numba

        fn = numba.njit(fastmath=False, error_model="numpy" if float32 else "python")(raw)
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
    kernel = compile_expression(expr, inputs, target, np.dtype(out_dtype) == np.float32)
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


# ---- fused kernels: several expressions, broadcast inputs, column sums ------------------


class _Rename(ast.NodeTransformer):
    def __init__(self, mapping: dict[str, str]) -> None:
        self.mapping = {k: ast.parse(v, mode="eval").body for k, v in mapping.items()}

    def visit_Call(self, node: ast.Call) -> ast.AST:
        node.args = [self.visit(a) for a in node.args]  # the function name stays as written
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return self.mapping.get(node.id, node)


def substitute(expr: str, mapping: dict[str, str]) -> str:
    """``expr`` with names replaced by expressions (``{"x": "t3", "alpha": "0.2"}``)."""
    tree = ast.parse(expr, mode="eval")
    return ast.unparse(_Rename(mapping).visit(tree))


@dataclass(frozen=True)
class FusedProgram:
    """One fused loop nest over ``n_dims`` loop dimensions (the group's broadcast shape,
    size-1 dimensions dropped and equal-pattern neighbours merged).

    Inputs are named ``v0, v1 ...``; ``inputs[k]`` says which loop dimensions input ``k``
    spans (the others are broadcast). ``temps[j] = (dtype, expr)`` defines ``t<j>``, rounded
    to ``dtype`` like the unfused op's result. ``outputs`` are temps stored at full shape;
    ``columns`` are temps summed over every loop dimension but the last (a bias gradient's
    ``reduce_sum(g, 0)``), into float64 accumulators ``c<k>`` of the last dimension's
    length: per thread on the CPU (float32 values first in float32 blocks of rows, see
    :func:`column_blocks`), by atomic adds on the GPU. Reductions along the last
    axis, and anything using them, are row kernels (:mod:`.codegen_rows`).
    """

    n_dims: int
    inputs: tuple[tuple[bool, ...], ...]
    temps: tuple[tuple[str, str], ...]
    outputs: tuple[int, ...]
    columns: tuple[int, ...] = ()


def _index(spans: tuple[bool, ...], idx: list[str]) -> str:
    used = [i for i, s in zip(idx, spans, strict=True) if s]
    return ", ".join(used) if used else "0"


#: rows a CPU kernel sums a float32 column over in float32 before adding the block's sums
#: into its float64 accumulators (see :func:`column_blocks`)
COLUMN_BLOCK = 16


def column_blocks(temps: Any, columns: tuple[int, ...]) -> list[int]:
    """Which columns of a CPU kernel over rows sum in float32 blocks: those of float32
    values. Each kernel call keeps one float32 row per such column, adds a row's values
    into it, and every :data:`COLUMN_BLOCK` rows (and at its end) adds that row into the
    float64 accumulator and clears it. Adding each value into a float64 accumulator cost
    a float64 load, add and store per element, in the half-width loop of a split pass
    (the ``ln(gelu(x*w+b))`` gradient's three column sums: ~2 ms of its ~21 ms on one
    thread, benchmarks/README.md "ln(gelu) chain, session 9"). Error: at most
    ``(COLUMN_BLOCK - 1) * 2**-24`` of a block's sum of magnitudes, where NumPy's float32
    ``sum(axis=0)`` (eager mode) accumulates all rows in float32."""
    return [k for k, j in enumerate(columns) if temps[j][0] == "float32"]


def block_sums_start(col32: list[int], n: str) -> str:
    """Source of the float32 block rows and the row counter (empty without such columns)."""
    if not col32:
        return ""
    rows = [f"s{k} = np.zeros({n}, np.float32)" for k in col32]
    return "\n".join([*rows, "nb = 0"])


def _flush(col32: list[int], n: str) -> str:
    adds = [f"    c{k}[i_] += s{k}[i_]\n    s{k}[i_] = _as_float32(0.0)" for k in col32]
    return f"for i_ in range({n}):\n" + "\n".join(adds)


def block_sums_row(col32: list[int], n: str) -> str:
    """Source that ends a row: counts it, and adds a full block into the accumulators."""
    if not col32:
        return ""
    flush = "\n".join("    " + ln for ln in _flush(col32, n).split("\n"))
    return f"nb += 1\nif nb == {COLUMN_BLOCK}:\n{flush}\n    nb = 0"


def block_sums_end(col32: list[int], n: str) -> str:
    """Source that adds the last, partial block into the accumulators."""
    if not col32:
        return ""
    flush = "\n".join("    " + ln for ln in _flush(col32, n).split("\n"))
    return f"if nb > 0:\n{flush}"


#: the CPU loop over the first dimension: unsigned, because Numba wraps a negative signed
#: index, and a loop from an unknown ``lo`` could not prove its index non-negative: each
#: access kept a select, and a one-dimensional kernel's loop became gathers and scatters
#: (exact GELU over 2M float32 values 8.5 ms -> 4.1 ms)
_FIRST_RANGE = "_as_uint64(lo), _as_uint64(hi)"


def fused_source(prog: FusedProgram, target: str, name: str = "kernel", split: bool = True) -> str:
    """Python source of the loop kernel for ``prog`` on ``"cpu"`` (``kernel(lo, hi, n0...,
    inputs..., outputs..., columns...)``, ``lo:hi`` a range of the first loop dimension)
    or ``"cuda"`` (``kernel(total, n0..., ...)``, one thread per element).

    On the CPU, with ``split``, a kernel whose float work calls a vecmath function and also
    sums float64 columns keeps each row's column values in rows of their own and adds them
    in a second loop (float32 columns add into float32 block rows in the loop itself,
    :func:`column_blocks`): LLVM vectorises a loop at its widest type's lane count, so the float64
    adds would halve the lanes of the float32 work (GELU's gradient beside its bias
    gradient). Same operations, same results."""
    nd = max(prog.n_dims, 1)
    idx = [f"i{d}" for d in range(nd)]
    dims = [f"n{d}" for d in range(nd)]
    ins = [f"a{k}" for k in range(len(prog.inputs))]
    outs = [f"o{k}" for k in range(len(prog.outputs))]
    spans = [s if prog.n_dims else (True,) for s in prog.inputs]
    body = [f"v{k} = a{k}[{_index(s, idx)}]" for k, s in enumerate(spans)]
    for j, (dt, expr) in enumerate(prog.temps):
        body.append(f"t{j} = _as_{dt}({scalar_code(expr, dt, target)})")
    body += [f"o{k}[{', '.join(idx)}] = t{j}" for k, j in enumerate(prog.outputs)]
    cols = [f"c{k}" for k in range(len(prog.columns))]
    # float32 columns of a CPU kernel over rows: float32 block sums (see column_blocks)
    col32 = [] if target != "cpu" or nd < 2 else column_blocks(prog.temps, prog.columns)
    add = "cuda.atomic.add(c{k}, {i}, t{j})" if target == "cuda" else "c{k}[{i}] += t{j}"
    sums = {k: f"s{k}[{idx[-1]}] += t{j}" for k, j in enumerate(prog.columns) if k in col32}
    adds = {k: add.format(k=k, i=idx[-1], j=j) for k, j in enumerate(prog.columns)}
    body += [sums.get(k, adds[k]) for k in range(len(prog.columns))]
    args = ", ".join([*dims, *ins, *outs, *cols])
    lines: list[str] = []

    def emit(depth: int, text: str) -> None:
        if text:
            lines.extend("    " * depth + ln for ln in text.split("\n"))

    if target == "cpu":
        lines.append(f"def {name}(lo, hi, {args}):")
        lines.append("    _vm.wide_vectors()")  # 512-bit vectors where the CPU has them
        wide = [(k, j) for k, j in enumerate(prog.columns) if k not in col32]
        split = split and nd > 1 and bool(wide) and any("_vm.v" in ln for ln in body)
        if split:  # see the docstring: float32 work in one loop, the float64 sums after it
            body = [ln for ln in body if ln not in [adds[k] for k, _ in wide]]
            body += [f"b{k}[{idx[-1]}] = t{j}" for k, j in wide]
            for k, j in wide:
                emit(1, f"b{k} = np.empty({dims[-1]}, np.{prog.temps[j][0]})")
        emit(1, block_sums_start(col32, dims[-1]))
        for d in range(nd):
            emit(d + 1, f"for {idx[d]} in range({_FIRST_RANGE if d == 0 else dims[d]}):")
        for ln in body:
            emit(nd + 1, ln)
        if split:
            emit(nd, f"for {idx[-1]} in range({dims[-1]}):")
            for k, _ in wide:
                emit(nd + 1, f"c{k}[{idx[-1]}] += b{k}[{idx[-1]}]")
        emit(nd, block_sums_row(col32, dims[-1]))
        emit(1, block_sums_end(col32, dims[-1]))
        return "\n".join(lines) + "\n"
    if target != "cuda":
        raise ValueError(
            f"fused_source: argument 'target' expected 'cpu' or 'cuda', got {target!r}"
        )
    lines.append(f"def {name}(total, {args}):")
    emit(1, "g = cuda.grid(1)")
    emit(1, "if g < total:")
    for d in range(nd - 1, 0, -1):
        emit(2, f"{idx[d]} = g % {dims[d]}")
        emit(2, f"g = g // {dims[d]}")
    emit(2, f"{idx[0]} = g")
    for ln in body:
        emit(2, ln)
    return "\n".join(lines) + "\n"


_CASTS = "".join(
    f"_as_{n} = np.{n}\n" for n in ("float32", "float64", "int32", "int64", "uint64", "bool_")
)
#: imports and casts every generated CPU kernel module starts with; vecmath's digest makes
#: the module (and so Numba's disk cache of it) change whenever vecmath does
CPU_PRELUDE = (
    "import math\nimport numpy as np\nfrom numba import njit\n"
    f"from sporeling.core.kernels.cpu import vecmath as _vm  # {vecmath.SOURCE_DIGEST}\n" + _CASTS
)
#: compiled generated kernels, by (program, target)
_KERNELS: dict[Any, Kernel] = {}
_KERNELS_LOCK = threading.Lock()


def kernel_cache_dir() -> Path:
    """Where generated CPU kernels (and Numba's on-disk cache of them) live:
    ``SPORELING_KERNEL_CACHE``, else ``~/.cache/sporeling/kernels``."""
    root = os.environ.get("SPORELING_KERNEL_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "sporeling", "kernels"
    )
    return Path(root)


def _load_module(src: str) -> dict[str, Any]:
    """Write ``src`` to ``<cache>/k<hash>.py`` and import it, so Numba's ``cache=True``
    finds a real file: a warm cache then loads machine code instead of compiling."""
    digest = hashlib.sha256(src.encode()).hexdigest()[:24]
    folder = kernel_cache_dir()
    path = folder / f"k{digest}.py"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
            with os.fdopen(fd, "w") as fh:
                fh.write(src)
            os.replace(tmp, path)  # atomic: concurrent processes never read half a file
    except OSError:  # read-only home: compile in memory, without the disk cache
        namespace: dict[str, Any] = {}
        exec(compile(src.replace("cache=True", "cache=False"), "<kernel>", "exec"), namespace)  # noqa: S102
        return namespace
    modname = f"sporeling_kernel_{digest}"
    module = sys.modules.get(modname)
    if module is None:
        spec = importlib.util.spec_from_file_location(modname, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[modname] = module
    return vars(module)


def build_kernel(
    key: Any,
    source: Callable[[], str],
    target: str,
    cpu_helpers: str = "",
    cuda_helpers: Callable[[dict[str, Any]], None] | None = None,
) -> Kernel:
    """The compiled ``kernel`` of generated source (memoized under ``key``; CPU kernels also
    cached on disk). ``cpu_helpers`` is extra module source before the kernel on the CPU;
    ``cuda_helpers`` adds device functions to the CUDA kernel's namespace."""
    fn = _KERNELS.get(key)
    if fn is not None:
        return fn
    with _KERNELS_LOCK:
        fn = _KERNELS.get(key)
        if fn is not None:
            return fn
        src = source()
        if os.environ.get("SPORELING_DUMP_KERNELS", "") not in ("", "0"):
            print(f"# generated {target} kernel\n{src}")
        if target == "cpu":
            # serial loop, released GIL: the launcher splits rows over threads itself, so the
            # kernel stays cacheable (parallel=True kernels are not, see STYLE.md)
            jit = "\n\n@njit(cache=True, nogil=True, error_model='numpy')\n"
            fn = _load_module(CPU_PRELUDE + cpu_helpers + jit + src)["kernel"]
        else:
            from numba import cuda

            namespace: dict[str, Any] = {"math": math, "np": np, "cuda": cuda}
            exec(_CASTS, namespace)  # noqa: S102 - our own source
            if cuda_helpers is not None:
                cuda_helpers(namespace)
            exec(compile(src, "<sporeling generated kernel>", "exec"), namespace)  # noqa: S102
            fn = cuda.jit(namespace["kernel"])
        _KERNELS[key] = fn
    return fn


#: a generated CPU kernel's rows are cut into chunks of about this many elements (at least
#: two per thread), which the threads claim one at a time (see :func:`_chunks`)
CHUNK_ELEMENTS = 1 << 18


def _chunks(rows: int, loop: tuple[int, ...], blocks: int) -> int:
    """How many chunks a launch over ``rows`` rows of ``loop`` cuts for ``blocks`` threads:
    two per thread, or more for a large kernel, chunks of about :data:`CHUNK_ELEMENTS`
    elements. A thread that starts late (its wake, the GIL, its core) then leaves the
    caller small chunks to take over instead of a quarter of the rows: the fused
    ``ln(gelu(x*w+b))`` forward + backward (8192x1024, ~14 ms at 2 threads) had its two
    threads start up to 6 ms apart, and with 4 chunks its median step took 23.1-23.2 ms,
    with 32 chunks (256 rows) 16.7-19.8 ms (alternating in one process, 14 rounds x 5
    steps, benchmarks/README.md "ln(gelu) at 2 threads")."""
    if blocks <= 1:
        return 1
    total = int(np.prod(loop, dtype=np.int64))
    return max(1, min(rows, max(2 * blocks, total // CHUNK_ELEMENTS)))


#: generated CPU kernels of at least this many elements run as GIL-free jobs (when they
#: split over threads): a slow worker start costs a long kernel most (the ln(gelu) chain's
#: 8M elements, ~10 ms a thread). Shorter ones (the GPT step's, up to 2M) stay on the row
#: workers: after a job the worker spins for its next one (``_jobs.LINGER_US``), which may
#: take a core from OpenBLAS's threads in the products between kernels, and no A/B on an
#: idle machine says jobs win there (GPT graph step, 2 threads, load ~10, every kernel a
#: job: CPU min 348 -> 372 ms; the same code twice read 346 vs 355: within the noise)
JOB_MIN_ELEMENTS = 1 << 22


def launch(
    kernel: Kernel,
    loop: tuple[int, ...],
    rows: int,
    inputs: list[Any],
    outputs: list[Any],
    columns: list[Any],
    target: str,
    xp: Any,
    threads: int | None,
    cuda_items: int,
    job: Callable[[list[Any], int], int | None] | None = None,
) -> None:
    """Run a generated kernel: on the CPU ``kernel(lo, hi, *loop, *inputs, *outputs,
    *column partials)`` over blocks of ``rows`` split across threads, each summing columns
    into its own float64 partials, added into ``columns`` at the end; on the GPU one thread
    per item (``cuda_items`` of them), columns by atomic adds. On the CPU a launch of at
    least :data:`JOB_MIN_ELEMENTS` that splits over threads runs as a GIL-free job
    (:mod:`.codegen_jobs`) when ``job`` (arrays, column count -> the job's address or
    None) gives one, on one thread too when ``threads`` says so (a first call), so that
    the kernel is compiled once, in its job; otherwise on :mod:`.cpu._rows`."""
    if target == "cpu":
        from .cpu._rows import n_blocks, run_blocks

        total = int(np.prod(loop, dtype=np.int64))
        wanted = n_blocks(rows, total)
        blocks = wanted if threads is None else min(wanted, threads)
        parts = [np.zeros((blocks, loop[-1])) for _ in columns]
        chunks = _chunks(rows, loop, blocks)
        large = total >= JOB_MIN_ELEMENTS
        fn = job([*inputs, *outputs], len(parts)) if job and wanted > 1 and large else None
        if fn is not None:
            from .cpu import _jobs

            _jobs.run(fn, _jobs.pack(*loop, *inputs, *outputs, *parts), rows, blocks, chunks)
            for c, p in zip(columns, parts, strict=True):
                np.sum(p, axis=0, out=c)
            return

        def block(k: int, lo: int, hi: int) -> None:
            kernel(lo, hi, *loop, *inputs, *outputs, *[p[k] for p in parts])

        run_blocks(block, rows, blocks, chunks=chunks)
        for c, p in zip(columns, parts, strict=True):
            np.sum(p, axis=0, out=c)
        return
    for c in columns:
        c[...] = 0
    n_threads = 128
    grid = max(1, (cuda_items + n_threads - 1) // n_threads)
    arrays = [*outputs, *columns]
    if xp is np:  # host arrays (CUDA simulator, tests): copy through the device
        from numba import cuda

        d_in = [cuda.to_device(a) for a in inputs]
        d_out = [cuda.to_device(a) for a in arrays]
        kernel[grid, n_threads](cuda_items, *loop, *d_in, *d_out)
        for host, dev in zip(arrays, d_out, strict=True):
            host[...] = dev.copy_to_host()
    else:
        kernel[grid, n_threads](cuda_items, *loop, *inputs, *arrays)


def compile_fused(prog: FusedProgram, target: str = "cpu") -> Kernel:
    """The compiled kernel of ``prog`` (memoized; CPU kernels also cached on disk)."""
    return build_kernel((prog, target), lambda: fused_source(prog, target), target)


def run_fused(
    prog: FusedProgram,
    loop: tuple[int, ...],
    inputs: list[Any],
    outputs: list[Any],
    target: str = "cpu",
    xp: Any = np,
    threads: int | None = None,
    columns: list[Any] | None = None,
) -> None:
    """Run ``prog`` over loop sizes ``loop`` on arrays already shaped for it (inputs: their
    spanned loop dimensions; outputs: ``loop``; columns: float64 arrays of ``loop[-1]``
    elements, overwritten with the column sums). On the CPU, rows of the first loop
    dimension are split over threads once the loop is large enough."""
    dims = loop or (1,)
    total = int(np.prod(dims, dtype=np.int64))
    kernel = compile_fused(prog, target)
    cols = list(columns or ())

    def job(arrays: list[Any], n_cols: int) -> int | None:
        from .codegen_jobs import job_address

        source = lambda: fused_source(prog, target)  # noqa: E731
        return job_address((prog, target), source, "", len(dims), arrays, n_cols)

    launch(
        kernel, dims, dims[0], inputs, outputs, cols, target, xp, threads, total,
        job=job if target == "cpu" else None,
    )  # fmt: skip
