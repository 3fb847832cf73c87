"""Environments step by step against their twins: gymnasium for CartPole, Python for games."""

from __future__ import annotations

import numpy as np
import pytest
from naive import ConnectFour, TicTacToe

from sporeling.rl.environment import (
    CartPoleBatchEnvironment,
    ConnectFourEnvironment,
    GymEnvironment,
    MultiEnvironmentWrapper,
    TicTacToeEnvironment,
)

gym = pytest.importorskip("gymnasium")


def test_cartpole_batch_matches_gymnasium_step_by_step():
    n = 4
    batch = CartPoleBatchEnvironment({"num_envs": n, "seed": 0})
    batch.reset_np()
    twins = [gym.make("CartPole-v1") for _ in range(n)]
    for i, env in enumerate(twins):
        env.reset(seed=i)
        env.unwrapped.state = batch.state[i].copy()
    rng = np.random.default_rng(0)
    ended = np.zeros(n, bool)
    for _ in range(200):
        actions = rng.integers(0, 2, n)
        before = batch.state.copy()
        obs, rew, done = batch.step_np(actions)
        for i, env in enumerate(twins):
            if ended[i]:
                continue
            o, r, term, trunc, _ = env.step(int(actions[i]))
            assert r == rew[i] and term == batch.terminated[i] and trunc == batch.truncated[i]
            if term or trunc:
                ended[i] = True  # the batch reset this game; its twin stops here
                continue
            np.testing.assert_array_equal(obs[i], o)
            np.testing.assert_array_equal(batch.state[i], env.unwrapped.state)
        assert before.shape == (n, 4)
    assert ended.all()


def test_cartpole_batch_truncates_at_max_steps():
    env = CartPoleBatchEnvironment({"num_envs": 2, "seed": 1, "max_episode_steps": 5})
    env.reset_np()
    env.state[:] = 0.0
    for t in range(5):
        _, _, done = env.step_np([0, 1] if t % 2 else [1, 0])
    assert done.all() and env.truncated.all() and (env.steps == 0).all()
    with pytest.raises(ValueError, match="expected 2 actions, got 3"):
        env.step_np([0, 1, 0])


@pytest.mark.parametrize(
    ("env_cls", "twin_cls"),
    [(TicTacToeEnvironment, TicTacToe), (ConnectFourEnvironment, ConnectFour)],
)
def test_board_games_match_python_twins(env_cls, twin_cls):
    n = 16
    env = env_cls({"num_envs": n})
    env.reset_np()
    twins = [twin_cls() for _ in range(n)]
    rng = np.random.default_rng(0)
    while not env.dones.all():
        masks = env.legal_action_np()
        actions = []
        for i, g in enumerate(twins):
            legal = g.legal()
            assert np.flatnonzero(masks[i]).tolist() == legal
            actions.append(int(rng.choice(legal)) if legal else 0)
        players = env.current_player_np()
        states, rewards, dones = env.step_np(actions)
        for i, g in enumerate(twins):
            if g.legal():
                assert players[i] == g.player
                r, d = g.step(actions[i])
                assert rewards[i].tolist() == r and dones[i] == d
            np.testing.assert_array_equal(states[i], g.state())
    winners = {g.winner for g in twins}
    assert 0 in winners and 1 in winners  # 16 random games: both sides win some


def test_board_env_rejects_illegal_moves_and_offers_the_mcts_contract():
    env = TicTacToeEnvironment({"num_envs": 2})
    env.reset_np()
    env.step_np([4, 4])
    with pytest.raises(
        ValueError, match=r"action 4 is not legal in game 0 \(legal: \[0, 1, 2, 3, 5"
    ):
        env.step_np([4, 0])
    saved = env.save()
    env.step_np([0, 0])
    env.load(saved)
    assert env.legal_action().tolist() == [0, 1, 2, 3, 5, 6, 7, 8, -1]
    assert env.current_player() == 1 and not env.is_terminal()
    assert env.total_num_player() == 2 and env.max_utility() == 1.0


@pytest.mark.parametrize("name", ["CartPole-v1", "Pendulum-v1"])
def test_gym_environment_matches_gymnasium(name):
    env = GymEnvironment({"name": name, "seed": 3})
    twin = gym.make(name)
    s = env.reset().asnumpy()
    o, _ = twin.reset(seed=3)
    np.testing.assert_array_equal(s, o)
    for t in range(20):
        a = (
            np.array(t % 2)
            if env.action_space.is_discrete
            else np.array([0.5 * (t % 3 - 1)], np.float32)
        )
        s, r, d = env.step(a)
        o, rr, term, trunc, _ = twin.step(int(a) if env.action_space.is_discrete else a)
        np.testing.assert_allclose(s.asnumpy(), o, rtol=1e-6)
        assert r.asnumpy()[0] == pytest.approx(rr, rel=1e-6)
        assert bool(d.asnumpy()[0]) == (term or trunc)
        if term or trunc:
            break
    assert env.observation_space.shape == twin.observation_space.shape
    with pytest.raises(ValueError, match="params needs 'name'"):
        GymEnvironment({})


def test_multi_environment_wrapper_threads_equal_serial():
    def make():
        return [GymEnvironment({"name": "CartPole-v1", "seed": 0}, i) for i in range(3)]

    serial = MultiEnvironmentWrapper(make(), num_proc=1, auto_reset=True)
    threaded = MultiEnvironmentWrapper(make(), num_proc=3, auto_reset=True)
    np.testing.assert_array_equal(serial.reset_np(), threaded.reset_np())
    assert serial.observation_space.shape == (3, 4)
    for t in range(60):
        a = np.array([t % 2, (t // 2) % 2, 1])
        out_s, out_t = serial.step_np(a), threaded.step_np(a)
        for x, y in zip(out_s, out_t):
            np.testing.assert_array_equal(x, y)
    with pytest.raises(ValueError, match="leading dimension 3"):
        serial.step_np(np.zeros(2))
    threaded.close()


def test_multi_environment_wrapper_processes_equal_serial():
    def make():
        return [GymEnvironment({"name": "CartPole-v1", "seed": 5}, i) for i in range(3)]

    serial = MultiEnvironmentWrapper(make(), num_proc=1, auto_reset=True)
    procs = MultiEnvironmentWrapper(make(), num_proc=2, auto_reset=True, backend="process")
    try:
        assert [w.num_env for w in procs._workers] == [2, 1]
        np.testing.assert_array_equal(serial.reset_np(), procs.reset_np())
        dones = 0
        for t in range(60):
            a = np.array([t % 2, (t // 3) % 2, 1])
            out_s, out_p = serial.step_np(a), procs.step_np(a)
            for x, y in zip(out_s, out_p):
                np.testing.assert_array_equal(x, y)
            np.testing.assert_array_equal(serial.last_terminated, procs.last_terminated)
            dones += int(out_s[2].sum())
        assert dones > 0  # auto_reset was exercised in the workers
        with pytest.raises(RuntimeError, match="EnvironmentProcess 0: the worker failed"):
            procs.step_np(np.array([7, 0, 0]))  # gymnasium rejects action 7 in the worker
    finally:
        procs.close()
        serial.close()
    with pytest.raises(ValueError, match="backend expected 'thread' or 'process'"):
        MultiEnvironmentWrapper(make(), backend="fork")
