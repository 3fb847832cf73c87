"""Matrix multiplication on BLAS: CuPy's ``matmul`` on the GPU, on the CPU NumPy's split over
Sporeling's threads (:mod:`..kernels.cpu.blas`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtype as _dt
from .._primitive import _STATE, Primitive, ShapedArray
from ..kernels.cpu import blas, product_threads
from ..tensor import Tensor
from ._batch_rules import matmul_rule
from ._core import broadcast_shapes, sum_to, transpose
from ._elementwise import promote_args
from .complex_numbers import conjugate

__all__ = ["matmul", "dense", "dense_bias_p"]


def _mT(t: Tensor) -> Tensor:
    perm = tuple(range(t.ndim - 2)) + (t.ndim - 1, t.ndim - 2)
    return transpose(t, perm)


def _matmul_abstract(x: ShapedArray, y: ShapedArray) -> ShapedArray:
    if x.ndim == 0 or y.ndim == 0:
        raise ValueError(f"matmul: inputs must be at least 1-d, got shapes {x.shape} and {y.shape}")
    if x.dtype.category == 0:
        raise TypeError(f"matmul: bool inputs are not supported, got {x.dtype}")
    k1 = x.shape[-1]
    k2 = y.shape[-2] if y.ndim > 1 else y.shape[0]
    if k1 != k2:
        raise ValueError(
            f"matmul: contracted dimensions differ: x has shape {x.shape} (last dim {k1}) "
            f"and y has shape {y.shape} (dim {-2 if y.ndim > 1 else 0} is {k2})"
        )
    batch = broadcast_shapes("matmul", x.shape[:-2], y.shape[:-2])
    shape = batch + (x.shape[-2:-1] if x.ndim > 1 else ()) + (y.shape[-1:] if y.ndim > 1 else ())
    return ShapedArray(shape, x.dtype)


def _matmul_vjp(g: Tensor, x: Tensor, y: Tensor, *, out: Tensor) -> tuple[Any, Any]:
    from ._core import reshape

    # promote 1-d operands to matrices so one rule covers every case
    x2 = reshape(x, (1, x.shape[0])) if x.ndim == 1 else x
    y2 = reshape(y, (y.shape[0], 1)) if y.ndim == 1 else y
    g2 = g
    if x.ndim == 1:
        g2 = (
            reshape(g2, g2.shape[:-1] + (1,) + g2.shape[-1:])
            if y.ndim > 1
            else reshape(g2, g2.shape + (1,))
        )
    if y.ndim == 1:
        g2 = reshape(g2, g2.shape + (1,))

    def dx() -> Tensor:  # complex: the adjoints (MindSpore's conjugate convention)
        d = matmul(g2, conjugate(_mT(y2)))
        return reshape(sum_to(d, x2.shape), x.shape)

    def dy() -> Tensor:
        d = matmul(conjugate(_mT(x2)), g2)
        return reshape(sum_to(d, y2.shape), y.shape)

    return dx, dy


def _matmul_cpu(xp: Any, x: Any, y: Any) -> Any:
    return blas.matmul(x, y)


def _matmul_specialize(impl: Any, arrays: list[Any], params: dict[str, Any]) -> Any:
    """The eager plan of a small 2-d product: ``ndarray.dot`` itself, which is what
    :func:`blas.matmul` calls for it (the shapes are the plan's), without two Python frames."""
    x, y = arrays
    if (
        impl is not _matmul_cpu
        or type(x) is not np.ndarray
        or type(y) is not np.ndarray
        or x.ndim != 2
        or y.ndim != 2
        or x.shape[0] * y.shape[1] >= blas.SMALL_DOT
        or x.shape[0] * x.shape[1] * y.shape[1] >= product_threads.MIN_WORK
    ):
        return None
    return np.ndarray.dot


matmul_p = Primitive(
    "matmul",
    "opaque",
    _matmul_abstract,
    impl=lambda xp, x, y: xp.matmul(x, y),
    cpu=_matmul_cpu,
    cpu_into=lambda xp, x, y, *, out=None: blas.matmul(x, y, out=out),
    vjp=_matmul_vjp,
    batch_rule=matmul_rule,
)
matmul_p.eager_specialize = _matmul_specialize


def matmul(input: Any, other: Any) -> Tensor:  # noqa: A002 - MindSpore's argument names
    """Matrix product with NumPy semantics (1-d operands, batched broadcasting).

    >>> matmul(Tensor([[1.0, 2.0]]), Tensor([[3.0], [4.0]])).tolist()
    [[11.0]]
    """
    if type(input) is Tensor and type(other) is Tensor and input._data.dtype is other._data.dtype:
        return _STATE[-1].process(matmul_p, (input, other), {})  # (hot path: no promotion)
    x, y = promote_args("matmul", input, other, ("input", "other"))
    return matmul_p.bind(x, y)


_ = _dt


def _dense_abstract(x: ShapedArray, w: ShapedArray) -> ShapedArray:
    if w.ndim != 2 or x.ndim < 1:
        raise ValueError(
            f"dense: argument 'weight' expected a 2-d (out, in) tensor and 'input' at least 1-d, "
            f"got shapes {x.shape} and {w.shape}"
        )
    if x.shape[-1] != w.shape[1]:
        raise ValueError(
            f"dense: the input's last dimension {x.shape[-1]} does not match weight's "
            f"in-dimension {w.shape[1]} (weight shape {w.shape})"
        )
    if x.dtype != w.dtype:
        raise TypeError(f"dense: input and weight must share a dtype, got {x.dtype} and {w.dtype}")
    if x.dtype.category == 3:
        raise TypeError(f"dense: complex inputs are not supported, got {x.dtype} (use matmul)")
    return ShapedArray(x.shape[:-1] + (w.shape[0],), x.dtype)


def _dense_vjp(g: Tensor, x: Tensor, w: Tensor, *, out: Tensor) -> tuple[Any, Any]:
    from ._core import reshape

    def dx() -> Tensor:
        return matmul(g, w)

    def dw() -> Tensor:
        # (out, in) directly and contiguous: g2.T @ x2 over every leading dimension
        g2 = reshape(g, (-1, g.shape[-1]))
        x2 = reshape(x, (-1, x.shape[-1]))
        return matmul(transpose(g2, (1, 0)), x2)

    return dx, dw


def _dense_bias_abstract(x: ShapedArray, w: ShapedArray, b: ShapedArray) -> ShapedArray:
    out = _dense_abstract(x, w)
    if b.shape != (w.shape[0],) or b.dtype != x.dtype:
        raise ValueError(
            f"dense_bias: argument 'bias' expected shape ({w.shape[0]},) and dtype {x.dtype}, "
            f"got {b.shape} {b.dtype}"
        )
    return out


def _dense_bias_vjp(g: Tensor, x: Tensor, w: Tensor, b: Tensor, *, out: Tensor) -> tuple[Any, ...]:
    dx, dw = _dense_vjp(g, x, w, out=out)
    return dx, dw, lambda: sum_to(g, b.shape)


# ``dense`` with its bias added in the product's blocks while they are still in cache: the
# graph compiler's bias pass makes it from ``add(dense(x, w), b)`` (a separate add read and
# wrote the whole product once more).
dense_bias_p = Primitive(
    "dense_bias",
    "opaque",
    _dense_bias_abstract,
    impl=lambda xp, x, w, b: xp.matmul(x, w.T) + b,
    cpu=lambda xp, x, w, b: blas.matmul(x, w.T, bias=b),
    cpu_into=lambda xp, x, w, b, *, out=None: blas.matmul(x, w.T, out=out, bias=b),
    vjp=_dense_bias_vjp,
)


dense_p = Primitive(
    "dense",
    "opaque",
    _dense_abstract,
    impl=lambda xp, x, w: xp.matmul(x, w.T),
    cpu=lambda xp, x, w: blas.matmul(x, w.T),
    cpu_into=lambda xp, x, w, *, out=None: blas.matmul(x, w.T, out=out),
    vjp=_dense_vjp,
    with_bias=dense_bias_p,
)


def dense(input: Any, weight: Any, bias: Any = None) -> Tensor:  # noqa: A002 - MindSpore's name
    """``input @ weight.T + bias`` (MindSpore's ``ops.dense``; weight is (out, in)).

    One primitive, so the weight gradient comes out in the weight's own layout (a copy-free
    flatten into the optimizer's buffer) instead of as a transposed view.

    >>> dense(Tensor([[1.0, 2.0]]), Tensor([[3.0, 4.0]])).tolist()
    [[11.0]]
    """
    x, w = promote_args("dense", input, weight, ("input", "weight"))
    if (
        len(_STATE) == 1  # eager (a graph's bias pass makes dense_bias itself)
        and isinstance(bias, Tensor)
        and bias._data.dtype == x._data.dtype
        and bias.shape == w.shape[:1]
        and x.ndim >= 1
    ):
        # the bias added into the product's fresh result in place: no second (N, out)
        # array, one op call fewer (an MLP's bias adds were ~0.1 ms of a 4 ms step)
        return dense_bias_p.bind(x, w, bias)
    y = dense_p.bind(x, w)
    if bias is not None:
        from ._elementwise import add

        y = add(y, bias)
    return y
