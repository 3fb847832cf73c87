"""The cells SimQAT puts in a network: fused float layers (Conv/Dense + BN + activation),
their fake-quant versions (with or without BN folding) and ``QuantizeWrapperCell``."""

from __future__ import annotations

from typing import Any

import numpy as np

from sporeling.core import Parameter, Tensor, nn, ops

from .fake_quant import SimulatedFakeQuantizerPerChannel, SimulatedFakeQuantizerPerLayer

__all__ = [
    "Conv2dBnAct",
    "DenseBnAct",
    "Conv2dQuant",
    "DenseQuant",
    "BnFoldQuant",
    "BnFoldQuantTwoConv",
    "BnWithoutFoldQuant",
    "QuantizeWrapperCell",
    "linear_forward",
]


def linear_forward(op: nn.Cell, x: Tensor, weight: Tensor, bias: Any) -> Tensor:
    """``op``'s computation (a Conv2d or a Dense) with another weight and bias."""
    if isinstance(op, nn.Conv2d):
        if op.format != "NCHW":
            raise ValueError(f"SimQAT: Conv2d with data_format {op.format!r} is not supported")
        pad = op.padding if op.pad_mode == "pad" else 0
        return ops.conv2d(x, weight, bias, op.stride, op.pad_mode, pad, op.dilation, op.group)
    return ops.dense(x, weight, bias)


class _Fused(nn.Cell):
    """A linear layer with an optional BatchNorm and activation after it."""

    def __init__(self, op: nn.Cell, bn: nn.Cell | None = None, act: nn.Cell | None = None):
        super().__init__(auto_prefix=False)  # shared parameters keep their names
        self.op = op
        self.bn = bn
        self.act = act

    def construct(self, x: Tensor) -> Tensor:
        y = self.op(x)
        if self.bn is not None:
            y = self.bn(y)
        if self.act is not None:
            y = self.act(y)
        return y


class Conv2dBnAct(_Fused):
    """Conv2d (+ BatchNorm2d) (+ activation) as one cell (the fusion pass makes these)."""


class DenseBnAct(_Fused):
    """Dense (+ BatchNorm1d) (+ activation) as one cell."""


def _check_no_layer_act(op: nn.Cell, bn: nn.Cell, cls: str) -> None:
    """A layer's own activation runs between its product and the BN: no BN fusion."""
    if bn is not None and getattr(op, "activation", None) is not None:
        raise ValueError(
            f"{cls}: {type(op).__name__} with activation {type(op.activation).__name__} "
            "cannot be fused with the BatchNorm after it (the activation runs before the "
            "BN); quantize the layer alone"
        )


def _weight_quantizer(op: nn.Cell, policy: dict[str, Any]) -> nn.Cell:
    if policy["weight_per_channel"]:
        return SimulatedFakeQuantizerPerChannel(
            op.out_channels,
            0,
            symmetric=policy["weight_symmetric"],
            narrow_range=policy["weight_narrow_range"],
            num_bits=8,
            quant_delay=policy["weight_quant_delay"],
        )
    return SimulatedFakeQuantizerPerLayer(
        symmetric=policy["weight_symmetric"],
        narrow_range=policy["weight_narrow_range"],
        num_bits=8,
        quant_delay=policy["weight_quant_delay"],
    )


class Conv2dQuant(nn.Cell):
    """Conv2d with a fake-quantized weight (its activation, if any, applied after)."""

    def __init__(self, op: nn.Cell, policy: dict[str, Any], act: nn.Cell | None = None) -> None:
        super().__init__(auto_prefix=False)  # shared parameters keep their names
        self.op = op
        self.act = act
        self.fake_quant_weight = _weight_quantizer(op, policy)

    def construct(self, x: Tensor) -> Tensor:
        w = self.fake_quant_weight(self.op.weight)
        y = linear_forward(self.op, x, w, self.op.bias)
        if isinstance(self.op, nn.Dense) and self.op.activation is not None:
            y = self.op.activation(y)
        return self.act(y) if self.act is not None else y

    def folded(self) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        """(float weight, bias, None): what the int8 export quantizes."""
        b = self.op.bias.asnumpy() if self.op.bias is not None else None
        return self.op.weight.asnumpy(), b, None


class DenseQuant(Conv2dQuant):
    """Dense with a fake-quantized weight."""


def _bn_scale(bn: nn.Cell, mean: np.ndarray, var: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    g = bn.gamma.asnumpy().astype(np.float64)
    b = bn.beta.asnumpy().astype(np.float64)
    s = g / np.sqrt(var.astype(np.float64) + bn.eps)
    return s, b - s * mean.astype(np.float64)


class BnFoldQuant(nn.Cell):
    """Conv2d/Dense + BatchNorm with the BN folded into the weight before fake quant
    (Jacob et al. 2018, one-conv form): ``w' = w * gamma / sigma``, ``b' = beta - mu * gamma
    / sigma``. In training, batch statistics are used (and the moving ones updated) until
    ``freeze_bn`` steps; after that, and in eval, the moving statistics."""

    def __init__(
        self, op: nn.Cell, bn: nn.Cell, policy: dict[str, Any], act: nn.Cell | None = None
    ) -> None:
        super().__init__(auto_prefix=False)  # shared parameters keep their names
        _check_no_layer_act(op, bn, type(self).__name__)
        self.op = op
        self.bn = bn
        self.act = act
        self.freeze_bn = policy["freeze_bn"]
        self.fake_quant_weight = _weight_quantizer(op, policy)
        # training steps seen, a Parameter so that a jit-compiled step counts too
        self.step_count = Parameter(np.zeros(1, np.float32), name="step_count", requires_grad=False)

    @property
    def steps(self) -> int:
        return int(self.step_count.asnumpy()[0])

    def _axes(self, ndim: int) -> tuple[int, ...]:
        return (0, 2, 3) if ndim == 4 else (0,)

    def _train_statistics(
        self, x: Tensor, old_mean: Tensor, old_var: Tensor, updates: list[tuple[Parameter, Tensor]]
    ) -> tuple[Tensor, Tensor, Tensor]:
        """A training step's ``(batch, b_mean, b_var)``: the batch statistics of what the BN
        sees (the product with the layer's bias), and whether this step still uses them
        (the first ``freeze_bn`` steps). Appends the step count's and the moving
        statistics' updates (old values once ``batch`` is false) to ``updates``; the caller
        applies them last."""
        op, bn = self.op, self.bn
        bshape = (1, -1, 1, 1) if isinstance(op, nn.Conv2d) else (1, -1)
        steps = ops.stop_gradient(self.step_count + 1.0)
        updates.append((self.step_count, steps))
        batch = steps <= float(self.freeze_bn)
        raw = linear_forward(op, x, op.weight, op.bias)
        axes = self._axes(raw.ndim)
        b_mean = ops.mean(raw, axes)
        b_var = ops.mean(ops.square(raw - ops.reshape(b_mean, bshape)), axes)
        m = float(bn.momentum)
        n = raw.size // raw.shape[1]
        new_mean = m * old_mean + (1 - m) * ops.stop_gradient(b_mean)
        new_var = m * old_var + (1 - m) * ops.stop_gradient(b_var) * (n / max(n - 1, 1))
        batch = ops.broadcast_to(batch, old_mean.shape)
        updates.append((bn.moving_mean, ops.select(batch, new_mean, old_mean)))
        updates.append((bn.moving_variance, ops.select(batch, new_var, old_var)))
        return batch, b_mean, b_var

    def construct(self, x: Tensor) -> Tensor:
        op, bn = self.op, self.bn
        wshape = (-1,) + (1,) * (op.weight.ndim - 1)
        updates: list[tuple[Parameter, Tensor]] = []
        if self.training:
            old_mean, old_var = bn.moving_mean + 0.0, bn.moving_variance + 0.0
            batch, b_mean, b_var = self._train_statistics(x, old_mean, old_var, updates)
            mean = ops.select(batch, b_mean, old_mean)
            var = ops.select(batch, b_var, old_var)
        else:
            mean, var = bn.moving_mean, bn.moving_variance
        inv = bn.gamma / ops.sqrt(var + bn.eps)
        w = self.fake_quant_weight(op.weight * ops.reshape(inv, wshape))
        bias = bn.beta - mean * inv  # mean includes the conv's bias (see folded)
        if op.bias is not None:
            bias = bias + op.bias * inv
        y = linear_forward(op, x, w, bias)
        for param, value in updates:  # last: no read of these Parameters follows
            ops.assign(param, value)
        return self.act(y) if self.act is not None else y

    def folded(self) -> tuple[np.ndarray, np.ndarray, None]:
        """Weight and bias folded with the moving statistics (deploy form)."""
        s, shift = _bn_scale(
            self.bn, self.bn.moving_mean.asnumpy(), self.bn.moving_variance.asnumpy()
        )
        w = self.op.weight.asnumpy() * s.reshape((-1,) + (1,) * (self.op.weight.ndim - 1))
        b = shift if self.op.bias is None else shift + s * self.op.bias.asnumpy()
        return w.astype(np.float32), b.astype(np.float32), None


class BnFoldQuantTwoConv(BnFoldQuant):
    """Conv2d/Dense + BatchNorm folded, two-conv form (MindSpore's ``Conv2dBnFoldQuant``:
    ``BatchNormFold``, ``CorrectionMul``, ``BatchNormFold2``). The first product, on the
    float weight (and bias), gives the batch mean and std ``sigma_B``; the weight is
    folded with the *running* std and fake-quantized, ``w_q = fq(w * gamma / sigma_R)``;
    the second product is corrected back to the batch statistics:

        y = conv(x, w_q) * sigma_R / sigma_B + beta + gamma * (b - mu_B) / sigma_B

    (``b`` the conv's bias, 0 if none; ``mu_B`` includes it). Without quantization this
    is exactly the BN in training mode, gradients through the batch statistics included,
    while the quantized weight already sits on the deploy grid (folded with the running
    std). After ``freeze_bn`` training steps, and in eval, ``mu_B, sigma_B`` become the
    running ``mean, sigma_R``: ``y = conv(x, w_q) + beta + gamma * (b - mean) / sigma_R``,
    the deploy form. ``sigma_R`` is ``sqrt(moving_variance + eps)`` from before this
    step's update (the moving statistics are updated last, as in the one-conv form)."""

    def construct(self, x: Tensor) -> Tensor:
        op, bn = self.op, self.bn
        wshape = (-1,) + (1,) * (op.weight.ndim - 1)
        bshape = (1, -1, 1, 1) if isinstance(op, nn.Conv2d) else (1, -1)
        old_mean, old_var = bn.moving_mean + 0.0, bn.moving_variance + 0.0
        running_std = ops.sqrt(old_var + bn.eps)
        updates: list[tuple[Parameter, Tensor]] = []
        if self.training:
            batch, b_mean, b_var = self._train_statistics(x, old_mean, old_var, updates)
            mean = ops.select(batch, b_mean, old_mean)
            std = ops.select(batch, ops.sqrt(b_var + bn.eps), running_std)
        else:
            mean, std = old_mean, running_std
        w = self.fake_quant_weight(op.weight * ops.reshape(bn.gamma / running_std, wshape))
        shift = -mean if op.bias is None else op.bias - mean
        bias = bn.beta + bn.gamma * shift / std
        y = linear_forward(op, x, w, None) * ops.reshape(running_std / std, bshape)
        y = y + ops.reshape(bias, bshape)
        for param, value in updates:  # last: no read of these Parameters follows
            ops.assign(param, value)
        return self.act(y) if self.act is not None else y


class BnWithoutFoldQuant(Conv2dQuant):
    """Conv2d/Dense with a fake-quantized weight, then its BatchNorm, then the activation."""

    def __init__(
        self, op: nn.Cell, bn: nn.Cell, policy: dict[str, Any], act: nn.Cell | None = None
    ) -> None:
        _check_no_layer_act(op, bn, type(self).__name__)
        super().__init__(op, policy, act)
        self.bn = bn

    def construct(self, x: Tensor) -> Tensor:
        w = self.fake_quant_weight(self.op.weight)
        y = self.bn(linear_forward(self.op, x, w, self.op.bias))
        return self.act(y) if self.act is not None else y

    def folded(self) -> tuple[np.ndarray, np.ndarray | None, tuple[np.ndarray, np.ndarray]]:
        """Weight, bias, and the BN as a per-channel affine applied after the product."""
        w, b, _ = super().folded()
        s, shift = _bn_scale(
            self.bn, self.bn.moving_mean.asnumpy(), self.bn.moving_variance.asnumpy()
        )
        return w, b, (s.astype(np.float32), shift.astype(np.float32))


class QuantizeWrapperCell(nn.Cell):
    """``output_quantizer(handler(input_quantizer(x)))``: one quantized layer of SimQAT.

    ``_input_quantizer`` is None when the previous layer's output quantizer already gives
    this input (redundant quantizer removed); ``input_source`` then names that quantizer
    for the int8 export."""

    def __init__(
        self,
        handler: nn.Cell,
        input_quantizer: nn.Cell | None,
        output_quantizer: nn.Cell | None,
    ) -> None:
        super().__init__(auto_prefix=False)  # shared parameters keep their names
        self._handler = handler
        self._input_quantizer = input_quantizer
        self._output_quantizer = output_quantizer
        # kept outside the cell tree (not a child): it belongs to the previous layer
        object.__setattr__(self, "_input_source", None)

    @property
    def input_source(self) -> nn.Cell | None:
        return self.__dict__["_input_source"]

    def set_input_source(self, quantizer: nn.Cell | None) -> None:
        """The previous layer's output quantizer (when this input quantizer was dropped)."""
        object.__setattr__(self, "_input_source", quantizer)

    def construct(self, x: Tensor) -> Tensor:
        if self._input_quantizer is not None:
            x = self._input_quantizer(x)
        y = self._handler(x)
        if self._output_quantizer is not None:
            y = self._output_quantizer(y)
        return y

    def input_quant_source(self) -> nn.Cell | None:
        """The quantizer whose grid this layer's input lies on."""
        return self._input_quantizer if self._input_quantizer is not None else self.input_source
