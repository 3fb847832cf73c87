"""Row kernels: fused programs that reduce along the last axis and then use the result.

Softmax, layer norm and their gradients read a row, reduce it (max, sum, sum of squares),
and read it again using those reductions. A :class:`RowProgram` describes such a chain as
*phases*: phase ``p`` is one pass over the last loop dimension, which may use the row values
(reductions, and scalar expressions of them) finished by earlier passes. The generated
kernel walks the leading loop dimensions once and, for each row, runs every phase in turn,
so a row is read from memory once and then from cache.

A value computed in an earlier phase and needed later is read back from its output array
when it is stored anyway, else recomputed from its expression (elementwise, so cheap).
Row sums accumulate in float64; ``columns`` are sums over the leading dimensions (bias
gradients), per thread on the CPU (float32 values in float32 blocks of rows first,
:func:`.codegen.column_blocks`) and by atomic adds on the GPU.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import codegen

__all__ = ["RowStep", "RowProgram", "row_source", "compile_rows", "run_rows"]

_NAME = re.compile(r"\bt(\d+)\b")


@dataclass(frozen=True)
class RowStep:
    """One value of a row program, named ``t<index>``.

    ``kind`` is ``"elem"`` (an expression of inputs ``v<k>`` and other values, one per
    element, computed in pass ``phase``), ``"row"`` (an expression of row values and inputs
    that do not span the last dimension, computed before pass ``phase``), or ``"sum"``/
    ``"max"`` (the reduction of elementwise value ``source`` over the last dimension during
    pass ``phase``; usable from pass ``phase + 1``). ``dtype`` is the value's NumPy dtype name.
    """

    kind: str
    phase: int
    dtype: str
    expr: str = ""
    source: int = -1


@dataclass(frozen=True)
class RowProgram:
    """A fused row kernel over ``n_dims`` loop dimensions (the last is the reduced one).

    ``inputs[k]`` says which loop dimensions input ``k`` spans; ``outputs`` are elementwise
    values stored at full shape, ``row_outputs`` row values stored at the leading dimensions'
    shape, ``columns`` elementwise values summed over every loop dimension but the last.
    """

    n_dims: int
    inputs: tuple[tuple[bool, ...], ...]
    steps: tuple[RowStep, ...]
    outputs: tuple[int, ...]
    row_outputs: tuple[int, ...] = ()
    columns: tuple[int, ...] = ()

    @property
    def n_phases(self) -> int:
        """Phases, including a last one that only computes row values."""
        return 1 + max((s.phase for s in self.steps), default=0)

    @property
    def n_passes(self) -> int:
        """Passes over each row's elements (phases with elementwise work)."""
        return len({s.phase for s in self.steps if s.kind != "row"})


def _code(expr: str, dtype: str, target: str) -> str:
    return codegen.scalar_code(expr, dtype, "cpu" if target == "trace" else target)


def _refs(expr: str) -> list[int]:
    return [int(m) for m in _NAME.findall(expr)]


def _inputs_of(expr: str) -> list[int]:
    return [int(m) for m in re.findall(r"\bv(\d+)\b", expr)]


def row_source(prog: RowProgram, target: str, name: str = "kernel", split: bool = True) -> str:
    """Python source of the kernel: ``kernel(lo, hi, n0..., inputs..., outputs...,
    row outputs..., columns...)`` on ``"cpu"`` (``lo:hi`` a range of the first loop
    dimension), ``kernel(total, n0..., ...)`` with one thread per row on ``"cuda"``.
    ``split=False`` keeps every CPU pass one loop (the tests' reference)."""
    if target not in ("cpu", "cuda"):
        raise ValueError(f"row_source: argument 'target' expected 'cpu' or 'cuda', got {target!r}")
    return _generate(prog, target, name, split=split)[0]


def _generate(
    prog: RowProgram,
    target: str,
    name: str,
    scratch: set[int] | None = None,
    split: bool = True,
) -> tuple[str, dict[str, set[int]]]:
    """The source for ``target``, and which values each pass computed in their own pass
    (``"own"``), recomputed later (``"late"``) or read back from ``scratch``
    (``"read"``); ``target="trace"`` only collects those. ``split``: CPU passes may run
    as two loops (see ``split_pass`` below)."""
    # CPU: elementwise values computed in their own pass and needed again later are kept in
    # a scratch row (cheaper than recomputing them); GPU threads have no dynamic scratch.
    # Recomputing a value recomputes its operands too, so the first trace also marks those;
    # a second trace with that scratch keeps only the rows a later pass really reads.
    if scratch is None:
        scratch = set()
        if target == "cpu":
            seen = _generate(prog, "trace", name, split=split)[1]
            candidates = seen["own"] & seen["late"]
            scratch = _generate(prog, "trace", name, candidates, split=split)[1]["read"]
    nd = prog.n_dims
    idx = [f"i{d}" for d in range(nd)]
    dims = [f"n{d}" for d in range(nd)]
    steps = prog.steps
    stored = {j: k for k, j in enumerate(prog.outputs)}
    lines: list[str] = []
    trace: dict[str, set[int]] = {"own": set(), "late": set(), "read": set()}

    def emit(depth: int, text: str) -> None:
        if text:
            lines.extend("    " * depth + ln for ln in text.split("\n"))

    def load(k: int, depth: int, loaded: set[int]) -> None:
        if k not in loaded:
            used = [i for i, s in zip(idx, prog.inputs[k], strict=True) if s]
            emit(depth, f"v{k} = a{k}[{', '.join(used) or '0'}]")
            loaded.add(k)

    def value(
        j: int, depth: int, done: set[int], loaded: set[int], phase: int, wide: bool = False
    ) -> None:
        """Emit the code that makes elementwise value ``t<j>`` available in this pass (in
        the ``wide`` loop of a split pass, a float32 value this pass computes comes from
        the narrow loop before it: its output, scratch or bridge row)."""
        if j in done or steps[j].kind != "elem":
            return
        s = steps[j]
        computed_here = not (s.phase < phase and (j in stored or j in scratch))
        if wide and narrow[j] and computed_here:
            if s.phase == phase and j in stored:
                emit(depth, f"t{j} = o{stored[j]}[{', '.join(idx)}]")
            elif s.phase == phase and j in scratch:
                emit(depth, f"t{j} = w{j}[{idx[-1]}]")
            else:
                emit(depth, f"t{j} = b{j}[{idx[-1]}]")
                pass_bridges.add(j)
            bridged.add(j)
        elif s.phase < phase and j in stored:
            emit(depth, f"t{j} = o{stored[j]}[{', '.join(idx)}]")
        elif s.phase < phase and j in scratch:
            trace["read"].add(j)
            emit(depth, f"t{j} = w{j}[{idx[-1]}]")
        else:
            if s.phase < phase:
                trace["late"].add(j)
            else:
                trace["own"].add(j)
            for r in _refs(s.expr):
                value(r, depth, done, loaded, phase, wide)
            for k in _inputs_of(s.expr):
                load(k, depth, loaded)
            emit(depth, f"t{j} = _as_{s.dtype}({_code(s.expr, s.dtype, target)})")
            if s.phase == phase and j in stored:
                emit(depth, f"o{stored[j]}[{', '.join(idx)}] = t{j}")
            if s.phase == phase and j in scratch:
                emit(depth, f"w{j}[{idx[-1]}] = t{j}")
        done.add(j)

    def float_max(j: int) -> str | None:
        """The float dtype a CPU row maximum runs in (its source's), else None."""
        dt = steps[steps[j].source].dtype
        return dt if target == "cpu" and dt in ("float32", "float64") else None

    # CPU float maxima accumulate in their own dtype with LLVM's maxnum, NaNs counted in it
    # too: mixed float64/float32 or compare-and-select accumulation stays scalar
    def max_init(j: int) -> str:
        dt = float_max(j)
        return f"_as_{dt}(-math.inf)" if dt else "-math.inf"

    def max_fn(j: int) -> str:
        return "_vm.vmax_nonan" if float_max(j) else "_rmax"

    def max_one(j: int) -> str:
        dt = float_max(j)
        return f"_as_{dt}(1.0)" if dt else "1.0"

    def max_zero(j: int) -> str:
        dt = float_max(j)
        return f"_as_{dt}(0.0)" if dt else "0.0"

    narrow = _narrow(steps)
    bridged: set[int] = set()  # float32 values the wide loop of a split pass takes
    pass_bridges: set[int] = set()  # of those, the ones kept in a bridge row
    bridges: set[int] = set()  # every bridge row of the kernel
    row_store = {j: k for k, j in enumerate(prog.row_outputs)}
    row_idx = ", ".join(idx[:-1]) or "0"
    add = "cuda.atomic.add(c{k}, {i}, t{j})" if target == "cuda" else "c{k}[{i}] += t{j}"
    # float32 columns on the CPU: float32 block sums (codegen.column_blocks)
    col32 = set()
    if target in ("cpu", "trace") and nd > 1:
        col32 = set(codegen.column_blocks([(s.dtype,) for s in steps], prog.columns))

    def col_add(k: int, j: int) -> str:
        return f"s{k}[{idx[-1]}] += t{j}" if k in col32 else add.format(k=k, i=idx[-1], j=j)

    def pass_loop(
        depth: int, p: int, roots: list[int], reds: list[int], cols: Any, wide: bool
    ) -> None:
        """One loop over the row for pass ``p`` (``wide``: the float64 loop of a split
        pass, taking this pass's float32 values from the narrow loop's rows)."""
        emit(depth, f"for {idx[-1]} in range({dims[-1]}):")
        done: set[int] = set()
        loaded: set[int] = set()
        for j in roots:
            if not (wide and narrow[j]):
                value(j, depth + 1, done, loaded, p, wide)
        for j in reds:
            value(steps[j].source, depth + 1, done, loaded, p, wide)
            src = f"t{steps[j].source}"
            if steps[j].kind == "sum":
                emit(depth + 1, f"acc{j} = _radd(acc{j}, {src})")
            else:  # NaN propagates like numpy.max: counted apart, so the max vectorises
                emit(depth + 1, f"acc{j} = {max_fn(j)}(acc{j}, {src})")
                one, zero = max_one(j), max_zero(j)
                emit(depth + 1, f"nan{j} = _radd(nan{j}, {one} if {src} != {src} else {zero})")
        for k, j in cols:
            value(j, depth + 1, done, loaded, p, wide)
            emit(depth + 1, col_add(k, j))

    def narrow_loop(depth: int, p: int, roots: list[int], cols: Any) -> None:
        """The float32 loop of a split pass: its float32 outputs and columns, and the
        values the wide loop reads (stored to bridge rows unless an output or scratch row
        holds them)."""
        emit(depth, f"for {idx[-1]} in range({dims[-1]}):")
        done: set[int] = set()
        loaded: set[int] = set()
        for j in [j for j in roots if narrow[j]] + [j for _, j in cols] + sorted(bridged):
            value(j, depth + 1, done, loaded, p)
        for k, j in cols:
            emit(depth + 1, col_add(k, j))
        for j in sorted(bridged & pass_bridges):
            emit(depth + 1, f"b{j}[{idx[-1]}] = t{j}")

    def split_pass(depth: int, p: int, roots: list[int], reds: list[int], cols: Any) -> bool:
        """Emit pass ``p`` as two loops when it pays: on the CPU, when its float32 work
        calls a :mod:`.cpu.vecmath` function and the pass also works in float64 (row
        sums, columns, float64 values). LLVM vectorises a loop at its widest type's lane
        count, so one float64 operation halves the lanes of all the float32 work in the
        loop (exact GELU's ``ndtr`` beside layer norm's float64 row sum: 8 lanes, not 16);
        the wide loop reads the float32 values back from rows in L1. Results are the same
        operations on the same values."""
        if not split or target not in ("cpu", "trace"):
            return False
        start = len(lines)
        bridged.clear()
        pass_bridges.clear()
        in_narrow = [(k, j) for k, j in cols if k in col32 and narrow[j]]
        in_wide = [c for c in cols if c not in in_narrow]
        pass_loop(depth, p, roots, reds, in_wide, wide=True)
        wide_part = lines[start:]
        del lines[start:]
        narrow_loop(depth, p, roots, in_narrow)
        narrow_text = "\n".join(lines[start:])
        f64 = any(steps[j].kind == "sum" for j in reds) or any(k not in col32 for k, _ in cols)
        f64 = f64 or any("_as_float64(" in ln for ln in wide_part)
        if "_vm.v" in narrow_text and f64:
            lines.extend(wide_part)
            bridges.update(pass_bridges)
            return True
        del lines[start:]
        return False

    def row_phase_body(depth: int) -> None:
        for p in range(prog.n_phases):
            for j, s in enumerate(steps):  # row values available from this pass on
                if s.kind == "row" and s.phase == p:
                    loaded: set[int] = set()
                    for k in _inputs_of(s.expr):
                        load(k, depth, loaded)
                    emit(depth, f"t{j} = _as_{s.dtype}({_code(s.expr, s.dtype, target)})")
                    if j in row_store:
                        emit(depth, f"r{row_store[j]}[{row_idx}] = t{j}")
            reds = [j for j, s in enumerate(steps) if s.kind in ("sum", "max") and s.phase == p]
            cols = [(k, j) for k, j in enumerate(prog.columns) if steps[j].phase == p]
            roots = [j for j in prog.outputs if steps[j].phase == p]
            if not (reds or cols or roots):
                continue
            for j in reds:
                emit(depth, f"acc{j} = {'0.0' if steps[j].kind == 'sum' else max_init(j)}")
                if steps[j].kind == "max":
                    emit(depth, f"nan{j} = {max_zero(j)}")
            if not split_pass(depth, p, roots, reds, cols):
                pass_loop(depth, p, roots, reds, cols, wide=False)
            for j in reds:
                if steps[j].kind == "max":
                    emit(depth, f"if nan{j} != 0.0:\n    acc{j} = math.nan")
                emit(depth, f"t{j} = _as_{steps[j].dtype}(acc{j})")
                if j in row_store:
                    emit(depth, f"r{row_store[j]}[{row_idx}] = t{j}")

    ins = [f"a{k}" for k in range(len(prog.inputs))]
    outs = [f"o{k}" for k in range(len(prog.outputs))]
    rows = [f"r{k}" for k in range(len(prog.row_outputs))]
    cols = [f"c{k}" for k in range(len(prog.columns))]
    args = ", ".join([*dims, *ins, *outs, *rows, *cols])
    if target == "trace":
        row_phase_body(1)
        return "", trace
    if target == "cpu":
        lines.append(f"def {name}(lo, hi, {args}):")
        lines.append("    _vm.wide_vectors()")  # 512-bit vectors where the CPU has them
        for j in sorted(scratch):
            emit(1, f"w{j} = np.empty({dims[-1]}, np.{steps[j].dtype})")
        emit(1, codegen.block_sums_start(sorted(col32), dims[-1]))
        top = len(lines)
        for d in range(nd - 1):
            emit(d + 1, f"for {idx[d]} in range({'lo, hi' if d == 0 else dims[d]}):")
        row_phase_body(nd)
        emit(nd, codegen.block_sums_row(sorted(col32), dims[-1]))
        emit(1, codegen.block_sums_end(sorted(col32), dims[-1]))
        lines[top:top] = [
            f"    b{j} = np.empty({dims[-1]}, np.{steps[j].dtype})" for j in sorted(bridges)
        ]
        return "\n".join(lines) + "\n", trace
    lines.append(f"def {name}(total, {args}):")
    emit(1, "g = cuda.grid(1)")
    emit(1, "if g < total:")
    for d in range(nd - 2, 0, -1):
        emit(2, f"{idx[d]} = g % {dims[d]}")
        emit(2, f"g = g // {dims[d]}")
    if nd > 1:
        emit(2, f"{idx[0]} = g")
    row_phase_body(2)
    return "\n".join(lines) + "\n", trace


def _narrow(steps: tuple[RowStep, ...]) -> list[bool]:
    """Per step: a value computed without float64 (neither its dtype nor, for an
    elementwise value, any value it uses is float64), so a loop of such values
    vectorises at float32 width. Row values are scalars computed outside the loop: only
    their own dtype counts."""
    out: list[bool] = []
    for s in steps:  # a step refers only to earlier ones
        uses = _refs(s.expr) if s.kind == "elem" else []
        out.append(s.dtype != "float64" and all(out[r] for r in uses))
    return out


#: The row reductions' operators. Only these carry fast-math flags, so LLVM may reorder
#: (vectorise) the accumulation while every elementwise result stays exactly as unfused.
#: ``_rmax`` assumes no NaN; the kernel counts NaNs apart and makes the max NaN after.
_REDUCE_HELPERS = """
@njit(cache=True, fastmath={"reassoc", "nsz", "contract"})
def _radd(a, b):
    return a + b


@njit(cache=True, fastmath={"reassoc", "nsz", "nnan"})
def _rmax(a, b):
    return a if a > b else b
"""


def _cuda_reducers(namespace: dict[str, Any]) -> None:
    from numba import cuda

    namespace["_radd"] = cuda.jit(device=True)(lambda a, b: a + b)
    namespace["_rmax"] = cuda.jit(device=True)(lambda a, b: a if a > b else b)


def compile_rows(prog: RowProgram, target: str = "cpu") -> Any:
    """The compiled kernel of ``prog`` (memoized; CPU kernels also cached on disk)."""
    return codegen.build_kernel(
        (prog, target), lambda: row_source(prog, target), target, _REDUCE_HELPERS, _cuda_reducers
    )


def run_rows(
    prog: RowProgram,
    loop: tuple[int, ...],
    inputs: list[Any],
    outputs: list[Any],
    row_outputs: list[Any],
    columns: list[Any],
    target: str = "cpu",
    xp: Any = np,
    threads: int | None = None,
) -> None:
    """Run ``prog`` over loop sizes ``loop`` on arrays already shaped for it (inputs: their
    spanned loop dimensions; outputs: ``loop``; row outputs: ``loop[:-1]`` or ``(1,)``;
    columns: float64 arrays of ``loop[-1]`` elements, overwritten with the column sums).
    A single row (a 1-d loop) ignores the kernel's ``lo, hi``."""
    rows = int(np.prod(loop[:-1], dtype=np.int64)) if len(loop) > 1 else 1
    launch_rows = loop[0] if len(loop) > 1 else 1  # the CPU splits the first loop dimension
    kernel = compile_rows(prog, target)
    written = [*outputs, *row_outputs]

    def job(arrays: list[Any], n_cols: int) -> int | None:
        from .codegen_jobs import job_address

        source = lambda: row_source(prog, target)  # noqa: E731
        return job_address((prog, target), source, _REDUCE_HELPERS, len(loop), arrays, n_cols)

    codegen.launch(
        kernel, loop, launch_rows, inputs, written, columns, target, xp, threads, rows,
        job=job if target == "cpu" else None,
    )  # fmt: skip
