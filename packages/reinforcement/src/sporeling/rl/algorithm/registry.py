"""One-call training and evaluation per algorithm, for the CLI and the experiments."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import sporeling.core as ms

from ..core.msrl import MSRL


@dataclass(frozen=True)
class AlgorithmEntry:
    name: str
    config: Callable[..., dict[str, Any]]
    trainer: type
    trainer_params: dict[str, Any]

    def build(self, env: str, seed: int) -> tuple[MSRL, Any]:
        ms.set_seed(seed)
        msrl = MSRL(self.config(env, seed=seed))
        return msrl, self.trainer(msrl, dict(self.trainer_params))

    def train(
        self,
        env: str,
        steps: int,
        seed: int = 0,
        ckpt: str | None = None,
        eval_episodes: int = 100,
        log_every: int = 10_000,
    ) -> dict[str, Any]:
        """Train for ``steps`` environment steps; then the greedy mean return over
        ``eval_episodes`` episodes of the eval environment."""
        _, trainer = self.build(env, seed)
        t0, next_log, episodes = time.perf_counter(), log_every, 0
        while trainer.env_steps < steps:
            trainer.train_one_episode()
            episodes += 1
            if log_every and trainer.env_steps >= next_log:
                recent = trainer.episode_returns[-20:]
                print(f"[{self.name} seed {seed}] {trainer.env_steps} steps, {episodes} episodes, "
                      f"last-20 return {np.mean(recent):.1f}, {time.perf_counter() - t0:.0f}s",
                      flush=True)  # fmt: skip
                next_log += log_every
        train_s = time.perf_counter() - t0
        trainer.num_evaluate_episode = eval_episodes
        mean = float(trainer.evaluate())
        if ckpt:
            os.makedirs(ckpt, exist_ok=True)
            for name, net in trainer.trainable_variables().items():
                ms.save_checkpoint(net, os.path.join(ckpt, f"{name}_{episodes - 1}.ckpt"))
        return {
            "algo": self.name, "env": env, "seed": seed, "env_steps": int(trainer.env_steps),
            "episodes": episodes, "train_s": round(train_s, 1),
            "steps_per_s": round(trainer.env_steps / train_s, 1),
            "eval_episodes": eval_episodes, "eval_mean_return": mean,
        }  # fmt: skip

    def evaluate(self, env: str, ckpt: str, episodes: int = 100, seed: int = 1000) -> float:
        _, trainer = self.build(env, seed)
        trainer.num_evaluate_episode = episodes
        return float(trainer.load_and_eval(ckpt))


def _entries() -> dict[str, AlgorithmEntry]:
    from . import dqn

    out = {
        "dqn": AlgorithmEntry(
            "dqn", dqn.dqn_config, dqn.DQNTrainer,
            {"learning_starts": 1000, "train_freq": 256, "gradient_steps": 128},
        ),
    }  # fmt: skip
    try:
        from . import ac, ppo
    except ImportError:  # pragma: no cover
        return out
    out["ppo"] = AlgorithmEntry("ppo", ppo.ppo_config, ppo.PPOTrainer, {})
    out["a2c"] = AlgorithmEntry("a2c", ac.a2c_config, ac.ACTrainer, {})
    out["ac"] = AlgorithmEntry("ac", ac.ac_config, ac.ACTrainer, {})
    return out


def get_algorithm(name: str) -> AlgorithmEntry:
    entries = _entries()
    if name not in entries:
        raise KeyError(f"unknown algorithm {name!r}; available: {', '.join(sorted(entries))}")
    return entries[name]
