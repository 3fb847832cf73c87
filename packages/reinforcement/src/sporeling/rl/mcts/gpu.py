"""The GPU backend of the batched search: one CUDA thread per root (``numba.cuda``).

The same tree arrays as the CPU kernel (:mod:`sporeling.rl.mcts.tree`) are copied to the
device, every thread runs selection, expansion, simulation and backpropagation for its
root, and the arrays come back. The game's and the node policy's ``@njit`` functions are
recompiled from their Python source as CUDA device functions (with the ``@njit`` functions
they call), so they must be valid ``numba.cuda.jit(device=True)`` code: no allocation, no
objects, only arrays, scalars and global constant arrays. The built-in rollout draws from
``numba.cuda.random``'s per-thread xoroshiro128+ states; a user ``prior``/``simulation``
gets the same splitmix64 state per root as on the CPU, so a deterministic (or
splitmix64-driven) simulation gives the CPU backend's visit counts exactly.

``numba.cuda`` is imported only here, when ``device="GPU"`` is asked for. Checked only under
Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``), never on a real GPU.
"""

from __future__ import annotations

import math
import types as pytypes
from typing import Any

import numpy as np
from numba import cuda  # this module is imported only when device="GPU" is asked for
from numba.core.dispatcher import Dispatcher


def load_cuda() -> Any:
    """``numba.cuda``, or a clear error when neither a CUDA device nor the simulator is there."""
    if not cuda.is_available():
        raise RuntimeError(
            "MCTS: device='GPU' found no CUDA device (numba.cuda.is_available() is False); "
            "use device='CPU', or set NUMBA_ENABLE_CUDASIM=1 before numba is imported to run "
            "Numba's (slow) CUDA simulator"
        )
    return cuda


def device_function(fn: Any, memo: dict | None = None) -> Any:
    """``fn`` (an ``@njit`` function) recompiled as a CUDA device function, with every
    ``@njit`` function it calls through a global name converted the same way."""
    memo = {} if memo is None else memo
    if fn in memo:
        return memo[fn]
    py = getattr(fn, "py_func", None)
    if not isinstance(fn, Dispatcher) or py is None:
        raise TypeError(f"MCTS(device='GPU'): expected a Numba @njit function, got {fn!r}")
    glob = dict(py.__globals__)
    for name in py.__code__.co_names:
        value = glob.get(name)
        if isinstance(value, Dispatcher):
            glob[name] = device_function(value, memo)
    clone = pytypes.FunctionType(py.__code__, glob, py.__name__, py.__defaults__, py.__closure__)
    memo[fn] = cuda.jit(device=True)(clone)
    return memo[fn]


def build_search_kernel(
    legal_fn: Any, step_fn: Any, player_fn: Any, score_fn: Any,
    prior_fn: Any | None, sim_fn: Any | None,
) -> Any:  # fmt: skip
    """The CUDA search kernel for one game, node policy, prior and simulation."""
    from numba.cuda.random import xoroshiro128p_uniform_float64

    memo: dict = {}
    legal = device_function(legal_fn, memo)
    step = device_function(step_fn, memo)
    player = device_function(player_fn, memo)
    score = device_function(score_fn, memo)

    if prior_fn is None:

        @cuda.jit(device=True)
        def set_prior(state, mask_row, prior_row, count, rng1):  # pragma: no cover - cuda
            u = np.float32(1.0 / (count if count > 0 else 1))  # max() fails in CUDA
            for a in range(mask_row.shape[0]):
                prior_row[a] = u if mask_row[a] else np.float32(0.0)

    else:
        user_prior = device_function(prior_fn, memo)

        @cuda.jit(device=True)
        def set_prior(state, mask_row, prior_row, count, rng1):  # pragma: no cover - cuda
            user_prior(state, mask_row, prior_row, rng1)

    if sim_fn is None:

        @cuda.jit(device=True)
        def simulate(
            state, returns, rew, scratch, smask, rng1, xo, tid, max_steps
        ):  # pragma: no cover - cuda  # noqa: E501
            for i in range(state.shape[0]):
                scratch[i] = state[i]
            for _ in range(max_steps):
                n = legal(scratch, smask)
                if n == 0:
                    return
                k = int(xoroshiro128p_uniform_float64(xo, tid) * n)
                if k >= n:
                    k = n - 1
                a = 0
                for j in range(smask.shape[0]):
                    if smask[j]:
                        if k == 0:
                            a = j
                            break
                        k -= 1
                done = step(scratch, a, rew)
                for p in range(returns.shape[0]):
                    returns[p] += rew[p]
                if done:
                    return

    else:
        user_sim = device_function(sim_fn, memo)

        @cuda.jit(device=True)
        def simulate(
            state, returns, rew, scratch, smask, rng1, xo, tid, max_steps
        ):  # pragma: no cover - cuda  # noqa: E501
            for p in range(rew.shape[0]):
                rew[p] = 0.0
            user_sim(state, rew, rng1)
            for p in range(returns.shape[0]):
                returns[p] += rew[p]

    @cuda.jit(device=True)
    def expand(b, n, mask, prior, to_play, expanded, states, rng1):  # pragma: no cover - cuda
        s = states[b, n]
        count = legal(s, mask[b, n])
        to_play[b, n] = player(s)
        set_prior(s, mask[b, n], prior[b, n], count, rng1)
        expanded[b, n] = True

    @cuda.jit
    def search(
        c, n_sims, max_rollout, roots, rng, xo, path, scratch, smask, returns, rew, short,
        children, parent, action, visits, value, reward, terminal, expanded, to_play, mask,
        prior, states, n_nodes,
    ):  # pragma: no cover - cuda  # fmt: skip
        b = cuda.grid(1)
        if b >= roots.shape[0]:
            return
        n_max = children.shape[1]
        n_act = children.shape[2]
        n_play = value.shape[2]
        n_state = states.shape[2]
        root = roots[b]
        r = rng[b]
        short[b] = 0
        if not expanded[b, root] and not terminal[b, root]:
            expand(b, root, mask, prior, to_play, expanded, states, r)
        for _ in range(n_sims):
            node = root
            depth = 0
            path[b, 0] = root
            leaf = root
            while True:
                if terminal[b, node]:
                    leaf = node
                    break
                p = to_play[b, node]
                pv = visits[b, node]
                best = -math.inf
                best_a = -1
                for a in range(n_act):
                    if not mask[b, node, a]:
                        continue
                    ch = children[b, node, a]
                    if ch < 0:
                        s = score(0.0, 0.0, pv, np.float64(prior[b, node, a]), c)
                    else:
                        n = visits[b, ch]
                        q = value[b, ch, p] / n if n > 0 else 0.0
                        s = score(q, n, pv, np.float64(prior[b, node, a]), c)
                    if s > best:
                        best = s
                        best_a = a
                if best_a < 0:
                    leaf = node
                    break
                ch = children[b, node, best_a]
                if ch >= 0:
                    node = ch
                    depth += 1
                    path[b, depth] = node
                    continue
                new = n_nodes[b]
                if new >= n_max:
                    leaf = -1
                    break
                n_nodes[b] = new + 1
                for i in range(n_state):
                    states[b, new, i] = states[b, node, i]
                terminal[b, new] = step(states[b, new], best_a, reward[b, new])
                parent[b, new] = node
                action[b, new] = best_a
                children[b, node, best_a] = new
                if not terminal[b, new]:
                    expand(b, new, mask, prior, to_play, expanded, states, r)
                depth += 1
                path[b, depth] = new
                leaf = new
                break
            if leaf < 0:
                short[b] = 1
                break
            for p in range(n_play):
                returns[b, p] = reward[b, leaf, p]
            if not terminal[b, leaf]:
                simulate(
                    states[b, leaf], returns[b], rew[b], scratch[b], smask[b], r, xo, b,
                    max_rollout,
                )  # fmt: skip
            for d in range(depth + 1):
                n = path[b, d]
                visits[b, n] += 1.0
                for p in range(n_play):
                    value[b, n, p] += returns[b, p]

    return search


class GPUSearch:
    """Runs :func:`build_search_kernel`'s kernel over a :class:`BatchedMCTS`'s host arrays."""

    threads_per_block = 64

    def __init__(self, searcher: Any, prior_fn: Any | None, sim_fn: Any | None) -> None:
        self.cuda = load_cuda()
        self.kernel = build_search_kernel(
            searcher.legal, searcher.step, searcher.player, searcher.score,
            prior_fn, sim_fn,
        )  # fmt: skip
        self.xo = None

    def seed(self, batch_size: int, seed: int) -> None:
        from numba.cuda.random import create_xoroshiro128p_states

        self.xo = create_xoroshiro128p_states(batch_size, seed=int(seed))

    def run(self, searcher: Any, arrays: list[np.ndarray], num_simulations: int) -> int:
        cuda = self.cuda
        t = searcher.tree
        b, m, a = t["children"].shape
        p, s = t["value"].shape[2], t["states"].shape[2]
        dev = [cuda.to_device(x) for x in arrays]
        roots, rng = cuda.to_device(searcher.roots), cuda.to_device(searcher.rng)
        scratch = [
            cuda.device_array((b, m + 1), np.int64),
            cuda.device_array((b, s), np.float32),
            cuda.device_array((b, a), np.bool_),
            cuda.device_array((b, p), np.float32),
            cuda.device_array((b, p), np.float32),
        ]
        short = cuda.device_array(b, np.int64)
        tpb = min(self.threads_per_block, b)
        self.kernel[(b + tpb - 1) // tpb, tpb](
            np.float64(searcher.c), np.int64(num_simulations),
            np.int64(searcher.max_rollout_steps), roots, rng, self.xo, *scratch, short, *dev,
        )  # fmt: skip
        for host, d in zip(arrays, dev, strict=True):
            d.copy_to_host(host)
        rng.copy_to_host(searcher.rng)
        return int(short.copy_to_host().sum())
