"""Sporeling reinforcement learning: MindSpore Reinforcement 0.5 on the Sporeling core.

Subpackages follow ``mindspore_rl``'s layout: :mod:`~sporeling.rl.core` (``MSRL``,
``Session``, replay buffers), :mod:`~sporeling.rl.agent` (``Actor``, ``Learner``, ``Agent``,
``Trainer``), :mod:`~sporeling.rl.environment`, :mod:`~sporeling.rl.policy`,
:mod:`~sporeling.rl.network`, :mod:`~sporeling.rl.utils` (callbacks, ``DiscountedReturn``,
``OUNoise``, ``SoftUpdate``, ``MCTS``), :mod:`~sporeling.rl.algorithm` and
:mod:`~sporeling.rl.mcts` (the compiled search).
"""

from . import agent, algorithm, core, environment, mcts, network, policy, utils
from ._version import __version__

__all__ = [
    "__version__", "agent", "algorithm", "core", "environment", "mcts", "network", "policy",
    "utils",
]  # fmt: skip
