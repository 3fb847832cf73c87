"""Same-process A/B of 2-d float32 products: the packed AVX-512 micro-kernel
(``kernels.cpu.packed_gemm``) against OpenBLAS (``np.dot``), one thread each, on the GPT
decoder step's product shapes (``bench_graph.py``: 16 x 128 tokens, d 256, ff 1024) and the
MLP 784-512-256-10's (batch 128), in the layouts the dense layers use: ``nt`` the forward
``x @ W.T``, ``nn`` the input gradient ``dy @ W``, ``tn`` the weight gradient ``dy.T @ x``.

    taskset -c 1 nice -n 19 env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE \\
        python benchmarks/gemm/ab_packed_gemm.py [--kc 256] [--mc 64] [--reps 7]

Each side's time is the calling thread's CPU time, the minimum over ``--reps`` interleaved
repeats (each ~2 GFLOP of calls); the last column is OpenBLAS's time over the kernel's.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

SHAPES = [  # (name, M, N, K, layout)
    ("gpt qkv fwd", 2048, 768, 256, "nt"),
    ("gpt proj fwd", 2048, 256, 256, "nt"),
    ("gpt fc1 fwd", 2048, 1024, 256, "nt"),
    ("gpt fc2 fwd", 2048, 256, 1024, "nt"),
    ("gpt qkv dX", 2048, 256, 768, "nn"),
    ("gpt fc1 dX", 2048, 256, 1024, "nn"),
    ("gpt fc2 dX", 2048, 1024, 256, "nn"),
    ("gpt proj dX", 2048, 256, 256, "nn"),
    ("gpt qkv dW", 768, 256, 2048, "tn"),
    ("gpt fc1 dW", 1024, 256, 2048, "tn"),
    ("gpt fc2 dW", 256, 1024, 2048, "tn"),
    ("gpt proj dW", 256, 256, 2048, "tn"),
    ("mlp l1 fwd", 128, 512, 784, "nt"),
    ("mlp l2 fwd", 128, 256, 512, "nt"),
    ("mlp l1 dW", 512, 784, 128, "tn"),
    ("mlp l2 dX", 128, 512, 256, "nn"),
    ("mlp l2 dW", 256, 512, 128, "tn"),
]


def _operands(rng: np.random.Generator, m: int, n: int, k: int, form: str) -> tuple:
    f32 = np.float32
    if form == "nt":
        return rng.standard_normal((m, k), dtype=f32), rng.standard_normal((n, k), dtype=f32).T
    if form == "tn":
        return rng.standard_normal((k, m), dtype=f32).T, rng.standard_normal((k, n), dtype=f32)
    return rng.standard_normal((m, k), dtype=f32), rng.standard_normal((k, n), dtype=f32)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kc", type=int, default=None, help="K chunk (default: the module's)")
    ap.add_argument("--mc", type=int, default=None, help="rows per A block")
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args()

    import numba
    from threadpoolctl import threadpool_limits

    from sporeling.core.kernels.cpu import microgemm, packed_gemm

    if not microgemm.available():
        raise SystemExit("no AVX-512 on this CPU: the micro-kernel does not run here")
    threadpool_limits(1)
    numba.set_num_threads(1)
    packed_gemm.KC = args.kc or packed_gemm.KC
    packed_gemm.MC = args.mc or packed_gemm.MC
    print(f"KC {packed_gemm.KC}, MC {packed_gemm.MC}, min of {args.reps}, 1 thread, CPU time")
    rng = np.random.default_rng(0)
    for name, m, n, k, form in SHAPES:
        a, b = _operands(rng, m, n, k, form)
        ref, out = np.empty((m, n), np.float32), np.empty((m, n), np.float32)
        np.dot(a, b, out=ref)
        packed_gemm.gemm(a, b, out)
        err = float(np.abs(out - ref).max() / np.abs(ref).max())
        inner = max(1, int(2e9 / (2 * m * n * k)))
        best = {"openblas": 1e9, "micro": 1e9}
        for _ in range(args.reps):
            for side, fn in (("openblas", np.dot), ("micro", packed_gemm.gemm)):
                t0 = time.thread_time()
                for _ in range(inner):
                    fn(a, b, out=out) if side == "openblas" else fn(a, b, out)
                best[side] = min(best[side], (time.thread_time() - t0) / inner)
        gf = 2 * m * n * k / 1e9
        t_o, t_m = best["openblas"], best["micro"]
        print(
            f"{name:13s} {m:5d}x{n:5d}x{k:5d} {form}  OpenBLAS {t_o * 1e3:7.3f} ms "
            f"{gf / t_o:6.1f} GF  micro {t_m * 1e3:7.3f} ms {gf / t_m:6.1f} GF  "
            f"ratio {t_o / t_m:5.2f}  rel.err {err:.1e}",
            flush=True,
        )


if __name__ == "__main__":
    main()
