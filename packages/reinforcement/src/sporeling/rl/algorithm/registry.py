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


def training_means(returns: list[float]) -> dict[str, Any]:
    """The training episodes' means, as Stable-Baselines3 logs them: ``train_last100_mean``
    is its final ``rollout/ep_rew_mean`` (the last 100 episodes, exploration on);
    ``train_best100_mean`` the best such mean over any 100 consecutive episodes (the
    gymnasium "solved" criterion, CartPole-v1's threshold being 475). None when fewer than
    100 episodes were played."""
    window, r = 100, np.asarray(returns, np.float64)
    if r.size < window:
        return {"train_episodes": int(r.size), "train_last100_mean": None,
                "train_best100_mean": None}  # fmt: skip
    rolling = np.convolve(r, np.ones(window) / window, mode="valid")
    return {"train_episodes": int(r.size), "train_last100_mean": float(rolling[-1]),
            "train_best100_mean": float(rolling.max())}  # fmt: skip


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
                print(f"[{self.name} seed {seed}] {trainer.env_steps} steps, {episodes} iters, "
                      f"last-20 return {np.mean(recent):.1f}, {time.perf_counter() - t0:.0f}s",
                      flush=True)  # fmt: skip
                next_log += log_every
        train_s = time.perf_counter() - t0
        trainer.num_evaluate_episode = eval_episodes
        mean = float(trainer.evaluate())
        returns = list(getattr(trainer, "episode_returns", []))
        if ckpt:
            os.makedirs(ckpt, exist_ok=True)
            for name, net in trainer.trainable_variables().items():
                ms.save_checkpoint(net, os.path.join(ckpt, f"{name}_{episodes - 1}.ckpt"))
        return {
            "algo": self.name, "env": env, "seed": seed, "env_steps": int(trainer.env_steps),
            "iterations": episodes, "train_s": round(train_s, 1),
            "steps_per_s": round(trainer.env_steps / train_s, 1),
            "eval_episodes": eval_episodes, "eval_mean_return": mean,
            **training_means(returns),
        }  # fmt: skip

    def train_distributed(
        self,
        policy: str,
        actors: int,
        env: str,
        steps: int,
        seed: int = 0,
        eval_episodes: int = 100,
    ) -> dict[str, Any]:
        """Train under a distribution policy (``single`` or ``multi-actor`` over MPI ranks):
        ``steps`` environment steps in all, split over the actors. Rank 0 evaluates."""
        from sporeling.core import communication as comm

        from ..distribution import get_policy, run_policy

        if "num_steps" not in self.trainer_params:
            raise ValueError(f"{self.name}: distribution policies drive on-policy algorithms "
                             f"(ppo, a2c, ac), not {self.name}")  # fmt: skip
        ms.set_seed(seed)
        config = self.config(env, seed=seed)
        num_steps = self.trainer_params["num_steps"]
        per_iteration = num_steps * config["collect_environment"]["params"]["num_envs"] * actors
        iterations = -(-steps // per_iteration)
        t0 = time.perf_counter()
        msrl, fragment = run_policy(get_policy(policy, actors), config, iterations, num_steps)
        train_s = time.perf_counter() - t0
        result = {
            "algo": self.name, "policy": policy, "actors": actors, "rank": comm.get_rank(),
            "env_steps": int(fragment.env_steps), "train_s": round(train_s, 1),
            "steps_per_s_per_rank": round(fragment.env_steps / train_s / comm.get_group_size(), 1),
        }  # fmt: skip
        if comm.get_rank() == 0:
            trainer = self.trainer(msrl, dict(self.trainer_params))
            trainer.num_evaluate_episode = eval_episodes
            result["eval_mean_return"] = float(trainer.evaluate())
            result["final_loss"] = fragment.losses[-1] if fragment.losses else None
        return result

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
    from . import ac, ddpg, ppo, sac

    out["ppo"] = AlgorithmEntry("ppo", ppo.ppo_config, ppo.PPOTrainer, {"num_steps": 32})
    out["a2c"] = AlgorithmEntry("a2c", ac.a2c_config, ac.ACTrainer, {"num_steps": 5})
    out["ac"] = AlgorithmEntry("ac", ac.ac_config, ac.ACTrainer, {"num_steps": 5})
    out["ddpg"] = AlgorithmEntry("ddpg", ddpg.ddpg_config, ddpg.DDPGTrainer,
                                 {"learning_starts": 10_000})  # fmt: skip
    out["sac"] = AlgorithmEntry("sac", sac.sac_config, sac.SACTrainer, {"learning_starts": 100})
    return out


def get_algorithm(name: str) -> AlgorithmEntry:
    entries = _entries()
    if name not in entries:
        raise KeyError(f"unknown algorithm {name!r}; available: {', '.join(sorted(entries))}")
    return entries[name]
