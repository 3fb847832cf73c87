"""PPO (Schulman et al. 2017), clipped objective, on a batch of environments.

Read top to bottom like a single-file implementation: the actor collects ``num_steps``
steps from each of the ``num_envs`` environments (a rollout), the learner computes GAE
advantages and runs ``epochs`` passes of minibatch updates of
``-min(r A, clip(r, 1-e, 1+e) A) + vf_coef (V - R)^2 - ent_coef H``, with the learning rate
and the clip range annealed linearly to 0 over ``total_steps`` (as rl-baselines3-zoo's tuned
CartPole-v1 settings). A time-limit truncation bootstraps with ``gamma V(final state)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sporeling.core import get_seed, initializer, nn, ops

from ..agent import Actor, Learner, Trainer
from ..environment.cartpole_batch import CartPoleBatchEnvironment
from ..environment.gym_environment import GymEnvironment
from ._common import GradStep, env_reset, env_step, predict, to_np


def mlp(sizes: list[int], out_gain: float) -> nn.SequentialCell:
    """Tanh MLP with orthogonal weights (gain sqrt 2, ``out_gain`` for the last layer)."""
    cells: list[nn.Cell] = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        last = i == len(sizes) - 2
        gain = out_gain if last else float(np.sqrt(2.0))
        cells.append(nn.Dense(a, b, weight_init=initializer.Orthogonal(gain), bias_init="zeros"))
        if not last:
            cells.append(nn.Tanh())
    return nn.SequentialCell(cells)


def softmax_sample(logits: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Sample one action per row; return (actions, log-probabilities)."""
    z = logits - logits.max(axis=-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    u = rng.random((logits.shape[0], 1))
    actions = (np.exp(logp).cumsum(axis=-1) < u).sum(axis=-1)
    actions = np.minimum(actions, logits.shape[-1] - 1)
    return actions, np.take_along_axis(logp, actions[:, None], 1)[:, 0]


class PPOPolicy:
    """``actor_net`` (logits) and ``critic_net`` (value), separate tanh MLPs."""

    def __init__(self, params: dict[str, Any]) -> None:
        hidden = list(params.get("hidden_sizes", [64, 64]))
        s, a = params["state_space_dim"], params["action_space_dim"]
        self.actor_net = mlp([s, *hidden, a], 0.01)
        self.critic_net = mlp([s, *hidden, 1], 1.0)


class PPOActor(Actor):
    """``act(COLLECT, num_steps)`` fills and returns a rollout dict; ``act(EVAL, state)`` is
    the greedy action."""

    def __init__(self, params: dict[str, Any]) -> None:
        super().__init__()
        self.actor_net = params["actor_net"]
        self.critic_net = params["critic_net"]
        self.env = params["collect_environment"]
        self.eval_env = params["eval_environment"]
        self.gamma = float(params.get("gamma", 0.99))
        seed = get_seed()
        self.rng = np.random.default_rng(None if seed is None else seed + 17 + params["actor_id"])
        self.state: np.ndarray | None = None
        self.episode_return = np.zeros(getattr(self.env, "num_envs", 1))
        self.finished_returns: list[float] = []

    def get_action(self, phase: int, params: Any) -> Any:
        logits = predict(self.actor_net, np.atleast_2d(to_np(params)))
        if phase == self.EVAL:
            return logits.argmax(-1)
        return softmax_sample(logits, self.rng)[0]

    def act(self, phase: int, params: Any) -> Any:
        if phase == self.EVAL:
            return self.get_action(phase, params)
        num_steps = int(params)
        if self.state is None:
            self.state = env_reset(self.env)
        n = self.state.shape[0]
        obs = np.zeros((num_steps, n, self.state.shape[1]), np.float32)
        act = np.zeros((num_steps, n), np.int32)
        logp = np.zeros((num_steps, n), np.float32)
        rew = np.zeros((num_steps, n), np.float32)
        done = np.zeros((num_steps, n), np.float32)
        for t in range(num_steps):
            obs[t] = self.state
            a, lp = softmax_sample(predict(self.actor_net, self.state), self.rng)
            self.state, r, d = env_step(self.env, a)
            r = np.asarray(r, np.float32).copy()
            truncated = getattr(self.env, "truncated", None)
            if truncated is not None and truncated.any():
                final = self.env.final_state[truncated].astype(np.float32)
                r[truncated] += self.gamma * predict(self.critic_net, final)[:, 0]
            act[t], logp[t], rew[t], done[t] = a, lp, r, d
            self.episode_return += np.asarray(self.env.reward if hasattr(self.env, "reward") else r)
            for i in np.flatnonzero(d):
                self.finished_returns.append(float(self.episode_return[i]))
                self.episode_return[i] = 0.0
        last_value = predict(self.critic_net, self.state)[:, 0]
        return {"obs": obs, "act": act, "logp": logp, "rew": rew, "done": done,
                "last_value": last_value}  # fmt: skip


def gae(rew, done, values, last_value, gamma, lam):
    """Generalised advantage estimation over a (T, N) rollout; done[t] ends step t's episode."""
    T = rew.shape[0]
    adv = np.zeros_like(rew)
    running = np.zeros_like(last_value)
    for t in range(T - 1, -1, -1):
        next_value = last_value if t == T - 1 else values[t + 1]
        nonterminal = 1.0 - done[t]
        delta = rew[t] + gamma * next_value * nonterminal - values[t]
        running = delta + gamma * lam * nonterminal * running
        adv[t] = running
    return adv, adv + values


class PPOLearner(Learner):
    def __init__(self, params: dict[str, Any]) -> None:
        super().__init__()
        self.actor_net, self.critic_net = params["actor_net"], params["critic_net"]
        self.gamma = float(params.get("gamma", 0.98))
        self.lam = float(params.get("gae_lambda", 0.8))
        self.epochs = int(params.get("epochs", 20))
        self.batch_size = int(params.get("batch_size", 256))
        self.clip0 = float(params.get("clip", 0.2))
        self.lr0 = float(params.get("lr", 1e-3))
        self.vf_coef = float(params.get("vf_coef", 0.5))
        self.ent_coef = float(params.get("ent_coef", 0.0))
        self.total_steps = int(params.get("total_steps", 100_000))
        self.anneal = bool(params.get("anneal", True))
        self.progress = 0  # environment steps learned from, for the schedules
        seed = get_seed()
        self.rng = np.random.default_rng(None if seed is None else seed + 29)
        weights = self.actor_net.trainable_params() + self.critic_net.trainable_params()
        self.optimizer = nn.Adam(weights, learning_rate=self.lr0, eps=1e-5)
        self.clip = self.clip0
        actor, critic = self.actor_net, self.critic_net

        def loss_fn(obs, act, old_logp, adv, ret):
            logp_all = ops.log_softmax(actor(obs), -1)
            logp = ops.squeeze(ops.gather_elements(logp_all, 1, act), 1)
            ratio = ops.exp(logp - old_logp)
            clipped = ops.clip_by_value(ratio, 1.0 - self.clip, 1.0 + self.clip)
            pg_loss = -ops.reduce_mean(ops.minimum(ratio * adv, clipped * adv))
            v_loss = ops.reduce_mean((ops.squeeze(critic(obs), 1) - ret) ** 2)
            entropy = -ops.reduce_mean(ops.reduce_sum(ops.exp(logp_all) * logp_all, -1))
            return pg_loss + self.vf_coef * v_loss - self.ent_coef * entropy

        self.step = GradStep(loss_fn, weights, self.optimizer, params.get("max_grad_norm", 0.5))

    def learn(self, experience: Any) -> float:
        r = experience
        T, N = r["rew"].shape
        values = predict(self.critic_net, r["obs"].reshape(T * N, -1))[:, 0].reshape(T, N)
        adv, ret = gae(r["rew"], r["done"], values, r["last_value"], self.gamma, self.lam)
        if self.anneal:
            frac = max(0.0, 1.0 - self.progress / self.total_steps)
            self.optimizer.learning_rate.set_data(np.array(self.lr0 * frac, np.float32))
            self.clip = self.clip0 * frac
        self.progress += T * N
        flat = {
            "obs": r["obs"].reshape(T * N, -1), "act": r["act"].reshape(-1, 1),
            "logp": r["logp"].reshape(-1), "adv": adv.reshape(-1).astype(np.float32),
            "ret": ret.reshape(-1).astype(np.float32),
        }  # fmt: skip
        losses = []
        for _ in range(self.epochs):
            order = self.rng.permutation(T * N)
            for start in range(0, T * N, self.batch_size):
                idx = order[start : start + self.batch_size]
                a = flat["adv"][idx]
                a = (a - a.mean()) / (a.std() + 1e-8)
                losses.append(self.step(flat["obs"][idx], flat["act"][idx].astype(np.int32),
                                        flat["logp"][idx], a, flat["ret"][idx]))  # fmt: skip
        return float(np.mean(losses))


class PPOTrainer(Trainer):
    """One rollout and its update per ``train_one_episode``:
    ``(loss, mean return of the episodes finished in it, env steps, None)``."""

    def __init__(self, msrl: Any, params: dict[str, Any] | None = None) -> None:
        super().__init__(msrl)
        params = params or {}
        self.num_steps = int(params.get("num_steps", 32))
        self.num_evaluate_episode = int(params.get("num_evaluate_episode", 10))
        self.env_steps = 0
        self.episode_returns: list[float] = []

    def trainable_variables(self) -> dict[str, nn.Cell]:
        return {
            "actor_net": self.msrl.learner.actor_net,
            "critic_net": self.msrl.learner.critic_net,
        }

    def train_one_episode(self) -> tuple[float, float, int, Any]:
        actor = self.msrl.actors_list[0]
        seen = len(actor.finished_returns)
        rollout = self.msrl.agent_act(Actor.COLLECT, self.num_steps)
        loss = self.msrl.agent_learn(rollout)
        steps = rollout["rew"].size
        self.env_steps += steps
        new = actor.finished_returns[seen:]
        self.episode_returns.extend(new)
        return loss, float(np.mean(new)) if new else float("nan"), steps, None

    def evaluate(self) -> float:
        actor = self.msrl.actors_list[0]
        env, total = self.msrl.eval_environment, 0.0
        for _ in range(self.num_evaluate_episode):
            s, done = env_reset(env), False
            while not done:
                s, r, done = env_step(env, int(actor.act(Actor.EVAL, s)[0]))
                total += float(r)
        return total / self.num_evaluate_episode


def ppo_config(env_name: str = "CartPole-v1", seed: int = 0, **overrides: Any) -> dict[str, Any]:
    """PPO on CartPole-v1 with rl-baselines3-zoo's tuned hyperparameters (8 envs x 32 steps,
    20 epochs of one 256 minibatch, gamma 0.98, GAE 0.8, lr 1e-3 and clip 0.2 annealed)."""
    if env_name != "CartPole-v1":
        raise ValueError(f"ppo_config: only CartPole-v1 has a tuned config, got {env_name!r}")
    learner = {"gamma": 0.98, "gae_lambda": 0.8, "epochs": 20, "batch_size": 256, "lr": 1e-3,
               "clip": 0.2, "ent_coef": 0.0, "total_steps": 100_000}  # fmt: skip
    learner.update(overrides.pop("learner_params", {}))
    config = {
        "actor": {"number": 1, "type": PPOActor, "networks": ["actor_net", "critic_net"],
                  "params": {"gamma": learner["gamma"]}},
        "learner": {"number": 1, "type": PPOLearner, "params": learner,
                    "networks": ["actor_net", "critic_net"]},
        "policy_and_network": {"type": PPOPolicy, "params": {"hidden_sizes": [64, 64]}},
        "collect_environment": {"type": CartPoleBatchEnvironment,
                                "params": {"num_envs": overrides.pop("num_envs", 8), "seed": seed}},
        "eval_environment": {"type": GymEnvironment,
                             "params": {"name": env_name, "seed": seed + 1}},
    }  # fmt: skip
    config.update(overrides)
    return config
