"""``MSRL``: builds an algorithm's components from its ``algorithm_config`` and wires them.

Each component is built as ``Type(params)``: environments first (their spaces give
``state_space_dim``/``action_space_dim``, injected into ``policy_and_network``'s params when
they are 0 or missing, with ``environment_config``), then the policy-and-network object,
the replay buffer(s), the actors (``policies``/``networks`` are attribute names of the
policy-and-network object handed over in their params, with the environments and buffer)
and the learner. ``share_env=False`` gives every actor its own environments.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sporeling.core import Tensor, nn

from ..agent.agent import Agent
from ..environment.multi_environment_wrapper import MultiEnvironmentWrapper
from .config import validate_config
from .replay_buffer import PriorityReplayBuffer, ReservoirReplayBuffer, UniformReplayBuffer


def _build_env(cfg: dict[str, Any], first_id: int = 0) -> Any:
    cls, params = cfg["type"], dict(cfg.get("params", {}))
    number = cfg.get("number")
    if number is None:
        return _construct(cls, params, first_id)
    envs = [_construct(cls, params, first_id + i) for i in range(number)]
    return MultiEnvironmentWrapper(
        envs, cfg.get("num_parallel", number), backend=cfg.get("backend", "thread")
    )


def _construct(cls: type, params: dict[str, Any], env_id: int) -> Any:
    try:
        return cls(params, env_id)
    except TypeError:
        return cls(params)


def _build_buffer(cfg: dict[str, Any]) -> Any:
    cls = cfg.get("type", UniformReplayBuffer)
    shapes, types = cfg["data_shape"], cfg["data_type"]
    capacity, sample_size = cfg["capacity"], cfg.get("sample_size", 1)
    params = dict(cfg.get("params", {}))
    if cls is PriorityReplayBuffer:
        return cls(params.pop("alpha", 0.6), capacity, sample_size, shapes, types, **params)
    if cls is ReservoirReplayBuffer:
        return cls(capacity, sample_size, shapes, types, **params)
    if cls is UniformReplayBuffer:
        return cls(sample_size, capacity, shapes, types, **params)
    return cls(sample_size=sample_size, capacity=capacity, shapes=shapes, types=types, **params)


def _space_of(env: Any, name: str) -> Any:
    return getattr(env, f"{name}_single", getattr(env, name))


class MSRL(nn.Cell):
    """The built algorithm: ``collect_environment``, ``eval_environment``, ``policy_and_network``,
    ``buffers``, ``actors``, ``learner``, ``agent`` and MindSpore RL's handles."""

    def __init__(self, alg_config: dict[str, Any], deploy_config: dict[str, Any] | None = None):
        super().__init__()
        config = validate_config(alg_config)
        self.config = config
        self.deploy_config = deploy_config or {}
        self.collect_environment = _build_env(config["collect_environment"])
        self.eval_environment = _build_env(config["eval_environment"], first_id=10_000)

        pn = config["policy_and_network"]
        pn_params = dict(pn.get("params", {}))
        obs = _space_of(self.collect_environment, "observation_space")
        act = _space_of(self.collect_environment, "action_space")
        if not pn_params.get("state_space_dim"):
            pn_params["state_space_dim"] = int(obs.shape[-1]) if obs.shape else 1
        if not pn_params.get("action_space_dim"):
            pn_params["action_space_dim"] = act.num_values
        pn_params["environment_config"] = self.collect_environment.config
        self.policy_and_network = pn["type"](pn_params)

        self.buffers: dict[str, Any] = {}
        if "replay_buffer" in config:
            rb = config["replay_buffer"]
            for name, sub in rb.get("multi_type_replaybuffer", {}).items():
                self.buffers[name] = _build_buffer({**rb, **sub})
            if not self.buffers:
                self.buffers["default"] = _build_buffer(rb)
        self.replay_buffer = next(iter(self.buffers.values()), None)

        actor_cfg = config["actor"]
        n_actors = actor_cfg.get("number", 1)
        share_env = actor_cfg.get("share_env", True)
        self.actors_list = []
        self.actor_environments = []
        for i in range(n_actors):
            params = dict(actor_cfg.get("params", {}))
            for name in (*actor_cfg.get("policies", []), *actor_cfg.get("networks", [])):
                params[name] = self._member(name, "actor")
            if share_env or i == 0:
                collect, evaluate = self.collect_environment, self.eval_environment
            else:
                collect = _build_env(config["collect_environment"], first_id=100 * i)
                evaluate = _build_env(config["eval_environment"], first_id=10_000 + 100 * i)
            self.actor_environments.append(collect)
            params["collect_environment"] = collect
            params["eval_environment"] = evaluate
            params["replay_buffer"] = self.replay_buffer
            params["actor_id"] = i
            self.actors_list.append(actor_cfg["type"](params))
        self.actors = self.actors_list[0] if n_actors == 1 else self.actors_list

        learner_cfg = config["learner"]
        params = dict(learner_cfg.get("params", {}))
        for name in learner_cfg.get("networks", []):
            params[name] = self._member(name, "learner")
        self.learner = learner_cfg["type"](params)
        self.agent = Agent(self.actors_list, self.learner)
        self.num_actor = n_actors

    def _member(self, name: str, who: str) -> Any:
        try:
            return getattr(self.policy_and_network, name)
        except AttributeError:
            raise AttributeError(
                f"algorithm_config[{who!r}] names {name!r}, but "
                f"{type(self.policy_and_network).__name__} has no attribute {name!r}"
            ) from None

    # ---- MindSpore RL's handles -------------------------------------------------------------
    def agent_act(self, phase: int, params: Any) -> Any:
        return self.agent.act(phase, params)

    def agent_get_action(self, phase: int, params: Any) -> Any:
        return self.agent.get_action(phase, params)

    def agent_learn(self, experience: Any) -> Any:
        return self.agent.learn(experience)

    def _buffer(self, name: str | None) -> Any:
        if not self.buffers:
            raise RuntimeError("this algorithm_config has no 'replay_buffer'")
        return self.replay_buffer if name is None else self.buffers[name]

    def replay_buffer_sample(self, *args: Any, name: str | None = None) -> Any:
        return self._buffer(name).sample(*args)

    def replay_buffer_insert(self, exp: Any, name: str | None = None) -> Any:
        return self._buffer(name).insert(exp)

    def replay_buffer_full(self, name: str | None = None) -> bool:
        return self._buffer(name).full()

    def replay_buffer_reset(self, name: str | None = None) -> bool:
        return self._buffer(name).reset()

    def get_replay_buffer(self, name: str | None = None) -> Any:
        return self._buffer(name)

    def get_replay_buffer_elements(
        self, transpose: bool = False, shape: Any = None, name: str | None = None
    ) -> list[Tensor]:
        """Every held transition (oldest first), one Tensor per element; ``transpose`` swaps
        the first two axes (time-major <-> env-major), ``shape`` reshapes the leading axis."""
        out = []
        for a in self._buffer(name).get_data_np():
            if shape is not None:
                a = a.reshape(*shape, *a.shape[1:])
            if transpose:
                a = np.swapaxes(a, 0, 1)
            out.append(Tensor(np.ascontiguousarray(a)))
        return out
