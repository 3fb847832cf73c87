"""Action-selection policies of MindSpore RL 0.5: random, greedy and epsilon-greedy."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from sporeling.core import Tensor, get_seed, nn, no_grad


def _rng() -> np.random.Generator:
    seed = get_seed()
    return np.random.default_rng(None if seed is None else seed + 7919)


def _np(x: Any) -> np.ndarray:
    return x.asnumpy() if isinstance(x, Tensor) else np.asarray(x)


class Policy(nn.Cell):
    """Base class: ``construct(*inputs) -> action``."""


class RandomPolicy(Policy):
    """Uniform actions in ``[0, action_space_dim)`` of shape ``shape`` (int32)."""

    def __init__(self, action_space_dim: int, shape: tuple[int, ...] = (1,)) -> None:
        super().__init__()
        if isinstance(action_space_dim, bool) or int(action_space_dim) < 1:
            raise ValueError(
                f"RandomPolicy: action_space_dim expected an int >= 1, got {action_space_dim!r}"
            )
        self.action_space_dim = int(action_space_dim)
        self.shape = tuple(shape)
        self.rng = _rng()

    def construct(self, *_: Any) -> Tensor:
        return Tensor(self.rng.integers(0, self.action_space_dim, self.shape).astype(np.int32))


class GreedyPolicy(Policy):
    """``argmax(input_network(state), axis=-1)`` as int32, without recording gradients."""

    def __init__(self, input_network: nn.Cell) -> None:
        super().__init__()
        self.input_network = input_network

    def construct(self, state: Any) -> Tensor:
        with no_grad():
            q = _np(self.input_network(state if isinstance(state, Tensor) else Tensor(state)))
        return Tensor(np.argmax(q, axis=-1).astype(np.int32))


class EpsilonGreedyPolicy(Policy):
    """Random with probability ``epsilon(step)``, else greedy, per row of ``state``.

    ``schedule="exponential"`` (MindSpore RL 0.5):
    ``epsilon = epsi_low + (epsi_high - epsi_low) * exp(-step / decay)``;
    ``schedule="linear"`` (Stable-Baselines3's ``exploration_fraction``): from ``epsi_high``
    down to ``epsi_low`` in a straight line over ``decay`` steps, ``epsi_low`` after.
    """

    def __init__(
        self,
        input_network: nn.Cell,
        size: Any,
        epsi_high: float,
        epsi_low: float,
        decay: float,
        action_space_dim: int,
        schedule: str = "exponential",
    ) -> None:
        super().__init__()
        if schedule not in ("exponential", "linear"):
            raise ValueError(
                f"EpsilonGreedyPolicy: schedule expected 'exponential' or 'linear', "
                f"got {schedule!r}"
            )
        if not 0.0 <= epsi_low <= epsi_high <= 1.0:
            raise ValueError(
                f"EpsilonGreedyPolicy: expected 0 <= epsi_low <= epsi_high <= 1, got "
                f"epsi_low={epsi_low!r}, epsi_high={epsi_high!r}"
            )
        if decay <= 0:
            raise ValueError(f"EpsilonGreedyPolicy: decay expected > 0, got {decay!r}")
        self.greedy = GreedyPolicy(input_network)
        self.size = size
        self.epsi_high, self.epsi_low, self.decay = float(epsi_high), float(epsi_low), decay
        self.action_space_dim = int(action_space_dim)
        self.schedule = schedule
        self.rng = _rng()

    def epsilon(self, step: Any) -> float:
        s = float(_np(step).reshape(-1)[0])
        if self.schedule == "linear":
            frac = min(s / self.decay, 1.0)
            return self.epsi_high + frac * (self.epsi_low - self.epsi_high)
        return self.epsi_low + (self.epsi_high - self.epsi_low) * math.exp(-s / self.decay)

    def construct(self, state: Any, step: Any) -> Tensor:
        greedy = self.greedy(state).asnumpy()
        explore = self.rng.random(greedy.shape) < self.epsilon(step)
        rand = self.rng.integers(0, self.action_space_dim, greedy.shape)
        return Tensor(np.where(explore, rand, greedy).astype(np.int32))
