"""Same-process A/B of float32 GEMM libraries on the benchmarks' product shapes: NumPy's
OpenBLAS (``np.matmul``), PyTorch's BLAS (``torch.mm``), the core's packed AVX-512
micro-kernel (``kernels.cpu.packed_gemm``) and, when installed, two optional wheels called
through CBLAS by ``ctypes``: a newer OpenBLAS (``scipy-openblas32``) and Intel's MKL
(``mkl``). Which library is fastest depends on the CPU: on an AMD Zen 5 (AVX-512 on
full-width units) MKL runs its AVX2 code and reaches half of OpenBLAS's SkylakeX kernels,
on an Intel Xeon the earlier sessions measured MKL (PyTorch) 10-25% ahead of OpenBLAS.

    taskset -c 1 nice -n 19 env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE \\
        python benchmarks/gemm/ab_blas_libraries.py [--threads 1] [--reps 9] \\
        [--libs numpy,torch,packed,openblas32,mkl] [--mkl-prefix VENV]

One thread: each side's time is the calling thread's CPU time; more threads: wall clock
(then only meaningful on a quiet machine). Minimum and median over ``--reps`` interleaved
repeats of ~0.3 GFLOP each; every library's result is checked against a float64 product
first. Columns: GFLOPS min / median, then each library's speed relative to NumPy's.
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

SHAPES = [  # (name, M, N, K, layout): nt = x @ W.T, nn = dy @ W, tn = dy.T @ x
    ("mlp l1 fwd", 128, 512, 784, "nt"),
    ("mlp l2 fwd", 128, 256, 512, "nt"),
    ("mlp l1 dW", 512, 784, 128, "tn"),
    ("mlp l2 dX", 128, 512, 256, "nn"),
    ("mlp l2 dW", 256, 512, 128, "tn"),
    ("matmul 512", 512, 512, 512, "nn"),
    ("matmul 512 tn", 512, 512, 512, "tn"),
    ("matmul 512 nt", 512, 512, 512, "nt"),
    ("matmul 1024", 1024, 1024, 1024, "nn"),
    ("gpt qkv fwd", 2048, 768, 256, "nt"),
    ("gpt fc2 fwd", 2048, 256, 1024, "nt"),
    ("gpt fc1 dX", 2048, 256, 1024, "nn"),
    ("gpt qkv dW", 768, 256, 2048, "tn"),
    ("gpt fc2 dW", 256, 1024, 2048, "tn"),
]

Product = Callable[[np.ndarray, np.ndarray, np.ndarray], object]
_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112


def _cblas_sgemm(fn: object, wide: bool) -> Product:
    """A product through a CBLAS ``sgemm`` (32- or 64-bit integers)."""
    i = ctypes.c_int64 if wide else ctypes.c_int32
    e, p, f = ctypes.c_int, ctypes.c_void_p, ctypes.c_float
    fn.argtypes = [e, e, e, i, i, i, f, p, i, p, i, f, p, i]
    fn.restype = None

    def operand(x: np.ndarray) -> tuple[int, int]:
        if x.strides[1] == 4:
            return _NO_TRANS, x.strides[0] // 4
        return _TRANS, x.strides[1] // 4

    def call(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
        (ta, lda), (tb, ldb) = operand(a), operand(b)
        m, k = a.shape
        n = b.shape[1]
        fn(_ROW_MAJOR, ta, tb, m, n, k, 1.0, a.ctypes.data, lda, b.ctypes.data, ldb, 0.0,
           c.ctypes.data, n)  # fmt: skip

    return call


def _openblas32(threads: int) -> tuple[Product, str] | None:
    try:
        import scipy_openblas32
    except ImportError:
        return None
    found = glob.glob(str(Path(scipy_openblas32.__file__).parent / "lib" / "*.so*"))
    dll = ctypes.CDLL(found[0])
    dll.scipy_openblas_set_num_threads(threads)
    dll.scipy_openblas_get_config.restype = ctypes.c_char_p
    return _cblas_sgemm(dll.scipy_cblas_sgemm, False), dll.scipy_openblas_get_config().decode()


def _mkl(threads: int, prefix: str) -> tuple[Product, str] | None:
    names = sorted(glob.glob(os.path.join(prefix, "lib", "libmkl_rt.so*")))
    if not names:
        return None
    dll = ctypes.CDLL(names[0])
    dll.MKL_Set_Threading_Layer(1 if threads == 1 else 0)  # SEQUENTIAL, or Intel OpenMP
    dll.MKL_Set_Num_Threads(threads)
    buf = ctypes.create_string_buffer(256)
    dll.MKL_Get_Version_String(buf, 256)
    return _cblas_sgemm(dll.cblas_sgemm, False), buf.value.decode()


def libraries(wanted: list[str], threads: int, mkl_prefix: str) -> dict[str, Product]:
    from threadpoolctl import threadpool_info, threadpool_limits

    threadpool_limits(threads, user_api="blas")
    libs: dict[str, Product] = {}
    for name in wanted:
        if name == "numpy":
            libs[name] = lambda a, b, c: np.matmul(a, b, out=c)
            for info in threadpool_info():
                if info.get("user_api") == "blas":
                    print(f"numpy: {info['internal_api']} {info['version']}, "
                          f"{info.get('architecture')} kernels")  # fmt: skip
        elif name == "torch":
            try:
                import torch
            except ImportError:
                print("torch: not installed, skipped")
                continue
            torch.set_num_threads(threads)
            show = torch.__config__.show()
            blas = show.split("BLAS_INFO=", 1)[1].split(",", 1)[0] if "BLAS_INFO=" in show else "?"
            print(f"torch: {torch.__version__}, BLAS {blas}")

            def mm(a: np.ndarray, b: np.ndarray, c: np.ndarray, t=torch) -> None:
                t.mm(t.from_numpy(a), t.from_numpy(b), out=t.from_numpy(c))

            libs[name] = mm
        elif name == "packed":
            from sporeling.core.kernels.cpu import microgemm, packed_gemm

            if not microgemm.available():
                print("packed: no AVX-512 on this CPU, skipped")
                continue
            if threads != 1:
                print("packed: one thread only, skipped")
                continue
            libs[name] = lambda a, b, c: packed_gemm.gemm(a, b, c)
        elif name in ("openblas32", "mkl"):
            got = _openblas32(threads) if name == "openblas32" else _mkl(threads, mkl_prefix)
            if got is None:
                print(f"{name}: not installed, skipped")
                continue
            libs[name], about = got
            print(f"{name}: {about}")
        else:
            raise SystemExit(f"--libs: unknown library {name!r}")
    return libs


def operands(rng: np.random.Generator, m: int, n: int, k: int, form: str) -> tuple:
    f32 = np.float32
    if form == "nt":
        return rng.standard_normal((m, k), dtype=f32), rng.standard_normal((n, k), dtype=f32).T
    if form == "tn":
        return rng.standard_normal((k, m), dtype=f32).T, rng.standard_normal((k, n), dtype=f32)
    return rng.standard_normal((m, k), dtype=f32), rng.standard_normal((k, n), dtype=f32)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--libs", default="numpy,torch,packed,openblas32,mkl")
    ap.add_argument(
        "--mkl-prefix", default=sys.prefix, help="the environment whose lib/ has libmkl_rt"
    )
    args = ap.parse_args()
    if args.threads == 1:
        import numba

        numba.set_num_threads(1)
    libs = libraries(args.libs.split(","), args.threads, args.mkl_prefix)
    clock = time.thread_time if args.threads == 1 else time.perf_counter
    names = list(libs)
    print(f"{args.threads} thread(s), {'CPU' if args.threads == 1 else 'wall'} time, GFLOPS "
          f"min / median of {args.reps}, load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    print(f"{'shape':14s}" + "".join(f"{x:>14s}" for x in names) + "   speed vs numpy")
    rng = np.random.default_rng(0)
    for label, m, n, k, form in SHAPES:
        a, b = operands(rng, m, n, k, form)
        ref = a.astype(np.float64) @ b.astype(np.float64)
        c = np.empty((m, n), np.float32)
        for x in names:
            c[...] = np.nan
            libs[x](a, b, c)
            err = float(np.abs(c - ref).max() / np.abs(ref).max())
            if not err < 1e-5:
                raise SystemExit(f"{x} on {label}: relative error {err:.1e}")
        inner = max(1, int(0.3e9 / (2 * m * n * k)))
        times: dict[str, list[float]] = {x: [] for x in names}
        for _ in range(args.reps):
            for x in names:
                f = libs[x]
                t0 = clock()
                for _ in range(inner):
                    f(a, b, c)
                times[x].append((clock() - t0) / inner)
        gf = 2 * m * n * k / 1e9
        best = {x: min(v) for x, v in times.items()}
        med = {x: sorted(v)[len(v) // 2] for x, v in times.items()}
        cols = "".join(f"{gf / best[x]:7.0f} /{gf / med[x]:4.0f} " for x in names)
        rel = " ".join(f"{x} {best[names[0]] / best[x]:.2f}" for x in names[1:])
        print(f"{label:14s}{cols}  {rel}", flush=True)


if __name__ == "__main__":
    main()
