"""Utilities (``mindspore_rl.utils``): callbacks, returns, noise, target updates, MCTS."""

from ..mcts import MCTS, AlgorithmFunc, VanillaFunc
from .callback import (
    Callback,
    CallbackManager,
    CallbackParam,
    CheckpointCallback,
    EvaluateCallback,
    LossCallback,
    TimeCallback,
)
from .discounted_return import DiscountedReturn
from .noise import OUNoise
from .soft_update import SoftUpdate

__all__ = [
    "Callback", "CallbackManager", "CallbackParam", "LossCallback", "CheckpointCallback",
    "EvaluateCallback", "TimeCallback", "DiscountedReturn", "OUNoise", "SoftUpdate",
    "MCTS", "AlgorithmFunc", "VanillaFunc",
]  # fmt: skip
