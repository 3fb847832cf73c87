"""Numerical gradient checks: analytic vjps against central differences in float64.

``check_grad(fn, inputs)`` draws a random cotangent ``u`` for fn's output(s) and compares
``vjp(fn)(u)`` with finite differences of ``<u, fn(x)>``: element by element for small
inputs, along random directions for large ones. ``check_grad_grad`` applies the same check
to the gradient function itself (second order).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np


def _outputs(value: Any) -> list[Any]:
    from sporeling.core import Tensor

    if isinstance(value, Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _outputs(v)]
    return []


def _float_outputs(value: Any) -> list[Any]:
    return [t for t in _outputs(value) if t.dtype.category == 2]


def _inner(fn: Callable[..., Any], tensors: list[Any], cotangents: list[np.ndarray]) -> float:
    from sporeling.core import no_grad

    with no_grad():
        outs = _float_outputs(fn(*tensors))
    return float(sum(np.sum(o.asnumpy().astype(np.float64) * u) for o, u in zip(outs, cotangents)))


def numerical_vjp(
    fn: Callable[..., Any],
    arrays: Sequence[np.ndarray],
    cotangents: list[np.ndarray],
    wrt: Sequence[int],
    eps: float = 1e-6,
    device: str = "CPU",
    directions: list[list[np.ndarray]] | None = None,
) -> list[np.ndarray] | list[float]:
    """Finite-difference vjp: full gradients, or directional derivatives if ``directions``."""
    from sporeling.core import Tensor

    # C order: the finite differences below write through ``reshape(-1)`` views, which are
    # copies for a Fortran-ordered array (a transposed input), and read back as zeros.
    base = [np.array(a, copy=True, order="C") for a in arrays]

    def evaluate(arrs: list[np.ndarray]) -> float:
        return _inner(fn, [Tensor(a, device=device) for a in arrs], cotangents)

    if directions is not None:
        results = []
        for dirs in directions:
            plus = list(base)
            minus = list(base)
            for k, i in enumerate(wrt):
                plus[i] = base[i] + eps * dirs[k]
                minus[i] = base[i] - eps * dirs[k]
            results.append((evaluate(plus) - evaluate(minus)) / (2 * eps))
        return results
    grads = []
    for i in wrt:
        g = np.zeros(base[i].shape, dtype=np.float64)
        flat = g.reshape(-1)
        for j in range(base[i].size):
            arrs = list(base)
            xp = base[i].copy().reshape(-1)
            xp[j] += eps
            arrs[i] = xp.reshape(base[i].shape)
            fp = evaluate(arrs)
            xm = base[i].copy().reshape(-1)
            xm[j] -= eps
            arrs[i] = xm.reshape(base[i].shape)
            fm = evaluate(arrs)
            flat[j] = (fp - fm) / (2 * eps)
        grads.append(g)
    return grads


def check_grad(
    fn: Callable[..., Any],
    arrays: Sequence[np.ndarray],
    wrt: Sequence[int] | None = None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-4,
    device: str = "CPU",
    seed: int = 0,
    max_elementwise: int = 60,
) -> None:
    """Assert that fn's vjp matches central differences (inputs are used in float64).

    ``arrays`` are NumPy inputs (floats are converted to float64; integer arrays are passed
    unchanged and never differentiated). ``wrt`` selects the differentiated positions
    (default: every floating input).
    """
    from sporeling.core import Tensor, vjp

    arrays = [
        np.asarray(a, np.float64) if np.asarray(a).dtype.kind == "f" else np.asarray(a)
        for a in arrays
    ]
    if wrt is None:
        wrt = [i for i, a in enumerate(arrays) if a.dtype.kind == "f"]
    rng = np.random.default_rng(seed)
    tensors = [Tensor(a, device=device) for a in arrays]
    wrt = list(wrt)

    def partial(*xs: Any) -> Any:
        full = list(tensors)
        for k, i in enumerate(wrt):
            full[i] = xs[k]
        return fn(*full)

    out, pullback = vjp(partial, *[tensors[i] for i in wrt])
    outs = _float_outputs(out)
    assert outs, "check_grad: the function has no floating outputs"
    us = [rng.standard_normal(o.shape) for o in outs]
    # cotangents for non-float outputs are irrelevant: give zeros of their dtype
    all_outs = _outputs(out)
    it = iter(us)
    cts = [
        Tensor(next(it), device=device)
        if o.dtype.category == 2
        else Tensor(np.zeros(o.shape, o.asnumpy().dtype), device=device)
        for o in all_outs
    ]
    analytic = [g.asnumpy().astype(np.float64) for g in pullback(*cts)]
    total = sum(arrays[i].size for i in wrt)
    if total <= max_elementwise:
        numeric = numerical_vjp(fn, arrays, us, wrt, eps, device)
        for k, i in enumerate(wrt):
            np.testing.assert_allclose(
                analytic[k],
                numeric[k],
                rtol=rtol,
                atol=atol,
                err_msg=f"gradient of input {i} does not match finite differences",
            )
    else:
        dirs = [[rng.standard_normal(arrays[i].shape) for i in wrt] for _ in range(4)]
        numeric = numerical_vjp(fn, arrays, us, wrt, eps, device, directions=dirs)
        for d, num in zip(dirs, numeric):
            ana = float(sum(np.sum(a * v) for a, v in zip(analytic, d)))
            np.testing.assert_allclose(
                ana,
                num,
                rtol=rtol,
                atol=atol * np.sqrt(total),
                err_msg="directional derivative does not match",
            )


def check_grad_grad(
    fn: Callable[..., Any],
    arrays: Sequence[np.ndarray],
    wrt: Sequence[int] | None = None,
    **kwargs: Any,
) -> None:
    """Second order: check the gradient of ``<u, fn(x)>`` (for a fixed random ``u``)."""
    from sporeling.core import Tensor, ops, vjp

    device = kwargs.get("device", "CPU")
    arrays = [
        np.asarray(a, np.float64) if np.asarray(a).dtype.kind == "f" else np.asarray(a)
        for a in arrays
    ]
    if wrt is None:
        wrt = [i for i, a in enumerate(arrays) if a.dtype.kind == "f"]
    wrt = list(wrt)
    probe = _float_outputs(fn(*[Tensor(a, device=device) for a in arrays]))
    rng = np.random.default_rng(kwargs.get("seed", 0) + 1)
    us = [Tensor(rng.standard_normal(o.shape), device=device) for o in probe]

    def gradient_fn(*xs: Any) -> Any:
        def scalar(*ws: Any) -> Any:
            full = list(xs)
            for k, i in enumerate(wrt):
                full[i] = ws[k]
            outs = _float_outputs(fn(*full))
            return sum(
                (ops.reduce_sum(o * u) for o, u in zip(outs, us)),
                Tensor(0.0, dtype="float64", device=device),
            )

        _, pb = vjp(scalar, *[xs[i] for i in wrt])
        return tuple(pb(Tensor(1.0, dtype="float64", device=device)))

    check_grad(gradient_fn, arrays, wrt, **kwargs)
