"""DQN (50k steps) and PPO (100k steps) on CartPole-v1: Sporeling beside Stable-Baselines3
(PyTorch), the same budgets and rl-baselines3-zoo's tuned hyperparameters on both sides.

For each algorithm, seed and side: the training wall time and environment steps/s, then three
100-episode means, so that "a 100-episode mean of 475" can be read every way it is used:

- ``eval_mean_return``: the final policy, greedy (SB3: ``deterministic=True``), over 100
  episodes of a fresh CartPole-v1 seeded ``seed + 1``;
- ``train_last100_mean``: the last 100 training episodes (SB3's final ``rollout/ep_rew_mean``,
  exploration on);
- ``train_best100_mean``: the best mean over 100 consecutive training episodes.

Both sides run with one BLAS/torch thread. Sporeling's PPO collects from its Numba-batched
CartPole (8 games per call), SB3's from a ``DummyVecEnv`` of 8 gymnasium CartPoles.

    nox -s bench_rl -- [--algos dqn ppo] [--seeds 0 1 2] [--sides sporeling sb3] [--out F]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np
from threadpoolctl import threadpool_limits

BUDGET = {"dqn": 50_000, "ppo": 100_000}


def sb3_hyperparameters(algo: str) -> dict:
    """rl-baselines3-zoo's hyperparams/{dqn,ppo}.yml, CartPole-v1."""
    if algo == "dqn":
        return dict(learning_rate=2.3e-3, batch_size=64, buffer_size=100_000,
                    learning_starts=1000, gamma=0.99, target_update_interval=10,
                    train_freq=256, gradient_steps=128, exploration_fraction=0.16,
                    exploration_final_eps=0.04,
                    policy_kwargs=dict(net_arch=[256, 256]))  # fmt: skip

    def lin(v):
        return lambda progress_remaining: progress_remaining * v

    return dict(n_steps=32, batch_size=256, gae_lambda=0.8, gamma=0.98, n_epochs=20,
                ent_coef=0.0, learning_rate=lin(1e-3), clip_range=lin(0.2))  # fmt: skip


def greedy_mean(act, seed: int, episodes: int = 100) -> float:
    import gymnasium as gym

    env, total = gym.make("CartPole-v1"), 0.0
    obs, _ = env.reset(seed=seed)
    for _ in range(episodes):
        done = False
        while not done:
            obs, r, term, trunc, _ = env.step(act(obs))
            total += r
            done = term or trunc
        obs, _ = env.reset()
    return total / episodes


def run_sb3(algo: str, seed: int) -> dict:
    import torch
    from stable_baselines3 import DQN, PPO
    from stable_baselines3.common.env_util import make_vec_env

    from sporeling.rl.algorithm.registry import training_means

    torch.set_num_threads(1)
    n_envs = 8 if algo == "ppo" else 1
    env = make_vec_env("CartPole-v1", n_envs=n_envs, seed=seed)
    cls = DQN if algo == "dqn" else PPO
    model = cls("MlpPolicy", env, seed=seed, device="cpu", verbose=0, **sb3_hyperparameters(algo))
    t0 = time.perf_counter()
    model.learn(BUDGET[algo])
    train_s = time.perf_counter() - t0
    returns = [r for m in env.envs for r in m.get_episode_rewards()]  # Monitor wrappers
    if n_envs > 1:  # episodes of all envs in the order they ended
        ends = [t for m in env.envs for t in np.cumsum(m.get_episode_lengths())]
        returns = [returns[i] for i in np.argsort(ends, kind="stable")]
    mean = greedy_mean(lambda o: int(model.predict(o, deterministic=True)[0]), seed + 1)
    return {"side": "sb3", "algo": algo, "seed": seed, "env_steps": int(model.num_timesteps),
            "train_s": round(train_s, 1), "steps_per_s": round(model.num_timesteps / train_s, 1),
            "eval_mean_return": mean, **training_means(returns)}  # fmt: skip


def run_sporeling(algo: str, seed: int) -> dict:
    from sporeling.rl.algorithm.registry import get_algorithm

    r = get_algorithm(algo).train("CartPole-v1", BUDGET[algo], seed, eval_episodes=100)
    return {"side": "sporeling", **r}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--algos", nargs="+", default=["dqn", "ppo"], choices=list(BUDGET))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--sides", nargs="+", default=["sporeling", "sb3"],
                        choices=["sporeling", "sb3"])  # fmt: skip
    parser.add_argument("--out", default=None, help="append one JSON line per run to this file")
    args = parser.parse_args()
    threadpool_limits(1)
    for algo in args.algos:
        for seed in args.seeds:
            for side in args.sides:
                r = (run_sb3 if side == "sb3" else run_sporeling)(algo, seed)
                r.update(load_average=[round(x, 2) for x in os.getloadavg()],
                         machine=platform.machine(), cpus=os.cpu_count())  # fmt: skip
                line = json.dumps(r)
                print(line, flush=True)
                if args.out:
                    with open(args.out, "a") as f:
                        f.write(line + "\n")


if __name__ == "__main__":
    main()
