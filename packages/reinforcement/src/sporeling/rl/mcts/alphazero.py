"""AlphaZero-lite: a small Sporeling network as the PUCT prior and the leaf value of the
compiled search, trained on its own self-play (Silver et al. 2017, at toy scale).

The network (:class:`PolicyValueNet`: a shared ReLU MLP, a policy head and a tanh value
head) trains in Sporeling. For the search its weights are copied into a pair of ``@njit``
functions (:func:`network_func`) that the compiled search kernel calls as it calls any
user prior and simulation; Numba freezes the weights into them, so they are rebuilt after
each training round (the search kernel itself is not recompiled). The board is encoded
from the point of view of the player to move (``encode``), so one network plays both
sides and its value is that player's expected outcome.

:func:`self_play` plays a batch of games at once, one search root per game, and records
each position's encoding, the root's visit distribution and, at the end, the outcome for
the player who moved; :func:`train_round` fits the network to them (cross-entropy to the
visit distribution plus squared error to the outcome).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numba as nb
import numpy as np

from sporeling.core import Tensor, nn, no_grad, ops, value_and_grad

from .contract import PRIOR_SIG, SIMULATION_SIG
from .mcts import AlgorithmFunc, BatchedMCTS

__all__ = [
    "PolicyValueNet",
    "c4_encode",
    "network_func",
    "self_play",
    "train_round",
    "play_match",
    "AlphaZeroConfig",
    "train_alphazero",
]

C4_CELLS = 42


@nb.njit(cache=True)
def c4_encode(state, out):  # pragma: no cover - jit
    """Connect-Four state -> 42 inputs: +1 the mover's discs, -1 the opponent's, 0 empty."""
    me = state[42] + 1.0
    for i in range(C4_CELLS):
        v = state[i]
        out[i] = 0.0 if v == 0.0 else (1.0 if v == me else -1.0)


def c4_encode_np(states: np.ndarray) -> np.ndarray:
    """:func:`c4_encode` on a batch ``(B, 44)`` (NumPy)."""
    s = np.asarray(states, np.float32)
    me = (s[:, 42:43] + 1.0).astype(np.float32)
    board = s[:, :C4_CELLS]
    return np.where(board == 0, 0.0, np.where(board == me, 1.0, -1.0)).astype(np.float32)


class PolicyValueNet(nn.Cell):
    """``construct(x) -> (policy logits (B, actions), value (B, 1) in [-1, 1])``."""

    def __init__(self, inputs: int = C4_CELLS, actions: int = 7, hidden: int = 128) -> None:
        super().__init__()
        self.fc1 = nn.Dense(inputs, hidden)
        self.fc2 = nn.Dense(hidden, hidden)
        self.policy = nn.Dense(hidden, actions)
        self.value = nn.Dense(hidden, 1)

    def construct(self, x: Any) -> tuple[Any, Any]:
        h = ops.relu(self.fc2(ops.relu(self.fc1(x))))
        return self.policy(h), ops.tanh(self.value(h))

    def numpy_weights(self) -> tuple[np.ndarray, ...]:
        """``(W1, b1, W2, b2, Wp, bp, Wv, bv)``, each ``W`` as (out, in), float32 copies."""
        return tuple(
            np.ascontiguousarray(getattr(getattr(self, name), attr).asnumpy(), np.float32)
            for name in ("fc1", "fc2", "policy", "value")
            for attr in ("weight", "bias")
        )


@nb.njit(cache=True)
def _dense(w, b, x, out, relu):  # pragma: no cover - jit
    """``out = w @ x + b`` (ReLU'd if ``relu``), as loops: no BLAS dependency in Numba."""
    for i in range(w.shape[0]):
        acc = b[i]
        for j in range(w.shape[1]):
            acc += w[i, j] * x[j]
        out[i] = max(acc, np.float32(0.0)) if relu else acc


def network_func(
    net: PolicyValueNet, encode: Any = c4_encode, inputs: int = C4_CELLS
) -> AlgorithmFunc:
    """The compiled prior (softmax of the policy logits over the legal actions) and leaf
    value (``returns[mover] = v``, ``returns[other] = -v``, two players) of ``net``'s
    current weights."""
    w1, b1, w2, b2, wp, bp, wv, bv = net.numpy_weights()
    hidden = w1.shape[0]

    @nb.njit
    def forward(state, logits):  # pragma: no cover - jit
        x = np.empty(inputs, np.float32)
        encode(state, x)
        h1 = np.empty(hidden, np.float32)
        h2 = np.empty(hidden, np.float32)
        v = np.empty(1, np.float32)
        _dense(w1, b1, x, h1, True)
        _dense(w2, b2, h1, h2, True)
        _dense(wp, bp, h2, logits, False)
        _dense(wv, bv, h2, v, False)
        return math.tanh(v[0])

    @nb.njit(PRIOR_SIG)
    def prior(state, mask, out, rng):  # pragma: no cover - jit
        logits = np.empty(out.shape[0], np.float32)
        forward(state, logits)
        top = -np.inf
        for a in range(out.shape[0]):
            if mask[a] and logits[a] > top:
                top = logits[a]
        total = 0.0
        for a in range(out.shape[0]):
            out[a] = math.exp(logits[a] - top) if mask[a] else 0.0
            total += out[a]
        for a in range(out.shape[0]):
            out[a] = out[a] / total if total > 0 else 0.0

    @nb.njit(SIMULATION_SIG)
    def value(state, returns, rng):  # pragma: no cover - jit
        logits = np.empty(wp.shape[0], np.float32)
        v = forward(state, logits)
        mover = np.int64(state[42])
        returns[mover] = v
        returns[1 - mover] = -v

    return AlgorithmFunc(prior, value)


def self_play(
    game: Any,
    func: AlgorithmFunc | None,
    games: int,
    simulations: int,
    rng: np.random.Generator,
    temperature_moves: int = 10,
    c: float = 1.5,
    seed: int = 0,
    noise_alpha: float = 0.0,
    noise_fraction: float = 0.25,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``games`` games searched together (PUCT with ``func``, or UCT with random rollouts
    when ``func`` is None). Moves are drawn from the visit counts for the first
    ``temperature_moves`` moves, then the most visited. ``noise_alpha`` > 0 mixes
    Dirichlet(``noise_alpha``) noise into each root's prior over its legal moves (weight
    ``noise_fraction``), as AlphaZero does for exploration, after the first simulation has
    expanded the root. Returns ``(states (N, state_size),
    visit distributions (N, actions), outcomes (N,) for the player to move, winners (games,)
    with -1 for a draw)``."""
    node = "PUCT" if func is not None else "UCT"
    search = BatchedMCTS(game, games, simulations + 1, node, c, func, seed)
    states = np.stack([game.initial_state() for _ in range(games)])
    done = np.zeros(games, bool)
    winners = np.full(games, -1)
    rec_s: list[list[np.ndarray]] = [[] for _ in range(games)]
    rec_p: list[list[np.ndarray]] = [[] for _ in range(games)]
    rec_who: list[list[int]] = [[] for _ in range(games)]
    reward = np.zeros(game.num_players, np.float32)
    move = 0
    while not done.all():
        search.set_roots(states)
        if noise_alpha > 0 and func is not None:
            search.run(1)  # expands every root, with the network's prior
            prior = search.tree["prior"]
            for g in np.flatnonzero(~done):
                root = search.roots[g]
                legal = prior[g, root] > 0
                noise = np.zeros(prior.shape[2], np.float32)
                noise[legal] = rng.dirichlet(np.full(int(legal.sum()), noise_alpha))
                mixed = (1 - noise_fraction) * prior[g, root] + noise_fraction * noise
                prior[g, root] = mixed
            search.run(simulations - 1)
        else:
            search.run(simulations)
        visits = search.visit_counts()
        for g in np.flatnonzero(~done):
            pi = visits[g] / visits[g].sum()
            if move < temperature_moves:
                a = int(rng.choice(len(pi), p=pi))
            else:
                a = int(np.argmax(visits[g]))
            rec_s[g].append(states[g].copy())
            rec_p[g].append(pi.astype(np.float32))
            rec_who[g].append(int(game.current_player_fn(states[g])))
            if game.step_fn(states[g], a, reward):
                done[g] = True
                winners[g] = int(np.argmax(reward)) if reward.max() > 0 else -1
        move += 1
    out_s, out_p, out_z = [], [], []
    for g in range(games):
        for s, p, who in zip(rec_s[g], rec_p[g], rec_who[g]):
            out_s.append(s)
            out_p.append(p)
            out_z.append(0.0 if winners[g] < 0 else (1.0 if winners[g] == who else -1.0))
    return np.array(out_s), np.array(out_p), np.array(out_z, np.float32), winners


def train_round(
    net: PolicyValueNet,
    optimizer: nn.Optimizer,
    x: np.ndarray,
    pi: np.ndarray,
    z: np.ndarray,
    epochs: int,
    batch_size: int,
    rng: np.random.Generator,
) -> float:
    """Epochs of minibatch steps on ``-sum(pi * log_softmax(logits)) + (z - v)^2`` (means
    over the batch); returns the last epoch's mean loss."""

    def loss_fn(xb, pib, zb):
        logits, v = net(xb)
        ce = -ops.reduce_mean(ops.reduce_sum(pib * ops.log_softmax(logits, -1), -1))
        return ce + ops.reduce_mean((ops.reshape(v, (-1,)) - zb) ** 2)

    grad_fn = value_and_grad(loss_fn, None, net.trainable_params())
    last = []
    for _ in range(epochs):
        order = rng.permutation(len(x))
        last = []
        for i in range(0, len(x), batch_size):
            idx = order[i : i + batch_size]
            loss, grads = grad_fn(Tensor(x[idx]), Tensor(pi[idx]), Tensor(z[idx]))
            optimizer(tuple(grads))
            last.append(float(loss.asnumpy()))
    return float(np.mean(last)) if last else float("nan")


def _choose(game: Any, player: Any, states: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    if player == "random":
        mask = np.zeros(game.max_action, np.bool_)
        out = []
        for s in states:
            legal = np.flatnonzero(mask) if game.legal_action_fn(s, mask) else [0]
            out.append(int(rng.choice(legal)))  # (a finished game's move is ignored)
        return np.array(out)
    return player.search(states, player.sims)


def play_match(
    game: Any,
    first: Any,
    second: Any,
    games: int,
    rng: np.random.Generator,
) -> tuple[int, int, int]:
    """``games`` games of ``first`` (moving first) against ``second``; a player is
    ``"random"`` or a :class:`BatchedMCTS` of batch size ``games`` with an attribute
    ``sims`` (each move a fresh search). Returns ``(first's wins, draws, second's wins)``."""
    states = np.stack([game.initial_state() for _ in range(games)])
    done = np.zeros(games, bool)
    result = np.zeros(games, int)  # +1 first won, -1 second won, 0 draw
    reward = np.zeros(game.num_players, np.float32)
    while not done.all():
        mover = int(game.current_player_fn(states[np.flatnonzero(~done)[0]]))
        actions = _choose(game, first if mover == 0 else second, states, rng)
        for g in np.flatnonzero(~done):
            if game.step_fn(states[g], int(actions[g]), reward):
                done[g] = True
                result[g] = 0 if reward.max() <= 0 else (1 if reward[0] > 0 else -1)
    return int((result == 1).sum()), int((result == 0).sum()), int((result == -1).sum())


@dataclass
class AlphaZeroConfig:
    iterations: int = 10
    games_per_iteration: int = 32
    simulations: int = 100
    epochs: int = 4
    batch_size: int = 128
    lr: float = 1e-3
    window: int = 4  # training uses the positions of the last `window` iterations
    hidden: int = 128
    c: float = 1.5
    seed: int = 0
    noise_alpha: float = 0.0  # > 0: Dirichlet noise at the self-play roots


def train_alphazero(game: Any, cfg: AlphaZeroConfig, log: Any = print) -> PolicyValueNet:
    """Self-play rounds and training rounds, ``cfg.iterations`` times; the trained net."""
    import sporeling.core as ms

    ms.set_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    net = PolicyValueNet(hidden=cfg.hidden, actions=game.max_action)
    opt = nn.Adam(net.trainable_params(), learning_rate=cfg.lr, weight_decay=1e-4)
    history: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    for it in range(cfg.iterations):
        func = network_func(net)
        s, pi, z, winners = self_play(
            game,
            func,
            cfg.games_per_iteration,
            cfg.simulations,
            rng,
            c=cfg.c,
            seed=cfg.seed + it,
            noise_alpha=cfg.noise_alpha,
        )
        history = [*history, (c4_encode_np(s), pi, z)][-cfg.window :]
        x = np.concatenate([h[0] for h in history])
        p = np.concatenate([h[1] for h in history])
        zz = np.concatenate([h[2] for h in history])
        loss = train_round(net, opt, x, p, zz, cfg.epochs, cfg.batch_size, rng)
        first = float((winners == 0).mean())
        log(f"[alphazero] iteration {it + 1}/{cfg.iterations}: {len(s)} positions, "
            f"first-player wins {first:.2f}, draws {float((winners < 0).mean()):.2f}, "
            f"loss {loss:.3f}")  # fmt: skip
    return net


def predict(net: PolicyValueNet, states: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The network on a batch of game states (NumPy in and out)."""
    with no_grad():
        logits, v = net(Tensor(c4_encode_np(states)))
    return logits.asnumpy(), v.asnumpy()[:, 0]
