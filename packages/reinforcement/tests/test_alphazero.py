"""AlphaZero-lite: the compiled prior and value equal the Sporeling network, self-play
records are consistent, a training round fits them, and matches count every game."""

from __future__ import annotations

import numpy as np
import pytest

import sporeling.core as ms
from sporeling.core import nn
from sporeling.rl.environment import ConnectFourEnvironment as Game
from sporeling.rl.mcts.alphazero import (
    PolicyValueNet,
    c4_encode,
    c4_encode_np,
    network_func,
    play_match,
    predict,
    self_play,
    train_round,
)


def random_positions(n, rng):
    out = []
    reward = np.zeros(2, np.float32)
    mask = np.zeros(7, np.bool_)
    while len(out) < n:
        s = Game.initial_state()
        for _ in range(int(rng.integers(0, 20))):
            if Game.legal_action_fn(s, mask) == 0:
                break
            if Game.step_fn(s, int(rng.choice(np.flatnonzero(mask))), reward):
                break
        if Game.legal_action_fn(s, mask) > 0:
            out.append(s)
    return np.stack(out)


@pytest.fixture(scope="module")
def net_and_func():
    ms.set_seed(0)
    net = PolicyValueNet(hidden=16)
    return net, network_func(net)


def test_encoding_is_from_the_movers_point_of_view():
    rng = np.random.default_rng(0)
    states = random_positions(20, rng)
    enc = c4_encode_np(states)
    for s, e in zip(states, enc):
        out = np.empty(42, np.float32)
        c4_encode(s, out)
        np.testing.assert_array_equal(out, e)
        mover = int(s[42]) + 1
        np.testing.assert_array_equal(e == 1, s[:42] == mover)
        np.testing.assert_array_equal(e == -1, (s[:42] != 0) & (s[:42] != mover))


def test_compiled_prior_and_value_equal_the_network(net_and_func):
    net, func = net_and_func
    states = random_positions(16, np.random.default_rng(1))
    logits, values = predict(net, states)
    rng = np.zeros(1, np.uint64)
    for s, lg, v in zip(states, logits, values):
        mask = np.zeros(7, np.bool_)
        Game.legal_action_fn(s, mask)
        prior = np.zeros(7, np.float32)
        func.calculate_prior(s, mask, prior, rng)
        want = np.where(mask, np.exp(lg - lg[mask].max()), 0.0)
        np.testing.assert_allclose(prior, want / want.sum(), rtol=1e-5, atol=1e-6)
        returns = np.zeros(2, np.float32)
        func.simulation(s, returns, rng)
        mover = int(s[42])
        np.testing.assert_allclose([returns[mover], returns[1 - mover]], [v, -v], rtol=1e-5)


def test_self_play_records_and_a_training_round(net_and_func):
    net, func = net_and_func
    rng = np.random.default_rng(2)
    states, pi, z, winners = self_play(Game, func, 3, 16, rng, temperature_moves=4)
    assert states.shape[1] == 44 and len(states) == len(pi) == len(z) and len(winners) == 3
    np.testing.assert_allclose(pi.sum(1), 1.0, rtol=1e-6)
    mask = np.zeros(7, np.bool_)
    for s, p in zip(states, pi):
        Game.legal_action_fn(s, mask)
        assert np.all(p[~mask] == 0)
    # within a game the outcome alternates with the mover (or is 0 for a draw)
    starts = np.flatnonzero(states[:, 43] == 0)
    assert len(starts) == 3
    for g, (a, b) in enumerate(zip(starts, [*starts[1:], len(states)])):
        zs, movers = z[a:b], states[a:b, 42].astype(int)
        if winners[g] < 0:
            assert np.all(zs == 0)
        else:
            np.testing.assert_array_equal(zs, np.where(movers == winners[g], 1.0, -1.0))
    # Dirichlet noise at the roots: still one distribution over legal moves per position
    noisy = self_play(Game, func, 2, 16, rng, noise_alpha=1.0)
    np.testing.assert_allclose(noisy[1].sum(1), 1.0, rtol=1e-6)
    opt = nn.Adam(net.trainable_params(), learning_rate=1e-2)
    x = c4_encode_np(states)
    first = train_round(net, opt, x, pi, z, 1, 256, rng)
    last = train_round(net, opt, x, pi, z, 20, 256, rng)
    assert last < first


def test_play_match_counts_every_game():
    rng = np.random.default_rng(3)
    first, draws, second = play_match(Game, "random", "random", 10, rng)
    assert first + draws + second == 10 and first + second > 0


def test_network_round_trips_through_a_safetensors_checkpoint(tmp_path):
    """The example's --save/--load path: a fresh net loaded from the checkpoint predicts
    what the saved one did (and differed before loading)."""
    rng = np.random.default_rng(3)
    states = np.stack(random_positions(16, rng))
    ms.set_seed(11)
    saved = PolicyValueNet(hidden=32)
    path = tmp_path / "net.safetensors"
    ms.save_checkpoint(saved, str(path))
    ms.set_seed(12)
    fresh = PolicyValueNet(hidden=32)
    assert not np.allclose(predict(fresh, states)[0], predict(saved, states)[0])
    ms.load_checkpoint(str(path), net=fresh, strict_load=True)
    for got, want in zip(predict(fresh, states), predict(saved, states), strict=True):
        np.testing.assert_array_equal(got, want)
