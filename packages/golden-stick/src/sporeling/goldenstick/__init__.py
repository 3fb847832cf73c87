"""``sporeling.goldenstick``: MindSpore Golden Stick's model compression on Sporeling.

``mindspore_gs`` scripts port by changing the import: one algorithm interface
(``CompAlgo``: ``apply``, ``callback``/``callbacks``, ``loss``, ``convert``), SimQAT
(8-bit fake quant, int8 export), SLB (1/2/4-bit weights) and SCOP (structured pruning with
physical channel removal), all built on :mod:`sporeling.core.rewrite`.
"""

from ._version import __version__
from .comp_algo import CompAlgo
from .net_transformer import NetTransformer
from .pruner import PrunerFtCompressAlgo, PrunerKfCompressAlgo
from .quantization import (
    QuantDtype,
    SimulatedQuantizationAwareTraining,
    SlbQuantAwareTraining,
    TemperatureScheduler,
)

__all__ = [
    "__version__",
    "CompAlgo",
    "NetTransformer",
    "QuantDtype",
    "SimulatedQuantizationAwareTraining",
    "SlbQuantAwareTraining",
    "TemperatureScheduler",
    "PrunerKfCompressAlgo",
    "PrunerFtCompressAlgo",
]
