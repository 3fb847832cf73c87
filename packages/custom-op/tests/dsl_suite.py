"""The DSL kernel suite: each kernel with an input maker and a NumPy reference.

Run as a script (``python dsl_suite.py cuda``) it executes every kernel with the given
target and prints a JSON report comparing it to the interpreted (pyfunc) results; the
CUDA-simulator test runs it in a subprocess with ``NUMBA_ENABLE_CUDASIM=1``.
"""
# ruff: noqa: F821 - Hybrid DSL intrinsics (output_tensor, parallel, ...) are injected

from __future__ import annotations

import json
import sys

import numpy as np

from sporeling.customop import kernel


@kernel
def elementwise(a, b):
    c = output_tensor(a.shape, a.dtype)
    for i in parallel(a.shape[0]):
        for j in vectorize(a.shape[1]):
            c[i, j] = a[i, j] * b[i, j] + 2.0 * a[i, j] - b[i, j] / 4.0
    return c


@kernel
def broadcast(a, bias):
    c = output_tensor(a.shape, a.dtype)
    for i in parallel(a.shape[0]):
        for j in parallel(a.shape[1]):
            c[i, j] = a[i, j] + bias[j]
    return c


@kernel
def row_sum_sq(x):
    s = output_tensor((x.shape[0],), x.dtype)
    for i in parallel(x.shape[0]):
        s[i] = 0.0
        for j in reduce(x.shape[1]):
            s[i] += x[i, j] * x[i, j]
    return s


@kernel
def matmul(a, b):
    c = output_tensor((a.shape[0], b.shape[1]), a.dtype)
    for i in parallel(a.shape[0]):
        for j in parallel(b.shape[1]):
            acc = 0.0
            for k in reduce(a.shape[1]):
                acc = acc + a[i, k] * b[k, j]
            c[i, j] = acc
    return c


@kernel
def stencil(x):
    y = output_tensor(x.shape, x.dtype)
    for i in parallel(x.shape[0]):
        for j in parallel(x.shape[1]):
            if i > 0 and i < x.shape[0] - 1 and j > 0 and j < x.shape[1] - 1:
                y[i, j] = 0.5 * x[i, j] + 0.125 * (
                    x[i - 1, j] + x[i + 1, j] + x[i, j - 1] + x[i, j + 1]
                )
            else:
                y[i, j] = x[i, j]
    return y


@kernel
def inplace_scale(x):
    for i in parallel(x.shape[0]):
        x[i] = x[i] * 3.0 - 1.0
    return x


@kernel
def two_outputs(a):
    lo = output_tensor(a.shape, a.dtype)
    hi = output_tensor(a.shape, a.dtype)
    n = a.shape[0]
    for i in parallel(n):
        lo[i] = min(a[i], 0.5)
        hi[i] = max(a[i], 0.5)
    return lo, hi


@kernel
def intrinsics(x):
    y = output_tensor(x.shape, x.dtype)
    for i in parallel(x.shape[0]):
        y[i] = sqrt(abs(x[i])) + exp(x[i]) * tanh(x[i]) - log(1.0 + x[i] * x[i])
    return y


@kernel
def serial_cumsum(x):
    y = output_tensor(x.shape, x.dtype)
    acc = 0.0
    for i in serial(x.shape[0]):
        acc = acc + x[i]
        y[i] = acc
    return y


def _rng() -> np.random.Generator:
    return np.random.default_rng(0)


def _f32(*shape: int) -> np.ndarray:
    return _rng().standard_normal(shape).astype(np.float32)


# name -> (kernel, inputs, reference, exact)
SUITE = {
    "elementwise": (elementwise, lambda: [_f32(5, 7), _f32(5, 7) + 3],
                    lambda a, b: a * b + 2 * a - b / 4, True),
    "broadcast": (broadcast, lambda: [_f32(4, 6), _f32(6)], lambda a, b: a + b, True),
    "row_sum_sq": (row_sum_sq, lambda: [_f32(6, 9)], lambda x: (x * x).sum(1), True),
    "matmul": (matmul, lambda: [_f32(5, 8), _f32(8, 3)], lambda a, b: a @ b, True),
    "stencil": (stencil, lambda: [_f32(6, 7)], None, True),
    "inplace": (inplace_scale, lambda: [_f32(9)], lambda x: x * 3 - 1, True),
    "two_outputs": (two_outputs, lambda: [_f32(8)],
                    lambda a: (np.minimum(a, 0.5), np.maximum(a, 0.5)), True),
    "intrinsics": (intrinsics, lambda: [_f32(10)],
                   lambda x: np.sqrt(np.abs(x)) + np.exp(x) * np.tanh(x) - np.log(1 + x * x),
                   False),
    "serial_cumsum": (serial_cumsum, lambda: [_f32(11)], lambda x: np.cumsum(x), True),
}  # fmt: skip


def as_tuple(out: object) -> tuple[np.ndarray, ...]:
    return tuple(out) if isinstance(out, tuple) else (out,)  # type: ignore[arg-type]


def compare(target: str) -> dict[str, list[str]]:
    """Run every kernel with ``target`` and compare with the interpreted run."""
    report: dict[str, list[str]] = {"passed": [], "failed": []}
    for name, (k, make, _ref, exact) in SUITE.items():
        try:
            want = as_tuple(k.run(*make(), target="pyfunc"))
            got = as_tuple(k.run(*make(), target=target))
            for w, g in zip(want, got, strict=True):
                assert w.dtype == g.dtype, (w.dtype, g.dtype)
                if exact:
                    np.testing.assert_array_equal(g, w)
                else:
                    np.testing.assert_allclose(g, w, rtol=2e-6, atol=1e-6)
            report["passed"].append(name)
        except Exception as exc:  # noqa: BLE001 - reported to the parent test
            report["failed"].append(f"{name}: {type(exc).__name__}: {exc}")
    return report


if __name__ == "__main__":
    print(json.dumps(compare(sys.argv[1] if len(sys.argv) > 1 else "cpu")))
