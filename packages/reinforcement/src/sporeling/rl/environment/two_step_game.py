"""The two-step cooperative matrix game of the QMIX paper (Rashid et al. 2018, section 6.1).

Two agents see the whole state (one-hot: 1, 2A, 2B) and have two actions each. In state 1
the first agent's action picks the next state (0: 2A, 1: 2B) and the reward is 0. In 2A
every joint action pays 7; in 2B the payoff is ``[[0, 1], [1, 8]]`` (rows: agent 0). The
episode ends after the second step. The best return is 8 (agent 0 plays 1 twice, agent 1
plays 1 in 2B); value decompositions that are sums (VDN) settle for 7, QMIX finds 8.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .environment import Environment
from .space import Space

PAYOFF_2B = np.array([[0.0, 1.0], [1.0, 8.0]], np.float32)


class TwoStepGameEnvironment(Environment):
    """``reset() -> state`` (3,); ``step(actions (2,)) -> (state, reward, done)``;
    ``observations()`` gives each agent's observation: the state and its one-hot id (2, 5)."""

    num_agents, num_actions, state_dim = 2, 2, 3

    def __init__(self, params: dict[str, Any] | None = None, env_id: int = 0) -> None:
        self.observation_space = Space((self.state_dim,), np.float32)
        self.action_space = Space((), np.int32, low=0, high=self.num_actions)
        self.reward_space = Space((), np.float32)
        self.done_space = Space((), np.bool_, low=0, high=2)
        self.stage = 0  # 0: state 1, 1: 2A, 2: 2B, 3: over
        self.last_terminated = False

    @property
    def config(self) -> dict[str, Any]:
        return {"name": "TwoStepGame", "num_agents": self.num_agents}

    def state_np(self) -> np.ndarray:
        s = np.zeros(self.state_dim, np.float32)
        s[min(self.stage, 2)] = 1.0
        return s

    def observations(self) -> np.ndarray:
        s = self.state_np()
        return np.stack([np.concatenate([s, np.eye(self.num_agents, dtype=np.float32)[i]])
                         for i in range(self.num_agents)])  # fmt: skip

    def reset_np(self) -> np.ndarray:
        self.stage = 0
        return self.state_np()

    def step_np(self, actions: Any) -> tuple[np.ndarray, float, bool]:
        a = np.asarray(actions).reshape(-1).astype(int)
        if a.shape != (self.num_agents,) or not np.isin(a, (0, 1)).all():
            raise ValueError(
                f"TwoStepGameEnvironment.step: expected 2 actions in {{0, 1}}, got {a}"
            )
        if self.stage == 3:
            raise ValueError("TwoStepGameEnvironment.step: the episode is over; call reset()")
        if self.stage == 0:
            self.stage = 1 if a[0] == 0 else 2
            return self.state_np(), 0.0, False
        reward = 7.0 if self.stage == 1 else float(PAYOFF_2B[a[0], a[1]])
        self.stage = 3
        self.last_terminated = True
        return self.state_np(), reward, True
