"""Neural-network layer functions (MindSpore 1.8 ``mindspore.ops`` names, NCHW layout):
convolutions, pooling, resizing, padding, sampling, CTC decoding and channel dropout.

Convolutions of every rank rest on three primitives that are each other's gradients, so
gradients of any order stay exact:

* ``conv``              y = conv(x, w)
* ``conv_transpose``    dx = conv_transpose(dy, w)   (the data gradient; ``conv2d_transpose``)
* ``conv_weight_grad``  dw = conv_weight_grad(x, dy)

All three lower to one im2col (or col2im) plus one large GEMM per group; on the CPU the
2-d (and 1-d) im2col/col2im are parallel Numba kernels (:mod:`..kernels.cpu.conv`), and the
generic ``xp`` path (NumPy or CuPy) builds the same columns from strided slices.
"""

from __future__ import annotations

import itertools
import math
from functools import partial
from typing import Any

import numpy as np

from .. import dtype as _dt
from .._primitive import Primitive, ShapedArray
from ..errors import check_int, op_error
from ..tensor import Tensor
from ._compare import maximum, minimum
from ._core import as_tensor, cast, reduce_sum, reshape, transpose
from ._elementwise import pow, square
from ._indexing import getitem
from ._matmul import matmul

__all__ = [
    "conv1d",
    "conv2d",
    "conv3d",
    "conv1d_transpose",
    "conv2d_transpose",
    "conv3d_transpose",
    "max_pool1d",
    "max_pool2d",
    "max_pool3d",
    "avg_pool1d",
    "avg_pool2d",
    "adaptive_avg_pool2d",
    "adaptive_max_pool2d",
    "interpolate",
    "pad",
    "padding",
    "lrn",
    "grid_sample",
    "deformable_conv2d",
    "col2im",
    "unfold",
    "ctc_greedy_decoder",
    "uniform_candidate_sampler",
    "dropout2d",
    "dropout3d",
]

Pads = tuple[tuple[int, int], ...]

# ---- argument helpers ---------------------------------------------------------------


def _tensor(op: str, arg: str, value: Any) -> Tensor:
    if not isinstance(value, Tensor):
        raise op_error(op, arg, value, "a Tensor", TypeError)
    return value


def _ints(
    op: str, arg: str, value: Any, n: int, minimum: int = 1, lengths: tuple[int, ...] = ()
) -> tuple[int, ...]:
    """An int or a tuple/list of ``n`` ints (or of one of ``lengths``), each >= minimum."""
    if isinstance(value, Tensor):
        value = value.tolist()
    items = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    ok_len = (1, n) + lengths
    if len(items) not in ok_len or any(
        isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) for v in items
    ):
        raise op_error(op, arg, value, f"an int or a tuple of {n} ints", TypeError)
    if any(v < minimum for v in items):
        raise op_error(op, arg, value, f"ints >= {minimum}")
    if len(items) == 1:
        items = items * n
    return tuple(int(v) for v in items)


def _check_ndim(op: str, arg: str, t: Tensor, ndims: tuple[int, ...], layout: str) -> None:
    if t.ndim not in ndims:
        raise op_error(op, arg, t, f"a {' or '.join(f'{d}-d' for d in ndims)} tensor ({layout})")


def _float_pair(op: str, x: Any, w: Any, names: tuple[str, str]) -> tuple[Tensor, Tensor]:
    xt = _tensor(op, names[0], x)
    wt = _tensor(op, names[1], w)
    dt = _dt.promote_types(xt.dtype, wt.dtype)
    if dt.category < 2:
        dt = _dt.float32
    return cast(xt, dt), cast(wt, dt)


def _float(op: str, arg: str, x: Any) -> Tensor:
    t = _tensor(op, arg, x)
    return t if t.dtype.category == 2 else cast(t, _dt.float32)


def _const(like: Tensor, array: np.ndarray, dtype: Any = None) -> Tensor:
    return Tensor(array, dtype=dtype or like.dtype, device=like._device)


def _out_size(n: int, k: int, s: int, lo: int, hi: int, d: int) -> int:
    return (n + lo + hi - d * (k - 1) - 1) // s + 1


def _out_spatial(
    sp: tuple[int, ...],
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    pads: Pads,
    dilation: tuple[int, ...],
) -> tuple[int, ...]:
    return tuple(
        _out_size(n, k, s, lo, hi, d)
        for n, k, s, (lo, hi), d in zip(sp, kernel, stride, pads, dilation)
    )


def _same_pads(
    sp: tuple[int, ...], kernel: tuple[int, ...], stride: tuple[int, ...], dilation: tuple[int, ...]
) -> Pads:
    """TensorFlow/MindSpore "same": out = ceil(in / stride), the odd pixel at the end."""
    pads = []
    for n, k, s, d in zip(sp, kernel, stride, dilation):
        out = -(-n // s)
        total = max((out - 1) * s + d * (k - 1) + 1 - n, 0)
        pads.append((total // 2, total - total // 2))
    return tuple(pads)


def _conv_pads(
    op: str,
    pad_mode: Any,
    padding: Any,
    nd: int,
    sp: tuple[int, ...],
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    dilation: tuple[int, ...],
) -> Pads:
    mode = pad_mode.lower() if isinstance(pad_mode, str) else pad_mode
    if mode not in ("valid", "same", "pad"):
        raise op_error(op, "pad_mode", pad_mode, "one of 'valid', 'same', 'pad'")
    flat = _ints(op, "padding", padding, nd, minimum=0, lengths=(2 * nd,))
    if isinstance(padding, (tuple, list)) and len(padding) == 2 * nd:
        pads = tuple((flat[2 * i], flat[2 * i + 1]) for i in range(nd))
    else:
        pads = tuple((p, p) for p in flat)
    if mode != "pad":
        if any(p != (0, 0) for p in pads):
            raise op_error(op, "padding", padding, f"0 when pad_mode is {pad_mode!r}")
        if mode == "same":
            return _same_pads(sp, kernel, stride, dilation)
    return pads


# ---- im2col / col2im (shared by every convolution-like primitive) -------------------


def _slices(
    offs: tuple[int, ...],
    dilation: tuple[int, ...],
    stride: tuple[int, ...],
    out_sp: tuple[int, ...],
) -> tuple[slice, ...]:
    return tuple(
        slice(o * d, o * d + s * (n - 1) + 1, s)
        for o, d, s, n in zip(offs, dilation, stride, out_sp)
    )


def _im2col(
    xp: Any,
    x: Any,
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    pads: Pads,
    dilation: tuple[int, ...],
    out_sp: tuple[int, ...],
    fast: bool,
) -> Any:
    """Columns of ``x`` (N, C, *sp) laid out as (C, *kernel, N, *out_sp)."""
    n, c = x.shape[:2]
    nd = len(kernel)
    if fast and nd <= 2:
        from ..kernels.cpu.conv import im2col2d

        if nd == 1:
            cols = im2col2d(
                x[:, :, None, :],
                (1, kernel[0]),
                (1, stride[0]),
                (0, pads[0][0]),
                (1, dilation[0]),
                (1, out_sp[0]),
            )
            return cols.reshape((c,) + kernel + (n,) + out_sp)
        return im2col2d(
            x,
            (kernel[0], kernel[1]),
            (stride[0], stride[1]),
            (pads[0][0], pads[1][0]),
            (dilation[0], dilation[1]),
            (out_sp[0], out_sp[1]),
        )
    if any(p != (0, 0) for p in pads):
        x = xp.pad(x, ((0, 0), (0, 0)) + tuple(pads))
    cols = xp.empty((c,) + kernel + (n,) + out_sp, x.dtype)
    for offs in itertools.product(*(range(k) for k in kernel)):
        patch = x[(slice(None), slice(None)) + _slices(offs, dilation, stride, out_sp)]
        cols[(slice(None),) + offs] = xp.swapaxes(patch, 0, 1)
    return cols


def _col2im(
    xp: Any,
    cols: Any,
    shape: tuple[int, ...],
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    pads: Pads,
    dilation: tuple[int, ...],
    fast: bool,
) -> Any:
    """The transpose of :func:`_im2col`: sum columns back into an array of ``shape``."""
    nd = len(kernel)
    n, c = shape[:2]
    out_sp = cols.shape[-nd:]
    if fast and nd <= 2:
        from ..kernels.cpu.conv import col2im2d

        if nd == 1:
            c4 = cols.reshape((c, 1) + kernel + (n, 1) + out_sp)
            out = col2im2d(
                c4, (n, c, 1, shape[2]), (1, stride[0]), (0, pads[0][0]), (1, dilation[0])
            )
            return out.reshape(shape)
        return col2im2d(
            cols,
            (n, c, shape[2], shape[3]),
            (stride[0], stride[1]),
            (pads[0][0], pads[1][0]),
            (dilation[0], dilation[1]),
        )
    padded = tuple(s + lo + hi for s, (lo, hi) in zip(shape[2:], pads))
    buf = xp.zeros((n, c) + padded, cols.dtype)
    for offs in itertools.product(*(range(k) for k in kernel)):
        sl = (slice(None), slice(None)) + _slices(offs, dilation, stride, out_sp)
        buf[sl] += xp.swapaxes(cols[(slice(None),) + offs], 0, 1)
    crop = tuple(slice(lo, lo + s) for s, (lo, _) in zip(shape[2:], pads))
    return xp.ascontiguousarray(buf[(slice(None), slice(None)) + crop])


# ---- convolution primitives ------------------------------------------------------------


def _conv_abstract(
    x: ShapedArray,
    w: ShapedArray,
    *,
    stride: tuple[int, ...],
    pads: Pads,
    dilation: tuple[int, ...],
    groups: int,
) -> ShapedArray:
    out_sp = _out_spatial(x.shape[2:], w.shape[2:], stride, pads, dilation)
    return ShapedArray((x.shape[0], w.shape[0]) + out_sp, x.dtype)


def _conv_impl(
    xp: Any,
    x: Any,
    w: Any,
    *,
    stride: tuple[int, ...],
    pads: Pads,
    dilation: tuple[int, ...],
    groups: int,
    fast: bool = False,
) -> Any:
    n, c = x.shape[:2]
    cout, kernel = w.shape[0], tuple(w.shape[2:])
    out_sp = _out_spatial(tuple(x.shape[2:]), kernel, stride, pads, dilation)
    length = math.prod(out_sp)
    cols = _im2col(xp, x, kernel, stride, pads, dilation, out_sp, fast)
    cols = cols.reshape(groups, -1, n * length)
    out = _gemm(xp, w.reshape(groups, cout // groups, -1), cols)  # one GEMM per group
    out = out.reshape(groups, cout // groups, n, length).transpose(2, 0, 1, 3)
    return out.reshape((n, cout) + out_sp)  # a strided view when groups == 1 (no copy)


def _conv_vjp(
    g: Tensor,
    x: Tensor,
    w: Tensor,
    *,
    out: Tensor,
    stride: tuple[int, ...],
    pads: Pads,
    dilation: tuple[int, ...],
    groups: int,
) -> tuple[Any, Any]:
    p = {"stride": stride, "pads": pads, "dilation": dilation, "groups": groups}
    return (
        lambda: conv_transpose_p.bind(g, w, in_shape=x.shape[2:], **p),
        lambda: conv_weight_grad_p.bind(x, g, kernel=w.shape[2:], **p),
    )


def _gemm(xp: Any, a: Any, b: Any) -> Any:
    """Per-group products ``a[i] @ b[i]`` as 2-d GEMMs.

    A 3-d ``matmul`` with transposed operands ran about 4x slower than 2-d BLAS calls in
    benchmarks/bench_conv2d.py, so each group gets its own 2-d product.
    """
    if a.shape[0] == 1:
        return (a[0] @ b[0])[None]
    out = xp.empty((a.shape[0], a.shape[1], b.shape[2]), dtype=xp.result_type(a, b))
    for i in range(a.shape[0]):
        xp.matmul(a[i], b[i], out=out[i])
    return out


def _flat_grad(xp: Any, g: Any, groups: int) -> Any:
    """dy (N, Cout, *out) -> (G, Cout/G, N * L) for the GEMMs of both backward passes."""
    n, cout = g.shape[:2]
    gm = g.reshape(n, groups, cout // groups, -1).transpose(1, 2, 0, 3)
    return xp.ascontiguousarray(gm).reshape(groups, cout // groups, -1)


def _conv_transpose_abstract(
    g: ShapedArray, w: ShapedArray, *, in_shape: tuple[int, ...], **p: Any
) -> ShapedArray:
    return ShapedArray((g.shape[0], w.shape[1] * p["groups"]) + in_shape, g.dtype)


def _conv_transpose_impl(
    xp: Any,
    g: Any,
    w: Any,
    *,
    stride: tuple[int, ...],
    pads: Pads,
    dilation: tuple[int, ...],
    groups: int,
    in_shape: tuple[int, ...],
    fast: bool = False,
) -> Any:
    n = g.shape[0]
    cout, cin_g, kernel = w.shape[0], w.shape[1], tuple(w.shape[2:])
    wm = w.reshape(groups, cout // groups, -1)
    dcols = _gemm(xp, wm.transpose(0, 2, 1), _flat_grad(xp, g, groups))
    dcols = dcols.reshape((cin_g * groups,) + kernel + (n,) + tuple(g.shape[2:]))
    shape = (n, cin_g * groups) + tuple(in_shape)
    return _col2im(xp, dcols, shape, kernel, stride, pads, dilation, fast)


def _conv_transpose_vjp(
    c: Tensor, g: Tensor, w: Tensor, *, out: Tensor, in_shape: Any, **p: Any
) -> tuple[Any, Any]:
    # <c, T(g, w)> = <conv(c, w), g>: linear in g and in w
    return (
        lambda: conv_p.bind(c, w, **p),
        lambda: conv_weight_grad_p.bind(c, g, kernel=w.shape[2:], **p),
    )


def _weight_grad_abstract(
    x: ShapedArray, g: ShapedArray, *, kernel: tuple[int, ...], **p: Any
) -> ShapedArray:
    return ShapedArray((g.shape[1], x.shape[1] // p["groups"]) + kernel, x.dtype)


def _weight_grad_impl(
    xp: Any,
    x: Any,
    g: Any,
    *,
    stride: tuple[int, ...],
    pads: Pads,
    dilation: tuple[int, ...],
    groups: int,
    kernel: tuple[int, ...],
    fast: bool = False,
) -> Any:
    n, c = x.shape[:2]
    out_sp = tuple(g.shape[2:])
    cols = _im2col(xp, x, kernel, stride, pads, dilation, out_sp, fast)
    cols = cols.reshape(groups, -1, n * math.prod(out_sp))
    dw = _gemm(xp, _flat_grad(xp, g, groups), cols.transpose(0, 2, 1))
    return dw.reshape((g.shape[1], c // groups) + kernel)


def _weight_grad_vjp(
    c: Tensor, x: Tensor, g: Tensor, *, out: Tensor, kernel: Any, **p: Any
) -> tuple[Any, Any]:
    # <c, Wg(x, g)> = <g, conv(x, c)>
    return (
        lambda: conv_transpose_p.bind(g, c, in_shape=x.shape[2:], **p),
        lambda: conv_p.bind(x, c, **p),
    )


conv_p = Primitive(
    "conv",
    "opaque",
    _conv_abstract,
    impl=_conv_impl,
    cpu=partial(_conv_impl, fast=True),
    vjp=_conv_vjp,
)
conv_transpose_p = Primitive(
    "conv_transpose",
    "opaque",
    _conv_transpose_abstract,
    impl=_conv_transpose_impl,
    cpu=partial(_conv_transpose_impl, fast=True),
    vjp=_conv_transpose_vjp,
)
conv_weight_grad_p = Primitive(
    "conv_weight_grad",
    "opaque",
    _weight_grad_abstract,
    impl=_weight_grad_impl,
    cpu=partial(_weight_grad_impl, fast=True),
    vjp=_weight_grad_vjp,
)

_LAYOUT = {1: "N, C, W", 2: "N, C, H, W", 3: "N, C, D, H, W"}


def _conv_setup(
    op: str, nd: int, input: Any, weight: Any, stride: Any, dilation: Any, groups: Any
) -> tuple[Tensor, Tensor, tuple[int, ...], tuple[int, ...], int]:
    x, w = _float_pair(op, input, weight, ("input", "weight"))
    _check_ndim(op, "input", x, (nd + 2,), _LAYOUT[nd])
    _check_ndim(op, "weight", w, (nd + 2,), "C_out, C_in / groups, *kernel_size")
    groups = check_int(op, "groups", groups, 1)
    st = _ints(op, "stride", stride, nd)
    dil = _ints(op, "dilation", dilation, nd)
    if x.shape[1] % groups or w.shape[0] % groups:
        raise ValueError(
            f"{op}: argument 'groups' ({groups}) must divide the input channels "
            f"({x.shape[1]}) and the output channels ({w.shape[0]})"
        )
    if w.shape[1] * groups != x.shape[1]:
        raise ValueError(
            f"{op}: argument 'weight' has shape {w.shape}, so it expects "
            f"{w.shape[1] * groups} input channels (weight.shape[1] * groups), but argument "
            f"'input' has {x.shape[1]} channels (shape {x.shape})"
        )
    return x, w, st, dil, groups


def _add_bias(op: str, y: Tensor, bias: Any) -> Tensor:
    if bias is None:
        return y
    b = cast(as_tensor(bias, op, "bias", y), y.dtype)
    if b.shape != (y.shape[1],):
        raise op_error(op, "bias", b, f"a tensor of shape ({y.shape[1]},)")
    return y + reshape(b, (1, y.shape[1]) + (1,) * (y.ndim - 2))


def _conv_nd(
    op: str,
    nd: int,
    input: Any,
    weight: Any,
    bias: Any,
    stride: Any,
    pad_mode: Any,
    padding: Any,
    dilation: Any,
    groups: Any,
) -> Tensor:
    x, w, st, dil, groups = _conv_setup(op, nd, input, weight, stride, dilation, groups)
    kernel = w.shape[2:]
    pads = _conv_pads(op, pad_mode, padding, nd, x.shape[2:], kernel, st, dil)
    out_sp = _out_spatial(x.shape[2:], kernel, st, pads, dil)
    if any(o < 1 for o in out_sp):
        raise ValueError(
            f"{op}: argument 'input' of spatial size {x.shape[2:]} is too small for kernel "
            f"{kernel} with dilation {dil} and padding {pads}"
        )
    y = conv_p.bind(x, w, stride=st, pads=pads, dilation=dil, groups=groups)
    return _add_bias(op, y, bias)


def conv1d(
    input: Any,
    weight: Any,
    bias: Any = None,
    stride: Any = 1,  # noqa: A002
    pad_mode: str = "valid",
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
) -> Tensor:
    """1-d cross-correlation of ``input`` (N, C_in, W) with ``weight`` (C_out, C_in/groups, K).

    ``pad_mode``: "valid" (no padding), "same" (out = ceil(in / stride)) or "pad"
    (``padding`` zeros on both sides, or a (left, right) pair).
    """
    return _conv_nd("conv1d", 1, input, weight, bias, stride, pad_mode, padding, dilation, groups)


def conv2d(
    input: Any,
    weight: Any,
    bias: Any = None,
    stride: Any = 1,  # noqa: A002
    pad_mode: str = "valid",
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
) -> Tensor:
    """2-d cross-correlation: out[n, o] = bias[o] + sum_c ccor(weight[o, c], input[n, c]).

    ``input`` is (N, C_in, H, W) and ``weight`` (C_out, C_in / groups, KH, KW).
    ``padding`` (with ``pad_mode="pad"``) is an int, (pad_h, pad_w) or (top, bottom, left,
    right); ``pad_mode="same"`` pads so that out = ceil(in / stride).

    >>> x = Tensor(np.ones((1, 1, 3, 3), np.float32))
    >>> conv2d(x, Tensor(np.ones((2, 1, 2, 2), np.float32))).shape
    (1, 2, 2, 2)
    """
    return _conv_nd("conv2d", 2, input, weight, bias, stride, pad_mode, padding, dilation, groups)


def conv3d(
    input: Any,
    weight: Any,
    bias: Any = None,
    stride: Any = 1,  # noqa: A002
    pad_mode: str = "valid",
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
) -> Tensor:
    """3-d cross-correlation of ``input`` (N, C_in, D, H, W) with ``weight``
    (C_out, C_in / groups, KD, KH, KW); arguments as in :func:`conv2d`."""
    return _conv_nd("conv3d", 3, input, weight, bias, stride, pad_mode, padding, dilation, groups)


def _conv_transpose_nd(
    op: str,
    nd: int,
    input: Any,
    weight: Any,
    bias: Any,
    stride: Any,
    pad_mode: Any,
    padding: Any,
    output_padding: Any,
    dilation: Any,
    groups: Any,
    input_size: Any,
) -> Tensor:
    g, w = _float_pair(op, input, weight, ("input", "weight"))
    _check_ndim(op, "input", g, (nd + 2,), _LAYOUT[nd])
    _check_ndim(op, "weight", w, (nd + 2,), "C_in, C_out / groups, *kernel_size")
    groups = check_int(op, "groups", groups, 1)
    st = _ints(op, "stride", stride, nd)
    dil = _ints(op, "dilation", dilation, nd)
    if w.shape[0] != g.shape[1] or g.shape[1] % groups:
        raise ValueError(
            f"{op}: argument 'weight' has shape {w.shape}, so it expects {w.shape[0]} input "
            f"channels (weight.shape[0]), but argument 'input' has {g.shape[1]} channels "
            f"(shape {g.shape}); groups ({groups}) must divide them"
        )
    kernel = w.shape[2:]
    in_sp = g.shape[2:]
    mode = pad_mode.lower() if isinstance(pad_mode, str) else pad_mode
    if input_size is not None:
        size = _ints(op, "input_size", input_size, nd + 2, lengths=(nd,))
        target = size[-nd:]
    elif mode == "same":
        target = tuple(n * s for n, s in zip(in_sp, st))
    else:
        outpad = _ints(op, "output_padding", output_padding, nd, minimum=0)
        flat = _ints(op, "padding", padding, nd, minimum=0, lengths=(2 * nd,))
        lohi = (
            [flat[2 * i] + flat[2 * i + 1] for i in range(nd)]
            if isinstance(padding, (tuple, list)) and len(padding) == 2 * nd
            else [2 * p for p in flat]
        )
        target = tuple(
            (n - 1) * s - p + d * (k - 1) + 1 + op_
            for n, s, p, d, k, op_ in zip(in_sp, st, lohi, dil, kernel, outpad)
        )
    pads = _conv_pads(op, pad_mode, padding, nd, target, kernel, st, dil)
    if _out_spatial(target, kernel, st, pads, dil) != tuple(in_sp):
        raise ValueError(
            f"{op}: an output of spatial size {target} does not convolve back to the input's "
            f"spatial size {tuple(in_sp)} with kernel {kernel}, stride {st} and padding {pads}"
        )
    y = conv_transpose_p.bind(
        g, w, stride=st, pads=pads, dilation=dil, groups=groups, in_shape=tuple(target)
    )
    return _add_bias(op, y, bias)


def conv1d_transpose(
    input: Any,
    weight: Any,
    bias: Any = None,
    stride: Any = 1,  # noqa: A002
    pad_mode: str = "valid",
    padding: Any = 0,
    output_padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
    input_size: Any = None,
) -> Tensor:
    """1-d transposed convolution (the data gradient of :func:`conv1d`)."""
    return _conv_transpose_nd(
        "conv1d_transpose",
        1,
        input,
        weight,
        bias,
        stride,
        pad_mode,
        padding,
        output_padding,
        dilation,
        groups,
        input_size,
    )


def conv2d_transpose(
    input: Any,
    weight: Any,
    bias: Any = None,
    stride: Any = 1,  # noqa: A002
    pad_mode: str = "valid",
    padding: Any = 0,
    output_padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
    input_size: Any = None,
) -> Tensor:
    """2-d transposed convolution: the gradient of :func:`conv2d` with respect to its input.

    ``weight`` is (C_in, C_out / groups, KH, KW) (a conv2d weight seen from its output).
    The output size is ``input_size`` when given, else in * stride ("same") or
    (in - 1) * stride - pad_total + dilation * (k - 1) + 1 + output_padding.
    """
    return _conv_transpose_nd(
        "conv2d_transpose",
        2,
        input,
        weight,
        bias,
        stride,
        pad_mode,
        padding,
        output_padding,
        dilation,
        groups,
        input_size,
    )


def conv3d_transpose(
    input: Any,
    weight: Any,
    bias: Any = None,
    stride: Any = 1,  # noqa: A002
    pad_mode: str = "valid",
    padding: Any = 0,
    output_padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
    input_size: Any = None,
) -> Tensor:
    """3-d transposed convolution (the data gradient of :func:`conv3d`)."""
    return _conv_transpose_nd(
        "conv3d_transpose",
        3,
        input,
        weight,
        bias,
        stride,
        pad_mode,
        padding,
        output_padding,
        dilation,
        groups,
        input_size,
    )


# ---- unfold (im2col) and col2im -------------------------------------------------------


def _im2col_abstract(
    x: ShapedArray,
    *,
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    pads: Pads,
    dilation: tuple[int, ...],
) -> ShapedArray:
    out_sp = _out_spatial(x.shape[2:], kernel, stride, pads, dilation)
    return ShapedArray((x.shape[0], x.shape[1] * math.prod(kernel), math.prod(out_sp)), x.dtype)


def _im2col_impl(
    xp: Any,
    x: Any,
    *,
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    pads: Pads,
    dilation: tuple[int, ...],
    fast: bool = False,
) -> Any:
    n, c = x.shape[:2]
    out_sp = _out_spatial(tuple(x.shape[2:]), kernel, stride, pads, dilation)
    cols = _im2col(xp, x, kernel, stride, pads, dilation, out_sp, fast)
    cols = cols.reshape(c * math.prod(kernel), n, -1).transpose(1, 0, 2)
    return xp.ascontiguousarray(cols)


def _col2im_abstract(
    c: ShapedArray,
    *,
    shape: tuple[int, ...],
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    pads: Pads,
    dilation: tuple[int, ...],
) -> ShapedArray:
    return ShapedArray(shape, c.dtype)


def _col2im_impl(
    xp: Any,
    cols: Any,
    *,
    shape: tuple[int, ...],
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    pads: Pads,
    dilation: tuple[int, ...],
    fast: bool = False,
) -> Any:
    out_sp = _out_spatial(shape[2:], kernel, stride, pads, dilation)
    c6 = xp.ascontiguousarray(cols.transpose(1, 0, 2))
    c6 = c6.reshape((shape[1],) + kernel + (shape[0],) + out_sp)
    return _col2im(xp, c6, shape, kernel, stride, pads, dilation, fast)


im2col_p = Primitive(
    "im2col",
    "opaque",
    _im2col_abstract,
    impl=_im2col_impl,
    cpu=partial(_im2col_impl, fast=True),
    vjp=lambda g, x, *, out, **p: col2im_p.bind(g, shape=x.shape, **p),
)
col2im_p: Primitive = Primitive(
    "col2im",
    "opaque",
    _col2im_abstract,
    impl=_col2im_impl,
    cpu=partial(_col2im_impl, fast=True),
    vjp=lambda g, c, *, out, shape, **p: im2col_p.bind(g, **p),
)


def unfold(
    input: Any,
    kernel_size: Any,
    dilation: Any = 1,
    padding: Any = 0,  # noqa: A002
    stride: Any = 1,
) -> Tensor:
    """Sliding 2-d patches (im2col): (N, C, H, W) -> (N, C * KH * KW, L).

    Row ``c * KH * KW + i * KW + j`` holds tap (i, j) of channel c for the L output
    positions in row-major order; :func:`col2im` sums them back.
    """
    op = "unfold"
    x = _tensor(op, "input", input)
    _check_ndim(op, "input", x, (4,), _LAYOUT[2])
    k = _ints(op, "kernel_size", kernel_size, 2)
    d = _ints(op, "dilation", dilation, 2)
    s = _ints(op, "stride", stride, 2)
    p = _ints(op, "padding", padding, 2, minimum=0)
    pads = tuple((v, v) for v in p)
    if any(o < 1 for o in _out_spatial(x.shape[2:], k, s, pads, d)):
        raise op_error(op, "input", x, f"a spatial size of at least the kernel {k}")
    return im2col_p.bind(x, kernel=k, stride=s, pads=pads, dilation=d)


def col2im(
    input_x: Any, output_size: Any, kernel_size: Any, dilation: Any, padding_value: Any, stride: Any
) -> Tensor:
    """Sum sliding blocks (N, C, KH * KW, L) back into images (N, C, *output_size)."""
    op = "col2im"
    x = _tensor(op, "input_x", input_x)
    _check_ndim(op, "input_x", x, (4,), "N, C, KH * KW, L")
    size = _ints(op, "output_size", output_size, 2)
    k = _ints(op, "kernel_size", kernel_size, 2)
    d = _ints(op, "dilation", dilation, 2)
    s = _ints(op, "stride", stride, 2)
    p = _ints(op, "padding_value", padding_value, 2, minimum=0)
    pads = tuple((v, v) for v in p)
    if x.shape[2] != k[0] * k[1]:
        raise op_error(op, "input_x", x, f"dimension 2 equal to kernel_size product {k[0] * k[1]}")
    blocks = math.prod(_out_spatial(size, k, s, pads, d))
    if x.shape[3] != blocks:
        raise op_error(op, "input_x", x, f"dimension 3 equal to the number of blocks {blocks}")
    n, c = x.shape[:2]
    cols = reshape(x, (n, c * k[0] * k[1], blocks))
    return col2im_p.bind(cols, shape=(n, c) + size, kernel=k, stride=s, pads=pads, dilation=d)


# ---- pooling ------------------------------------------------------------------------


def _window_positions(n: int, k: int, s: int, lo: int, d: int, out: int, o: int) -> np.ndarray:
    return o * d + s * np.arange(out) - lo


def _max_pool_abstract(
    x: ShapedArray,
    *,
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    pads: Pads,
    dilation: tuple[int, ...],
) -> tuple[ShapedArray, ShapedArray]:
    shape = x.shape[:2] + _out_spatial(x.shape[2:], kernel, stride, pads, dilation)
    return ShapedArray(shape, x.dtype), ShapedArray(shape, _dt.int64)


def _max_pool_impl(
    xp: Any,
    x: Any,
    *,
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    pads: Pads,
    dilation: tuple[int, ...],
    fast: bool = False,
) -> Any:
    sp = tuple(x.shape[2:])
    out_sp = _out_spatial(sp, kernel, stride, pads, dilation)
    if fast and len(kernel) <= 2 and x.dtype.kind == "f":
        from ..kernels.cpu.pool import max_pool2d

        if len(kernel) == 1:
            out, idx = max_pool2d(
                x[:, :, None, :],
                (1,) + kernel,
                (1,) + stride,
                (0, pads[0][0]),
                (1,) + dilation,
                (1,) + out_sp,
            )
            return out.reshape(out.shape[:2] + out_sp), idx.reshape(idx.shape[:2] + out_sp)
        return max_pool2d(x, kernel, stride, (pads[0][0], pads[1][0]), dilation, out_sp)
    low = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    xpad = xp.pad(x, ((0, 0), (0, 0)) + tuple(pads), constant_values=low)
    best = xp.full(x.shape[:2] + out_sp, low, x.dtype)
    arg = xp.full(x.shape[:2] + out_sp, -1, np.int64)
    plane = np.cumprod((1,) + sp[::-1])[:-1][::-1]  # row-major strides of the input plane
    for offs in itertools.product(*(range(k) for k in kernel)):
        patch = xpad[(slice(None), slice(None)) + _slices(offs, dilation, stride, out_sp)]
        flat = np.zeros(out_sp, np.int64)
        valid = np.ones(out_sp, bool)
        for ax, (n, k, s, (lo, _), d, o) in enumerate(
            zip(sp, kernel, stride, pads, dilation, offs)
        ):
            pos = _window_positions(n, k, s, lo, d, out_sp[ax], o)
            shape = [1] * len(sp)
            shape[ax] = -1
            flat = flat + (pos * plane[ax]).reshape(shape)
            valid = valid & ((pos >= 0) & (pos < n)).reshape(shape)
        better = (patch > best) | ((arg < 0) & xp.asarray(valid))
        if x.dtype.kind == "f":
            better = better | (xp.isnan(patch) & ~xp.isnan(best))
        better = better & xp.asarray(valid)
        best = xp.where(better, patch, best)
        arg = xp.where(better, xp.asarray(flat), arg)
    return best, arg


def _pool_scatter_abstract(
    g: ShapedArray, idx: ShapedArray, *, shape: tuple[int, ...]
) -> ShapedArray:
    return ShapedArray(shape, g.dtype)


def _pool_scatter_impl(
    xp: Any, g: Any, idx: Any, *, shape: tuple[int, ...], fast: bool = False
) -> Any:
    if fast and g.dtype.kind == "f":
        from ..kernels.cpu.pool import max_pool2d_backward

        return max_pool2d_backward(g, idx, shape)
    n, c = shape[:2]
    out = xp.zeros((n * c, math.prod(shape[2:])), g.dtype)
    rows = xp.broadcast_to(xp.arange(n * c)[:, None], (n * c, math.prod(idx.shape[2:])))
    gi = idx.reshape(n * c, -1)
    ok = gi >= 0
    xp.add.at(out, (rows[ok], gi[ok]), g.reshape(n * c, -1)[ok])
    return out.reshape(shape)


def _pool_gather_abstract(x: ShapedArray, idx: ShapedArray) -> ShapedArray:
    return ShapedArray(idx.shape, x.dtype)


def _pool_gather_impl(xp: Any, x: Any, idx: Any) -> Any:
    n, c = x.shape[:2]
    flat = x.reshape(n, c, -1)
    safe = xp.maximum(idx.reshape(n, c, -1), 0)
    out = xp.take_along_axis(flat, safe, axis=2)
    return xp.where(idx.reshape(n, c, -1) >= 0, out, 0).reshape(idx.shape)


pool_scatter_p = Primitive(
    "pool_scatter",
    "opaque",
    _pool_scatter_abstract,
    impl=_pool_scatter_impl,
    cpu=partial(_pool_scatter_impl, fast=True),
    vjp=lambda gg, g, idx, *, out, shape: (pool_gather_p.bind(gg, idx), None),
)
pool_gather_p: Primitive = Primitive(
    "pool_gather",
    "opaque",
    _pool_gather_abstract,
    impl=_pool_gather_impl,
    vjp=lambda g, x, idx, *, out: (pool_scatter_p.bind(g, idx, shape=x.shape), None),
)
max_pool_p = Primitive(
    "max_pool",
    "opaque",
    _max_pool_abstract,
    impl=_max_pool_impl,
    cpu=partial(_max_pool_impl, fast=True),
    multiple_results=True,
    vjp=lambda gs, x, *, out, **p: pool_scatter_p.bind(gs[0], out[1], shape=x.shape),
)


def _count_bounds(sp: tuple[int, ...], pads: Pads, include: Pads) -> tuple[int, ...]:
    return tuple(v for n, (lo, hi) in zip(sp, include) for v in (-lo, n + hi))


def _pool_counts(
    sp: tuple[int, ...],
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    pads: Pads,
    bounds: tuple[int, ...],
    out_sp: tuple[int, ...],
) -> np.ndarray:
    count = np.ones((), np.float64)
    for ax, (k, s, (lo, _), o) in enumerate(zip(kernel, stride, pads, out_sp)):
        start = s * np.arange(o) - lo
        c = np.minimum(start + k, bounds[2 * ax + 1]) - np.maximum(start, bounds[2 * ax])
        count = np.multiply.outer(count, np.maximum(c, 0))
    return count


def _avg_pool_abstract(
    x: ShapedArray,
    *,
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    pads: Pads,
    bounds: tuple[int, ...],
) -> ShapedArray:
    ones = (1,) * len(kernel)
    return ShapedArray(x.shape[:2] + _out_spatial(x.shape[2:], kernel, stride, pads, ones), x.dtype)


def _avg_pool_impl(
    xp: Any,
    x: Any,
    *,
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    pads: Pads,
    bounds: tuple[int, ...],
    fast: bool = False,
) -> Any:
    sp = tuple(x.shape[2:])
    ones = (1,) * len(kernel)
    out_sp = _out_spatial(sp, kernel, stride, pads, ones)
    if fast and len(kernel) == 2:
        from ..kernels.cpu.pool import avg_pool2d

        return avg_pool2d(x, kernel, stride, (pads[0][0], pads[1][0]), out_sp, bounds)
    xpad = xp.pad(x, ((0, 0), (0, 0)) + tuple(pads))
    acc = xp.zeros(x.shape[:2] + out_sp, x.dtype)
    for offs in itertools.product(*(range(k) for k in kernel)):
        acc += xpad[(slice(None), slice(None)) + _slices(offs, ones, stride, out_sp)]
    count = _pool_counts(sp, kernel, stride, pads, bounds, out_sp)
    return acc / xp.asarray(np.maximum(count, 1), x.dtype)


def _avg_pool_grad_abstract(g: ShapedArray, *, shape: tuple[int, ...], **p: Any) -> ShapedArray:
    return ShapedArray(shape, g.dtype)


def _avg_pool_grad_impl(
    xp: Any,
    g: Any,
    *,
    shape: tuple[int, ...],
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    pads: Pads,
    bounds: tuple[int, ...],
    fast: bool = False,
) -> Any:
    sp = tuple(shape[2:])
    ones = (1,) * len(kernel)
    out_sp = tuple(g.shape[2:])
    if fast and len(kernel) == 2:
        from ..kernels.cpu.pool import avg_pool2d_backward

        return avg_pool2d_backward(g, shape, kernel, stride, (pads[0][0], pads[1][0]), bounds)
    count = _pool_counts(sp, kernel, stride, pads, bounds, out_sp)
    gs = g / xp.asarray(np.maximum(count, 1), g.dtype)
    padded = tuple(n + lo + hi for n, (lo, hi) in zip(sp, pads))
    buf = xp.zeros(tuple(shape[:2]) + padded, g.dtype)
    for offs in itertools.product(*(range(k) for k in kernel)):
        buf[(slice(None), slice(None)) + _slices(offs, ones, stride, out_sp)] += gs
    crop = tuple(slice(lo, lo + n) for n, (lo, _) in zip(sp, pads))
    return xp.ascontiguousarray(buf[(slice(None), slice(None)) + crop])


avg_pool_p = Primitive(
    "avg_pool",
    "opaque",
    _avg_pool_abstract,
    impl=_avg_pool_impl,
    cpu=partial(_avg_pool_impl, fast=True),
    vjp=lambda g, x, *, out, **p: avg_pool_grad_p.bind(g, shape=x.shape, **p),
)
avg_pool_grad_p: Primitive = Primitive(
    "avg_pool_grad",
    "opaque",
    _avg_pool_grad_abstract,
    impl=_avg_pool_grad_impl,
    cpu=partial(_avg_pool_grad_impl, fast=True),
    vjp=lambda gg, g, *, out, shape, **p: avg_pool_p.bind(gg, **p),
)


def _pool_pads(
    op: str,
    sp: tuple[int, ...],
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    padding: Any,
    dilation: tuple[int, ...],
    ceil_mode: bool,
) -> Pads:
    nd = len(sp)
    pad = _ints(op, "padding", padding, nd, minimum=0)
    for p, k, d in zip(pad, kernel, dilation):
        if p > (d * (k - 1) + 1) // 2:
            raise op_error(
                op,
                "padding",
                padding,
                "at most half of the (dilated) kernel size in every dimension",
            )
    pads = []
    for n, k, s, p, d in zip(sp, kernel, stride, pad, dilation):
        span = n + 2 * p - d * (k - 1) - 1
        if span < 0:
            raise op_error(op, "x", sp, f"spatial sizes of at least the kernel {kernel}")
        out = (-(-span // s) if ceil_mode else span // s) + 1
        if ceil_mode and (out - 1) * s >= n + p:  # the last window must start inside
            out -= 1
        hi = max((out - 1) * s + d * (k - 1) + 1 - n - p, 0)
        pads.append((p, hi))
    return tuple(pads)


def _max_pool_nd(
    op: str,
    nd: int,
    x: Any,
    kernel_size: Any,
    stride: Any,
    padding: Any,
    dilation: Any,
    return_indices: bool,
    ceil_mode: bool,
) -> Any:
    t = _tensor(op, "x", x)
    _check_ndim(op, "x", t, (nd + 2,), _LAYOUT[nd])
    if t.dtype.category == 0:
        raise op_error(op, "x", t, "a numeric tensor", TypeError)
    k = _ints(op, "kernel_size", kernel_size, nd)
    s = k if stride is None else _ints(op, "stride", stride, nd)
    d = _ints(op, "dilation", dilation, nd)
    pads = _pool_pads(op, t.shape[2:], k, s, padding, d, bool(ceil_mode))
    out, idx = max_pool_p.bind(t, kernel=k, stride=s, pads=pads, dilation=d)
    return (out, idx) if return_indices else out


def max_pool1d(
    x: Any,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    return_indices: bool = False,
    ceil_mode: bool = False,
) -> Any:
    """1-d max pooling of (N, C, W); ``return_indices`` adds each maximum's input index."""
    return _max_pool_nd(
        "max_pool1d", 1, x, kernel_size, stride, padding, dilation, return_indices, ceil_mode
    )


def max_pool2d(
    x: Any,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    return_indices: bool = False,
    ceil_mode: bool = False,
) -> Any:
    """2-d max pooling of (N, C, H, W): out = max over each (dilated) window.

    ``stride`` defaults to ``kernel_size``; ``padding`` (at most half the kernel) pads with
    -inf; ``return_indices`` also returns each maximum's flat index h * W + w (int64).

    >>> max_pool2d(Tensor(np.arange(16.0).reshape(1, 1, 4, 4)), 2).tolist()
    [[[[5.0, 7.0], [13.0, 15.0]]]]
    """
    return _max_pool_nd(
        "max_pool2d", 2, x, kernel_size, stride, padding, dilation, return_indices, ceil_mode
    )


def max_pool3d(
    x: Any,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Any:
    """3-d max pooling of (N, C, D, H, W) (MindSpore 1.8 argument order)."""
    return _max_pool_nd(
        "max_pool3d", 3, x, kernel_size, stride, padding, dilation, return_indices, ceil_mode
    )


def avg_pool2d(
    input_x: Any,
    kernel_size: Any = 1,
    strides: Any = 1,
    pad_mode: str = "valid",
    data_format: str = "NCHW",
) -> Tensor:
    """2-d average pooling (MindSpore 1.8): mean of each window over the taps inside the
    input ("same" padding is not counted in the mean).

    >>> avg_pool2d(Tensor(np.arange(16.0).reshape(1, 1, 4, 4)), 2, 2).tolist()
    [[[[2.5, 4.5], [10.5, 12.5]]]]
    """
    op = "avg_pool2d"
    x = _float(op, "input_x", input_x)
    _check_ndim(op, "input_x", x, (4,), data_format if isinstance(data_format, str) else "NCHW")
    if data_format not in ("NCHW", "NHWC"):
        raise op_error(op, "data_format", data_format, "'NCHW' or 'NHWC'")
    if data_format == "NHWC":
        x = transpose(x, (0, 3, 1, 2))
    k = _ints(op, "kernel_size", kernel_size, 2)
    s = _ints(op, "strides", strides, 2)
    mode = pad_mode.lower() if isinstance(pad_mode, str) else pad_mode
    if mode not in ("valid", "same"):
        raise op_error(op, "pad_mode", pad_mode, "'valid' or 'same'")
    sp = x.shape[2:]
    pads = _same_pads(sp, k, s, (1, 1)) if mode == "same" else ((0, 0), (0, 0))
    if any(o < 1 for o in _out_spatial(sp, k, s, pads, (1, 1))):
        raise op_error(op, "input_x", x, f"spatial sizes of at least the kernel {k}")
    bounds = _count_bounds(sp, pads, ((0, 0), (0, 0)))
    out = avg_pool_p.bind(x, kernel=k, stride=s, pads=pads, bounds=bounds)
    return transpose(out, (0, 2, 3, 1)) if data_format == "NHWC" else out


def avg_pool1d(
    input_x: Any,
    kernel_size: Any = 1,
    stride: Any = 1,
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Tensor:
    """1-d average pooling of (N, C, W) with zero ``padding`` on both sides; the mean
    counts padded taps when ``count_include_pad``."""
    op = "avg_pool1d"
    x = _float(op, "input_x", input_x)
    _check_ndim(op, "input_x", x, (3,), _LAYOUT[1])
    k = _ints(op, "kernel_size", kernel_size, 1)
    s = _ints(op, "stride", stride, 1)
    pads = _pool_pads(op, x.shape[2:], k, s, padding, (1,), bool(ceil_mode))
    p = pads[0][0]
    include = ((p, p),) if count_include_pad else ((0, 0),)
    bounds = _count_bounds(x.shape[2:], pads, include)
    x4 = reshape(x, x.shape[:2] + (1,) + x.shape[2:])
    out = avg_pool_p.bind(
        x4, kernel=(1,) + k, stride=(1,) + s, pads=((0, 0),) + pads, bounds=(0, 1) + bounds
    )
    return reshape(out, out.shape[:2] + out.shape[3:])


def _adaptive_size(op: str, output_size: Any, sp: tuple[int, ...]) -> tuple[int, ...]:
    items = tuple(output_size) if isinstance(output_size, (tuple, list)) else (output_size,)
    if len(items) == 1:
        items = items * 2
    if len(items) != 2 or any(
        v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1)
        for v in items
    ):
        raise op_error(op, "output_size", output_size, "a positive int or a pair of them (or None)")
    return tuple(n if v is None else int(v) for v, n in zip(items, sp))


def _adaptive_bounds(n: int, o: int) -> list[tuple[int, int]]:
    return [((i * n) // o, -(-((i + 1) * n) // o)) for i in range(o)]


def adaptive_avg_pool2d(input_x: Any, output_size: Any) -> Tensor:
    """Adaptive 2-d average pooling: window i spans [floor(i*H/oh), ceil((i+1)*H/oh)).

    Written as A_h @ x @ A_w^T with constant averaging matrices, so gradients of any order
    come from ``matmul``.
    """
    op = "adaptive_avg_pool2d"
    x = _float(op, "input_x", input_x)
    _check_ndim(op, "input_x", x, (3, 4), "C, H, W or N, C, H, W")
    h, w = x.shape[-2:]
    oh, ow = _adaptive_size(op, output_size, (h, w))
    mats = []
    for n, o in ((h, oh), (w, ow)):
        m = np.zeros((o, n))
        for i, (a, b) in enumerate(_adaptive_bounds(n, o)):
            m[i, a:b] = 1.0 / (b - a)
        mats.append(_const(x, m))
    return matmul(matmul(mats[0], x), transpose(mats[1], (1, 0)))


def _adaptive_max_abstract(x: ShapedArray, *, out_hw: tuple[int, int]) -> Any:
    shape = x.shape[:2] + tuple(out_hw)
    return ShapedArray(shape, x.dtype), ShapedArray(shape, _dt.int64)


def _adaptive_max_impl(xp: Any, x: Any, *, out_hw: tuple[int, int]) -> Any:
    n, c, h, w = x.shape
    out = xp.empty((n, c) + tuple(out_hw), x.dtype)
    arg = xp.empty((n, c) + tuple(out_hw), np.int64)
    for i, (y0, y1) in enumerate(_adaptive_bounds(h, out_hw[0])):
        for j, (x0, x1) in enumerate(_adaptive_bounds(w, out_hw[1])):
            win = x[:, :, y0:y1, x0:x1].reshape(n, c, -1)
            a = xp.argmax(win, axis=2)
            out[:, :, i, j] = xp.take_along_axis(win, a[:, :, None], axis=2)[:, :, 0]
            arg[:, :, i, j] = (y0 + a // (x1 - x0)) * w + x0 + a % (x1 - x0)
    return out, arg


adaptive_max_pool2d_p = Primitive(
    "adaptive_max_pool2d",
    "opaque",
    _adaptive_max_abstract,
    impl=_adaptive_max_impl,
    multiple_results=True,
    vjp=lambda gs, x, *, out, out_hw: pool_scatter_p.bind(gs[0], out[1], shape=x.shape),
)


def adaptive_max_pool2d(input_x: Any, output_size: Any, return_indices: bool = False) -> Any:
    """Adaptive 2-d max pooling (windows as in :func:`adaptive_avg_pool2d`);
    ``return_indices`` adds each maximum's flat index h * W + w."""
    op = "adaptive_max_pool2d"
    x = _tensor(op, "input_x", input_x)
    _check_ndim(op, "input_x", x, (3, 4), "C, H, W or N, C, H, W")
    if x.dtype.category == 0:
        raise op_error(op, "input_x", x, "a numeric tensor", TypeError)
    squeeze = x.ndim == 3
    x4 = reshape(x, (1,) + x.shape) if squeeze else x
    out_hw = _adaptive_size(op, output_size, x4.shape[2:])
    out, idx = adaptive_max_pool2d_p.bind(x4, out_hw=out_hw)
    if squeeze:
        out, idx = reshape(out, out.shape[1:]), reshape(idx, idx.shape[1:])
    return (out, idx) if return_indices else out


# ---- resizing ---------------------------------------------------------------------------


def _resize_matrix(n: int, o: int, mode: str, ctm: str) -> np.ndarray:
    """(o, n) matrix mapping an axis of length n to length o (linear or nearest)."""
    i = np.arange(o, dtype=np.float64)
    if ctm == "align_corners":
        src = i * (n - 1) / (o - 1) if o > 1 else np.zeros(o)
    elif ctm == "half_pixel":
        src = (i + 0.5) * n / o - 0.5 if o > 1 else np.zeros(o)
    else:  # asymmetric
        src = i * n / o
    m = np.zeros((o, n))
    rows = np.arange(o)
    if mode == "nearest":
        idx = np.floor(src) if ctm == "asymmetric" else np.floor(src + 0.5)
        m[rows, np.clip(idx, 0, n - 1).astype(np.int64)] = 1.0
        return m
    src = np.clip(src, 0, n - 1)
    i0 = np.floor(src).astype(np.int64)
    i1 = np.minimum(i0 + 1, n - 1)
    lam = src - i0
    np.add.at(m, (rows, i0), 1 - lam)
    np.add.at(m, (rows, i1), lam)
    return m


def interpolate(
    x: Any,
    roi: Any = None,
    scales: Any = None,
    sizes: Any = None,
    coordinate_transformation_mode: str = "align_corners",
    mode: str = "linear",
) -> Tensor:
    """Resize the last axis ("linear", 3-d x) or the last two ("bilinear", 4-d x); "nearest"
    takes either. Give ``sizes`` (new lengths of the resized axes) or ``scales`` (one per
    axis of x). ``coordinate_transformation_mode``: "align_corners", "half_pixel" or
    "asymmetric" map output index i to input coordinate i*(n-1)/(o-1), (i+0.5)*n/o-0.5 or
    i*n/o. Each axis is a constant interpolation matrix applied with ``matmul``.
    """
    op = "interpolate"
    t = _float(op, "x", x)
    if mode not in ("linear", "bilinear", "nearest"):
        raise op_error(op, "mode", mode, "'linear', 'bilinear' or 'nearest'")
    ndim = {"linear": (3,), "bilinear": (4,), "nearest": (3, 4)}[mode]
    _check_ndim(op, "x", t, ndim, "N, C, W" if t.ndim == 3 else "N, C, H, W")
    if coordinate_transformation_mode not in ("align_corners", "half_pixel", "asymmetric"):
        raise op_error(
            op,
            "coordinate_transformation_mode",
            coordinate_transformation_mode,
            "'align_corners', 'half_pixel' or 'asymmetric'",
        )
    if roi is not None:
        raise op_error(op, "roi", roi, "None (crop_and_resize is not supported)")
    naxes = t.ndim - 2
    if (scales is None) == (sizes is None):
        raise ValueError(f"{op}: give exactly one of 'scales' and 'sizes'")
    if sizes is not None:
        new = _ints(op, "sizes", sizes, naxes)
        if not isinstance(sizes, (tuple, list)) or len(sizes) != naxes:
            raise op_error(op, "sizes", sizes, f"a tuple of {naxes} positive ints")
    else:
        if (
            not isinstance(scales, (tuple, list))
            or len(scales) != t.ndim
            or any(not isinstance(v, (int, float)) or v <= 0 for v in scales)
        ):
            raise op_error(op, "scales", scales, f"a tuple of {t.ndim} positive floats")
        if any(v != 1 for v in scales[:2]):
            raise op_error(op, "scales", scales, "1.0 for the batch and channel axes")
        new = tuple(int(math.floor(n * s)) for n, s in zip(t.shape[2:], scales[2:]))
        if any(v < 1 for v in new):
            raise op_error(op, "scales", scales, "scales giving output sizes >= 1")
    kind = "nearest" if mode == "nearest" else "linear"
    ctm = coordinate_transformation_mode
    mw = _const(t, _resize_matrix(t.shape[-1], new[-1], kind, ctm).T)
    out = matmul(t, mw)
    if naxes == 2:
        mh = _const(t, _resize_matrix(t.shape[-2], new[0], kind, ctm))
        out = matmul(mh, out)
    return out


# ---- padding ---------------------------------------------------------------------------


def _pad_abstract(x: ShapedArray, *, pads: Pads) -> ShapedArray:
    return ShapedArray(tuple(n + lo + hi for n, (lo, hi) in zip(x.shape, pads)), x.dtype)


pad_p = Primitive(
    "pad",
    "movement",
    _pad_abstract,
    impl=lambda xp, x, *, pads: xp.pad(x, pads),
    vjp=lambda g, x, *, out, pads: getitem(
        g, tuple(slice(lo, lo + n) for n, (lo, _) in zip(x.shape, pads))
    ),
)


def pad(input_x: Any, paddings: Any) -> Tensor:
    """Zero-pad each dimension by ``paddings[d] = (before, after)``.

    >>> pad(Tensor([[1.0]]), ((1, 0), (0, 2))).tolist()
    [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]]
    """
    op = "pad"
    x = _tensor(op, "input_x", input_x)
    try:
        pads = tuple((int(a), int(b)) for a, b in paddings)
        ok = len(pads) == x.ndim and all(
            not isinstance(v, bool) and isinstance(v, (int, np.integer))
            for p in paddings
            for v in p
        )
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise op_error(
            op,
            "paddings",
            paddings,
            f"a tuple of {x.ndim} (before, after) pairs of ints",
            TypeError,
        )
    if any(v < 0 for p in pads for v in p):
        raise op_error(op, "paddings", paddings, "non-negative paddings")
    if all(p == (0, 0) for p in pads):
        return x
    return pad_p.bind(x, pads=pads)


def padding(x: Any, pad_dim_size: int = 8) -> Tensor:
    """Extend a last dimension of size 1 to ``pad_dim_size`` with zeros (MindSpore's
    ``Padding``): out[..., 0] = x[..., 0], the rest 0."""
    op = "padding"
    t = _tensor(op, "x", x)
    if t.ndim < 1 or t.shape[-1] != 1:
        raise op_error(op, "x", t, "a tensor whose last dimension is 1")
    size = check_int(op, "pad_dim_size", pad_dim_size, 1)
    return pad(t, ((0, 0),) * (t.ndim - 1) + ((0, size - 1),))


# ---- local response normalization --------------------------------------------------------


def lrn(
    x: Any,
    depth_radius: int = 5,
    bias: float = 1.0,
    alpha: float = 1.0,
    beta: float = 0.5,
    norm_region: str = "ACROSS_CHANNELS",
) -> Tensor:
    """Local response normalization across channels of (N, C, H, W):
    out = x / (bias + alpha * sum_{|c'-c| <= depth_radius} x[c']**2) ** beta."""
    op = "lrn"
    t = _float(op, "x", x)
    _check_ndim(op, "x", t, (4,), _LAYOUT[2])
    r = check_int(op, "depth_radius", depth_radius, 0)
    if norm_region != "ACROSS_CHANNELS":
        raise op_error(op, "norm_region", norm_region, "'ACROSS_CHANNELS'")
    for name, v in (("bias", bias), ("alpha", alpha), ("beta", beta)):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise op_error(op, name, v, "a float", TypeError)
    c = t.shape[1]
    sq = pad(square(t), ((0, 0), (r, r), (0, 0), (0, 0)))
    total = getitem(sq, (slice(None), slice(0, c)))
    for k in range(1, 2 * r + 1):
        total = total + getitem(sq, (slice(None), slice(k, k + c)))
    return t * pow(total * float(alpha) + float(bias), -float(beta))


# ---- bilinear sampling (grid_sample, deformable_conv2d) -----------------------------------


def _corners(xp: Any, py: Any, px: Any, h: int, w: int, mode: str) -> list[tuple[Any, ...]]:
    """(flat index, weight, valid, d weight/dy, d weight/dx) for each sampled neighbour."""
    if mode == "nearest":
        yi, xi = xp.rint(py).astype(np.int64), xp.rint(px).astype(np.int64)
        zero = xp.zeros(py.shape, py.dtype)
        valid = (yi >= 0) & (yi < h) & (xi >= 0) & (xi < w)
        return [(xp.where(valid, yi * w + xi, 0), valid.astype(py.dtype), valid, zero, zero)]
    y0f, x0f = xp.floor(py), xp.floor(px)
    wy, wx = py - y0f, px - x0f
    y0, x0 = y0f.astype(np.int64), x0f.astype(np.int64)
    out = []
    for dy, dx in ((0, 0), (0, 1), (1, 0), (1, 1)):
        yi, xi = y0 + dy, x0 + dx
        valid = (yi >= 0) & (yi < h) & (xi >= 0) & (xi < w)
        fy = wy if dy else 1 - wy
        fx = wx if dx else 1 - wx
        sy = 1.0 if dy else -1.0
        sx = 1.0 if dx else -1.0
        vm = valid.astype(py.dtype)
        out.append(
            (xp.where(valid, yi * w + xi, 0), fy * fx * vm, valid, sy * fx * vm, sx * fy * vm)
        )
    return out


def _sample_abstract(x: ShapedArray, py: ShapedArray, px: ShapedArray, *, mode: str) -> ShapedArray:
    return ShapedArray((x.shape[0], x.shape[1], py.shape[1]), x.dtype)


def _gather_cols(xp: Any, x: Any, idx: Any) -> Any:
    m, c = x.shape[:2]
    flat = x.reshape(m, c, -1)
    return xp.take_along_axis(flat, xp.broadcast_to(idx[:, None, :], (m, c, idx.shape[1])), 2)


def _sample_impl(xp: Any, x: Any, py: Any, px: Any, *, mode: str) -> Any:
    h, w = x.shape[2:]
    out = xp.zeros((x.shape[0], x.shape[1], py.shape[1]), x.dtype)
    for idx, wt, _, _, _ in _corners(xp, py, px, h, w, mode):
        out += _gather_cols(xp, x, idx) * wt[:, None, :].astype(x.dtype)
    return out


def _sample_scatter_abstract(
    g: ShapedArray, py: ShapedArray, px: ShapedArray, *, shape: tuple[int, ...], mode: str
) -> ShapedArray:
    return ShapedArray(shape, g.dtype)


def _sample_scatter_impl(
    xp: Any, g: Any, py: Any, px: Any, *, shape: tuple[int, ...], mode: str
) -> Any:
    m, c, h, w = shape
    out = xp.zeros((m, c, h * w), g.dtype)
    rows = xp.broadcast_to(xp.arange(m)[:, None, None], g.shape)
    chans = xp.broadcast_to(xp.arange(c)[None, :, None], g.shape)
    for idx, wt, _, _, _ in _corners(xp, py, px, h, w, mode):
        full_idx = xp.broadcast_to(idx[:, None, :], g.shape)
        xp.add.at(out, (rows, chans, full_idx), g * wt[:, None, :].astype(g.dtype))
    return out.reshape(shape)


def _coord_grad_abstract(
    x: ShapedArray, py: ShapedArray, px: ShapedArray, g: ShapedArray, *, mode: str
) -> tuple[ShapedArray, ShapedArray]:
    return ShapedArray(py.shape, py.dtype), ShapedArray(px.shape, px.dtype)


def _coord_grad_impl(xp: Any, x: Any, py: Any, px: Any, g: Any, *, mode: str) -> Any:
    h, w = x.shape[2:]
    dy = xp.zeros(py.shape, py.dtype)
    dx = xp.zeros(px.shape, px.dtype)
    for idx, _, _, wy, wx in _corners(xp, py, px, h, w, mode):
        s = xp.sum(_gather_cols(xp, x, idx) * g, axis=1)
        dy += s * wy
        dx += s * wx
    return dy, dx


def _sample_vjp(
    g: Tensor, x: Tensor, py: Tensor, px: Tensor, *, out: Tensor, mode: str
) -> tuple[Any, Any, Any]:
    coords: list[Any] = []

    def coord(i: int) -> Tensor:
        if not coords:
            coords.extend(sample_coord_grad_p.bind(x, py, px, g, mode=mode))
        return coords[i]

    return (
        lambda: sample_scatter_p.bind(g, py, px, shape=x.shape, mode=mode),
        lambda: coord(0),
        lambda: coord(1),
    )


def _sample_scatter_vjp(
    gg: Tensor, g: Tensor, py: Tensor, px: Tensor, *, out: Tensor, shape: tuple[int, ...], mode: str
) -> tuple[Any, Any, Any]:
    # <gg, S^T(g; p)> = <S(gg; p), g>
    coords: list[Any] = []

    def coord(i: int) -> Tensor:
        if not coords:
            coords.extend(sample_coord_grad_p.bind(gg, py, px, g, mode=mode))
        return coords[i]

    return (lambda: sample_p.bind(gg, py, px, mode=mode), lambda: coord(0), lambda: coord(1))


sample_p = Primitive(
    "bilinear_sample", "opaque", _sample_abstract, impl=_sample_impl, vjp=_sample_vjp
)
sample_scatter_p = Primitive(
    "bilinear_sample_scatter",
    "opaque",
    _sample_scatter_abstract,
    impl=_sample_scatter_impl,
    vjp=_sample_scatter_vjp,
)
# Its own derivative (second order in the sampling coordinates) is not defined: it is zero
# almost everywhere except the bilinear cross term, which the vjps above do not need.
sample_coord_grad_p = Primitive(
    "bilinear_sample_coord_grad",
    "opaque",
    _coord_grad_abstract,
    impl=_coord_grad_impl,
    multiple_results=True,
)


def grid_sample(
    input_x: Any,
    grid: Any,
    interpolation_mode: str = "bilinear",
    padding_mode: str = "zeros",
    align_corners: bool = False,
) -> Tensor:
    """Sample (N, C, H, W) at the normalized points grid (N, Ho, Wo, 2) = (x, y) in [-1, 1]:
    out (N, C, Ho, Wo). ``padding_mode``: "zeros" (outside reads 0) or "border" (clamped).
    Gradients flow to the input and to the grid."""
    op = "grid_sample"
    x, gr = _float_pair(op, input_x, grid, ("input_x", "grid"))
    _check_ndim(op, "input_x", x, (4,), _LAYOUT[2])
    if gr.ndim != 4 or gr.shape[0] != x.shape[0] or gr.shape[3] != 2:
        raise op_error(op, "grid", gr, f"a tensor of shape ({x.shape[0]}, H_out, W_out, 2)")
    if interpolation_mode not in ("bilinear", "nearest"):
        raise op_error(op, "interpolation_mode", interpolation_mode, "'bilinear' or 'nearest'")
    if padding_mode not in ("zeros", "border"):
        raise op_error(op, "padding_mode", padding_mode, "'zeros' or 'border'")
    n, c, h, w = x.shape
    ho, wo = gr.shape[1:3]
    coords = []
    for k, size in ((0, w), (1, h)):
        g = reshape(getitem(gr, (Ellipsis, k)), (n, ho * wo))
        v = (g + 1) * ((size - 1) / 2) if align_corners else ((g + 1) * size - 1) / 2
        if padding_mode == "border":
            v = minimum(maximum(v, 0.0), float(size - 1))
        coords.append(v)
    out = sample_p.bind(x, coords[1], coords[0], mode=interpolation_mode)
    return reshape(out, (n, c, ho, wo))


def deformable_conv2d(
    x: Any,
    weight: Any,
    offsets: Any,
    kernel_size: Any,
    strides: Any,
    padding: Any,
    bias: Any = None,
    dilations: Any = (1, 1, 1, 1),
    groups: int = 1,
    deformable_groups: int = 1,
    modulated: bool = True,
) -> Tensor:
    """Deformable convolution (v2 when ``modulated``):
    y(p) = sum_k w_k * x(p + p_k + dp_k) * m_k, sampled bilinearly.

    ``offsets`` is (N, 3 * deformable_groups * KH * KW, H_out, W_out): the x offsets, then
    the y offsets, then the masks, each ordered (deformable group, kh, kw). ``strides`` and
    ``dilations`` are NCHW 4-tuples (N and C entries 1); ``padding`` is (top, bottom, left,
    right).
    """
    op = "deformable_conv2d"
    xt, w = _float_pair(op, x, weight, ("x", "weight"))
    off = cast(_tensor(op, "offsets", offsets), xt.dtype)
    _check_ndim(op, "x", xt, (4,), _LAYOUT[2])
    _check_ndim(op, "weight", w, (4,), "C_out, C_in / groups, KH, KW")
    k = _ints(op, "kernel_size", kernel_size, 2)
    st4 = _ints(op, "strides", strides, 4)
    dl4 = _ints(op, "dilations", dilations, 4)
    if st4[:2] != (1, 1) or dl4[:2] != (1, 1):
        raise op_error(op, "strides", strides, "1 for the N and C entries (NCHW order)")
    pad4 = _ints(op, "padding", padding, 4, minimum=0)
    groups = check_int(op, "groups", groups, 1)
    dg = check_int(op, "deformable_groups", deformable_groups, 1)
    n, c, h, wd = xt.shape
    if w.shape[2:] != k:
        raise op_error(op, "weight", w, f"kernel dimensions {k} (kernel_size)")
    if c % groups or w.shape[0] % groups or w.shape[1] * groups != c:
        raise ValueError(
            f"{op}: argument 'weight' has shape {w.shape}, which does not match argument "
            f"'x' with {c} channels and groups={groups}"
        )
    if c % dg:
        raise op_error(op, "deformable_groups", dg, f"a divisor of the {c} input channels")
    sh, sw, dh, dw = st4[2], st4[3], dl4[2], dl4[3]
    ho = _out_size(h, k[0], sh, pad4[0], pad4[1], dh)
    wo = _out_size(wd, k[1], sw, pad4[2], pad4[3], dw)
    kk = k[0] * k[1]
    if ho < 1 or wo < 1:
        raise op_error(op, "x", xt, f"a spatial size of at least the kernel {k}")
    if off.shape != (n, 3 * dg * kk, ho, wo):
        raise op_error(op, "offsets", off, f"a tensor of shape {(n, 3 * dg * kk, ho, wo)}")
    parts = reshape(off, (n, 3, dg, kk, ho, wo))
    ki, kj = np.divmod(np.arange(kk), k[1])
    base_y = (ki * dh)[:, None, None] + (np.arange(ho) * sh - pad4[0])[None, :, None]
    base_x = (kj * dw)[:, None, None] + (np.arange(wo) * sw - pad4[2])[None, None, :]
    py = getitem(parts, (slice(None), 1)) + _const(xt, np.broadcast_to(base_y, (kk, ho, wo)))
    px = getitem(parts, (slice(None), 0)) + _const(xt, np.broadcast_to(base_x, (kk, ho, wo)))
    length = ho * wo
    xs = reshape(xt, (n * dg, c // dg, h, wd))
    cols = sample_p.bind(
        xs, reshape(py, (n * dg, kk * length)), reshape(px, (n * dg, kk * length)), mode="bilinear"
    )
    cols = reshape(cols, (n, dg, c // dg, kk, length))
    if modulated:
        mask = reshape(getitem(parts, (slice(None), 2)), (n, dg, 1, kk, length))
        cols = cols * mask
    cols = reshape(cols, (n, groups, (c // groups) * kk, length))
    wm = reshape(w, (groups, w.shape[0] // groups, (c // groups) * kk))
    y = reshape(matmul(wm, cols), (n, w.shape[0], ho, wo))
    return _add_bias(op, y, bias)


# ---- CTC greedy decoding, candidate sampling --------------------------------------------


def ctc_greedy_decoder(inputs: Any, sequence_length: Any, merge_repeated: bool = True) -> Any:
    """Greedy (best-path) CTC decoding of logits (max_time, batch, num_classes); the blank is
    class num_classes - 1. Returns (decoded_indices (total, 2), decoded_values (total,),
    decoded_shape (2,), log_probability (batch, 1)); the first three are int64 and
    log_probability is minus the sum of each step's best logit."""
    op = "ctc_greedy_decoder"
    x = _float(op, "inputs", inputs)
    _check_ndim(op, "inputs", x, (3,), "max_time, batch_size, num_classes")
    sl = _tensor(op, "sequence_length", sequence_length)
    t_max, batch, ncls = x.shape
    if sl.dtype.category != 1 or sl.shape != (batch,):
        raise op_error(op, "sequence_length", sl, f"an integer tensor of shape ({batch},)")
    # The output length depends on the data, so decoding runs on host values (like masks).
    logits = x.asnumpy()
    lens = sl.asnumpy().astype(np.int64)
    if np.any(lens < 0) or np.any(lens > t_max):
        raise op_error(op, "sequence_length", lens.tolist(), f"values in [0, {t_max}]")
    blank = ncls - 1
    indices: list[tuple[int, int]] = []
    values: list[int] = []
    logp = np.zeros((batch, 1), np.float64)
    longest = 0
    for b in range(batch):
        steps = logits[: lens[b], b, :]
        best = np.argmax(steps, axis=1) if lens[b] else np.zeros(0, np.int64)
        logp[b, 0] = -np.sum(np.max(steps, axis=1)) if lens[b] else 0.0
        prev = -1
        pos = 0
        for cls in best.tolist():
            if cls != blank and not (merge_repeated and cls == prev):
                indices.append((b, pos))
                values.append(cls)
                pos += 1
            prev = cls
        longest = max(longest, pos)
    dev = x._device
    return (
        Tensor(np.asarray(indices, np.int64).reshape(-1, 2), device=dev),
        Tensor(np.asarray(values, np.int64), device=dev),
        Tensor(np.asarray([batch, longest], np.int64), device=dev),
        Tensor(logp.astype(x.dtype.np), device=dev),
    )


def uniform_candidate_sampler(
    true_classes: Any,
    num_true: int,
    num_sampled: int,
    unique: bool,
    range_max: int,
    seed: int = 0,
    remove_accidental_hits: bool = False,
) -> Any:
    """Sample ``num_sampled`` classes uniformly from [0, range_max) (without repeats when
    ``unique``). Returns (sampled_candidates, true_expected_count (batch, num_true),
    sampled_expected_count (num_sampled,)); expected counts are num_tries * p, or
    1 - (1 - p) ** num_tries when unique (p = 1 / range_max). With
    ``remove_accidental_hits`` classes in ``true_classes`` are never sampled. ``seed`` 0
    draws from the global generator."""
    from ..random_state import generator

    op = "uniform_candidate_sampler"
    tc = _tensor(op, "true_classes", true_classes)
    num_true = check_int(op, "num_true", num_true, 1)
    num_sampled = check_int(op, "num_sampled", num_sampled, 1)
    range_max = check_int(op, "range_max", range_max, 1)
    seed = check_int(op, "seed", seed, 0)
    for name, v in (("unique", unique), ("remove_accidental_hits", remove_accidental_hits)):
        if not isinstance(v, (bool, np.bool_)):
            raise op_error(op, name, v, "a bool", TypeError)
    if tc.ndim != 2 or tc.shape[1] != num_true or tc.dtype.category != 1:
        raise op_error(op, "true_classes", tc, f"an integer tensor of shape (batch, {num_true})")
    true_np = tc.asnumpy().astype(np.int64)
    if np.any(true_np < 0) or np.any(true_np >= range_max):
        raise op_error(op, "true_classes", tc, f"values in [0, {range_max})")
    pool = np.arange(range_max)
    if remove_accidental_hits:
        pool = np.setdiff1d(pool, true_np)
    if unique and num_sampled > len(pool):
        raise op_error(
            op, "num_sampled", num_sampled, f"at most the {len(pool)} classes available when unique"
        )
    if len(pool) == 0:
        raise op_error(op, "true_classes", tc, "to leave some class to sample")
    rng = np.random.default_rng(seed) if seed else generator(tc._device)
    draw = lambda k: pool[np.asarray(rng.integers(0, len(pool), k)).astype(np.int64)]  # noqa: E731
    if unique:
        picked: list[int] = []
        seen: set[int] = set()
        tries = 0
        while len(picked) < num_sampled:
            for v in draw(num_sampled).tolist():
                tries += 1
                if v not in seen:
                    seen.add(v)
                    picked.append(v)
                    if len(picked) == num_sampled:
                        break
        sampled = np.asarray(picked, np.int64)
    else:
        sampled = draw(num_sampled)
        tries = num_sampled
    p = 1.0 / len(pool)
    expected = tries * p if tries == num_sampled else -math.expm1(tries * math.log1p(-p))
    dev = tc._device
    return (
        Tensor(sampled.astype(tc.dtype.np), device=dev),
        Tensor(np.full(tc.shape, expected, np.float32), device=dev),
        Tensor(np.full((num_sampled,), expected, np.float32), device=dev),
    )


# ---- channel dropout -----------------------------------------------------------------------


def _dropout_nd(op: str, nd: int, x: Any, p: Any) -> tuple[Tensor, Tensor]:
    from ..random_state import generator

    t = _tensor(op, "x", x)
    _check_ndim(op, "x", t, (nd + 2,), _LAYOUT[nd])
    if isinstance(p, bool) or not isinstance(p, (float, int)):
        raise op_error(op, "p", p, "a float", TypeError)
    if not 0.0 <= p <= 1.0:
        raise op_error(op, "p", p, "a float in [0.0, 1.0]")
    if t.dtype.category == 0:
        raise op_error(op, "x", t, "a numeric tensor", TypeError)
    dev = t._device
    keep = generator(dev).random(t.shape[:2] + (1,) * nd) >= p
    mask = Tensor(dev.xp.broadcast_to(keep, t.shape).copy(), device=dev)
    if p >= 1.0:
        return t * 0, mask
    scale = _const(t, np.asarray(1.0 / (1.0 - p)), t.dtype if t.dtype.category == 2 else None)
    out = t * cast(mask, t.dtype) * scale if t.dtype.category == 2 else t * cast(mask, t.dtype)
    return out, mask


def dropout2d(x: Any, p: float = 0.5) -> tuple[Tensor, Tensor]:
    """Zero whole channels of (N, C, H, W) with probability ``p`` and scale the rest by
    1 / (1 - p); returns (output, mask) with a bool mask shaped like ``x``."""
    return _dropout_nd("dropout2d", 2, x, p)


def dropout3d(x: Any, p: float = 0.5) -> tuple[Tensor, Tensor]:
    """Channel dropout for (N, C, D, H, W); see :func:`dropout2d`."""
    return _dropout_nd("dropout3d", 3, x, p)


_ = reduce_sum
