"""Pooling layers (MindSpore 1.8): ``MaxPool1d/2d``, ``AvgPool1d/2d`` and the adaptive
poolings.

``pad_mode="valid"`` (default) pools full windows only; ``"same"`` pads so that
out = ceil(in / stride) (the odd pixel at the end); max pooling pads with -inf and average
pooling averages only the taps inside the input, as MindSpore does.
"""

from __future__ import annotations

from typing import Any

from ... import ops
from ...ops.nn import _same_pads, max_pool_p
from ...tensor import Tensor
from ..cell import Cell
from ._utils import arg_error, check_bool, check_input, check_str, int_tuple

__all__ = [
    "MaxPool1d",
    "MaxPool2d",
    "AvgPool1d",
    "AvgPool2d",
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d",
]


class _Pool(Cell):
    _nd = 2

    def __init__(
        self, kernel_size: Any, stride: Any, pad_mode: str, data_format: str = "NCHW"
    ) -> None:
        super().__init__()
        cls, nd = self.cls_name, self._nd
        self.kernel_size = int_tuple(cls, "kernel_size", kernel_size, nd)
        self.stride = int_tuple(cls, "stride", stride, nd)
        self.pad_mode = check_str(cls, "pad_mode", pad_mode, ("valid", "same"))
        formats = ("NCHW", "NHWC") if nd == 2 else ("NCW",)
        self.format = check_str(cls, "data_format", data_format, formats, lower=False)

    def _input(self, x: Any) -> Tensor:
        nd = self._nd
        layout = self.format if nd == 2 else "N, C, L"
        x = check_input(self.cls_name, x, (nd + 2,), layout, floating=False)
        if x.dtype.category == 0:
            raise TypeError(f"{self.cls_name}: the input expected a numeric Tensor, got bool")
        sp = x.shape[1:3] if self.format == "NHWC" else x.shape[2:]
        if self.pad_mode == "valid" and any(n < k for n, k in zip(sp, self.kernel_size)):
            raise ValueError(
                f"{self.cls_name}: the input's spatial size {tuple(sp)} (shape {x.shape}) is "
                f"smaller than kernel_size {self.kernel_size} with pad_mode 'valid'"
            )
        return x

    def extend_repr(self) -> str:
        ks = self.kernel_size if self._nd > 1 else self.kernel_size[0]
        st = self.stride if self._nd > 1 else self.stride[0]
        return f"kernel_size={ks}, stride={st}, pad_mode={self.pad_mode.upper()}"


def _max_pool(x: Tensor, kernel: tuple[int, ...], stride: tuple[int, ...], mode: str) -> Tensor:
    nd = len(kernel)
    dil = (1,) * nd
    pads = _same_pads(x.shape[2:], kernel, stride, dil) if mode == "same" else ((0, 0),) * nd
    out, _ = max_pool_p.bind(x, kernel=kernel, stride=stride, pads=pads, dilation=dil)
    return out


class MaxPool2d(_Pool):
    """2-d max pooling over ``(N, C, H, W)`` (or NHWC with ``data_format``).

    >>> import numpy as np
    >>> MaxPool2d(2, 2)(Tensor(np.arange(16.0).reshape(1, 1, 4, 4))).shape
    (1, 1, 2, 2)
    """

    _nd = 2

    def __init__(
        self,
        kernel_size: Any = 1,
        stride: Any = 1,
        pad_mode: str = "valid",
        data_format: str = "NCHW",
    ) -> None:
        super().__init__(kernel_size, stride, pad_mode, data_format)

    def construct(self, x: Tensor) -> Tensor:
        x = self._input(x)
        if self.format == "NHWC":
            x = ops.transpose(x, (0, 3, 1, 2))
        y = _max_pool(x, self.kernel_size, self.stride, self.pad_mode)
        return ops.transpose(y, (0, 2, 3, 1)) if self.format == "NHWC" else y


class MaxPool1d(_Pool):
    """1-d max pooling over ``(N, C, L)``."""

    _nd = 1

    def __init__(self, kernel_size: int = 1, stride: int = 1, pad_mode: str = "valid") -> None:
        super().__init__(kernel_size, stride, pad_mode, "NCW")

    def construct(self, x: Tensor) -> Tensor:
        return _max_pool(self._input(x), self.kernel_size, self.stride, self.pad_mode)


class AvgPool2d(_Pool):
    """2-d average pooling over ``(N, C, H, W)`` (or NHWC)."""

    _nd = 2

    def __init__(
        self,
        kernel_size: Any = 1,
        stride: Any = 1,
        pad_mode: str = "valid",
        data_format: str = "NCHW",
    ) -> None:
        super().__init__(kernel_size, stride, pad_mode, data_format)

    def construct(self, x: Tensor) -> Tensor:
        x = self._input(x)
        return ops.avg_pool2d(x, self.kernel_size, self.stride, self.pad_mode, self.format)


class AvgPool1d(_Pool):
    """1-d average pooling over ``(N, C, L)``."""

    _nd = 1

    def __init__(self, kernel_size: int = 1, stride: int = 1, pad_mode: str = "valid") -> None:
        super().__init__(kernel_size, stride, pad_mode, "NCW")

    def construct(self, x: Tensor) -> Tensor:
        x = self._input(x)
        x4 = ops.reshape(x, x.shape[:2] + (1, x.shape[2]))
        y = ops.avg_pool2d(x4, (1,) + self.kernel_size, (1,) + self.stride, self.pad_mode, "NCHW")
        return ops.reshape(y, y.shape[:2] + (y.shape[3],))


def _output_size(cls: str, output_size: Any, nd: int) -> tuple[Any, ...]:
    items = tuple(output_size) if isinstance(output_size, (tuple, list)) else (output_size,) * nd
    if len(items) != nd or any(
        v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1) for v in items
    ):
        raise arg_error(
            cls, "output_size", output_size, f"a positive int or a tuple of {nd} (or None)"
        )
    return items


class AdaptiveAvgPool2d(Cell):
    """Average pooling to a fixed ``output_size`` (int, pair, None keeps that size): window
    ``i`` spans ``[floor(i * H / oh), ceil((i + 1) * H / oh))``."""

    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = _output_size("AdaptiveAvgPool2d", output_size, 2)

    def construct(self, x: Tensor) -> Tensor:
        x = check_input("AdaptiveAvgPool2d", x, (3, 4), "C, H, W or N, C, H, W")
        return ops.adaptive_avg_pool2d(x, self.output_size)

    def extend_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool2d(Cell):
    """Max pooling to a fixed ``output_size`` (windows as in :class:`AdaptiveAvgPool2d`);
    ``return_indices`` also returns each maximum's flat index ``h * W + w``."""

    def __init__(self, output_size: Any, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size = _output_size("AdaptiveMaxPool2d", output_size, 2)
        self.return_indices = check_bool("AdaptiveMaxPool2d", "return_indices", return_indices)

    def construct(self, x: Tensor) -> Any:
        x = check_input("AdaptiveMaxPool2d", x, (3, 4), "C, H, W or N, C, H, W")
        return ops.adaptive_max_pool2d(x, self.output_size, self.return_indices)

    def extend_repr(self) -> str:
        return f"output_size={self.output_size}, return_indices={self.return_indices}"


class AdaptiveAvgPool1d(Cell):
    """Adaptive average pooling of ``(N, C, L)`` to length ``output_size``."""

    def __init__(self, output_size: int) -> None:
        super().__init__()
        self.output_size = _output_size("AdaptiveAvgPool1d", output_size, 1)[0]

    def construct(self, x: Tensor) -> Tensor:
        x = check_input("AdaptiveAvgPool1d", x, (3,), "N, C, L")
        y = ops.adaptive_avg_pool2d(
            ops.reshape(x, x.shape[:2] + (1, x.shape[2])), (1, self.output_size)
        )
        return ops.reshape(y, y.shape[:2] + (y.shape[3],))

    def extend_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1d(Cell):
    """Adaptive max pooling of ``(N, C, L)`` to length ``output_size``."""

    def __init__(self, output_size: int) -> None:
        super().__init__()
        self.output_size = _output_size("AdaptiveMaxPool1d", output_size, 1)[0]

    def construct(self, x: Tensor) -> Tensor:
        x = check_input("AdaptiveMaxPool1d", x, (3,), "N, C, L")
        y = ops.adaptive_max_pool2d(
            ops.reshape(x, x.shape[:2] + (1, x.shape[2])), (1, self.output_size)
        )
        return ops.reshape(y, y.shape[:2] + (y.shape[3],))

    def extend_repr(self) -> str:
        return f"output_size={self.output_size}"
