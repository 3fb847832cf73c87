"""Environments (``mindspore_rl.environment``)."""

from .cartpole_batch import CartPoleBatchEnvironment
from .connect_four import ConnectFourEnvironment
from .environment import Environment
from .environment_process import EnvironmentProcess
from .gym_environment import GymEnvironment
from .multi_environment_wrapper import MultiEnvironmentWrapper
from .space import Space
from .tic_tac_toe import TicTacToeEnvironment
from .two_step_game import TwoStepGameEnvironment

__all__ = [
    "Environment", "EnvironmentProcess", "Space", "GymEnvironment", "MultiEnvironmentWrapper",
    "CartPoleBatchEnvironment", "TicTacToeEnvironment", "ConnectFourEnvironment",
    "TwoStepGameEnvironment",
]  # fmt: skip
