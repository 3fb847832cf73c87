"""Convolutions of every rank: im2col/col2im and the conv, conv_transpose, weight-grad prims."""

from __future__ import annotations

import itertools
import math
import weakref
from collections import OrderedDict
from functools import partial
from typing import Any

import numpy as np

from ..._backend import is_host
from ..._primitive import _STATE, Primitive, ShapedArray
from ...errors import check_int, op_error
from ...kernels.cpu import blas
from ...tensor import Tensor
from .._core import as_tensor, cast, reshape
from ._common import _LAYOUT, Pads, _check_ndim, _conv_pads, _float_pair, _ints, _out_spatial

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
        from ...kernels.cpu.conv import im2col2d

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
        from ...kernels.cpu.conv import col2im2d

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


# ---- per-image kernels (CPU, 1-d and 2-d) ------------------------------------------------


def _per_image(xp: Any, fast: bool, n: int, *arrays: Any) -> Any:
    """The dtype the per-image kernels (:mod:`...kernels.cpu.conv_images`) run in, or None
    when the batch-wide im2col path runs instead: not on the CPU, a BLAS without CBLAS, or
    fewer images than threads (one image's product is then better split by the BLAS)."""
    if not fast or not is_host(xp):
        return None
    from ...kernels.cpu import conv_images
    from ...kernels.cpu._rows import max_blocks

    dt = np.result_type(*arrays)
    work = np.dtype(np.float64) if dt == np.float64 else np.dtype(np.float32)
    if n < max_blocks() or not conv_images.available(work):
        return None
    return work


def _as_2d(
    nd: int, stride: tuple[int, ...], pads: Pads, dilation: tuple[int, ...]
) -> tuple[int, int, int, int, int, int]:
    """(stride h, w, low pad h, w, dilation h, w) of a 1-d or 2-d convolution (1-d: height 1)."""
    if nd == 1:
        return (1, stride[0], 0, pads[0][0], 1, dilation[0])
    return (stride[0], stride[1], pads[0][0], pads[1][0], dilation[0], dilation[1])


def _image_4d(a: Any, nd: int, work: Any) -> Any:
    """A C-contiguous (N, C, H, W) array of dtype ``work`` (1-d inputs get height 1)."""
    a = np.ascontiguousarray(a, dtype=work)
    return a[:, :, None, :] if nd == 1 else a


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


# The weight gradient needs the forward pass's columns again. Recomputing them was a quarter
# of a LeNet/ResNet-20 step (benchmarks/bench_lenet.py profile), so the forward remembers
# the last few (keyed by the input array, held weakly) and the weight gradient reuses them.
# The forward always recomputes, so a buffer changed in place never yields stale columns.
# The memo is bounded in bytes, not only in entries: a ResNet-20 step at batch 64 kept every
# layer's columns (up to 38 MB each) until its backward, 850 MiB against PyTorch's 217 MiB
# for the whole step (issue 24 caps a step at 1.5x PyTorch's peak). Columns larger than the
# budget are not kept (the weight gradient rebuilds them), and an entry goes as soon as its
# input array is freed.
_COLS_MEMO: OrderedDict[tuple[Any, ...], tuple[Any, Any]] = OrderedDict()
_COLS_MEMO_SIZE = 32
_COLS_MEMO_BYTES = 32 << 20


def _memo_key(x: Any, *params: Any) -> tuple[Any, ...]:
    return (id(x), x.shape, str(x.dtype), *params)


def _memo_bytes() -> int:
    return sum(cols.nbytes for _, cols in list(_COLS_MEMO.values()))


def _remember_cols(x: Any, key: tuple[Any, ...], cols: Any) -> None:
    _COLS_MEMO.pop(key, None)
    if cols.nbytes > _COLS_MEMO_BYTES:
        return
    try:
        ref = weakref.ref(x, lambda r, key=key: _forget(key, r))
    except TypeError:  # arrays that do not support weak references: no memo
        return
    _COLS_MEMO[key] = (ref, cols)
    while len(_COLS_MEMO) > _COLS_MEMO_SIZE or _memo_bytes() > _COLS_MEMO_BYTES:
        _COLS_MEMO.popitem(last=False)


def _forget(key: tuple[Any, ...], ref: Any) -> None:
    """Drop ``key``'s columns once their input is freed (unless a newer entry took the key)."""
    hit = _COLS_MEMO.get(key)
    if hit is not None and hit[0] is ref:
        del _COLS_MEMO[key]


def _recall_cols(x: Any, key: tuple[Any, ...]) -> Any:
    hit = _COLS_MEMO.get(key)
    if hit is not None and hit[0]() is x:
        return hit[1]
    return None


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
    if n * length == 0 or x.size == 0 or w.size == 0:  # empty batch/output: an empty result
        return xp.zeros((n, cout) + out_sp, xp.result_type(x.dtype, w.dtype))
    nd = len(kernel)
    work = _per_image(xp, fast, n, x, w) if nd <= 2 else None
    if work is not None:
        from ...kernels.cpu.conv_images import conv2d_images

        dt = np.result_type(x, w)
        out = conv2d_images(
            _image_4d(x, nd, work),
            _image_4d(w, nd, work),
            _as_2d(nd, stride, pads, dilation),
            groups,
            (1,) + out_sp if nd == 1 else out_sp,
        )
        return out.reshape((n, cout) + out_sp).astype(dt, copy=False)
    cols = _im2col(xp, x, kernel, stride, pads, dilation, out_sp, fast)
    _remember_cols(x, _memo_key(x, kernel, stride, pads, dilation, out_sp, fast), cols)
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
    benchmarks/bench_conv2d.py, so each group gets its own 2-d product (on the CPU split over
    Sporeling's threads, :mod:`...kernels.cpu.blas`).
    """
    mm = blas.matmul if is_host(xp) else xp.matmul
    out = xp.empty((a.shape[0], a.shape[1], b.shape[2]), dtype=xp.result_type(a, b))
    for i in range(a.shape[0]):
        mm(a[i], b[i], out=out[i])
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
    if g.size == 0:  # an empty batch
        return xp.zeros((n, cin_g * groups) + tuple(in_shape), g.dtype)
    nd = len(kernel)
    work = _per_image(xp, fast, n, g, w) if nd <= 2 else None
    if work is not None:
        from ...kernels.cpu.conv_small_grad import data_grad_images

        shape = (n, cin_g * groups) + ((1,) if nd == 1 else ()) + tuple(in_shape)
        dx = data_grad_images(
            _image_4d(g, nd, work),
            _image_4d(w, nd, work),
            _as_2d(nd, stride, pads, dilation),
            groups,
            shape,
        )
        return dx.reshape((n, cin_g * groups) + tuple(in_shape)).astype(g.dtype, copy=False)
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
    if g.size == 0 or x.size == 0:  # an empty batch: no contribution
        return xp.zeros((g.shape[1], c // groups) + kernel, x.dtype)
    nd = len(kernel)
    work = _per_image(xp, fast, n, x, g) if nd <= 2 else None
    if work is not None:
        from ...kernels.cpu.conv_small_grad import weight_grad_images

        dw = weight_grad_images(
            _image_4d(x, nd, work),
            _image_4d(g, nd, work),
            _as_2d(nd, stride, pads, dilation),
            groups,
            (1,) + kernel if nd == 1 else kernel,
        )
        return dw.reshape((g.shape[1], c // groups) + kernel).astype(x.dtype, copy=False)
    cols = _recall_cols(x, _memo_key(x, kernel, stride, pads, dilation, out_sp, fast))
    if cols is None:
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
    relu: bool = False,
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
    if (
        len(_STATE) == 1  # eager (graph mode keeps conv and add, which its fuser combines)
        and isinstance(bias, Tensor)
        and bias._data.dtype == x._data.dtype
        and bias.shape == (w.shape[0],)
    ):
        from .conv_bias import conv_bias_p  # the bias added into the result in place

        p = {"stride": st, "pads": pads, "dilation": dil, "groups": groups}
        return conv_bias_p.bind(x, w, bias, **p, **({"relu": True} if relu else {}))
    y = _add_bias(op, conv_p.bind(x, w, stride=st, pads=pads, dilation=dil, groups=groups), bias)
    if relu:
        from ..activation import relu as _relu

        y = _relu(y)
    return y


def conv2d_relu(
    input: Any,  # noqa: A002
    weight: Any,
    bias: Any,
    stride: Any,
    pad_mode: str,
    padding: Any,
    dilation: Any,
    groups: int,
) -> Tensor:
    """``relu(conv2d(...))`` (not a public op: ``nn.Conv2dBnAct`` without BN and with a
    ReLU calls it): in eager mode with a bias of the input's dtype one primitive adds the
    bias and applies the ReLU in one pass over the conv's fresh result."""
    return _conv_nd(
        "conv2d", 2, input, weight, bias, stride, pad_mode, padding, dilation, groups, relu=True
    )


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
