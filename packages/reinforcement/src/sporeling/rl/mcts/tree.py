"""The search tree of a batch of roots, in preallocated arrays, and its compiled kernels.

Layout (``B`` roots, ``M`` nodes per tree, ``A`` actions, ``P`` players, ``S`` state size),
in the spirit of DeepMind's mctx: node 0..n_nodes[b]-1 of tree b are in use; a child is
created the first time selection takes its action, so one simulation adds one node.

- ``children[b, n, a]``: the child reached by action ``a`` (-1: not created yet)
- ``parent[b, n]``, ``action[b, n]``: where a node hangs
- ``visits[b, n]``, ``value[b, n, p]``: visit count and each player's summed return
- ``reward[b, n, p]``: the rewards of the transition into the node
- ``terminal[b, n]``, ``expanded[b, n]``, ``to_play[b, n]``, ``mask[b, n, a]``, ``prior[b, n, a]``
- ``states[b, n, :]``: the node's game state
"""

from __future__ import annotations

import numba as nb
import numpy as np
from numba import types

from .contract import (
    LegalFn,
    PlayerFn,
    PriorFn,
    ScoreFn,
    SimulationFn,
    StepFn,
    rng_randint,
)

I32_2 = types.int32[:, ::1]
I32_3 = types.int32[:, :, ::1]
I64_2 = types.int64[:, ::1]
F64_2 = types.float64[:, ::1]
F64_3 = types.float64[:, :, ::1]
F32_3 = types.float32[:, :, ::1]
B_2 = types.boolean[:, ::1]
B_3 = types.boolean[:, :, ::1]
U64_2 = types.uint64[:, ::1]
I64_1 = types.int64[::1]

# The tree's arrays, in this order, in every kernel's signature.
TREE_TYPES = (
    I32_3,  # children
    I32_2,  # parent
    I32_2,  # action
    F64_2,  # visits
    F64_3,  # value
    F32_3,  # reward
    B_2,  # terminal
    B_2,  # expanded
    I64_2,  # to_play
    B_3,  # mask
    F32_3,  # prior
    F32_3,  # states
    I64_1,  # n_nodes
)
TREE_FIELDS = (
    "children", "parent", "action", "visits", "value", "reward", "terminal", "expanded",
    "to_play", "mask", "prior", "states", "n_nodes",
)  # fmt: skip


def allocate(batch: int, nodes: int, actions: int, players: int, state_size: int) -> dict:
    return {
        "children": np.full((batch, nodes, actions), -1, np.int32),
        "parent": np.full((batch, nodes), -1, np.int32),
        "action": np.full((batch, nodes), -1, np.int32),
        "visits": np.zeros((batch, nodes), np.float64),
        "value": np.zeros((batch, nodes, players), np.float64),
        "reward": np.zeros((batch, nodes, players), np.float32),
        "terminal": np.zeros((batch, nodes), np.bool_),
        "expanded": np.zeros((batch, nodes), np.bool_),
        "to_play": np.zeros((batch, nodes), np.int64),
        "mask": np.zeros((batch, nodes, actions), np.bool_),
        "prior": np.zeros((batch, nodes, actions), np.float32),
        "states": np.zeros((batch, nodes, state_size), np.float32),
        "n_nodes": np.zeros(batch, np.int64),
    }


@nb.njit(cache=True)
def _expand(
    b, n, legal, player, prior_fn, builtin_prior, mask, prior, to_play, expanded, states, rng
):  # pragma: no cover - jit  # noqa: E501
    s = states[b, n]
    count = legal(s, mask[b, n])
    to_play[b, n] = player(s)
    if builtin_prior:
        u = np.float32(1.0 / max(count, 1))
        for a in range(mask.shape[2]):
            prior[b, n, a] = u if mask[b, n, a] else np.float32(0.0)
    else:
        prior_fn(s, mask[b, n], prior[b, n], rng)
    expanded[b, n] = True


@nb.njit(cache=True)
def _random_rollout(
    legal, step, state, scratch, mask, rew, returns, rng, max_steps
):  # pragma: no cover - jit  # noqa: E501
    scratch[:] = state
    for _ in range(max_steps):
        n = legal(scratch, mask)
        if n == 0:
            return
        k = rng_randint(rng, n)
        a = 0
        for j in range(mask.shape[0]):
            if mask[j]:
                if k == 0:
                    a = j
                    break
                k -= 1
        done = step(scratch, a, rew)
        for p in range(returns.shape[0]):
            returns[p] += rew[p]
        if done:
            return


SEARCH_SIG = types.int64(
    LegalFn, StepFn, PlayerFn, PriorFn, SimulationFn, ScoreFn,
    types.boolean, types.boolean, types.float64, types.int64, types.int64,
    I64_1, U64_2, *TREE_TYPES,
)  # fmt: skip


@nb.njit(SEARCH_SIG, cache=True)
def search_kernel(
    legal, step, player, prior_fn, sim_fn, score, builtin_prior, builtin_sim, c, n_sims,
    max_rollout, roots, rng,
    children, parent, action, visits, value, reward, terminal, expanded, to_play, mask, prior,
    states, n_nodes,
):  # pragma: no cover - jit  # fmt: skip
    """Run ``n_sims`` simulations from every root; return how many were cut short because
    a tree ran out of nodes (0 when all ran)."""
    n_batch, n_max, n_act = children.shape
    n_play = value.shape[2]
    path = np.empty(n_max + 1, np.int64)
    returns = np.zeros(n_play, np.float32)
    rew = np.zeros(n_play, np.float32)
    scratch = np.zeros(states.shape[2], np.float32)
    smask = np.zeros(n_act, np.bool_)
    short = 0
    for b in range(n_batch):
        root = roots[b]
        r = rng[b]
        if not expanded[b, root] and not terminal[b, root]:
            _expand(
                b,
                root,
                legal,
                player,
                prior_fn,
                builtin_prior,
                mask,
                prior,
                to_play,
                expanded,
                states,
                r,
            )  # noqa: E501
        for _ in range(n_sims):
            node = root
            depth = 0
            path[0] = root
            leaf = root
            while True:
                if terminal[b, node]:
                    leaf = node
                    break
                p = to_play[b, node]
                pv = visits[b, node]
                best = -np.inf
                best_a = -1
                for a in range(n_act):
                    if not mask[b, node, a]:
                        continue
                    ch = children[b, node, a]
                    if ch < 0:
                        s = score(0.0, 0.0, pv, prior[b, node, a], c)
                    else:
                        n = visits[b, ch]
                        q = value[b, ch, p] / n if n > 0 else 0.0
                        s = score(q, n, pv, prior[b, node, a], c)
                    if s > best:
                        best = s
                        best_a = a
                if best_a < 0:  # no legal action in a non-terminal node: treat as a leaf
                    leaf = node
                    break
                ch = children[b, node, best_a]
                if ch >= 0:
                    node = ch
                    depth += 1
                    path[depth] = node
                    continue
                new = n_nodes[b]
                if new >= n_max:
                    leaf = -1
                    break
                n_nodes[b] = new + 1
                states[b, new] = states[b, node]
                terminal[b, new] = step(states[b, new], best_a, reward[b, new])
                parent[b, new] = node
                action[b, new] = best_a
                children[b, node, best_a] = new
                if not terminal[b, new]:
                    _expand(
                        b,
                        new,
                        legal,
                        player,
                        prior_fn,
                        builtin_prior,
                        mask,
                        prior,
                        to_play,
                        expanded,
                        states,
                        r,
                    )  # noqa: E501
                depth += 1
                path[depth] = new
                leaf = new
                break
            if leaf < 0:
                short += 1
                break
            for p in range(n_play):
                returns[p] = reward[b, leaf, p]
            if not terminal[b, leaf]:
                if builtin_sim:
                    _random_rollout(
                        legal, step, states[b, leaf], scratch, smask, rew, returns, r, max_rollout
                    )  # noqa: E501
                else:
                    for p in range(n_play):
                        rew[p] = 0.0
                    sim_fn(states[b, leaf], rew, r)
                    for p in range(n_play):
                        returns[p] += rew[p]
            for d in range(depth + 1):
                n = path[d]
                visits[b, n] += 1.0
                for p in range(n_play):
                    value[b, n, p] += returns[p]
    return short


@nb.njit(types.void(I64_1, I64_1, *TREE_TYPES), cache=True)
def best_action_kernel(
    roots, out, children, parent, action, visits, value, reward, terminal, expanded, to_play,
    mask, prior, states, n_nodes,
):  # pragma: no cover - jit  # fmt: skip
    """The most visited child's action of every root (the lowest action on ties; -1: none)."""
    for b in range(roots.shape[0]):
        best, best_a = -1.0, -1
        for a in range(children.shape[2]):
            ch = children[b, roots[b], a]
            if ch >= 0 and visits[b, ch] > best:
                best = visits[b, ch]
                best_a = a
        out[b] = best_a


@nb.njit(types.void(types.int64, types.int64, I64_1, *TREE_TYPES), cache=True)
def compact_kernel(
    b, new_root, remap, children, parent, action, visits, value, reward, terminal, expanded,
    to_play, mask, prior, states, n_nodes,
):  # pragma: no cover - jit  # fmt: skip
    """Keep only the subtree under ``new_root``, renumbered breadth-first from 0 (tree reuse)."""
    n = n_nodes[b]
    remap[:n] = -1
    order = np.empty(n, np.int64)
    order[0] = new_root
    remap[new_root] = 0
    head, tail = 0, 1
    while head < tail:
        old = order[head]
        head += 1
        for a in range(children.shape[2]):
            ch = children[b, old, a]
            if ch >= 0:
                remap[ch] = tail
                order[tail] = ch
                tail += 1
    keep = order[:tail]
    # gather (copies) first, then write back: a node may move up or down in the numbering
    children[b, :tail] = children[b][keep]
    visits[b, :tail] = visits[b][keep]
    value[b, :tail] = value[b][keep]
    reward[b, :tail] = reward[b][keep]
    terminal[b, :tail] = terminal[b][keep]
    expanded[b, :tail] = expanded[b][keep]
    to_play[b, :tail] = to_play[b][keep]
    mask[b, :tail] = mask[b][keep]
    prior[b, :tail] = prior[b][keep]
    states[b, :tail] = states[b][keep]
    action[b, :tail] = action[b][keep]
    parent[b, 0] = -1
    action[b, 0] = -1
    for i in range(tail):
        for a in range(children.shape[2]):
            ch = children[b, i, a]
            if ch >= 0:
                children[b, i, a] = remap[ch]
                parent[b, remap[ch]] = i
    for i in range(tail, n):
        children[b, i] = -1
        visits[b, i] = 0.0
        value[b, i] = 0.0
        reward[b, i] = 0.0
        terminal[b, i] = False
        expanded[b, i] = False
        parent[b, i] = -1
        action[b, i] = -1
    n_nodes[b] = tail
