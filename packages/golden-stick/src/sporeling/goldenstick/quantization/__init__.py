"""Quantization algorithms: SimQAT (8-bit fake quant, int8 export) and SLB (1/2/4-bit)."""

from .fake_quant import (
    SimulatedFakeQuantizerPerChannel,
    SimulatedFakeQuantizerPerLayer,
    fake_quant,
    fake_quant_array,
    nudge,
)
from .int8 import Int8Linear, convert_to_int8, quantize_weight
from .layer_policy import (
    ConvBnLayerPolicy,
    ConvLayerPolicy,
    DenseLayerPolicy,
    LayerPolicy,
    SimulatedLayerPolicy,
)
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
from .quant_dtype import QuantDtype
from .simqat import SimulatedQuantizationAwareTraining
from .slb import (
    Conv2dSlbQuant,
    PackedConv2d,
    SlbFakeQuantizerPerLayer,
    SlbQuantAwareTraining,
    TemperatureScheduler,
    pack_bits,
    slb_values,
    unpack_bits,
)

__all__ = [
    "QuantDtype",
    "SimulatedQuantizationAwareTraining",
    "SlbQuantAwareTraining",
    "SlbFakeQuantizerPerLayer",
    "Conv2dSlbQuant",
    "TemperatureScheduler",
    "PackedConv2d",
    "pack_bits",
    "unpack_bits",
    "slb_values",
    "SimulatedFakeQuantizerPerLayer",
    "SimulatedFakeQuantizerPerChannel",
    "QuantizeWrapperCell",
    "LayerPolicy",
    "SimulatedLayerPolicy",
    "ConvLayerPolicy",
    "DenseLayerPolicy",
    "ConvBnLayerPolicy",
    "Conv2dQuant",
    "DenseQuant",
    "BnFoldQuant",
    "BnFoldQuantTwoConv",
    "BnWithoutFoldQuant",
    "Conv2dBnAct",
    "DenseBnAct",
    "Int8Linear",
    "convert_to_int8",
    "quantize_weight",
    "nudge",
    "fake_quant",
    "fake_quant_array",
]
