"""QMIX (Rashid et al. 2018): per-agent Q networks mixed by a monotonic, state-conditioned
network into ``Q_tot``, trained end to end on the team reward.

Agents share one Q network over ``[observation, one-hot agent id]``. The mixer's weights
come from hypernetworks of the global state and pass through ``abs`` so that
``dQ_tot / dQ_i >= 0``: each agent's greedy action is then the team's greedy joint action.
Loss: ``(Q_tot(s, a) - (r + gamma (1 - d) Q_tot'(s', argmax_a' Q'_i)))^2``, with target
networks copied every ``target_update_interval`` updates.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sporeling.core import Tensor, float32, get_seed, int32, nn, no_grad, ops

from ..agent import Actor, Learner, Trainer
from ..environment.two_step_game import TwoStepGameEnvironment
from ..network import FullyConnectedLayers
from ..utils.soft_update import SoftUpdate
from ._common import GradStep, predict, to_np


class QMixer(nn.Cell):
    """``construct(agent_qs (B, n), state (B, S)) -> Q_tot (B, 1)``."""

    def __init__(self, n_agents: int, state_dim: int, embed_dim: int = 8) -> None:
        super().__init__()
        self.n, self.e = n_agents, embed_dim
        self.hyper_w1 = nn.Dense(state_dim, n_agents * embed_dim)
        self.hyper_b1 = nn.Dense(state_dim, embed_dim)
        self.hyper_w2 = nn.Dense(state_dim, embed_dim)
        self.hyper_b2 = FullyConnectedLayers([state_dim, embed_dim, 1])

    def construct(self, agent_qs: Any, state: Any) -> Any:
        b = agent_qs.shape[0]
        w1 = ops.reshape(ops.abs(self.hyper_w1(state)), (b, self.n, self.e))
        hidden = ops.elu(ops.squeeze(ops.matmul(ops.reshape(agent_qs, (b, 1, self.n)), w1), 1)
                         + self.hyper_b1(state))  # fmt: skip
        w2 = ops.abs(self.hyper_w2(state))
        return ops.reduce_sum(hidden * w2, 1, keep_dims=True) + self.hyper_b2(state)


class VDNMixer(nn.Cell):
    """VDN's mixer (Sunehag et al. 2018): ``Q_tot = sum_i Q_i``, for comparison."""

    def construct(self, agent_qs: Any, state: Any) -> Any:
        return ops.reduce_sum(agent_qs, 1, keep_dims=True)


class QMIXPolicy:
    def __init__(self, params: dict[str, Any]) -> None:
        cfg = params["environment_config"]
        self.n_agents = int(cfg["num_agents"])
        obs_dim = params["state_space_dim"] + self.n_agents
        n_act, s_dim = params["action_space_dim"], params["state_space_dim"]
        hidden = list(params.get("hidden_sizes", [32]))
        self.agent_net = FullyConnectedLayers([obs_dim, *hidden, n_act], weight_init="he_uniform")
        self.target_agent_net = FullyConnectedLayers([obs_dim, *hidden, n_act],
                                                     weight_init="he_uniform")  # fmt: skip
        if params.get("mixer", "qmix") == "vdn":
            self.mixer, self.target_mixer = VDNMixer(), VDNMixer()
        else:
            self.mixer = QMixer(self.n_agents, s_dim, params.get("embed_dim", 8))
            self.target_mixer = QMixer(self.n_agents, s_dim, params.get("embed_dim", 8))
        for src, dst in ((self.agent_net, self.target_agent_net), (self.mixer, self.target_mixer)):
            for p, t in zip(src.trainable_params(), dst.trainable_params()):
                t.set_data(p.asnumpy().copy())
        self.n_actions = n_act
        self.epsilon = float(params.get("epsilon", 1.0))


class QMIXActor(Actor):
    """One team step: every agent acts epsilon-greedily on its own observation."""

    def __init__(self, params: dict[str, Any]) -> None:
        super().__init__()
        self.policy = params["policy"]
        self.env = params["collect_environment"]
        self.eval_env = params["eval_environment"]
        self.replay_buffer = params["replay_buffer"]
        seed = get_seed()
        self.rng = np.random.default_rng(None if seed is None else seed + 37)

    def get_action(self, phase: int, params: Any) -> np.ndarray:
        obs = np.asarray(to_np(params), np.float32)
        greedy = predict(self.policy.agent_net, obs).argmax(-1)
        if phase == self.EVAL:
            return greedy
        explore = self.rng.random(greedy.shape) < self.policy.epsilon
        return np.where(explore, self.rng.integers(0, self.policy.n_actions, greedy.shape), greedy)

    def act(self, phase: int, params: Any) -> tuple[float, bool]:
        env = self.eval_env if phase == self.EVAL else self.env
        state, obs = env.state_np(), env.observations()
        actions = self.get_action(phase, obs)
        _, reward, done = env.step_np(actions)
        if phase != self.EVAL:
            transition = [
                state,
                obs,
                actions.astype(np.int32),
                np.array([reward], np.float32),
                env.state_np(),
                env.observations(),
                np.array([done], np.float32),
            ]
            self.replay_buffer.insert(transition)
        return reward, done


class QMIXLearner(Learner):
    def __init__(self, params: dict[str, Any]) -> None:
        super().__init__()
        pol = params["policy"]
        self.pol = pol
        self.gamma = float(params.get("gamma", 0.99))
        agent, mixer, n = pol.agent_net, pol.mixer, pol.n_agents
        weights = agent.trainable_params() + mixer.trainable_params()

        def loss_fn(state, obs, actions, target):
            b = state.shape[0]
            q = agent(ops.reshape(obs, (b * n, -1)))
            q_taken = ops.reshape(
                ops.gather_elements(q, 1, ops.reshape(actions, (b * n, 1))), (b, n)
            )
            return ops.reduce_mean((mixer(q_taken, state) - target) ** 2)

        optimizer = nn.Adam(weights, learning_rate=params.get("lr", 5e-3))
        self.step = GradStep(loss_fn, weights, optimizer, 10.0)
        interval = int(params.get("target_update_interval", 50))
        self.updates = [
            SoftUpdate(1.0, interval, src.trainable_params(), dst.trainable_params())
            for src, dst in ((agent, pol.target_agent_net), (mixer, pol.target_mixer))
        ]

    def learn(self, experience: Any) -> float:
        state, obs, actions, reward, next_state, next_obs, done = (to_np(e) for e in experience)
        b, n = obs.shape[0], self.pol.n_agents
        next_q = predict(self.pol.target_agent_net, next_obs.reshape(b * n, -1)).max(-1)
        with no_grad():
            q_tot_next = self.pol.target_mixer(Tensor(next_q.reshape(b, n).astype(np.float32)),
                                               Tensor(next_state)).asnumpy()  # fmt: skip
        target = (reward + self.gamma * (1.0 - done) * q_tot_next).astype(np.float32)
        loss = self.step(state, obs, actions.astype(np.int32), target)
        for update in self.updates:
            update()
        return loss


class QMIXTrainer(Trainer):
    def __init__(self, msrl: Any, params: dict[str, Any] | None = None) -> None:
        super().__init__(msrl)
        params = params or {}
        self.batch_start = int(params.get("learning_starts", 64))
        self.env_steps = 0
        self.episode_returns: list[float] = []
        self.num_evaluate_episode = 1

    def trainable_variables(self) -> dict[str, nn.Cell]:
        pol = self.msrl.policy_and_network.policy
        return {"agent_net": pol.agent_net, "mixer": pol.mixer}

    def train_one_episode(self) -> tuple[float, float, int, Any]:
        env = self.msrl.collect_environment
        env.reset_np()
        done, ret, steps, losses = False, 0.0, 0, []
        while not done:
            reward, done = self.msrl.agent_act(Actor.COLLECT, None)
            ret, steps, self.env_steps = ret + reward, steps + 1, self.env_steps + 1
            if self.msrl.replay_buffer.size() >= self.batch_start:
                losses.append(self.msrl.agent_learn(self.msrl.replay_buffer_sample()))
        self.episode_returns.append(ret)
        return float(np.mean(losses)) if losses else 0.0, ret, steps, None

    def evaluate(self) -> float:
        env, total = self.msrl.eval_environment, 0.0
        for _ in range(self.num_evaluate_episode):
            env.reset_np()
            done = False
            while not done:
                reward, done = self.msrl.agent_act(Actor.EVAL, None)
                total += reward
        return total / self.num_evaluate_episode


class _Holder:
    def __init__(self, params: dict[str, Any]) -> None:
        self.policy = QMIXPolicy(params)


def qmix_config(seed: int = 0, **overrides: Any) -> dict[str, Any]:
    """QMIX on the two-step game, learning from uniformly random play (epsilon 1), as the
    paper's experiment."""
    env = TwoStepGameEnvironment
    obs_dim = env.state_dim + env.num_agents
    learner = {"gamma": 0.99, "lr": 5e-3, "target_update_interval": 50}
    learner.update(overrides.pop("learner_params", {}))
    policy = {"hidden_sizes": [32], "embed_dim": 8, "epsilon": 1.0}
    policy.update(overrides.pop("policy_params", {}))
    config = {
        "actor": {"number": 1, "type": QMIXActor, "policies": ["policy"]},
        "learner": {"number": 1, "type": QMIXLearner, "params": learner, "networks": ["policy"]},
        "policy_and_network": {"type": _Holder, "params": policy},
        "collect_environment": {"type": env, "params": {"seed": seed}},
        "eval_environment": {"type": env, "params": {"seed": seed + 1}},
        "replay_buffer": {
            "number": 1, "capacity": 5000, "sample_size": 32,
            "data_shape": [(3,), (2, obs_dim), (2,), (1,), (3,), (2, obs_dim), (1,)],
            "data_type": [float32, float32, int32, float32, float32, float32, float32],
        },
    }  # fmt: skip
    config.update(overrides)
    return config
