"""Actor, Learner, Agent and Trainer (``mindspore_rl.agent``)."""

from .actor import Actor
from .agent import Agent
from .learner import Learner
from .trainer import Trainer

__all__ = ["Actor", "Learner", "Agent", "Trainer"]
