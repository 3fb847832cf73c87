"""Sporeling reinforcement learning: MindSpore Reinforcement 0.5 on the Sporeling core.

Subpackages follow ``mindspore_rl``'s layout: :mod:`~sporeling.rl.core` (``MSRL``,
``Session``, replay buffers), :mod:`~sporeling.rl.agent` (``Actor``, ``Learner``, ``Agent``,
``Trainer``), :mod:`~sporeling.rl.environment`, :mod:`~sporeling.rl.policy`,
:mod:`~sporeling.rl.network`, :mod:`~sporeling.rl.utils` (callbacks, ``DiscountedReturn``,
``OUNoise``, ``SoftUpdate``, ``MCTS``), :mod:`~sporeling.rl.algorithm` and
:mod:`~sporeling.rl.mcts` (the compiled search).
"""

import importlib
from typing import Any

from ._version import __version__

_SUBPACKAGES = (
    "agent", "algorithm", "core", "distribution", "environment", "mcts", "network", "policy",
    "utils",
)  # fmt: skip


def __getattr__(name: str) -> Any:
    """Import subpackages on first use, so that ``sporeling-rl --help`` stays fast."""
    if name in _SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["__version__", *_SUBPACKAGES]
