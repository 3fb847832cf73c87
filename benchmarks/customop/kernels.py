"""DSL kernels of the benchmark, with hand-written Numba and NumPy equivalents."""
# ruff: noqa: F821 - Hybrid DSL intrinsics (output_tensor, parallel, ...) are injected

import numba
import numpy as np
from numba import prange

from sporeling.customop import kernel


@kernel
def elementwise(a, b):
    c = output_tensor(a.shape, a.dtype)
    for i in parallel(a.shape[0]):
        for j in vectorize(a.shape[1]):
            c[i, j] = a[i, j] * b[i, j] + 2.0 * a[i, j] - b[i, j] / 4.0
    return c


@kernel
def row_sum_sq(x):
    s = output_tensor((x.shape[0],), x.dtype)
    for i in parallel(x.shape[0]):
        acc = 0.0
        for j in reduce(x.shape[1]):
            acc = acc + x[i, j] * x[i, j]
        s[i] = acc
    return s


@kernel
def matmul(a, b):
    c = output_tensor((a.shape[0], b.shape[1]), a.dtype)
    for i in parallel(a.shape[0]):
        for j in range(b.shape[1]):
            c[i, j] = 0.0
        for k in reduce(a.shape[1]):
            for j in vectorize(b.shape[1]):
                c[i, j] = c[i, j] + a[i, k] * b[k, j]
    return c


@kernel
def stencil(x):
    y = output_tensor(x.shape, x.dtype)
    for i in parallel(x.shape[0]):
        for j in vectorize(x.shape[1]):
            if i > 0 and i < x.shape[0] - 1 and j > 0 and j < x.shape[1] - 1:
                y[i, j] = 0.5 * x[i, j] + 0.125 * (
                    x[i - 1, j] + x[i + 1, j] + x[i, j - 1] + x[i, j + 1]
                )
            else:
                y[i, j] = x[i, j]
    return y


F = np.float32


@numba.njit(parallel=True, cache=True)
def elementwise_numba(a, b):
    c = np.empty(a.shape, a.dtype)
    for i in prange(a.shape[0]):
        for j in range(a.shape[1]):
            c[i, j] = a[i, j] * b[i, j] + F(2.0) * a[i, j] - b[i, j] / F(4.0)
    return c


@numba.njit(parallel=True, cache=True)
def row_sum_sq_numba(x):
    s = np.empty(x.shape[0], x.dtype)
    for i in prange(x.shape[0]):
        acc = F(0.0)
        for j in range(x.shape[1]):
            acc += x[i, j] * x[i, j]
        s[i] = acc
    return s


@numba.njit(parallel=True, cache=True)
def matmul_numba(a, b):
    c = np.empty((a.shape[0], b.shape[1]), a.dtype)
    for i in prange(a.shape[0]):
        for j in range(b.shape[1]):
            c[i, j] = 0
        for k in range(a.shape[1]):
            for j in range(b.shape[1]):
                c[i, j] += a[i, k] * b[k, j]
    return c


@numba.njit(parallel=True, cache=True)
def stencil_numba(x):
    y = np.empty_like(x)
    n, m = x.shape
    for i in prange(n):
        for j in range(m):
            if 0 < i < n - 1 and 0 < j < m - 1:
                y[i, j] = F(0.5) * x[i, j] + F(0.125) * (
                    x[i - 1, j] + x[i + 1, j] + x[i, j - 1] + x[i, j + 1]
                )
            else:
                y[i, j] = x[i, j]
    return y


def stencil_numpy(x):
    y = x.copy()
    y[1:-1, 1:-1] = F(0.5) * x[1:-1, 1:-1] + F(0.125) * (
        x[:-2, 1:-1] + x[2:, 1:-1] + x[1:-1, :-2] + x[1:-1, 2:]
    )
    return y


def _f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def cases(quick: bool):
    rng = np.random.default_rng(0)
    s = 1 if quick else 2
    return {
        "elementwise": (elementwise, elementwise_numba,
                        lambda a, b: a * b + F(2) * a - b / F(4),
                        [_f32(rng, 1024 * s, 1024 * s), _f32(rng, 1024 * s, 1024 * s)]),
        "row_sum_sq": (row_sum_sq, row_sum_sq_numba, lambda x: np.einsum("ij,ij->i", x, x),
                       [_f32(rng, 2048 * s, 512 * s)]),
        "matmul": (matmul, matmul_numba, lambda a, b: a @ b,
                   [_f32(rng, 192 * s, 192 * s), _f32(rng, 192 * s, 192 * s)]),
        "stencil": (stencil, stencil_numba, stencil_numpy, [_f32(rng, 1024 * s, 1024 * s)]),
    }  # fmt: skip
