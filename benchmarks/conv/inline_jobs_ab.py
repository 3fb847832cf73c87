"""Steady-state check of the inlined conv jobs, in one process at 2 threads: each job cfunc
of :mod:`conv_jobs` (its kernel inlined, ``inline="always"``) against a cfunc built here the
way they were before session 7 (cfunc -> njit helper -> the kernel compiled on its own and
linked; im2col/col2im by address in both since session 9),
on the same data (LeNet-5's convolutions, batch 64); wall seconds per call, the two
alternating, min and median of R calls. Needs a 64-bit-integer CBLAS (OpenBLAS INTERFACE64,
NumPy's wheels).

    python benchmarks/conv/inline_jobs_ab.py [R]
"""

import ctypes
import sys
import time
import types as pytypes

import numba
import numpy as np

from sporeling.core.kernels.cpu import _jobs
from sporeling.core.kernels.cpu import conv_backward as cb
from sporeling.core.kernels.cpu import conv_columns as cc
from sporeling.core.kernels.cpu import conv_forward as cf
from sporeling.core.kernels.cpu import conv_images as ci
from sporeling.core.kernels.cpu import conv_jobs as cj
from sporeling.core.kernels.cpu.blas import single_threaded_blas
from sporeling.core.kernels.cpu.gemm_bias import _cblas

flags = {k: v for k, v in cc.JIT.items() if k != "cache"}
fake = pytypes.ModuleType("fake_ci")
for name in ("_forward_kernel", "_forward_kernel_mk", "_weight_grad_kernel", "_data_grad_kernel"):
    kernel = getattr(cf if name.startswith("_forward") else cb, name)
    setattr(fake, name, numba.jit(**flags)(kernel.py_func))


def rebind(fn, **g):
    return pytypes.FunctionType(fn.__code__, {**fn.__globals__, **g}, fn.__name__)


old = {}
for helper, job in (
    ("_forward", "forward_64"),
    ("_forward_mk", "forward_mk_64"),
    ("_weight_grad", "weight_grad_64"),
    ("_data_grad", "data_grad_64"),
):
    h = numba.njit(rebind(getattr(cj, helper).py_func, cf=fake, cb=fake))
    old[job] = numba.cfunc(_jobs._JOB_SIG)(rebind(getattr(cj, job), **{helper: h})).address
new = {job: _jobs.job(getattr(cj, job)) for job in old}

rng = np.random.default_rng(0)
gemm = _cblas("s")
assert ctypes.sizeof(gemm.argtypes[3]) == 8
ga = int(ctypes.cast(gemm, ctypes.c_void_p).value)
i2c, c2i = cc.address("im2col", np.float32), cc.address("col2im", np.float32)
R = int(sys.argv[1]) if len(sys.argv) > 1 else 200
for n, c, h, w, co, k in ((64, 1, 32, 32, 6, 5), (64, 6, 14, 14, 16, 5)):
    x = rng.standard_normal((n, c, h, w), dtype=np.float32)
    wt = rng.standard_normal((co, c, k, k), dtype=np.float32)
    oh, ow = h - k + 1, w - k + 1
    rows, length = c * k * k, oh * ow
    out = np.empty((n, co, oh, ow), np.float32)
    cols = np.empty((2, rows, length), np.float32)
    g2 = ci._geometry((1, 1, 0, 0, 1, 1), (k, k))
    w2 = wt.reshape(co, -1)
    wp = ci._packed(w2, 1, transposed=False)
    gy = rng.standard_normal((n, co, oh, ow), dtype=np.float32)
    dwt = np.zeros((2, rows, co), np.float32)
    dx = np.empty_like(x)
    packs = {
        "forward_64": _jobs.pack(ga, i2c, x, w2, out, cols, g2, 1, 1.0, 0.0),
        "forward_mk_64": _jobs.pack(ga, i2c, x, wp, w2, out, cols, g2, 1, 1.0, 0.0),
        "weight_grad_64": _jobs.pack(ga, i2c, x, gy, dwt, cols, g2, 1, 1.0),
        "data_grad_64": _jobs.pack(ga, c2i, gy, w2, dx, cols, g2, 1, 1.0, 0.0),
    }
    for job, packed in packs.items():
        res = {"old": [], "new": []}
        for addr in (old[job], new[job]):  # warm-up
            with single_threaded_blas():
                _jobs.run(addr, packed, n, 2, 16)
        for _ in range(R):
            for side, addr in (("old", old[job]), ("new", new[job])):
                t0 = time.perf_counter()
                with single_threaded_blas():
                    _jobs.run(addr, packed, n, 2, 16)
                res[side].append(time.perf_counter() - t0)
        o, nw = sorted(res["old"]), sorted(res["new"])
        lo, mo, ln, mn = o[0], o[R // 2], nw[0], nw[R // 2]
        print(
            f"N{n} {c}->{co} {h}x{w} {job:15s} old min {lo * 1e3:.3f} med {mo * 1e3:.3f} |"
            f" new min {ln * 1e3:.3f} med {mn * 1e3:.3f} | new/old min {ln / lo:.3f}"
            f" med {mn / mo:.3f}",
            flush=True,
        )
