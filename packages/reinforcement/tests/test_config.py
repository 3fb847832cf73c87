"""algorithm_config validation and the MSRL builder's wiring."""

from __future__ import annotations

import numpy as np
import pytest

import sporeling.core as ms
from sporeling.rl.agent import Actor, Learner
from sporeling.rl.core import MSRL, ConfigError, UniformReplayBuffer, validate_config
from sporeling.rl.environment import MultiEnvironmentWrapper, Space, TicTacToeEnvironment


class ToyEnv:
    """A counter environment: state (3,), two actions; records its env_id."""

    def __init__(self, params, env_id=0):
        self.params, self.env_id = params, env_id
        self.observation_space = Space((3,), np.float32)
        self.action_space = Space((), np.int32, low=0, high=5)
        self.reward_space = Space((), np.float32)
        self.done_space = Space((), np.bool_, low=0, high=2)
        self.t = 0

    config = property(lambda self: {"toy": True})

    def reset_np(self):
        self.t = 0
        return np.zeros(3, np.float32)

    def step_np(self, action):
        self.t += 1
        return np.full(3, self.t, np.float32), 1.0, self.t >= 3

    def close(self):
        return True


class ToyPolicy:
    def __init__(self, params):
        self.params = params
        self.net = ms.nn.Dense(params["state_space_dim"], params["action_space_dim"])
        self.collect_policy = "collect"


class ToyActor(Actor):
    def __init__(self, params):
        super().__init__()
        self.params = params

    def act(self, phase, params):
        return phase, params


class ToyLearner(Learner):
    def __init__(self, params):
        super().__init__()
        self.params = params

    def learn(self, experience):
        return len(experience)


def config(**changes):
    c = {
        "actor": {"number": 1, "type": ToyActor, "params": {"k": 1}, "policies": ["collect_policy"],
                  "networks": ["net"]},
        "learner": {"number": 1, "type": ToyLearner, "params": {"gamma": 0.9}, "networks": ["net"]},
        "policy_and_network": {"type": ToyPolicy, "params": {"state_space_dim": 0,
                                                               "action_space_dim": 0}},
        "collect_environment": {"type": ToyEnv, "params": {"name": "toy"}},
        "eval_environment": {"type": ToyEnv, "params": {"name": "toy"}},
        "replay_buffer": {"number": 1, "type": UniformReplayBuffer, "capacity": 8,
                          "sample_size": 2, "data_shape": [(3,), (1,)],
                          "data_type": [ms.float32, ms.int32]},
    }  # fmt: skip
    for path, value in changes.items():
        *keys, last = path.split("__")
        d = c
        for k in keys:
            d = d[k]
        if value is KeyError:
            del d[last]
        else:
            d[last] = value
    return c


@pytest.mark.parametrize(
    ("change", "value", "message"),
    [
        ("learner", KeyError, "missing compulsory key 'learner'"),
        ("eval_environment", KeyError, "missing compulsory key 'eval_environment'"),
        ("actor__type", KeyError, r"algorithm_config\['actor'\]: missing compulsory key 'type'"),
        ("actor__type", "ToyActor", r"\['actor'\]\['type'\]: expected a class .* got str"),
        ("actor__number", 0, r"\['actor'\]\['number'\]: expected an int >= 1, got int 0"),
        ("actor__share_env", "yes", r"\['share_env'\]: expected True or False"),
        ("actor__policies", "collect_policy", r"\['policies'\]: expected a list of attribute"),
        ("learner__params", [1], r"\['learner'\]\['params'\]: expected a dict"),
        ("replay_buffer__capacity", KeyError, "missing compulsory key 'capacity'"),
        ("replay_buffer__data_shape", [3], r"\['data_shape'\]: expected a list of shapes"),
        ("replay_buffer__data_type", [ms.float32], "data_shape has 2 entries but data_type has 1"),
        ("replay_buffer__data_type", [ms.float32, "nonsense"], r"\['data_type'\]\[1\]"),
        ("collect_environment__backend", "fork", r"\['backend'\]: expected 'thread' or 'process'"),
        ("actor__polices", ["x"], "unknown key 'polices'; did you mean 'policies'"),
        ("replay_bufer", {}, "unknown key 'replay_bufer'; did you mean 'replay_buffer'"),
    ],
)
def test_validation_names_the_key_and_the_problem(change, value, message):
    with pytest.raises(ConfigError, match=message):
        validate_config(config(**{change: value}))


def test_not_a_dict():
    with pytest.raises(ConfigError, match="expected a dict, got list"):
        validate_config([])


def test_builder_injects_dims_and_wires_components():
    msrl = MSRL(config())
    pn = msrl.policy_and_network
    assert pn.params["state_space_dim"] == 3 and pn.params["action_space_dim"] == 5
    assert pn.params["environment_config"] == {"toy": True}
    actor = msrl.actors
    assert isinstance(actor, ToyActor)
    assert actor.params["collect_policy"] == "collect" and actor.params["net"] is pn.net
    assert actor.params["collect_environment"] is msrl.collect_environment
    assert actor.params["replay_buffer"] is msrl.replay_buffer and actor.params["k"] == 1
    assert msrl.learner.params["net"] is pn.net and msrl.learner.params["gamma"] == 0.9
    assert msrl.agent_act(2, "s") == (2, "s")
    assert msrl.agent_learn([1, 2, 3]) == 3
    msrl.replay_buffer_insert([np.ones((4, 3)), np.arange(4).reshape(4, 1)])
    assert not msrl.replay_buffer_full()
    s, a = msrl.replay_buffer_sample()
    assert s.shape == (2, 3) and a.shape == (2, 1) and a.dtype == ms.int32
    (elems_s, elems_a) = msrl.get_replay_buffer_elements(transpose=True, shape=(2, 2))
    assert elems_s.shape == (2, 2, 3)
    np.testing.assert_array_equal(elems_a.asnumpy()[:, :, 0], [[0, 2], [1, 3]])
    assert msrl.replay_buffer_reset() and msrl.get_replay_buffer().size() == 0


def test_given_dims_are_kept():
    msrl = MSRL(config(policy_and_network__params={"state_space_dim": 7, "action_space_dim": 2}))
    assert msrl.policy_and_network.params["state_space_dim"] == 7


def test_multi_actor_share_env_and_multi_environment():
    shared = MSRL(config(actor__number=3))
    assert len(shared.actors) == 3
    assert all(a.params["collect_environment"] is shared.collect_environment for a in shared.actors)
    assert [a.params["actor_id"] for a in shared.actors] == [0, 1, 2]
    own = MSRL(config(actor__number=2, actor__share_env=False,
                      collect_environment__number=2))  # fmt: skip
    e0, e1 = (a.params["collect_environment"] for a in own.actors)
    assert e0 is not e1 and isinstance(e0, MultiEnvironmentWrapper)
    assert [e.env_id for e in e0.envs] == [0, 1] and [e.env_id for e in e1.envs] == [100, 101]
    obs, r, d = e0.step_np(np.zeros(2))
    assert obs.shape == (2, 3) and r.tolist() == [1.0, 1.0]


def test_a_missing_member_is_named():
    with pytest.raises(AttributeError, match="names 'target_net', but ToyPolicy has no attribute"):
        MSRL(config(learner__networks=["target_net"]))


def test_board_env_in_config():
    msrl = MSRL(
        config(collect_environment={"type": TicTacToeEnvironment, "params": {"num_envs": 4}})
    )
    assert msrl.policy_and_network.params["state_space_dim"] == 11
    assert msrl.policy_and_network.params["action_space_dim"] == 9
