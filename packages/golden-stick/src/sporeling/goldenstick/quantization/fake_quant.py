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

from ..deploy_runtime import fake_quant_array

__all__ = [
    "nudge",
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


def fake_quant(x: Tensor, nmin: np.ndarray, nmax: np.ndarray, scale: np.ndarray) -> Tensor:
    """Differentiable fake quant: forward as :func:`fake_quant_array`, gradient 1 inside the
    (closed) range and 0 outside."""
    data = x.asnumpy()
    dt = data.dtype
    out = fake_quant_array(data.astype(np.float64), nmin, nmax, scale).astype(dt)
    mask = ((data >= nmin) & (data <= nmax)).astype(dt)
    # value: out; gradient: mask (x - stop_gradient(x) is 0 with derivative 1)
    return Tensor(out) + (x - ops.stop_gradient(x)) * Tensor(mask)


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
        self.steps = 0

    def _observe(self, lo: np.ndarray, hi: np.ndarray) -> None:
        if self.ema and self.steps > 1:
            d = self.ema_decay
            lo = d * self.minq.asnumpy() + (1 - d) * lo
            hi = d * self.maxq.asnumpy() + (1 - d) * hi
        self.minq.set_data(Tensor(np.asarray(lo, np.float32).reshape(self.num_channels)))
        self.maxq.set_data(Tensor(np.asarray(hi, np.float32).reshape(self.num_channels)))

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
        if self.training:
            self.steps += 1
            data = x.asnumpy()
            self._observe(np.array([data.min()]), np.array([data.max()]))
            if self.steps <= self.quant_delay:
                return x
        elif not self.calibrated:
            return x  # never observed data: nothing to simulate yet
        nmin, nmax, scale, _ = self.quant_params()
        return fake_quant(x, nmin[0], nmax[0], scale[0])


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
        data = x.asnumpy()
        moved = np.moveaxis(data, self.channel_axis, 0).reshape(data.shape[self.channel_axis], -1)
        if self.training:
            self.steps += 1
        self._observe(moved.min(axis=1), moved.max(axis=1))
        if self.training and self.steps <= self.quant_delay:
            return x
        nmin, nmax, scale, _ = self.quant_params()
        shape = [1] * data.ndim
        shape[self.channel_axis] = -1
        return fake_quant(x, nmin.reshape(shape), nmax.reshape(shape), scale.reshape(shape))
