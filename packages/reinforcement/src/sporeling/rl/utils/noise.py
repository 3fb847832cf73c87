"""``OUNoise``: Ornstein-Uhlenbeck exploration noise (DDPG)."""

from __future__ import annotations

from typing import Any

import numpy as np

from sporeling.core import Tensor, get_seed, nn


class OUNoise(nn.Cell):
    """``construct(actions) -> actions + noise`` with
    ``noise <- noise - damping * noise + stddev * N(0, 1)`` (state kept between calls)."""

    def __init__(self, stddev: float, damping: float, action_shape: tuple[int, ...]) -> None:
        super().__init__()
        if stddev < 0 or not 0 <= damping <= 1:
            raise ValueError(
                f"OUNoise: expected stddev >= 0 and damping in [0, 1], got stddev={stddev!r}, "
                f"damping={damping!r}"
            )
        self.stddev, self.damping = float(stddev), float(damping)
        self.action_shape = tuple(action_shape)
        self.noise = np.zeros(self.action_shape, np.float32)
        seed = get_seed()
        self.rng = np.random.default_rng(None if seed is None else seed + 104729)

    def reset(self) -> None:
        self.noise[...] = 0.0

    def construct(self, actions: Any) -> Tensor:
        a = actions.asnumpy() if isinstance(actions, Tensor) else np.asarray(actions)
        self.noise = (
            self.noise
            - self.damping * self.noise
            + self.stddev * self.rng.standard_normal(self.action_shape)
        ).astype(np.float32)
        return Tensor((a + self.noise).astype(np.float32))
