"""SAC (Haarnoja et al. 2018, with the automatic entropy temperature of the follow-up paper)
for continuous actions, in MindSpore RL's actor/learner/trainer shape (SAC came to MindSpore
RL's master right after 0.5).

The actor samples ``a = max_action * tanh(mu(s) + sigma(s) * eps)`` and fills the replay
buffer. The learner, once per environment step:

1. regresses both critics on ``r + gamma (1 - terminal) (min_i Q'_i(s', a') - alpha log pi(a'|s'))``
   with ``a'`` sampled from the current policy at ``s'``;
2. lowers ``alpha log pi(a|s) - min_i Q_i(s, a)`` in the actor's weights, ``a`` reparameterised;
3. lowers ``-log_alpha * (log pi(a|s) + target_entropy)`` in ``log_alpha``
   (``target_entropy = -action_dim``);
4. moves both target critics by ``SoftUpdate(tau)``.

Defaults follow Stable-Baselines3's SAC with rl-baselines3-zoo's Pendulum-v1 learning rate
(1e-3; gamma 0.99, tau 0.005, batch 256, 256x256 networks, 100 random steps first).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from sporeling.core import Parameter, Tensor, float32, get_seed, initializer, nn, no_grad, ops

from ..agent import Actor, Learner
from ..environment.gym_environment import GymEnvironment
from ..network import FullyConnectedLayers
from ..utils.soft_update import SoftUpdate
from ._common import GradStep, env_step, to_np
from .ddpg import DDPGTrainer


def _torch_default() -> Any:
    """PyTorch's (and MindSpore 2.x's) Dense default, U(+-1/sqrt(fan_in)), as SB3's SAC has."""
    return initializer.HeUniform(math.sqrt(5))


LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


class GaussianActorNet(nn.Cell):
    """``construct(s, eps) -> (action, log_prob)``: a tanh-squashed Gaussian, reparameterised
    by the standard normal noise ``eps`` (batch, action_dim); ``eps = 0`` gives the mean
    action. ``log_prob`` (batch, 1) is the density of ``tanh(u)`` (the action in units of
    ``max_action``, as Stable-Baselines3 measures it, so ``target_entropy = -action_dim`` means
    the same for every bound); its tanh Jacobian is written ``2 (log 2 - u - softplus(-2u))``
    for ``log(1 - tanh(u)^2)``, stable for large ``|u|``."""

    def __init__(self, sizes: list[int], max_action: float) -> None:
        super().__init__()
        *body, action_dim = sizes
        self.body = FullyConnectedLayers([*body, 2 * action_dim], weight_init=_torch_default())
        self.action_dim = action_dim
        self.max_action = max_action

    def construct(self, s: Any, eps: Any) -> tuple[Any, Any]:
        out = self.body(s)
        mean, log_std = ops.split(out, 1, 2)
        log_std = ops.clip_by_value(log_std, LOG_STD_MIN, LOG_STD_MAX)
        action, log_prob = squashed_gaussian(mean, log_std, eps)
        return action * self.max_action, log_prob


def squashed_gaussian(mean: Any, log_std: Any, eps: Any) -> tuple[Any, Any]:
    """``(tanh(u), log density of tanh(u))`` with ``u = mean + exp(log_std) * eps``; the
    density sums over the last axis, keeping it."""
    u = mean + ops.exp(log_std) * eps
    gauss = -0.5 * eps * eps - log_std - _HALF_LOG_2PI
    jacobian = 2.0 * (math.log(2.0) - u - ops.softplus(-2.0 * u))
    return ops.tanh(u), ops.reduce_sum(gauss - jacobian, -1, keep_dims=True)


class TwinCritic(nn.Cell):
    """``construct(s, a) -> (Q1, Q2)``, two independent networks on ``concat(s, a)``."""

    def __init__(self, sizes: list[int]) -> None:
        super().__init__()
        self.q1 = FullyConnectedLayers(sizes, weight_init=_torch_default())
        self.q2 = FullyConnectedLayers(sizes, weight_init=_torch_default())

    def construct(self, s: Any, a: Any) -> tuple[Any, Any]:
        x = ops.concat((s, a), 1)
        return self.q1(x), self.q2(x)


class SACPolicy:
    """``actor_net``, ``critic_net``, ``target_critic_net`` and ``log_alpha``."""

    def __init__(self, params: dict[str, Any]) -> None:
        s, a = params["state_space_dim"], params["action_space_dim"]
        hidden = list(params.get("hidden_sizes", [256, 256]))
        self.max_action = float(params.get("max_action", 1.0))
        self.action_dim = a
        self.actor_net = GaussianActorNet([s, *hidden, a], self.max_action)
        self.critic_net = TwinCritic([s + a, *hidden, 1])
        self.target_critic_net = TwinCritic([s + a, *hidden, 1])
        for p, t in zip(
            self.critic_net.trainable_params(), self.target_critic_net.trainable_params()
        ):
            t.set_data(p.asnumpy().copy())
        init_alpha = float(params.get("init_alpha", 1.0))
        self.log_alpha = Parameter(
            Tensor(np.full((1,), math.log(init_alpha), np.float32)), name="log_alpha"
        )


class SACActor(Actor):
    def __init__(self, params: dict[str, Any]) -> None:
        super().__init__()
        self.policy = params["policy"]
        self.env = params["collect_environment"]
        self.eval_env = params["eval_environment"]
        self.replay_buffer = params["replay_buffer"]
        seed = get_seed()
        self.rng = np.random.default_rng(None if seed is None else seed + 37)

    def get_action(self, phase: int, params: Any) -> np.ndarray:
        p, s = self.policy, np.asarray(to_np(params), np.float32)
        if phase == self.INIT:
            return self.rng.uniform(-p.max_action, p.max_action, p.action_dim).astype(np.float32)
        eps = np.zeros((1, p.action_dim), np.float32)
        if phase == self.COLLECT:
            eps = self.rng.standard_normal((1, p.action_dim)).astype(np.float32)
        with no_grad():
            a, _ = p.actor_net(Tensor(s[None]), Tensor(eps))
        return a.asnumpy()[0].astype(np.float32)

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


class SACLearner(Learner):
    """``learn(experience) -> critic loss``; the actor and temperature losses and ``alpha``
    of the last step are kept in ``last_losses``."""

    def __init__(self, params: dict[str, Any]) -> None:
        super().__init__()
        pol = params["policy"]
        self.actor_net, self.critic_net = pol.actor_net, pol.critic_net
        self.target_critic_net, self.log_alpha = pol.target_critic_net, pol.log_alpha
        self.gamma = float(params.get("gamma", 0.99))
        self.target_entropy = float(params.get("target_entropy", -pol.action_dim))
        self.action_dim = pol.action_dim
        lr = float(params.get("lr", 3e-4))
        tau = float(params.get("tau", 0.005))
        actor, critic, log_alpha = self.actor_net, self.critic_net, self.log_alpha
        seed = get_seed()
        self.rng = np.random.default_rng(None if seed is None else seed + 41)

        def critic_loss(s, a, y):
            q1, q2 = critic(s, a)
            return 0.5 * (ops.reduce_mean((q1 - y) ** 2) + ops.reduce_mean((q2 - y) ** 2))

        def actor_loss(s, eps, alpha):
            a, log_prob = actor(s, eps)
            q1, q2 = critic(s, a)
            return ops.reduce_mean(alpha * log_prob - ops.minimum(q1, q2)), log_prob

        def alpha_loss(log_prob):
            return -ops.reduce_mean(log_alpha * (log_prob + self.target_entropy))

        self.critic_step = GradStep(
            critic_loss,
            critic.trainable_params(),
            nn.Adam(critic.trainable_params(), learning_rate=lr),
        )
        self.actor_step = GradStep(
            actor_loss,
            actor.trainable_params(),
            nn.Adam(actor.trainable_params(), learning_rate=lr),
            has_aux=True,
        )
        self.alpha_step = GradStep(alpha_loss, [log_alpha],
                                   nn.Adam([log_alpha], learning_rate=lr))  # fmt: skip
        self.update = SoftUpdate(
            tau, 1, critic.trainable_params(), self.target_critic_net.trainable_params()
        )
        self.last_losses: dict[str, float] = {}

    @property
    def alpha(self) -> float:
        return float(np.exp(self.log_alpha.asnumpy()[0]))

    def critic_target(self, r: np.ndarray, s2: np.ndarray, term: np.ndarray,
                      eps: np.ndarray) -> np.ndarray:  # fmt: skip
        """``r + gamma (1 - term) (min Q'(s', a') - alpha log pi(a'|s'))``, a' drawn with
        ``eps``."""
        with no_grad():
            a2, logp2 = self.actor_net(Tensor(s2), Tensor(eps))
            q1, q2 = self.target_critic_net(Tensor(s2), a2)
            soft_q = np.minimum(q1.asnumpy(), q2.asnumpy()) - self.alpha * logp2.asnumpy()
        return (r + self.gamma * (1.0 - term) * soft_q).astype(np.float32)

    def learn(self, experience: Any) -> float:
        s, a, r, s2, term = (np.asarray(to_np(e), np.float32) for e in experience)
        shape = (s.shape[0], self.action_dim)
        y = self.critic_target(r, s2, term, self.rng.standard_normal(shape).astype(np.float32))
        critic_loss = self.critic_step(s, a, y)
        eps = self.rng.standard_normal(shape).astype(np.float32)
        alpha = Tensor(np.float32(self.alpha))
        actor_loss, (log_prob,) = self.actor_step(s, eps, alpha)
        alpha_loss = self.alpha_step(log_prob.astype(np.float32))
        self.update()
        self.last_losses = {"critic": critic_loss, "actor": actor_loss, "alpha": alpha_loss,
                            "alpha_value": self.alpha}  # fmt: skip
        return critic_loss


class SACTrainer(DDPGTrainer):
    """DDPG's loop (a gradient step per environment step once ``learning_starts``
    transitions are held), learning from 100 transitions on as SB3's SAC does."""

    default_learning_starts = 100


class _Holder:
    """policy_and_network for SAC: the policy object under one attribute for the config."""

    def __init__(self, params: dict[str, Any]) -> None:
        self.policy = SACPolicy(params)


def sac_config(env_name: str = "Pendulum-v1", seed: int = 0, **overrides: Any) -> dict[str, Any]:
    """The algorithm_config of SAC on a gymnasium environment with a Box action space
    (symmetric bounds)."""
    probe = GymEnvironment({"name": env_name})
    obs_dim, act_space = probe.observation_space.shape[0], probe.action_space
    low, high = (np.asarray(b, np.float64) for b in act_space.boundary)
    probe.close()
    if not np.allclose(low, -high) or not np.allclose(high, high.reshape(-1)[0]):
        raise ValueError(
            f"sac_config: {env_name}'s action bounds expected symmetric and equal per "
            f"dimension, got low={low.tolist()}, high={high.tolist()}"
        )
    policy = {"hidden_sizes": [256, 256], "max_action": float(high.reshape(-1)[0])}
    learner = {"gamma": 0.99, "lr": 1e-3, "tau": 0.005}
    policy.update(overrides.pop("policy_params", {}))
    learner.update(overrides.pop("learner_params", {}))
    config = {
        "actor": {"number": 1, "type": SACActor, "policies": ["policy"]},
        "learner": {"number": 1, "type": SACLearner, "params": learner, "networks": ["policy"]},
        "policy_and_network": {"type": _Holder, "params": policy},
        "collect_environment": {"type": GymEnvironment, "params": {"name": env_name, "seed": seed}},
        "eval_environment": {"type": GymEnvironment,
                             "params": {"name": env_name, "seed": seed + 1}},
        "replay_buffer": {
            "number": 1, "capacity": overrides.pop("capacity", 100_000),
            "sample_size": overrides.pop("batch_size", 256),
            "data_shape": [(obs_dim,), act_space.shape, (1,), (obs_dim,), (1,)],
            "data_type": [float32] * 5,
        },
    }  # fmt: skip
    config.update(overrides)
    return config
