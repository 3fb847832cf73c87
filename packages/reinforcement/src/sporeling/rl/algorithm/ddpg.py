"""DDPG (Lillicrap et al. 2016) for continuous actions, in MindSpore RL 0.5's shape.

The actor acts with ``mu(s) + noise`` (Gaussian, or 0.5's ``OUNoise``), clipped to the
action bounds, and fills the replay buffer; the learner regresses
``Q(s, a)`` on ``r + gamma (1 - terminal) Q'(s', mu'(s'))``, then ascends ``Q(s, mu(s))``
in the actor's weights, and moves both targets by ``SoftUpdate(tau)``. Defaults follow
rl-baselines3-zoo's Pendulum-v1 settings (gamma 0.98, lr 1e-3,
Gaussian noise 0.1, 10,000 random steps first), with 256x256 networks and batches of 128
(the zoo: 400x300, 256) to fit this machine.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sporeling.core import float32, get_seed, nn, ops

from ..agent import Actor, Learner, Trainer
from ..environment.gym_environment import GymEnvironment
from ..network import FullyConnectedLayers
from ..utils.noise import OUNoise
from ..utils.soft_update import SoftUpdate
from ._common import GradStep, env_reset, env_step, evaluate_episodes, predict, to_np


class _ActorNet(nn.Cell):
    def __init__(self, sizes: list[int], max_action: float) -> None:
        super().__init__()
        self.body = FullyConnectedLayers(sizes, weight_init="he_uniform")
        self.max_action = max_action

    def construct(self, s: Any) -> Any:
        return ops.tanh(self.body(s)) * self.max_action


class _CriticNet(nn.Cell):
    def __init__(self, sizes: list[int]) -> None:
        super().__init__()
        self.body = FullyConnectedLayers(sizes, weight_init="he_uniform")

    def construct(self, s: Any, a: Any) -> Any:
        return self.body(ops.concat((s, a), 1))


def _copy(src: nn.Cell, dst: nn.Cell) -> None:
    for p, t in zip(src.trainable_params(), dst.trainable_params()):
        t.set_data(p.asnumpy().copy())


class DDPGPolicy:
    """``actor_net``, ``critic_net``, their targets, and the exploration noise."""

    def __init__(self, params: dict[str, Any]) -> None:
        s, a = params["state_space_dim"], params["action_space_dim"]
        hidden = list(params.get("hidden_sizes", [400, 300]))
        self.max_action = float(params.get("max_action", 1.0))
        self.actor_net = _ActorNet([s, *hidden, a], self.max_action)
        self.target_actor_net = _ActorNet([s, *hidden, a], self.max_action)
        self.critic_net = _CriticNet([s + a, *hidden, 1])
        self.target_critic_net = _CriticNet([s + a, *hidden, 1])
        _copy(self.actor_net, self.target_actor_net)
        _copy(self.critic_net, self.target_critic_net)
        self.action_dim = a
        self.noise_stddev = float(params.get("noise_stddev", 0.1)) * self.max_action
        self.ou_noise = (
            OUNoise(self.noise_stddev, params["ou_damping"], (a,))
            if params.get("ou_damping") is not None else None
        )  # fmt: skip


class DDPGActor(Actor):
    def __init__(self, params: dict[str, Any]) -> None:
        super().__init__()
        self.policy = params["policy"]
        self.env = params["collect_environment"]
        self.eval_env = params["eval_environment"]
        self.replay_buffer = params["replay_buffer"]
        seed = get_seed()
        self.rng = np.random.default_rng(None if seed is None else seed + 31)

    def get_action(self, phase: int, params: Any) -> np.ndarray:
        p, s = self.policy, np.asarray(to_np(params), np.float32)
        if phase == self.INIT:
            return self.rng.uniform(-p.max_action, p.max_action, p.action_dim).astype(np.float32)
        a = predict(p.actor_net, s[None])[0]
        if phase == self.COLLECT:
            if p.ou_noise is not None:
                a = to_np(p.ou_noise(a))
            else:
                a = a + self.rng.normal(0.0, p.noise_stddev, a.shape)
        return np.clip(a, -p.max_action, p.max_action).astype(np.float32)

    def act(self, phase: int, params: Any) -> tuple[np.ndarray, float, bool]:
        state = np.asarray(to_np(params), np.float32)
        action = self.get_action(phase, state)
        env = self.eval_env if phase == self.EVAL else self.env
        new_state, reward, done = env_step(env, action)
        if phase != self.EVAL:
            terminal = getattr(env, "last_terminated", done)
            self.replay_buffer.insert([state, action, np.array([reward], np.float32), new_state,
                                       np.array([terminal], np.float32)])  # fmt: skip
        return new_state, float(reward), bool(done)


class DDPGLearner(Learner):
    def __init__(self, params: dict[str, Any]) -> None:
        super().__init__()
        pol = params["policy"]
        self.actor_net, self.critic_net = pol.actor_net, pol.critic_net
        self.target_actor_net, self.target_critic_net = pol.target_actor_net, pol.target_critic_net
        self.gamma = float(params.get("gamma", 0.98))
        lr = float(params.get("lr", 1e-3))
        tau = float(params.get("tau", 0.005))
        actor, critic = self.actor_net, self.critic_net
        self.critic_step = GradStep(
            lambda s, a, y: ops.reduce_mean((critic(s, a) - y) ** 2),
            critic.trainable_params(), nn.Adam(critic.trainable_params(), learning_rate=lr),
        )  # fmt: skip
        self.actor_step = GradStep(
            lambda s: -ops.reduce_mean(critic(s, actor(s))),
            actor.trainable_params(), nn.Adam(actor.trainable_params(), learning_rate=lr),
        )  # fmt: skip
        targets = (self.target_actor_net, self.target_critic_net)
        self.updates = [
            SoftUpdate(tau, 1, net.trainable_params(), target.trainable_params())
            for net, target in zip((actor, critic), targets)
        ]

    def learn(self, experience: Any) -> float:
        s, a, r, s2, term = (np.asarray(to_np(e), np.float32) for e in experience)
        from sporeling.core import Tensor, no_grad

        with no_grad():
            q2 = self.target_critic_net(Tensor(s2), self.target_actor_net(Tensor(s2))).asnumpy()
        y = (r + self.gamma * (1.0 - term) * q2).astype(np.float32)
        critic_loss = self.critic_step(s, a, y)
        self.actor_step(s)
        for update in self.updates:
            update()
        return critic_loss


class DDPGTrainer(Trainer):
    """``train_one_episode()``: one episode, a gradient step per environment step once
    ``learning_starts`` transitions are held (SAC's trainer is this one)."""

    default_learning_starts = 10_000

    def __init__(self, msrl: Any, params: dict[str, Any] | None = None) -> None:
        super().__init__(msrl)
        params = params or {}
        self.learning_starts = int(params.get("learning_starts", self.default_learning_starts))
        self.num_evaluate_episode = int(params.get("num_evaluate_episode", 5))
        self.env_steps = 0
        self.episode_returns: list[float] = []

    def trainable_variables(self) -> dict[str, nn.Cell]:
        return {
            "actor_net": self.msrl.learner.actor_net,
            "critic_net": self.msrl.learner.critic_net,
        }

    def train_one_episode(self) -> tuple[float, float, int, Any]:
        buffer = self.msrl.replay_buffer
        state, done, ret, steps, losses = (
            env_reset(self.msrl.collect_environment),
            False,
            0.0,
            0,
            [],
        )
        noise = getattr(self.msrl.policy_and_network.policy, "ou_noise", None)
        if noise is not None:
            noise.reset()
        while not done:
            phase = Actor.INIT if buffer.size() < self.learning_starts else Actor.COLLECT
            state, reward, done = self.msrl.agent_act(phase, state)
            ret, steps, self.env_steps = ret + reward, steps + 1, self.env_steps + 1
            if phase == Actor.COLLECT:
                losses.append(self.msrl.agent_learn(self.msrl.replay_buffer_sample()))
        self.episode_returns.append(ret)
        return float(np.mean(losses)) if losses else 0.0, ret, steps, None

    def evaluate(self) -> float:
        actor = self.msrl.actors_list[0]
        return evaluate_episodes(self.msrl.eval_environment,
                                 lambda s: actor.get_action(Actor.EVAL, s),
                                 self.num_evaluate_episode)  # fmt: skip


class _Holder:
    """policy_and_network for DDPG: the policy object under one attribute for the config."""

    def __init__(self, params: dict[str, Any]) -> None:
        self.policy = DDPGPolicy(params)


def ddpg_config(env_name: str = "Pendulum-v1", seed: int = 0, **overrides: Any) -> dict[str, Any]:
    probe = GymEnvironment({"name": env_name})
    obs_dim, act_space = probe.observation_space.shape[0], probe.action_space
    max_action = float(np.max(act_space.boundary[1]))
    probe.close()
    policy = {"hidden_sizes": [256, 256], "max_action": max_action, "noise_stddev": 0.1}
    learner = {"gamma": 0.98, "lr": 1e-3, "tau": 0.005}
    policy.update(overrides.pop("policy_params", {}))
    learner.update(overrides.pop("learner_params", {}))
    config = {
        "actor": {"number": 1, "type": DDPGActor, "policies": ["policy"]},
        "learner": {"number": 1, "type": DDPGLearner, "params": learner, "networks": ["policy"]},
        "policy_and_network": {"type": _Holder, "params": policy},
        "collect_environment": {"type": GymEnvironment, "params": {"name": env_name, "seed": seed}},
        "eval_environment": {"type": GymEnvironment,
                             "params": {"name": env_name, "seed": seed + 1}},
        "replay_buffer": {
            "number": 1, "capacity": overrides.pop("capacity", 200_000),
            "sample_size": overrides.pop("batch_size", 128),
            "data_shape": [(obs_dim,), act_space.shape, (1,), (obs_dim,), (1,)],
            "data_type": [float32] * 5,
        },
    }  # fmt: skip
    config.update(overrides)
    return config
