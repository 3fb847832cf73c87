"""``ops.jet`` and ``ops.derivative`` (MindSpore 2.x): higher-order derivatives of a function
along a path through its inputs.

``jet(fn, primals, series)``: the inputs move along ``x(t) = x0 + sum_k series[k-1] t^k / k!``
(``series`` holds the path's derivatives at ``t = 0``, one per order, stacked on a leading
axis); the result is ``(fn(x0), out_series)`` with ``out_series[k-1] = d^k/dt^k fn(x(t))``
at ``t = 0``, the same convention, so ``series = [v, 0, 0, ...]`` gives the directional
derivatives of every order. ``derivative(fn, primals, order)`` is ``jet`` with ``v = 1``
and returns only the ``order``-th one (elementwise functions: their ``order``-th derivative).

How: not Taylor-mode propagation rule by rule (MindSpore's), but forward mode nested
``order`` times on the scalar ``t``: each level's ``jvp`` carries every lower order's
derivative along as outputs, so one nest of depth ``order`` gives them all. The values
are exact (no finite differences); the cost grows quickly with the order (each level
differentiates the level below), fine for the small orders these APIs are used with.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..autograd.functional import jvp
from ..tensor import Tensor

__all__ = ["jet", "derivative"]


def _as_tuple(func: str, name: str, value: Any) -> tuple[Tensor, ...]:
    items = (value,) if isinstance(value, Tensor) else value
    if not isinstance(items, (tuple, list)) or not items:
        raise TypeError(
            f"{func}: argument '{name}' expected a Tensor or a non-empty tuple of Tensors, "
            f"got {type(value).__name__}"
        )
    for item in items:
        if not isinstance(item, Tensor):
            raise TypeError(
                f"{func}: argument '{name}' expected Tensors, got an element of type "
                f"{type(item).__name__}"
            )
        if item.dtype.category != 2:
            raise TypeError(f"{func}: argument '{name}' expected float Tensors, got {item.dtype}")
    return tuple(items)


def jet(fn: Callable[..., Any], primals: Any, series: Any) -> tuple[Tensor, Tensor]:
    """``(fn(primals), out_series)``: derivatives of every order along ``series`` (module)."""
    xs = _as_tuple("jet", "primals", primals)
    ss = _as_tuple("jet", "series", series)
    if len(ss) != len(xs):
        raise ValueError(
            f"jet: argument 'series' expected {len(xs)} Tensor(s), one per primal, got {len(ss)}"
        )
    order = ss[0].shape[0] if ss[0].ndim else 0
    for x, s in zip(xs, ss, strict=True):
        if s.ndim != x.ndim + 1 or tuple(s.shape[1:]) != tuple(x.shape) or s.shape[0] < 1:
            raise ValueError(
                f"jet: argument 'series' expected shape (order, *{tuple(x.shape)}) for a "
                f"primal of shape {tuple(x.shape)}, got {tuple(s.shape)}"
            )
        if s.shape[0] != order:
            raise ValueError(
                f"jet: argument 'series' expected the same order (leading length) for every "
                f"primal, got {order} and {s.shape[0]}"
            )

    def path(t: Tensor) -> Any:
        moved = []
        for x, s in zip(xs, ss, strict=True):
            # Horner: x + t (s1 + t/2 (s2 + t/3 (s3 + ...))) (no t**k: pow's gradient
            # in its exponent takes log(t), NaN at t = 0)
            acc = s[order - 1]
            for k in range(order - 1, 0, -1):
                acc = s[k - 1] + acc * (t / (k + 1))
            moved.append(x + acc * t)
        return fn(*moved)

    def level(depth: int) -> Callable[[Tensor], tuple[Any, ...]]:
        if depth == 0:
            return lambda t: (path(t),)
        below = level(depth - 1)

        def f(t: Tensor) -> tuple[Any, ...]:
            outs, tangents = jvp(below, t, Tensor(1.0, dtype=t.dtype))
            return (outs[0], *tangents)

        return f

    t0 = Tensor(0.0, dtype=xs[0].dtype)
    values = level(order)(t0)
    out = values[0]
    if not isinstance(out, Tensor):
        raise TypeError(f"jet: 'fn' expected to return one Tensor, got {type(out).__name__}")
    from .. import ops

    return fn(*xs), ops.stack([ops.cast(v, out.dtype) for v in values[1:]])


def derivative(fn: Callable[..., Any], primals: Any, order: int) -> tuple[Tensor, Tensor]:
    """``(fn(primals), d^order fn)`` along all-ones directions (module docstring)."""
    if isinstance(order, bool) or not isinstance(order, int) or order < 1:
        raise ValueError(f"derivative: argument 'order' expected an int >= 1, got {order!r}")
    xs = _as_tuple("derivative", "primals", primals)
    from .. import ops

    ss = tuple(
        ops.concat([ops.ones_like(x)[None], ops.zeros((order - 1, *x.shape), x.dtype)])
        if order > 1
        else ops.ones_like(x)[None]
        for x in xs
    )
    out, series = jet(fn, xs if not isinstance(primals, Tensor) else xs[0], ss)
    return out, series[order - 1]
