"""The framework's core (``mindspore_rl.core``): config, MSRL builder, Session, buffers."""

from ..errors import ConfigError
from .config import validate_config
from .msrl import MSRL
from .replay_buffer import PriorityReplayBuffer, ReservoirReplayBuffer, UniformReplayBuffer
from .session import Session

__all__ = [
    "MSRL", "Session", "validate_config", "ConfigError",
    "UniformReplayBuffer", "PriorityReplayBuffer", "ReservoirReplayBuffer",
]  # fmt: skip
