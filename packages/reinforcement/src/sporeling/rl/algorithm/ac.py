"""Advantage actor-critic: A2C (synchronous, a batch of environments, n-step returns) and
AC (one environment, an update after every few steps), sharing one learner.

Loss per update: ``-mean(log pi(a|s) A) + vf_coef mean((V - R)^2) - ent_coef H`` with
``R`` the n-step (GAE with ``gae_lambda``) return, one RMSprop (A2C) or Adam (AC) step.
The rollout collection is PPO's actor.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sporeling.core import nn, ops

from ..agent import Learner
from ..environment.cartpole_batch import CartPoleBatchEnvironment
from ..environment.gym_environment import GymEnvironment
from ._common import GradStep, predict
from .ppo import PPOActor, PPOPolicy, PPOTrainer, gae


class ACLearner(Learner):
    def __init__(self, params: dict[str, Any]) -> None:
        super().__init__()
        self.actor_net, self.critic_net = params["actor_net"], params["critic_net"]
        self.gamma = float(params.get("gamma", 0.99))
        self.lam = float(params.get("gae_lambda", 1.0))
        self.vf_coef = float(params.get("vf_coef", 0.5))
        self.ent_coef = float(params.get("ent_coef", 0.0))
        weights = self.actor_net.trainable_params() + self.critic_net.trainable_params()
        lr = float(params.get("lr", 7e-4))
        if params.get("optimizer", "rmsprop") == "rmsprop":
            self.optimizer = nn.RMSProp(weights, learning_rate=lr, decay=0.99, epsilon=1e-5)
        else:
            self.optimizer = nn.Adam(weights, learning_rate=lr)
        actor, critic = self.actor_net, self.critic_net

        def loss_fn(obs, act, adv, ret):
            logp_all = ops.log_softmax(actor(obs), -1)
            logp = ops.squeeze(ops.gather_elements(logp_all, 1, act), 1)
            pg_loss = -ops.reduce_mean(logp * adv)
            v_loss = ops.reduce_mean((ops.squeeze(critic(obs), 1) - ret) ** 2)
            entropy = -ops.reduce_mean(ops.reduce_sum(ops.exp(logp_all) * logp_all, -1))
            return pg_loss + self.vf_coef * v_loss - self.ent_coef * entropy

        self.step = GradStep(loss_fn, weights, self.optimizer, params.get("max_grad_norm", 0.5))

    def learn(self, experience: Any) -> float:
        r = experience
        T, N = r["rew"].shape
        obs = r["obs"].reshape(T * N, -1)
        values = predict(self.critic_net, obs)[:, 0].reshape(T, N)
        adv, ret = gae(r["rew"], r["done"], values, r["last_value"], self.gamma, self.lam)
        act = r["act"].reshape(-1, 1).astype(np.int32)
        adv, ret = adv.reshape(-1).astype(np.float32), ret.reshape(-1).astype(np.float32)
        return self.step(obs, act, adv, ret)


ACTrainer = PPOTrainer  # one rollout and one update per train_one_episode


def _config(
    env_name: str, seed: int, num_envs: int, learner: dict[str, Any], overrides: dict[str, Any]
) -> dict[str, Any]:  # noqa: E501
    if env_name != "CartPole-v1":
        raise ValueError(f"only CartPole-v1 has a tuned config, got {env_name!r}")
    learner.update(overrides.pop("learner_params", {}))
    config = {
        "actor": {"number": 1, "type": PPOActor, "networks": ["actor_net", "critic_net"],
                  "params": {"gamma": learner["gamma"]}},
        "learner": {"number": 1, "type": ACLearner, "params": learner,
                    "networks": ["actor_net", "critic_net"]},
        "policy_and_network": {"type": PPOPolicy, "params": {"hidden_sizes": [64, 64]}},
        "collect_environment": {"type": CartPoleBatchEnvironment,
                                "params": {"num_envs": num_envs, "seed": seed}},
        "eval_environment": {"type": GymEnvironment,
                             "params": {"name": env_name, "seed": seed + 1}},
    }  # fmt: skip
    config.update(overrides)
    return config


def a2c_config(env_name: str = "CartPole-v1", seed: int = 0, **overrides: Any) -> dict[str, Any]:
    """A2C with Stable-Baselines3's defaults (8 envs x 5 steps, RMSprop 7e-4, gamma 0.99)."""
    learner = {"gamma": 0.99, "gae_lambda": 1.0, "lr": 7e-4, "optimizer": "rmsprop"}
    return _config(env_name, seed, overrides.pop("num_envs", 8), learner, overrides)


def ac_config(env_name: str = "CartPole-v1", seed: int = 0, **overrides: Any) -> dict[str, Any]:
    """AC as MindSpore RL 0.5's example: one environment, an update every 5 steps (Adam)."""
    learner = {"gamma": 0.99, "gae_lambda": 1.0, "lr": 1e-3, "optimizer": "adam",
               "ent_coef": 0.01}  # fmt: skip
    return _config(env_name, seed, overrides.pop("num_envs", 1), learner, overrides)
