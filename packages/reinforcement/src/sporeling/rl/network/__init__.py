"""Networks (``mindspore_rl.network``)."""

from .fully_connected_net import FullyConnectedLayers
from .gru_net import GruNet

__all__ = ["FullyConnectedLayers", "GruNet"]
