"""``sporeling.core.nn``: cells (MindSpore's modules), layers, losses and optimizers."""

from . import dynamic_lr, layers, learning_rate_schedule, loss, optim, wrap
from .cell import Cell
from .containers import CellDict, CellList, SequentialCell
from .dynamic_lr import *  # noqa: F403
from .layers import *  # noqa: F403
from .learning_rate_schedule import *  # noqa: F403
from .loss import *  # noqa: F403
from .optim import *  # noqa: F403
from .wrap import *  # noqa: F403

__all__ = ["Cell", "SequentialCell", "CellList", "CellDict"]
for _module in (dynamic_lr, layers, learning_rate_schedule, loss, optim, wrap):
    __all__ += list(getattr(_module, "__all__", []))
del _module
