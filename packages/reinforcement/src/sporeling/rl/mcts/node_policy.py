"""Node policies: how a node scores its children during selection (compiled, pluggable).

A node policy is a Numba function of :data:`~sporeling.rl.mcts.contract.SCORE_SIG`:
``score(value, visits, parent_visits, prior, c)`` where ``value`` is the child's mean return
for the player to move at the parent (0 for an unvisited child). The child with the
highest score is taken, the lowest action on ties.
"""

from __future__ import annotations

import math

import numba as nb

from .contract import SCORE_SIG


@nb.njit(SCORE_SIG, cache=True)
def uct_score(value, visits, parent_visits, prior, c):  # pragma: no cover - jit
    """Vanilla UCT (MindSpore RL's CPUVanilla): ``Q + c sqrt(ln N / n)``; unvisited: +inf."""
    if visits == 0.0:
        return math.inf
    return value + c * math.sqrt(math.log(parent_visits) / visits)


@nb.njit(SCORE_SIG, cache=True)
def puct_score(value, visits, parent_visits, prior, c):  # pragma: no cover - jit
    """AlphaZero's PUCT: ``Q + c P sqrt(N) / (1 + n)`` (unvisited children have Q = 0)."""
    return value + c * prior * math.sqrt(parent_visits) / (1.0 + visits)


NODE_POLICIES = {
    "CPUVanilla": uct_score,
    "Vanilla": uct_score,
    "UCT": uct_score,
    "CPUPUCT": puct_score,
    "PUCT": puct_score,
}
