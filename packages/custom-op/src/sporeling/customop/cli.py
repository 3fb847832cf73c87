"""``sporeling-op``: check, compile and benchmark Hybrid DSL kernels.

sporeling-op check FILE.py [--kernel NAME] [--target cpu|cuda|all]
sporeling-op compile FILE.py --input 256x256:float32 [--input ...] [--kernel NAME]
sporeling-op compile FILE.cc|FILE.cpp|FILE.cu
sporeling-op bench FILE.py --kernel NAME --input 256x256:float32 [...] [--targets ...]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from ._version import __version__

OK, DSL_ERROR, USAGE_ERROR = 0, 1, 2


def _load(path: str) -> dict[str, Any]:
    """Import a DSL file and return its kernels by name."""
    from ._dsl import HybridKernel

    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"sporeling-op: file {path!r} does not exist")
    spec = importlib.util.spec_from_file_location(f"_sporeling_op_{p.stem}", p)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(p.parent))
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.path.pop(0)
    return {k.name: k for k in vars(mod).values() if isinstance(k, HybridKernel)}


def _select(kernels: dict[str, Any], name: str | None) -> list[Any]:
    if name is None:
        return list(kernels.values())
    if name not in kernels:
        raise KeyError(f"sporeling-op: no kernel {name!r}; the file has {sorted(kernels)}")
    return [kernels[name]]


def _parse_input(spec: str) -> tuple[tuple[int, ...], str]:
    """``256x256:float32`` -> ((256, 256), "float32"); ``scalar:float32`` for 0-d."""
    shape_s, _, dtype = spec.partition(":")
    dtype = dtype or "float32"
    np.dtype(dtype)
    shape = () if shape_s in ("", "scalar") else tuple(int(d) for d in shape_s.split("x"))
    return shape, dtype


def _make_inputs(specs: list[str], seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for s in specs:
        shape, dtype = _parse_input(s)
        if np.dtype(dtype).kind == "f":
            out.append(rng.standard_normal(shape).astype(dtype))
        else:
            out.append(rng.integers(0, 8, shape).astype(dtype))
    return out


def cmd_check(args: argparse.Namespace) -> int:
    kernels = _load(args.file)
    if not kernels:
        print(f"{args.file}: no @kernel functions found", file=sys.stderr)
        return DSL_ERROR
    targets = ["cpu", "cuda"] if args.target == "all" else [args.target]
    for k in _select(kernels, args.kernel):
        info = k.info
        inplace = f", in-place: {[info.args[i] for i in info.inplace]}" if info.inplace else ""
        print(f"# kernel {k.name}({', '.join(info.args)}) -> {', '.join(info.outputs)}{inplace}")
        print(f"# valid Hybrid DSL ({info.filename}:{info.first_line})")
        if not args.quiet:
            for t in targets:
                print(f"\n# ---- generated {t} source ----")
                print(k.source(t))
    return OK


def cmd_compile(args: argparse.Namespace) -> int:
    from ._cache import cache_dir

    if Path(args.file).suffix in (".cc", ".cpp", ".cu"):
        from ._aot import compile_source

        print(compile_source(args.file))
        return OK
    kernels = _load(args.file)
    for k in _select(kernels, args.kernel):
        t0 = time.perf_counter()
        fn = k.compiled("cpu")
        if args.input:
            fn(*_make_inputs(args.input))
            what = f"compiled for {', '.join(args.input)}"
        else:
            what = "generated (Numba compiles per input signature: give --input to compile)"
        print(f"{k.name}: {what} in {time.perf_counter() - t0:.2f}s")
    print(f"cache: {cache_dir()}")
    return OK


def _time(fn: Any, repeat: int) -> float:
    fn()  # warm-up (compiles)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def cmd_bench(args: argparse.Namespace) -> int:
    kernels = _load(args.file)
    (k,) = _select(kernels, args.kernel)
    inputs = _make_inputs(args.input)
    targets = args.targets.split(",")
    if "cuda" in targets:
        try:
            from numba import cuda

            if not cuda.is_available():
                print("cuda: no GPU available, skipped", file=sys.stderr)
                targets.remove("cuda")
        except ImportError:
            targets.remove("cuda")
    rows = []
    base = None
    for t in targets:
        sec = _time(lambda t=t: k.run(*[a.copy() for a in inputs], target=t), args.repeat)
        base = base or sec
        rows.append((t, sec))
    print(f"{k.name} on {', '.join(args.input)} (median of {args.repeat})")
    for t, sec in rows:
        print(f"  {t:8s} {sec * 1e3:10.3f} ms   {rows[0][1] / sec:8.1f}x vs {rows[0][0]}")
    return OK


def build_parser() -> argparse.ArgumentParser:
    # the docstring's first paragraph without its reStructuredText markup
    summary = __doc__.split("\n\n")[0].replace("``", "")
    p = argparse.ArgumentParser(prog="sporeling-op", description=summary)
    p.add_argument("--version", action="version", version=f"sporeling-op {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("check", help="validate a DSL file and show the generated source")
    c.add_argument("file")
    c.add_argument("--kernel")
    c.add_argument("--target", default="all", choices=["cpu", "cuda", "all"])
    c.add_argument("--quiet", action="store_true", help="validate only")
    c.set_defaults(run=cmd_check)
    m = sub.add_parser("compile", help="compile kernels (or a .cc/.cpp/.cu file) into the cache")
    m.add_argument("file")
    m.add_argument("--kernel")
    m.add_argument("--input", action="append", default=[], help="SHAPE:DTYPE, e.g. 64x64:float32")
    m.set_defaults(run=cmd_compile)
    b = sub.add_parser("bench", help="time a kernel across its executions")
    b.add_argument("file")
    b.add_argument("--kernel")
    b.add_argument("--input", action="append", required=True, help="SHAPE:DTYPE per input")
    b.add_argument("--targets", default="pyfunc,cpu", help="comma-separated: pyfunc,cpu,cuda")
    b.add_argument("--repeat", type=int, default=5)
    b.set_defaults(run=cmd_bench)
    return p


def main(argv: list[str] | None = None) -> int:
    from ._errors import HybridDSLError

    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args))
    except HybridDSLError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return DSL_ERROR
    except (FileNotFoundError, KeyError, ValueError, TypeError) as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"error: {msg}", file=sys.stderr)
        return USAGE_ERROR
