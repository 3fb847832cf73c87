"""Batch norm + ReLU as one primitive, forward and backward, for the graph compiler.

A conv net's ``relu(batch_norm(x))`` wrote the normalized tensor, read it back for the
ReLU and wrote it again; its backward wrote ReLU's gradient and read it back twice in the
batch norm's gradient. :func:`~...compiler.passes.norm_relu.fuse_norm_relu` replaces the
pair by these primitives in compiled training steps: the forward's output pass applies the
ReLU, and the backward reads ReLU's mask from the fused output ``z`` in both of its passes.
The forward is bit-equal to the two ops; the gradient computes ``where(z > 0, g, 0)`` and
then the batch norm's gradient, equal up to how the kernel's fast-math flags let LLVM
reassociate the loop with the mask in it (float64: the last bit; tests/compiler/
test_norm_relu.py). No eager op binds them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._primitive import Primitive, ShapedArray
from ...tensor import Tensor
from .elementwise import relu_grad_p
from .normalization import (
    _bn_abstract,
    _bn_any,
    _bn_grad_any,
    _bn_grad_composite,
    _bn_view,
    _vjp_of,
)

__all__ = ["batch_norm_relu_p", "batch_norm_relu_grad_p"]


def _zero(dtype: Any) -> Any:
    return np.zeros((), dtype)[()]


def _bn_relu_any(xp: Any, x: Any, w: Any, b: Any, *, eps: float) -> tuple[Any, Any, Any]:
    y, mean, var = _bn_any(xp, x, w, b, eps=eps)
    y = y.astype(x.dtype, copy=False)
    return xp.maximum(y, _zero(x.dtype)), mean, var


def _bn_relu_cpu(xp: Any, x: Any, w: Any, b: Any, *, eps: float) -> tuple[Any, Any, Any]:
    if x.dtype not in (np.float32, np.float64):
        return _bn_relu_any(xp, x, w, b, eps=eps)
    from ...kernels.cpu.norm import batch_norm_forward

    xf = np.ascontiguousarray(x)
    dt = xf.dtype
    z, mean, var = batch_norm_forward(
        xf.reshape(_bn_view(x.shape)), w.astype(dt), b.astype(dt), eps, relu=True
    )
    return z.reshape(x.shape), mean, var


def _bn_relu_grad_any(
    xp: Any, gz: Any, gmean: Any, gvar: Any, x: Any, w: Any, mean: Any, var: Any, z: Any,
    *, eps: float,
) -> tuple[Any, Any, Any]:  # fmt: skip
    gy = xp.where(z > 0, gz, _zero(gz.dtype))
    return _bn_grad_any(xp, gy, gmean, gvar, x, w, mean, var, eps=eps)


def _bn_relu_grad_cpu(
    xp: Any, gz: Any, gmean: Any, gvar: Any, x: Any, w: Any, mean: Any, var: Any, z: Any,
    *, eps: float,
) -> tuple[Any, Any, Any]:  # fmt: skip
    if x.dtype not in (np.float32, np.float64):
        return _bn_relu_grad_any(xp, gz, gmean, gvar, x, w, mean, var, z, eps=eps)
    from ...kernels.cpu.norm import batch_norm_backward

    dt = x.dtype
    view = _bn_view(x.shape)
    dx, dw, db = batch_norm_backward(
        np.ascontiguousarray(gz, dt).reshape(view),
        gmean.astype(dt),
        gvar.astype(dt),
        np.ascontiguousarray(x).reshape(view),
        w.astype(dt),
        mean.astype(dt),
        var.astype(dt),
        eps,
        z3=np.ascontiguousarray(z, dt).reshape(view),
    )
    return dx.reshape(x.shape), dw, db


def _bn_relu_grad_composite(
    gz: Tensor, gmean: Tensor, gvar: Tensor, x: Tensor, w: Tensor, mean: Tensor, var: Tensor,
    z: Tensor, *, eps: float,
) -> tuple[Tensor, Tensor, Tensor]:  # fmt: skip
    """The two ops it replaces (reference for the second derivative)."""
    return _bn_grad_composite(relu_grad_p.bind(gz, z), gmean, gvar, x, w, mean, var, eps=eps)


def _bn_relu_grad_abstract(
    gz: ShapedArray, gm: ShapedArray, gv: ShapedArray, x: ShapedArray, w: ShapedArray,
    m: ShapedArray, v: ShapedArray, z: ShapedArray, *, eps: float,
) -> tuple[ShapedArray, ...]:  # fmt: skip
    return ShapedArray(x.shape, x.dtype), w, w


batch_norm_relu_grad_p = Primitive(
    "batch_norm_relu_grad",
    "opaque",
    _bn_relu_grad_abstract,
    impl=_bn_relu_grad_any,
    cpu=_bn_relu_grad_cpu,
    multiple_results=True,
    vjp=lambda cts, *ins, out, eps: _vjp_of(
        lambda *a: _bn_relu_grad_composite(*a, eps=eps), cts, ins
    ),
)


def _bn_relu_vjp(
    cts: Any, x: Tensor, w: Tensor, b: Tensor, *, out: Any, eps: float
) -> tuple[Tensor, ...]:
    gz, gmean, gvar = cts
    z, mean, var = out
    return batch_norm_relu_grad_p.bind(gz, gmean, gvar, x, w, mean, var, z, eps=eps)


#: ``relu(batch_norm_train(x, w, b))`` with the batch statistics: ``(z, mean, var)``
batch_norm_relu_p = Primitive(
    "batch_norm_relu",
    "opaque",
    _bn_abstract,
    impl=_bn_relu_any,
    cpu=_bn_relu_cpu,
    vjp=_bn_relu_vjp,
    multiple_results=True,
)
