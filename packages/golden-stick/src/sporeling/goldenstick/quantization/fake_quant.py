"""Simulated (fake) quantizers: Jacob et al. 2018's min/max nudging with straight-through
gradients, per layer (activations) or per output channel (weights).

``nudge(min, max, ...)`` follows TensorFlow's/MindSpore's FakeQuantWithMinMax: the range is
widened to contain 0, made symmetric if asked, and shifted so that 0.0 is exactly a
quantization level. The forward is ``round((clip(x) - nmin) / scale) * scale + nmin``; the
gradient is 1 where ``nmin <= x <= nmax`` and 0 outside (straight-through estimator).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sporeling.core import Parameter, Tensor, nn, ops
from sporeling.core import dtype as mstype

from ..deploy_runtime import fake_quant_array
from .fq_ops import fake_quant_range, minmax

__all__ = [
    "nudge",
    "nudge_tensors",
    "fake_quant_array",
    "fake_quant",
    "SimulatedFakeQuantizerPerLayer",
    "SimulatedFakeQuantizerPerChannel",
]


def nudge(
    x_min: Any, x_max: Any, num_bits: int = 8, symmetric: bool = False, narrow_range: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(nudged_min, nudged_max, scale, zero_point)`` for ranges ``[x_min, x_max]`` (arrays
    of any shape, computed in float64; the zero point is on the ``[quant_min, quant_max]``
    = ``[narrow, 2**bits - 1]`` unsigned grid)."""
    lo = np.minimum(np.asarray(x_min, np.float64), 0.0)
    hi = np.maximum(np.asarray(x_max, np.float64), 0.0)
    if symmetric:
        a = np.maximum(-lo, hi)
        lo, hi = -a, a
    qmin = 1.0 if narrow_range else 0.0
    qmax = float(2**num_bits - 1)
    scale = (hi - lo) / (qmax - qmin)
    scale = np.where(scale > 0, scale, 1.0)  # an all-zero range: any scale represents it
    if symmetric:
        # the midpoint (127.5 -> 128 for 8 bits) taken exactly: computed from lo / scale it
        # may come out 127.4999..., which puts the grid at [-127, 128] (not an int8 range)
        zp = np.full(np.shape(scale), float(np.ceil((qmin + qmax) / 2)))
    else:
        zp = np.round(np.clip(qmin - lo / scale, qmin, qmax))
    return (qmin - zp) * scale, (qmax - zp) * scale, scale, zp


def nudge_tensors(
    lo: Tensor, hi: Tensor, num_bits: int, symmetric: bool, narrow_range: bool
) -> tuple[Tensor, Tensor, Tensor]:
    """:func:`nudge` in the core's ops (traceable by ``jit``; float64 like :func:`nudge`):
    ``(nmin, nmax, scale)``."""
    lo = ops.minimum(ops.cast(lo, mstype.float64), 0.0)
    hi = ops.maximum(ops.cast(hi, mstype.float64), 0.0)
    if symmetric:
        a = ops.maximum(-lo, hi)
        lo, hi = -a, a
    qmin = 1.0 if narrow_range else 0.0
    qmax = float(2**num_bits - 1)
    scale = (hi - lo) / (qmax - qmin)
    scale = ops.select(scale > 0, scale, ops.ones_like(scale))
    if symmetric:  # the exact midpoint (see nudge)
        zp = float(np.ceil((qmin + qmax) / 2))
        return (qmin - zp) * scale, (qmax - zp) * scale, scale
    zp = ops.round(ops.clip_by_value(qmin - lo / scale, qmin, qmax))
    return (qmin - zp) * scale, (qmax - zp) * scale, scale


def fake_quant(x: Tensor, nmin: Any, nmax: Any, scale: Any) -> Tensor:
    """Differentiable fake quant: forward ``round((clip(x) - nmin) / scale) * scale + nmin``
    (NumPy reference: :func:`fake_quant_array`), gradient 1 inside the (closed) range and 0
    outside. Written in the core's ops, so it traces under ``jit``."""
    f64 = mstype.float64  # as the int8 path computes its levels (float64)
    nmin, nmax, scale = (
        ops.cast(ops.stop_gradient(v if isinstance(v, Tensor) else Tensor(np.asarray(v))), f64)
        for v in (nmin, nmax, scale)
    )
    x64 = ops.cast(x, f64)
    # times the reciprocal, not a division: graph mode's fused kernels may turn x / s into
    # x * (1 / s) (fast-math 'arcp'), which moves ties; eager then computes the same levels
    inv = 1.0 / scale
    out = ops.round((ops.clip_by_value(x64, nmin, nmax) - nmin) * inv) * scale + nmin
    mask = ops.cast(ops.logical_and(x64 >= nmin, x64 <= nmax), x.dtype)
    # value: out; gradient: mask (x - stop_gradient(x) is 0 with derivative 1)
    return ops.stop_gradient(ops.cast(out, x.dtype)) + (x - ops.stop_gradient(x)) * mask


class _FakeQuantizer(nn.Cell):
    """Shared state: observed min/max (``minq``/``maxq``), step count and options."""

    def __init__(
        self,
        num_channels: int,
        ema: bool,
        ema_decay: float,
        symmetric: bool,
        narrow_range: bool,
        num_bits: int,
        quant_delay: int,
    ) -> None:
        super().__init__()
        cls = type(self).__name__
        if not isinstance(num_bits, int) or isinstance(num_bits, bool) or not 1 <= num_bits <= 8:
            raise ValueError(
                f"{cls}: argument 'num_bits' expected an int in [1, 8], got {num_bits!r}"
            )
        if not isinstance(quant_delay, int) or isinstance(quant_delay, bool) or quant_delay < 0:
            raise ValueError(
                f"{cls}: argument 'quant_delay' expected an int >= 0, got {quant_delay!r}"
            )
        if not 0.0 <= float(ema_decay) <= 1.0:
            raise ValueError(
                f"{cls}: argument 'ema_decay' expected a float in [0, 1], got {ema_decay!r}"
            )
        self.ema = bool(ema)
        self.ema_decay = float(ema_decay)
        self.symmetric = bool(symmetric)
        self.narrow_range = bool(narrow_range)
        self.num_bits = num_bits
        self.quant_delay = quant_delay
        self.num_channels = num_channels
        self.minq = Parameter(np.zeros(num_channels, np.float32), name="minq", requires_grad=False)
        self.maxq = Parameter(np.zeros(num_channels, np.float32), name="maxq", requires_grad=False)
        # training steps seen, a Parameter so that a jit-compiled step counts too
        self.step_count = Parameter(np.zeros(1, np.float32), name="step_count", requires_grad=False)

    @property
    def steps(self) -> int:
        return int(self.step_count.asnumpy()[0])

    def _count(self) -> Tensor | None:
        """Count a training step; returns the new count (a value: a Parameter is never
        read after its update in the same call, so graph mode cannot reorder the two), or
        None where nothing reads it (no quant_delay, no EMA: one in-place add)."""
        if self.quant_delay == 0 and not self.ema:
            ops.assign_add(self.step_count, 1.0)
            return None
        steps = ops.stop_gradient(self.step_count + 1.0)
        ops.assign(self.step_count, steps)
        return steps

    def _observe(self, lo: Tensor, hi: Tensor, steps: Tensor | None) -> tuple[Tensor, Tensor]:
        """Record the range (its EMA after the first step, if asked); returns it. (``lo``
        and ``hi`` come from :func:`.fq_ops.minmax`: no gradient flows through them.)"""
        if self.ema and steps is not None:
            d = self.ema_decay
            later = steps > 1.0
            lo = ops.select(later, d * self.minq + (1 - d) * lo, lo)
            hi = ops.select(later, d * self.maxq + (1 - d) * hi, hi)
        ops.assign(self.minq, lo)
        ops.assign(self.maxq, hi)
        return lo, hi

    def _delayed(self, x: Tensor, out: Tensor, steps: Tensor | None) -> Tensor:
        """``x`` itself during the first ``quant_delay`` training steps."""
        if steps is None or self.quant_delay == 0:
            return out
        return ops.select(ops.broadcast_to(steps <= float(self.quant_delay), x.shape), x, out)

    def quant_params(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``nudge`` of the observed range: (nmin, nmax, scale, zero_point), each (C,)."""
        return nudge(
            self.minq.asnumpy(),
            self.maxq.asnumpy(),
            self.num_bits,
            self.symmetric,
            self.narrow_range,
        )

    @property
    def calibrated(self) -> bool:
        return bool(np.any(self.minq.asnumpy() != 0) or np.any(self.maxq.asnumpy() != 0))

    def extend_repr(self) -> str:
        return (
            f"bit_num={self.num_bits}, symmetric={self.symmetric}, "
            f"narrow_range={self.narrow_range}, ema={self.ema}({self.ema_decay}), "
            f"per_channel={isinstance(self, SimulatedFakeQuantizerPerChannel)}, "
            f"quant_delay={self.quant_delay}"
        )


class SimulatedFakeQuantizerPerLayer(_FakeQuantizer):
    """One range for the whole tensor (activations): in training the batch's min/max (or
    their EMA) is observed; quantization starts after ``quant_delay`` training steps."""

    def __init__(
        self,
        ema: bool = False,
        ema_decay: float = 0.999,
        symmetric: bool = False,
        narrow_range: bool = False,
        num_bits: int = 8,
        quant_delay: int = 0,
    ) -> None:
        super().__init__(1, ema, ema_decay, symmetric, narrow_range, num_bits, quant_delay)

    def construct(self, x: Tensor) -> Tensor:
        bits, sym, narrow = self.num_bits, self.symmetric, self.narrow_range
        if self.training:
            steps = self._count()
            lo, hi = self._observe(*minmax(x), steps)
            return self._delayed(x, fake_quant_range(x, lo, hi, None, bits, sym, narrow), steps)
        # eval: the recorded range; never observed data ([0, 0]): passes x through
        return fake_quant_range(x, self.minq, self.maxq, None, bits, sym, narrow)


class SimulatedFakeQuantizerPerChannel(_FakeQuantizer):
    """One range per slice along ``channel_axis`` (weights: the output channel); the range
    is the current weight's min/max (observed in training and eval alike)."""

    def __init__(
        self,
        num_channels: int,
        channel_axis: int = 0,
        ema: bool = False,
        ema_decay: float = 0.999,
        symmetric: bool = True,
        narrow_range: bool = False,
        num_bits: int = 8,
        quant_delay: int = 0,
    ) -> None:
        if not isinstance(num_channels, int) or num_channels < 1:
            raise ValueError(
                "SimulatedFakeQuantizerPerChannel: argument 'num_channels' expected an int "
                f">= 1, got {num_channels!r}"
            )
        super().__init__(
            num_channels, ema, ema_decay, symmetric, narrow_range, num_bits, quant_delay
        )
        self.channel_axis = channel_axis

    def construct(self, x: Tensor) -> Tensor:
        axis = self.channel_axis % x.ndim
        steps = self._count() if self.training else None
        lo, hi = self._observe(*minmax(x, axis), steps)
        out = fake_quant_range(x, lo, hi, axis, self.num_bits, self.symmetric, self.narrow_range)
        return self._delayed(x, out, steps)
