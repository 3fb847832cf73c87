"""``sporeling.core.nn``: cells (MindSpore's modules), layers, losses and optimizers."""

from .cell import Cell
from .containers import CellDict, CellList, SequentialCell

__all__ = ["Cell", "SequentialCell", "CellList", "CellDict"]
