"""DQN (Mnih et al. 2015) in MindSpore RL 0.5's shape: policy, actor, learner and trainer.

The actor acts epsilon-greedily in the collect environment and writes transitions to the
replay buffer; the learner regresses Q(s, a) on ``r + gamma * max_a' Q_target(s', a')``
(Huber loss, Adam) and copies the network into the target every
``target_update_interval`` gradient steps; the trainer runs one episode per call, training
``gradient_steps`` times every ``train_freq`` environment steps once ``learning_starts``
transitions are held.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from sporeling.core import float32, initializer, int32, nn, ops

from ..agent import Actor, Learner, Trainer
from ..environment.gym_environment import GymEnvironment
from ..network import FullyConnectedLayers
from ..policy import EpsilonGreedyPolicy, GreedyPolicy, RandomPolicy
from ..utils.soft_update import SoftUpdate
from ._common import GradStep, env_reset, env_step, evaluate_episodes, predict, to_np


class DQNPolicy:
    """Networks and policies: ``policy_network``, ``target_network``, ``init_policy``,
    ``collect_policy``, ``evaluate_policy``."""

    def __init__(self, params: dict[str, Any]) -> None:
        sizes = [
            params["state_space_dim"],
            *params.get("hidden_sizes", [64, 64]),
            params["action_space_dim"],
        ]
        # MindSpore 2.x's (and PyTorch's) Dense default: U(+-1/sqrt(fan_in))
        init = params.get("weight_init") or initializer.HeUniform(math.sqrt(5))
        # None: U(+-1/sqrt(fan_in)), the Dense default of PyTorch and MindSpore 2.x
        bias = params.get("bias_init", "zeros")
        self.policy_network = FullyConnectedLayers(sizes, weight_init=init, bias_init=bias)
        self.target_network = FullyConnectedLayers(sizes, weight_init=init, bias_init=bias)
        for p, t in zip(
            self.policy_network.trainable_params(), self.target_network.trainable_params()
        ):
            t.set_data(p.asnumpy().copy())
        self.init_policy = RandomPolicy(params["action_space_dim"], shape=())
        self.collect_policy = EpsilonGreedyPolicy(
            self.policy_network,
            (1, 1),
            params.get("epsi_high", 1.0),
            params.get("epsi_low", 0.05),
            params.get("decay", 2000.0),
            params["action_space_dim"],
            params.get("epsilon_schedule", "exponential"),
        )
        self.evaluate_policy = GreedyPolicy(self.policy_network)


class DQNActor(Actor):
    """``act(phase, state) -> (new_state, reward, done)``: one environment step, inserted into
    the replay buffer (phases INIT and COLLECT), or not (EVAL)."""

    def __init__(self, params: dict[str, Any]) -> None:
        super().__init__()
        self.init_policy = params["init_policy"]
        self.collect_policy = params["collect_policy"]
        self.evaluate_policy = params["evaluate_policy"]
        self.collect_environment = params["collect_environment"]
        self.eval_environment = params["eval_environment"]
        self.replay_buffer = params["replay_buffer"]
        self.steps = 0

    def get_action(self, phase: int, params: Any) -> int:
        state = np.asarray(params, np.float32)
        if phase == self.INIT:
            return int(to_np(self.init_policy()).reshape(()))
        if phase == self.COLLECT:
            return int(to_np(self.collect_policy(state[None], self.steps))[0])
        return int(to_np(self.evaluate_policy(state[None]))[0])

    def act(self, phase: int, params: Any) -> tuple[np.ndarray, float, bool]:
        state = np.asarray(to_np(params), np.float32)
        action = self.get_action(phase, state)
        env = self.eval_environment if phase == self.EVAL else self.collect_environment
        new_state, reward, done = env_step(env, action)
        if phase != self.EVAL:
            # a time-limit truncation is not an end of the MDP: bootstrap through it
            terminal = getattr(env, "last_terminated", done)
            self.replay_buffer.insert(
                [
                    state,
                    np.array([action], np.int32),
                    np.array([reward], np.float32),
                    new_state,
                    np.array([terminal], np.float32),
                ]
            )
            self.steps += 1
        return new_state, float(reward), bool(done)


class DQNLearner(Learner):
    def __init__(self, params: dict[str, Any]) -> None:
        super().__init__()
        self.policy_network = params["policy_network"]
        self.target_network = params["target_network"]
        self.gamma = float(params.get("gamma", 0.99))
        lr, params_ = params.get("lr", 1e-3), self.policy_network.trainable_params()
        optimizer = params.get("optimizer", "adam")
        if optimizer == "adam":  # MindSpore's: eps added to sqrt(v) before bias correction
            self.optimizer = nn.Adam(params_, learning_rate=lr)
        elif optimizer == "torch_adam":  # PyTorch's (SB3's): AdamW without decay
            self.optimizer = nn.AdamW(params_, learning_rate=lr, weight_decay=0.0)
        else:
            raise ValueError(
                f"DQNLearner: params['optimizer'] expected 'adam' or 'torch_adam', got "
                f"{optimizer!r}"
            )
        self.target_update = SoftUpdate(
            1.0,
            params.get("target_update_interval", 100),
            self.policy_network.trainable_params(),
            self.target_network.trainable_params(),
        )
        net = self.policy_network

        def loss_fn(state, action, target):
            q = ops.gather_elements(net(state), 1, action)
            return ops.smooth_l1_loss(q, target, reduction="mean")

        self.step = GradStep(
            loss_fn, net.trainable_params(), self.optimizer, params.get("max_grad_norm", 10.0)
        )

    def learn(self, experience: Any) -> float:
        state, action, reward, next_state, terminal = (to_np(e) for e in experience)
        q_next = predict(self.target_network, next_state).max(axis=1, keepdims=True)
        target = (reward + self.gamma * (1.0 - terminal) * q_next).astype(np.float32)
        loss = self.step(state.astype(np.float32), action.astype(np.int32), target)
        self.target_update()
        return loss


class DQNTrainer(Trainer):
    """``train_one_episode() -> (mean loss, episode return, steps, None)``."""

    def __init__(self, msrl: Any, params: dict[str, Any] | None = None) -> None:
        super().__init__(msrl)
        params = params or {}
        self.learning_starts = params.get("learning_starts", 1000)
        self.train_freq = params.get("train_freq", 1)
        self.gradient_steps = params.get("gradient_steps", 1)
        self.num_evaluate_episode = params.get("num_evaluate_episode", 5)
        self.env_steps = 0
        self.actor = msrl.actors
        self.episode_returns: list[float] = []

    def trainable_variables(self) -> dict[str, nn.Cell]:
        return {"policy_net": self.msrl.learner.policy_network}

    def train_one_episode(self) -> tuple[float, float, int, Any]:
        env = self.msrl.collect_environment
        buffer = self.msrl.replay_buffer
        state, done, ret, steps, losses = env_reset(env), False, 0.0, 0, []
        while not done:
            phase = Actor.INIT if buffer.size() < self.learning_starts else Actor.COLLECT
            state, reward, done = self.msrl.agent_act(phase, state)
            ret += reward
            steps += 1
            self.env_steps += 1
            if phase == Actor.COLLECT and self.env_steps % self.train_freq == 0:
                for _ in range(self.gradient_steps):
                    losses.append(self.msrl.agent_learn(self.msrl.replay_buffer_sample()))
        self.episode_returns.append(ret)
        return float(np.mean(losses)) if losses else 0.0, ret, steps, None

    def evaluate(self) -> float:
        actor = self.actor
        return evaluate_episodes(
            self.msrl.eval_environment,
            lambda s: actor.get_action(Actor.EVAL, s),
            self.num_evaluate_episode,
        )


def dqn_config(env_name: str = "CartPole-v1", seed: int = 0, **overrides: Any) -> dict[str, Any]:
    """The algorithm_config of DQN on a gymnasium environment with discrete actions.

    Defaults follow rl-baselines3-zoo's tuned CartPole-v1 DQN (lr 2.3e-3, batch 64,
    256x256 network, 128 gradient steps every 256 environment steps, the target network
    synced after each burst of gradient steps, epsilon linear from 1 to 0.04 over the first
    8,000 steps: ``exploration_fraction=0.16`` of its 50k budget), PyTorch's initial biases
    (U(+-1/sqrt(fan_in)), not zeros) and SB3's optimizer,
    PyTorch's Adam (``optimizer="torch_adam"``: ``eps`` added after the bias correction; with
    MindSpore's ``"adam"`` a weight whose gradient is below ~1e-6 barely moves in the first
    steps, where PyTorch's moves it by the whole learning rate).
    """
    policy = {
        "hidden_sizes": [256, 256],
        "epsi_high": 1.0,
        "epsi_low": 0.04,
        "decay": 8000.0,
        "epsilon_schedule": "linear",
        "bias_init": None,  # PyTorch's Linear default, as SB3's network
    }
    learner = {"gamma": 0.99, "lr": 2.3e-3, "target_update_interval": 128,
               "optimizer": "torch_adam"}  # fmt: skip
    probe = GymEnvironment({"name": env_name})
    obs_shape = probe.observation_space.shape
    probe.close()
    policy.update(overrides.pop("policy_params", {}))
    learner.update(overrides.pop("learner_params", {}))
    config = {
        "actor": {
            "number": 1,
            "type": DQNActor,
            "policies": ["init_policy", "collect_policy", "evaluate_policy"],
        },
        "learner": {
            "number": 1,
            "type": DQNLearner,
            "params": learner,
            "networks": ["policy_network", "target_network"],
        },
        "policy_and_network": {"type": DQNPolicy, "params": policy},
        "collect_environment": {"type": GymEnvironment, "params": {"name": env_name, "seed": seed}},
        "eval_environment": {
            "type": GymEnvironment,
            "params": {"name": env_name, "seed": seed + 1},
        },
        "replay_buffer": {
            "number": 1,
            "capacity": overrides.pop("capacity", 100_000),
            "sample_size": overrides.pop("batch_size", 64),
            "data_shape": [obs_shape, (1,), (1,), obs_shape, (1,)],
            "data_type": [float32, int32, float32, float32, float32],
        },
    }
    config.update(overrides)
    return config
