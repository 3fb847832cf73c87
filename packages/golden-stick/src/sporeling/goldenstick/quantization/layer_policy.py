"""Layer policies: how one layer type is quantized (Golden Stick's ``LayerPolicy``).

SimQAT gives every Conv2d, Dense and fused Conv/Dense + BN (+ ReLU) node a policy and
replaces the node by ``policy.wrap_cell(cell)``. ``config["custom_policies"]`` maps other
(or the same) Cell types to a user's policy, as in Golden Stick, where the custom map is
consulted before the built-in one. A policy says which activation quantizers surround the
layer (``get_input_quantizer``/``get_output_quantizer``) and builds the quantized cell
(``wrap_cell``); SimQAT drops an input quantizer that would repeat the previous layer's
output quantizer (``set_input_not_insert_fq``) after wrapping.
"""

from __future__ import annotations

import abc
from typing import Any

from sporeling.core import nn

from .fake_quant import SimulatedFakeQuantizerPerChannel, SimulatedFakeQuantizerPerLayer
from .quant_cells import (
    BnFoldQuant,
    BnFoldQuantTwoConv,
    BnWithoutFoldQuant,
    Conv2dBnAct,
    Conv2dQuant,
    DenseBnAct,
    DenseQuant,
    QuantizeWrapperCell,
)

__all__ = [
    "LayerPolicy",
    "SimulatedLayerPolicy",
    "ConvLayerPolicy",
    "DenseLayerPolicy",
    "ConvBnLayerPolicy",
    "DEFAULT_POLICY",
]

#: SimQAT's settings with its defaults (``SimulatedQuantizationAwareTraining.policy()``
#: gives the algorithm's current ones)
DEFAULT_POLICY: dict[str, Any] = {
    "act_quant_delay": 0,
    "weight_quant_delay": 0,
    "act_symmetric": False,
    "weight_symmetric": True,
    "act_narrow_range": False,
    "weight_narrow_range": False,
    "weight_per_channel": True,
    "freeze_bn": 10000000,
    "bn_fold": False,
    "one_conv_fold": True,
}


class LayerPolicy(abc.ABC):
    """How a layer is quantized. Subclasses implement :meth:`wrap_cell` (the quantized
    cell replacing the layer, or None to leave it in float) and, when they put activation
    quantizers around it, :meth:`get_input_quantizer` / :meth:`get_output_quantizer`."""

    def __init__(self) -> None:
        self._input_insert_fq = True
        self._output_insert_fq = True

    @abc.abstractmethod
    def wrap_cell(self, handler: nn.Cell) -> nn.Cell | None:
        """The cell that replaces ``handler`` in the quantized network (None: unchanged)."""

    def get_input_quantizer(self) -> nn.Cell | None:
        """A new quantizer for the layer's input (None: the input is not quantized)."""
        return None

    def get_output_quantizer(self) -> nn.Cell | None:
        """A new quantizer for the layer's output (None: the output is not quantized)."""
        return None

    def set_input_not_insert_fq(self) -> None:
        self._input_insert_fq = False

    def set_output_not_insert_fq(self) -> None:
        self._output_insert_fq = False

    def get_input_need_insert_fq(self) -> bool:
        return self._input_insert_fq

    def get_output_need_insert_fq(self) -> bool:
        return self._output_insert_fq


class SimulatedLayerPolicy(LayerPolicy):
    """SimQAT's policy: 8-bit per-layer activation quantizers on the input and output,
    the weight fake-quantized as ``config`` says (a dict with :data:`DEFAULT_POLICY`'s
    keys; missing keys take those defaults). ``wrap_cell`` puts the layer's quantized form
    (:meth:`quantized`) in a :class:`QuantizeWrapperCell`."""

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        super().__init__()
        if config is not None and not isinstance(config, dict):
            raise TypeError(
                f"{type(self).__name__}: argument 'config' expected a dict, got {config!r}"
            )
        unknown = set(config or {}) - set(DEFAULT_POLICY)
        if unknown:
            raise ValueError(f"{type(self).__name__}: unknown config keys {sorted(unknown)}")
        self.config = {**DEFAULT_POLICY, **(config or {})}

    def _act_quantizer(self) -> SimulatedFakeQuantizerPerLayer:
        c = self.config
        return SimulatedFakeQuantizerPerLayer(
            symmetric=c["act_symmetric"],
            narrow_range=c["act_narrow_range"],
            quant_delay=c["act_quant_delay"],
        )

    def get_input_quantizer(self) -> nn.Cell | None:
        return self._act_quantizer() if self._input_insert_fq else None

    def get_output_quantizer(self) -> nn.Cell | None:
        return self._act_quantizer() if self._output_insert_fq else None

    def get_weight_quantizer(self, num_channels: int) -> nn.Cell:
        """A new fake quantizer for a weight with ``num_channels`` output channels."""
        c = self.config
        if c["weight_per_channel"]:
            return SimulatedFakeQuantizerPerChannel(
                num_channels,
                0,
                symmetric=c["weight_symmetric"],
                narrow_range=c["weight_narrow_range"],
                quant_delay=c["weight_quant_delay"],
            )
        return SimulatedFakeQuantizerPerLayer(
            symmetric=c["weight_symmetric"],
            narrow_range=c["weight_narrow_range"],
            quant_delay=c["weight_quant_delay"],
        )

    def quantized(self, handler: nn.Cell) -> nn.Cell | None:
        """The fake-quant form of a Conv2d, Dense or fused cell (None for other cells)."""
        c = self.config
        if isinstance(handler, nn.Conv2d):
            return Conv2dQuant(handler, c)
        if isinstance(handler, nn.Dense):
            return DenseQuant(handler, c)
        if isinstance(handler, (Conv2dBnAct, DenseBnAct)):
            if handler.bn is None:
                return Conv2dQuant(handler.op, c, handler.act)
            if not c["bn_fold"]:
                return BnWithoutFoldQuant(handler.op, handler.bn, c, handler.act)
            if c["one_conv_fold"]:
                return BnFoldQuant(handler.op, handler.bn, c, handler.act)
            return BnFoldQuantTwoConv(handler.op, handler.bn, c, handler.act)
        return None

    def wrap_cell(self, handler: nn.Cell) -> nn.Cell | None:
        inner = self.quantized(handler)
        if inner is None:
            return None
        return QuantizeWrapperCell(inner, self.get_input_quantizer(), self.get_output_quantizer())


class ConvLayerPolicy(SimulatedLayerPolicy):
    """The built-in policy of Conv2d."""


class DenseLayerPolicy(SimulatedLayerPolicy):
    """The built-in policy of Dense."""


class ConvBnLayerPolicy(SimulatedLayerPolicy):
    """The built-in policy of the fused cells (Conv2dBnAct, DenseBnAct): BN folded (one-
    or two-conv form) or not, as ``bn_fold`` / ``one_conv_fold`` say."""
