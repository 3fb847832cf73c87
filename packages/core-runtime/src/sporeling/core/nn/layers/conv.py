"""Convolution layers (MindSpore 1.8): ``Conv1d``, ``Conv2d``, ``Conv3d`` and their
transposes.

Weights use MindSpore's layouts and names: ``Conv2d.weight`` is
``(out_channels, in_channels / group, kh, kw)``, a transposed convolution's weight is
``(in_channels, out_channels / group, *kernel)``; the bias (``has_bias=False`` by default)
is ``(out_channels,)``. ``Conv1d``/``Conv1dTranspose`` keep MindSpore 1.8's 4-d weight
``(..., 1, k)`` (they run as a 2-d convolution over a height of 1), so checkpoints load
unchanged.

``pad_mode``: ``"same"`` (default; out = ceil(in / stride), extra padding at the end),
``"valid"`` (no padding) or ``"pad"`` (``padding`` zeros: an int, or one pair per spatial
dim flattened as ``(top, bottom, left, right)``).
"""

from __future__ import annotations

from typing import Any

from ... import ops
from ...tensor import Tensor
from ..cell import Cell
from ._utils import (
    arg_error,
    check_bool,
    check_channels,
    check_input,
    check_int,
    check_str,
    default_bias_init,
    default_weight_init,
    int_tuple,
    make_param,
)

__all__ = [
    "Conv1d",
    "Conv2d",
    "Conv3d",
    "Conv1dTranspose",
    "Conv2dTranspose",
    "Conv3dTranspose",
]

_LAYOUTS = {1: "N, C, L", 2: "N, C, H, W", 3: "N, C, D, H, W"}


def _padding(cls: str, padding: Any, nd: int, pad_mode: str) -> tuple[int, ...]:
    """``padding`` as ``2 * nd`` ints (lo, hi per dim); non-zero only with pad_mode 'pad'."""
    if isinstance(padding, (tuple, list)):
        vals = int_tuple(cls, "padding", padding, len(padding), minimum=0)
        if len(vals) != 2 * nd:
            raise arg_error(cls, "padding", padding, f"an int or a tuple of {2 * nd} ints")
    else:
        p = check_int(cls, "padding", padding, 0)
        vals = (p,) * (2 * nd)
    if pad_mode != "pad" and any(vals):
        raise arg_error(cls, "padding", padding, f"0 when pad_mode is {pad_mode!r}")
    return vals


class _Conv(Cell):
    """Shared argument handling of the convolution layers."""

    _nd = 2
    _transposed = False

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any,
        pad_mode: str,
        padding: Any,
        dilation: Any,
        group: int,
        has_bias: bool,
        weight_init: Any,
        bias_init: Any,
        data_format: str,
        weight_kernel: tuple[int, ...] | None = None,
    ) -> None:
        super().__init__()
        cls, nd = self.cls_name, self._nd
        self.in_channels = check_int(cls, "in_channels", in_channels, 1)
        self.out_channels = check_int(cls, "out_channels", out_channels, 1)
        self.kernel_size = int_tuple(cls, "kernel_size", kernel_size, nd)
        self.stride = int_tuple(cls, "stride", stride, nd)
        self.dilation = int_tuple(cls, "dilation", dilation, nd)
        self.pad_mode = check_str(cls, "pad_mode", pad_mode, ("same", "valid", "pad"))
        self.padding = _padding(cls, padding, nd, self.pad_mode)
        self.group = check_int(cls, "group", group, 1)
        if self.in_channels % self.group or self.out_channels % self.group:
            raise arg_error(
                cls,
                "group",
                group,
                f"a divisor of both in_channels ({self.in_channels}) and out_channels "
                f"({self.out_channels})",
            )
        self.has_bias = check_bool(cls, "has_bias", has_bias)
        formats = {1: ("NCW",), 2: ("NCHW", "NHWC"), 3: ("NCDHW",)}[nd]
        self.format = check_str(cls, "data_format", data_format, formats, lower=False)
        kernel = weight_kernel or self.kernel_size
        if self._transposed:
            shape = (self.in_channels, self.out_channels // self.group) + kernel
        else:
            shape = (self.out_channels, self.in_channels // self.group) + kernel
        weight_init = default_weight_init(weight_init)  # MindSpore 2.x defaults
        bias_init = default_bias_init(bias_init, shape)
        self.weight = make_param(cls, "weight_init", weight_init, shape, "weight")
        self.bias = (
            make_param(cls, "bias_init", bias_init, (self.out_channels,), "bias")
            if self.has_bias
            else None
        )

    def _pad_arg(self) -> Any:
        return self.padding if self.pad_mode == "pad" else 0

    def _forward(self, fn: Any, x: Tensor, weight: Tensor) -> Tensor:
        """``fn(x, weight, ...)`` with this layer's bias, stride, padding, dilation and group."""
        return fn(
            x,
            weight,
            self.bias,
            self.stride,
            self.pad_mode,
            self._pad_arg(),
            self.dilation,
            self.group,
        )

    def extend_repr(self) -> str:
        ks = self.kernel_size if self._nd > 1 else self.kernel_size[0]
        st = self.stride if self._nd > 1 else self.stride[0]
        dl = self.dilation if self._nd > 1 else self.dilation[0]
        pd = self.padding if self._nd > 1 else self.padding[0]
        return (
            f"input_channels={self.in_channels}, output_channels={self.out_channels}, "
            f"kernel_size={ks}, stride={st}, pad_mode={self.pad_mode}, padding={pd}, "
            f"dilation={dl}, group={self.group}, has_bias={self.has_bias}, "
            f"format={self.format}"
        )


class Conv2d(_Conv):
    """2-d convolution (cross-correlation) over ``(N, C_in, H, W)``:
    ``out[n, j] = bias[j] + sum_k ccor(weight[j, k], x[n, k])``.

    >>> import numpy as np
    >>> Conv2d(1, 2, 3)(Tensor(np.ones((1, 1, 5, 5), np.float32))).shape
    (1, 2, 5, 5)
    """

    _nd = 2

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        pad_mode: str = "same",
        padding: Any = 0,
        dilation: Any = 1,
        group: int = 1,
        has_bias: bool = False,
        weight_init: Any = None,
        bias_init: Any = None,
        data_format: str = "NCHW",
    ) -> None:
        super().__init__(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            pad_mode,
            padding,
            dilation,
            group,
            has_bias,
            weight_init,
            bias_init,
            data_format,
        )

    def construct(self, x: Tensor) -> Tensor:
        x = check_input(self.cls_name, x, (4,), self.format)
        if self.format == "NHWC":
            x = ops.transpose(x, (0, 3, 1, 2))
        check_channels(self.cls_name, x, 1, self.in_channels, "in_channels")
        y = self._forward(ops.conv2d, x, self.weight)
        return ops.transpose(y, (0, 2, 3, 1)) if self.format == "NHWC" else y


class Conv3d(_Conv):
    """3-d convolution over ``(N, C_in, D, H, W)``; ``padding`` is an int or 6 ints
    (head, tail, top, bottom, left, right)."""

    _nd = 3

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        pad_mode: str = "same",
        padding: Any = 0,
        dilation: Any = 1,
        group: int = 1,
        has_bias: bool = False,
        weight_init: Any = None,
        bias_init: Any = None,
        data_format: str = "NCDHW",
    ) -> None:
        super().__init__(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            pad_mode,
            padding,
            dilation,
            group,
            has_bias,
            weight_init,
            bias_init,
            data_format,
        )

    def construct(self, x: Tensor) -> Tensor:
        x = check_input(self.cls_name, x, (5,), self.format)
        check_channels(self.cls_name, x, 1, self.in_channels, "in_channels")
        return self._forward(ops.conv3d, x, self.weight)


class Conv1d(_Conv):
    """1-d convolution over ``(N, C_in, L)``; ``padding`` is an int (both sides) or a
    (left, right) pair. The weight is ``(out_channels, in_channels / group, 1, kernel_size)``
    as in MindSpore 1.8."""

    _nd = 1

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int,
        stride: int = 1,
        pad_mode: str = "same",
        padding: Any = 0,
        dilation: int = 1,
        group: int = 1,
        has_bias: bool = False,
        weight_init: Any = None,
        bias_init: Any = None,
    ) -> None:
        k = check_int("Conv1d", "kernel_size", kernel_size, 1)
        super().__init__(
            in_channels,
            out_channels,
            k,
            check_int("Conv1d", "stride", stride, 1),
            pad_mode,
            padding,
            check_int("Conv1d", "dilation", dilation, 1),
            group,
            has_bias,
            weight_init,
            bias_init,
            "NCW",
            weight_kernel=(1, k),
        )

    def construct(self, x: Tensor) -> Tensor:
        x = check_input(self.cls_name, x, (3,), "N, C, L")
        check_channels(self.cls_name, x, 1, self.in_channels, "in_channels")
        w = ops.reshape(self.weight, self.weight.shape[:2] + (self.kernel_size[0],))
        return self._forward(ops.conv1d, x, w)


def _deconv_length(mode: str, n: int, k: int, s: int, d: int, pad_total: int) -> int:
    """MindSpore 1.8's transposed-convolution output length."""
    kd = k + (k - 1) * (d - 1)
    if mode == "valid":
        return n * s + max(kd - s, 0)
    if mode == "same":
        return n * s
    return n * s - pad_total + kd - s


class _ConvTranspose(_Conv):
    _transposed = True

    def _run(self, x: Tensor, fn: Any, weight: Tensor) -> Tensor:
        nd = self._nd
        x = check_input(self.cls_name, x, (nd + 2,), _LAYOUTS[nd])
        check_channels(self.cls_name, x, 1, self.in_channels, "in_channels")
        target = tuple(
            _deconv_length(
                self.pad_mode,
                n,
                k,
                s,
                d,
                self.padding[2 * i] + self.padding[2 * i + 1],
            )
            for i, (n, k, s, d) in enumerate(
                zip(x.shape[2:], self.kernel_size, self.stride, self.dilation)
            )
        )
        if any(t < 1 for t in target):
            raise ValueError(
                f"{self.cls_name}: an input of shape {x.shape} gives a non-positive output "
                f"size {target} with padding {self.padding}"
            )
        mode = "pad" if self.pad_mode == "pad" else "valid" if self.pad_mode == "valid" else "same"
        return fn(
            x,
            weight,
            self.bias,
            self.stride,
            mode,
            self._pad_arg(),
            0,
            self.dilation,
            self.group,
            (x.shape[0], self.out_channels) + target,
        )


class Conv2dTranspose(_ConvTranspose):
    """2-d transposed convolution (the input gradient of :class:`Conv2d`) over
    ``(N, C_in, H, W)``. Output size per dim: ``in * stride`` ("same"),
    ``in * stride + max(dk - stride, 0)`` ("valid", ``dk`` the dilated kernel) or
    ``in * stride - pad_total + dk - stride`` ("pad"), as in MindSpore 1.8."""

    _nd = 2

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        pad_mode: str = "same",
        padding: Any = 0,
        dilation: Any = 1,
        group: int = 1,
        has_bias: bool = False,
        weight_init: Any = None,
        bias_init: Any = None,
    ) -> None:
        super().__init__(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            pad_mode,
            padding,
            dilation,
            group,
            has_bias,
            weight_init,
            bias_init,
            "NCHW",
        )

    def construct(self, x: Tensor) -> Tensor:
        return self._run(x, ops.conv2d_transpose, self.weight)


class Conv3dTranspose(_ConvTranspose):
    """3-d transposed convolution over ``(N, C_in, D, H, W)`` (output sizes as in
    :class:`Conv2dTranspose`; ``output_padding`` is not supported)."""

    _nd = 3

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        pad_mode: str = "same",
        padding: Any = 0,
        dilation: Any = 1,
        group: int = 1,
        has_bias: bool = False,
        weight_init: Any = None,
        bias_init: Any = None,
        data_format: str = "NCDHW",
    ) -> None:
        super().__init__(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            pad_mode,
            padding,
            dilation,
            group,
            has_bias,
            weight_init,
            bias_init,
            data_format,
        )

    def construct(self, x: Tensor) -> Tensor:
        return self._run(x, ops.conv3d_transpose, self.weight)


class Conv1dTranspose(_ConvTranspose):
    """1-d transposed convolution over ``(N, C_in, L)``; weight
    ``(in_channels, out_channels / group, 1, kernel_size)`` as in MindSpore 1.8."""

    _nd = 1

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int,
        stride: int = 1,
        pad_mode: str = "same",
        padding: Any = 0,
        dilation: int = 1,
        group: int = 1,
        has_bias: bool = False,
        weight_init: Any = None,
        bias_init: Any = None,
    ) -> None:
        k = check_int("Conv1dTranspose", "kernel_size", kernel_size, 1)
        super().__init__(
            in_channels,
            out_channels,
            k,
            check_int("Conv1dTranspose", "stride", stride, 1),
            pad_mode,
            padding,
            check_int("Conv1dTranspose", "dilation", dilation, 1),
            group,
            has_bias,
            weight_init,
            bias_init,
            "NCW",
            weight_kernel=(1, k),
        )

    def construct(self, x: Tensor) -> Tensor:
        w = ops.reshape(self.weight, self.weight.shape[:2] + (self.kernel_size[0],))
        return self._run(x, ops.conv1d_transpose, w)
