"""Image-shaped layers MindSpore 1.8 scripts use: ``Pad``, ``ResizeBilinear``, ``Unfold``,
``InstanceNorm1d``/``InstanceNorm2d``; built from differentiable ops (gather, interpolate,
unfold, reductions), so gradients come from their rules."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import ops
from ...tensor import Tensor
from ..cell import Cell
from ._utils import arg_error, check_bool, check_float, check_input, check_int, make_param

__all__ = ["Pad", "ResizeBilinear", "Unfold", "InstanceNorm1d", "InstanceNorm2d"]


def _reflect_index(n: int, lo: int, hi: int, symmetric: bool) -> np.ndarray:
    """Source index of every padded position along an axis of length ``n``."""
    idx = np.arange(-lo, n + hi)
    if symmetric:
        period = 2 * n
        m = np.mod(idx, period)
        return np.where(m < n, m, period - 1 - m)
    period = 2 * (n - 1)
    m = np.mod(idx, period) if period else np.zeros_like(idx)
    return np.where(m < n, m, period - m)


class Pad(Cell):
    """``Pad(paddings, mode="CONSTANT")``: ``paddings[i] = (before, after)`` for dimension
    ``i``; ``"REFLECT"`` mirrors without the edge, ``"SYMMETRIC"`` with it (MindSpore's)."""

    def __init__(self, paddings: Any, mode: str = "CONSTANT") -> None:
        super().__init__()
        if not isinstance(paddings, (tuple, list)) or not all(
            isinstance(p, (tuple, list)) and len(p) == 2 and all(
                isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in p)
            for p in paddings
        ):  # fmt: skip
            raise arg_error("Pad", "paddings", paddings, "a tuple of (before, after) int pairs")
        if mode.upper() not in ("CONSTANT", "REFLECT", "SYMMETRIC"):
            raise arg_error("Pad", "mode", mode, "'CONSTANT', 'REFLECT' or 'SYMMETRIC'")
        self.paddings = tuple(tuple(p) for p in paddings)
        self.mode = mode.upper()

    def construct(self, x: Tensor) -> Tensor:
        if len(self.paddings) != x.ndim:
            raise ValueError(
                f"Pad: 'paddings' has {len(self.paddings)} pairs but the input has {x.ndim} "
                f"dims (shape {x.shape})"
            )
        if self.mode == "CONSTANT":
            return ops.pad(x, self.paddings)
        for axis, (lo, hi) in enumerate(self.paddings):
            n = x.shape[axis]
            limit = n if self.mode == "SYMMETRIC" else n - 1
            if lo > limit or hi > limit:
                raise ValueError(
                    f"Pad: in {self.mode} mode the padding of dim {axis} must be at most "
                    f"{limit} for a size of {n}, got {(lo, hi)}"
                )
            if lo or hi:
                idx = _reflect_index(n, lo, hi, self.mode == "SYMMETRIC").astype(np.int32)
                x = ops.gather(x, Tensor(idx), axis)
        return x


class ResizeBilinear(Cell):
    """``ResizeBilinear(half_pixel_centers=False)(x, size=None, scale_factor=None,
    align_corners=False)``: bilinear resize of an (N, C, H, W) input."""

    def __init__(self, half_pixel_centers: bool = False) -> None:
        super().__init__()
        self.half_pixel_centers = check_bool("ResizeBilinear", "half_pixel_centers",
                                             half_pixel_centers)  # fmt: skip

    def construct(
        self, x: Tensor, size: Any = None, scale_factor: Any = None, align_corners: bool = False
    ) -> Tensor:
        x = check_input("ResizeBilinear", x, (4,), "(N, C, H, W)")
        if (size is None) == (scale_factor is None):
            raise ValueError("ResizeBilinear: give exactly one of 'size' and 'scale_factor'")
        if align_corners and self.half_pixel_centers:
            raise ValueError(
                "ResizeBilinear: align_corners and half_pixel_centers exclude each other"
            )
        if size is None:
            s = check_int("ResizeBilinear", "scale_factor", scale_factor, 1)
            size = (x.shape[2] * s, x.shape[3] * s)
        mode = (
            "align_corners"
            if align_corners
            else "half_pixel"
            if self.half_pixel_centers
            else "asymmetric"
        )
        return ops.interpolate(x, sizes=tuple(size), coordinate_transformation_mode=mode,
                               mode="bilinear")  # fmt: skip


def _four(cls: str, arg: str, value: Any) -> tuple[int, int]:
    if (
        not isinstance(value, (tuple, list))
        or len(value) != 4
        or value[0] != 1
        or value[3] != 1
        or not all(isinstance(v, int) and v >= 1 for v in value)
    ):
        raise arg_error(cls, arg, value, "[1, row, col, 1] with positive ints")
    return int(value[1]), int(value[2])


class Unfold(Cell):
    """``Unfold(ksizes, strides, rates, padding="valid")``: image patches as channels.

    (N, C, H, W) -> (N, kh*kw*C, out_h, out_w), patch-position-major as MindSpore (and
    TensorFlow's extract_image_patches) order them; ``ksizes``/``strides``/``rates`` are
    ``[1, row, col, 1]``; ``"same"`` pads so that out = ceil(in / stride).
    """

    def __init__(self, ksizes: Any, strides: Any, rates: Any, padding: str = "valid") -> None:
        super().__init__()
        self.ksizes = _four("Unfold", "ksizes", ksizes)
        self.strides = _four("Unfold", "strides", strides)
        self.rates = _four("Unfold", "rates", rates)
        if padding.lower() not in ("valid", "same"):
            raise arg_error("Unfold", "padding", padding, "'valid' or 'same'")
        self.padding = padding.lower()

    def construct(self, x: Tensor) -> Tensor:
        x = check_input("Unfold", x, (4,), "(N, C, H, W)")
        n, c, h, w = x.shape
        pads = [0, 0]
        outs = []
        for i, size in enumerate((h, w)):
            k, s, r = self.ksizes[i], self.strides[i], self.rates[i]
            eff = (k - 1) * r + 1
            if self.padding == "same":
                out = -(-size // s)
                total = max((out - 1) * s + eff - size, 0)
                pads[i] = total
            else:
                out = (size - eff) // s + 1
                if out < 1:
                    raise ValueError(f"Unfold: the input {x.shape} is smaller than a patch")
            outs.append(out)
        if any(pads):
            x = ops.pad(x, ((0, 0), (0, 0), (pads[0] // 2, pads[0] - pads[0] // 2),
                            (pads[1] // 2, pads[1] - pads[1] // 2)))  # fmt: skip
        cols = ops.unfold(x, self.ksizes, self.rates, 0, self.strides)  # (N, C*kh*kw, L)
        kk = self.ksizes[0] * self.ksizes[1]
        cols = ops.reshape(cols, (n, c, kk, outs[0], outs[1]))
        cols = ops.transpose(cols, (0, 2, 1, 3, 4))
        return ops.reshape(cols, (n, kk * c, outs[0], outs[1]))


class _InstanceNorm(Cell):
    _nd = 2

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float = 0.1,
        affine: bool = True,
        gamma_init: Any = "ones",
        beta_init: Any = "zeros",
    ) -> None:
        super().__init__()
        cls = self.cls_name
        self.num_features = check_int(cls, "num_features", num_features, 1)
        self.eps = check_float(cls, "eps", eps, 0.0, None, low_open=True)
        self.momentum = check_float(cls, "momentum", momentum, 0.0, 1.0)
        self.affine = check_bool(cls, "affine", affine)
        shape = (self.num_features,)
        self.gamma = make_param(cls, "gamma_init", gamma_init, shape, "gamma",
                                requires_grad=self.affine)  # fmt: skip
        self.beta = make_param(cls, "beta_init", beta_init, shape, "beta",
                               requires_grad=self.affine)  # fmt: skip

    def construct(self, x: Tensor) -> Tensor:
        nd = self._nd + 2
        layout = "(N, C, L)" if self._nd == 1 else "(N, C, H, W)"
        x = check_input(self.cls_name, x, (nd,), layout)
        if x.shape[1] != self.num_features:
            raise ValueError(
                f"{self.cls_name}: the input has {x.shape[1]} channels, expected "
                f"num_features={self.num_features}"
            )
        axes = tuple(range(2, nd))
        mean = ops.reduce_mean(x, axes, True)
        centred = x - mean
        var = ops.reduce_mean(centred * centred, axes, True)
        y = centred * ops.rsqrt(var + self.eps)
        shape = (1, self.num_features) + (1,) * self._nd
        return y * ops.reshape(self.gamma, shape) + ops.reshape(self.beta, shape)

    def extend_repr(self) -> str:
        return f"num_features={self.num_features}, eps={self.eps}, affine={self.affine}"


class InstanceNorm1d(_InstanceNorm):
    """Normalize each (sample, channel) of an (N, C, L) input over L, then scale by
    ``gamma`` and shift by ``beta`` (per channel)."""

    _nd = 1


class InstanceNorm2d(_InstanceNorm):
    """Normalize each (sample, channel) of an (N, C, H, W) input over H, W, then scale by
    ``gamma`` and shift by ``beta`` (per channel)."""

    _nd = 2
