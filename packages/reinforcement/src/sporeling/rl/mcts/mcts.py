"""Monte Carlo tree search: a compiled batched search and MindSpore RL's ``MCTS`` class.

:class:`BatchedMCTS` searches ``B`` roots at once; the loop (selection, expansion,
simulation, backpropagation) is one Numba kernel that calls the game's and the node
policy's compiled functions (see :mod:`sporeling.rl.mcts.contract`). :class:`MCTS` is the
0.6 interface (``mcts_search``, ``restore_tree_data``, ``destroy``) on one root.
"""

from __future__ import annotations

import itertools
from typing import Any

import numba as nb
import numpy as np

from . import tree as T
from .contract import LEGAL_SIG, PLAYER_SIG, PRIOR_SIG, SCORE_SIG, SIMULATION_SIG, STEP_SIG
from .node_policy import NODE_POLICIES


@nb.njit(PRIOR_SIG, cache=True)
def _no_prior(state, mask, prior, rng):  # pragma: no cover - jit
    return None


@nb.njit(SIMULATION_SIG, cache=True)
def _no_simulation(state, returns, rng):  # pragma: no cover - jit
    return None


def _compiled(fn: Any, sig: Any, what: str) -> Any:
    """A Numba dispatcher compiled for ``sig`` (compiling it now if needed)."""
    if not isinstance(fn, nb.core.registry.CPUDispatcher):
        raise TypeError(
            f"MCTS: {what} must be a Numba function, e.g. @numba.njit({sig}), got {fn!r}"
        )
    if sig.args not in fn.overloads:
        try:
            fn.compile(sig)
        except Exception as exc:
            raise TypeError(
                f"MCTS: {what} does not compile for the signature {sig}: {exc}"
            ) from exc
    return fn


def _check_device(device: Any) -> str:
    """``"CPU"`` or ``"GPU"`` (any case), as MindSpore RL's ``device`` argument."""
    if not isinstance(device, str) or device.upper() not in ("CPU", "GPU"):
        raise ValueError(f"MCTS: device expected 'CPU' or 'GPU', got {device!r}")
    return device.upper()


class AlgorithmFunc:
    """The user's prior and simulation, as compiled functions (``calculate_prior`` of
    :data:`PRIOR_SIG`, ``simulation`` of :data:`SIMULATION_SIG`). Set either to ``None``
    to keep the built-in one (uniform prior / random rollout)."""

    calculate_prior: Any = None
    simulation: Any = None

    def __init__(self, calculate_prior: Any = None, simulation: Any = None) -> None:
        if calculate_prior is not None:
            self.calculate_prior = calculate_prior
        if simulation is not None:
            self.simulation = simulation


class VanillaFunc(AlgorithmFunc):
    """Uniform prior over legal actions and a uniformly random rollout to the end."""

    def __init__(self, env: Any = None) -> None:
        super().__init__()
        self.env = env


class BatchedMCTS:
    """Search ``batch_size`` roots of a game at once.

    ``game`` provides ``legal_action_fn``, ``step_fn``, ``current_player_fn``, ``state_size``,
    ``max_action``, ``num_players`` (the environments of :mod:`sporeling.rl.environment` do).
    ``node_policy`` is ``"UCT"`` (``"CPUVanilla"``), ``"PUCT"`` or a compiled score function.
    ``max_nodes`` bounds each tree (one node per simulation is added).
    """

    def __init__(
        self,
        game: Any,
        batch_size: int = 1,
        max_nodes: int = 10_001,
        node_policy: Any = "UCT",
        c: float = 1.4142135623730951,
        customized_func: AlgorithmFunc | None = None,
        seed: int = 0,
        max_rollout_steps: int = 100_000,
        device: str = "CPU",
    ) -> None:
        self.game = game
        self.device = _check_device(device)
        for attr in ("legal_action_fn", "step_fn", "current_player_fn", "state_size",
                     "max_action", "num_players"):  # fmt: skip
            if not hasattr(game, attr):
                raise TypeError(f"MCTS: the game {game!r} lacks {attr!r} (see mcts.contract)")
        self.legal = _compiled(game.legal_action_fn, LEGAL_SIG, "legal_action_fn")
        self.step = _compiled(game.step_fn, STEP_SIG, "step_fn")
        self.player = _compiled(game.current_player_fn, PLAYER_SIG, "current_player_fn")
        if isinstance(node_policy, str):
            if node_policy not in NODE_POLICIES:
                raise ValueError(
                    f"MCTS: node_type {node_policy!r} is unknown; expected one of "
                    f"{sorted(NODE_POLICIES)} or a compiled score function"
                )
            node_policy = NODE_POLICIES[node_policy]
        self.score = _compiled(node_policy, SCORE_SIG, "node policy")
        func = customized_func or VanillaFunc()
        self.builtin_prior = func.calculate_prior is None
        self.builtin_sim = func.simulation is None
        self.prior_fn = _no_prior if self.builtin_prior else _compiled(
            func.calculate_prior, PRIOR_SIG, "calculate_prior")  # fmt: skip
        self.sim_fn = _no_simulation if self.builtin_sim else _compiled(
            func.simulation, SIMULATION_SIG, "simulation")  # fmt: skip
        if batch_size < 1 or max_nodes < 2:
            raise ValueError(
                f"MCTS: expected batch_size >= 1 and max_nodes >= 2, got {batch_size}, {max_nodes}"
            )
        self.batch_size, self.max_nodes = int(batch_size), int(max_nodes)
        self.c = float(c)
        self.max_rollout_steps = int(max_rollout_steps)
        self.tree = T.allocate(batch_size, max_nodes, game.max_action, game.num_players,
                               game.state_size)  # fmt: skip
        self.rng = np.empty((batch_size, 1), np.uint64)
        self._gpu = None
        if self.device == "GPU":
            from .gpu import GPUSearch  # numba.cuda only when the GPU is asked for

            self._gpu = GPUSearch(
                self,
                None if self.builtin_prior else self.prior_fn,
                None if self.builtin_sim else self.sim_fn,
            )
        self.seed(seed)
        self.roots = np.zeros(batch_size, np.int64)
        self._remap = np.empty(max_nodes, np.int64)

    def seed(self, seed: int) -> None:
        """Each root's generator starts at ``seed * 1_000_003 + b`` (splitmix64 states);
        on the GPU the built-in rollout draws from ``numba.cuda.random`` states seeded
        with ``seed``."""
        self.rng[:, 0] = (np.arange(self.batch_size, dtype=np.uint64)
                          + np.uint64(seed) * np.uint64(1_000_003))  # fmt: skip
        if self._gpu is not None:
            self._gpu.seed(self.batch_size, seed)

    def _arrays(self) -> list[np.ndarray]:
        return [self.tree[f] for f in T.TREE_FIELDS]

    def set_roots(self, states: Any) -> None:
        """Start fresh trees at ``states`` (``(B, state_size)``, or one state for B = 1)."""
        s = np.asarray(states, np.float32).reshape(self.batch_size, self.game.state_size)
        t = self.tree
        for key, fill in (("children", -1), ("parent", -1), ("action", -1), ("visits", 0),
                          ("value", 0), ("reward", 0), ("terminal", False),
                          ("expanded", False)):  # fmt: skip
            t[key][:] = fill
        t["states"][:, 0] = s
        mask = np.zeros(self.game.max_action, np.bool_)
        for b in range(self.batch_size):
            t["terminal"][b, 0] = self.legal(t["states"][b, 0], mask) == 0
        t["n_nodes"][:] = 1
        self.roots[:] = 0

    def run(self, num_simulations: int) -> int:
        """Run ``num_simulations`` more simulations from every root. Returns the number of
        roots whose tree filled up (their search stopped early)."""
        if self.tree["n_nodes"].min() < 1:
            raise RuntimeError("MCTS.run: call set_roots(states) first")
        if self._gpu is not None:
            return self._gpu.run(self, self._arrays(), int(num_simulations))
        return int(T.search_kernel(
            self.legal, self.step, self.player, self.prior_fn, self.sim_fn, self.score,
            self.builtin_prior, self.builtin_sim, self.c, int(num_simulations),
            self.max_rollout_steps, self.roots, self.rng, *self._arrays(),
        ))  # fmt: skip

    def best_actions(self) -> np.ndarray:
        out = np.empty(self.batch_size, np.int64)
        T.best_action_kernel(self.roots, out, *self._arrays())
        return out

    def visit_counts(self) -> np.ndarray:
        """``(B, max_action)`` visits of each root's children (0 where never taken)."""
        t = self.tree
        b = np.arange(self.batch_size)
        ch = t["children"][b, self.roots]
        v = np.take_along_axis(t["visits"][b], np.maximum(ch, 0), axis=1)
        return np.where(ch >= 0, v, 0.0)

    def search(self, states: Any, num_simulations: int) -> np.ndarray:
        """Fresh trees at ``states``, ``num_simulations`` each; the most visited actions."""
        self.set_roots(states)
        self.run(num_simulations)
        return self.best_actions()

    def advance(self, actions: Any) -> None:
        """Move every root to its child under ``actions[b]``, keeping that subtree (tree
        reuse); a child never created starts a fresh tree from the stepped state."""
        acts = np.asarray(actions, np.int64).reshape(self.batch_size)
        t = self.tree
        for b in range(self.batch_size):
            root = self.roots[b]
            ch = t["children"][b, root, acts[b]]
            if ch >= 0:
                T.compact_kernel(b, int(ch), self._remap, *self._arrays())
                self.roots[b] = 0
            else:
                state = t["states"][b, root].copy()
                self.step(state, int(acts[b]), np.zeros(self.game.num_players, np.float32))
                self._reset_one(b, state)

    def _reset_one(self, b: int, state: np.ndarray) -> None:
        t = self.tree
        for key, fill in (("children", -1), ("parent", -1), ("action", -1), ("visits", 0),
                          ("value", 0), ("reward", 0), ("terminal", False),
                          ("expanded", False)):  # fmt: skip
            t[key][b] = fill
        t["states"][b, 0] = state
        mask = np.zeros(self.game.max_action, np.bool_)
        t["terminal"][b, 0] = self.legal(t["states"][b, 0], mask) == 0
        t["n_nodes"][b] = 1
        self.roots[b] = 0


class MCTS:
    """MindSpore RL's MCTS (0.6 form, which extends 0.5's):
    ``MCTS(env, tree_type, node_type, root_player, customized_func, device, args,
    has_init_reward=False, max_action=-1.0, max_iteration=1000)``.

    ``env`` is a game environment (``save()`` gives the root state, and its compiled
    contract functions drive the search); ``args`` holds the exploration constant ``c``
    (a float or a 1-tuple). ``mcts_search()`` runs ``max_iteration`` simulations from
    ``env.save()`` and returns ``(action, handle)``; the tree is kept until
    ``restore_tree_data(handle)`` (or reused with ``advance(action)``).
    """

    _handles = itertools.count(1)

    def __init__(
        self,
        env: Any,
        tree_type: str = "CPUCommon",
        node_type: Any = "CPUVanilla",
        root_player: float = 0.0,
        customized_func: AlgorithmFunc | None = None,
        device: str = "CPU",
        args: Any = (1.4142135623730951,),
        has_init_reward: bool = False,
        max_action: float = -1.0,
        max_iteration: int = 1000,
        seed: int = 0,
    ) -> None:
        if tree_type not in ("CPUCommon", "GPUCommon", "Common"):
            raise ValueError(f"MCTS: tree_type expected 'CPUCommon', got {tree_type!r}")
        if isinstance(max_iteration, bool) or int(max_iteration) < 1:
            raise ValueError(f"MCTS: max_iteration expected an int >= 1, got {max_iteration!r}")
        if max_action not in (-1, -1.0) and int(max_action) != env.max_action:
            raise ValueError(
                f"MCTS: max_action {max_action} differs from the environment's {env.max_action}"
            )
        c = args[0] if isinstance(args, (tuple, list)) else args
        self.env = env
        self.root_player = int(root_player)
        self.max_iteration = int(max_iteration)
        self.searcher = BatchedMCTS(
            env,
            1,
            self.max_iteration + 1,
            node_type,
            float(c),
            customized_func,
            seed,
            device=device,
        )
        self.handle = next(self._handles)
        self._has_tree = False
        self._destroyed = False

    def _check(self, handle: Any) -> None:
        if self._destroyed:
            raise RuntimeError("MCTS: the tree was destroyed")
        if handle is not None and int(handle) != self.handle:
            raise ValueError(f"MCTS: handle {handle} is not this tree's ({self.handle})")

    def mcts_search(self, *args: Any) -> tuple[int, int]:
        """Search from ``env.save()``; ``(best action, handle)``."""
        self._check(None)
        state = np.asarray(self.env.save(), np.float32)
        root_state = self.searcher.tree["states"][0, self.searcher.roots[0]]
        if not self._has_tree or not np.array_equal(root_state, state):
            self.searcher.set_roots(state[None])
            self._has_tree = True
        self.root_player = int(self.env.current_player_fn(state))  # follows the game
        # a reused tree already holds some of the budget (and of the max_iteration + 1 nodes)
        budget = self.max_iteration - int(self.searcher.tree["visits"][0, self.searcher.roots[0]])
        if budget > 0:
            self.searcher.run(budget)
        return int(self.searcher.best_actions()[0]), self.handle

    def advance(self, action: int) -> None:
        """Keep the subtree under ``action`` for the next search (tree reuse)."""
        self._check(None)
        if self._has_tree:
            self.searcher.advance([action])

    def restore_tree_data(self, handle: Any = None) -> None:
        """Forget the tree (the creation arguments stay)."""
        self._check(handle)
        self._has_tree = False

    def destroy(self, handle: Any = None) -> None:
        """Free the tree's arrays; the object cannot search afterwards."""
        self._check(handle)
        self.searcher.tree = {}
        self._destroyed = True
