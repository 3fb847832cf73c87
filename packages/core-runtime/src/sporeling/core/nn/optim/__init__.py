"""``sporeling.core.nn.optim``: MindSpore 1.8's optimizers with fused per-step update kernels."""

from .ada_grad import Adagrad
from .adam import Adam, AdamW, AdamWeightDecay, LazyAdam
from .ftrl import FTRL
from .lamb import Lamb
from .optimizer import Optimizer
from .rmsprop import RMSProp
from .sgd import SGD, Momentum

__all__ = [
    "Optimizer",
    "SGD",
    "Momentum",
    "Adam",
    "AdamWeightDecay",
    "AdamW",
    "LazyAdam",
    "Lamb",
    "Adagrad",
    "RMSProp",
    "FTRL",
]
