"""The compiled contract between the MCTS kernel and what users plug into it.

Every function is a Numba function compiled for one fixed signature, so the search kernel
(compiled once, cached on disk) calls it through a first-class function pointer; a user's
``@njit(STEP_SIG)`` game plugs in without recompiling the search. A state is a flat
``float32`` vector (boards, counters and the player to move, as the game likes).

- ``legal_action(state, mask) -> int``: fill ``mask`` (bool, ``max_action``), return the
  number of legal actions (0 in a finished game).
- ``step(state, action, reward) -> bool``: play ``action`` in place, write each player's
  reward for this transition into ``reward``, return True when the game has ended.
- ``current_player(state) -> int``: the player to move.
- ``calculate_prior(state, mask, prior, rng)``: the prior over actions (PUCT), in ``prior``.
- ``simulation(state, returns, rng)``: each player's return from ``state`` (a rollout or a
  value estimate); it must not modify ``state``.
- node policy ``score(value, visits, parent_visits, prior, c) -> float``: the selection
  score of a child, ``value`` being its mean return for the player to move at the parent.

``rng`` is a ``uint64[1]`` splitmix64 state; draw with :func:`rng_next` / :func:`rng_randint`.
"""

from __future__ import annotations

import numba as nb
from numba import types

STATE = types.float32[::1]
MASK = types.boolean[::1]
VEC = types.float32[::1]
RNG = types.uint64[::1]

LEGAL_SIG = types.int64(STATE, MASK)
STEP_SIG = types.boolean(STATE, types.int64, VEC)
PLAYER_SIG = types.int64(STATE)
PRIOR_SIG = types.none(STATE, MASK, VEC, RNG)
SIMULATION_SIG = types.none(STATE, VEC, RNG)
SCORE_SIG = types.float64(types.float64, types.float64, types.float64, types.float64, types.float64)

LegalFn = types.FunctionType(LEGAL_SIG)
StepFn = types.FunctionType(STEP_SIG)
PlayerFn = types.FunctionType(PLAYER_SIG)
PriorFn = types.FunctionType(PRIOR_SIG)
SimulationFn = types.FunctionType(SIMULATION_SIG)
ScoreFn = types.FunctionType(SCORE_SIG)

_GOLDEN = 0x9E3779B97F4A7C15
_MIX1 = 0xBF58476D1CE4E5B9
_MIX2 = 0x94D049BB133111EB


@nb.njit(types.uint64(RNG), cache=True)
def rng_next(rng):  # pragma: no cover - jit
    """splitmix64: advance ``rng[0]`` and return 64 random bits."""
    z = rng[0] + nb.uint64(_GOLDEN)
    rng[0] = z
    z = (z ^ (z >> nb.uint64(30))) * nb.uint64(_MIX1)
    z = (z ^ (z >> nb.uint64(27))) * nb.uint64(_MIX2)
    return z ^ (z >> nb.uint64(31))


@nb.njit(types.int64(RNG, types.int64), cache=True)
def rng_randint(rng, n):  # pragma: no cover - jit
    """A random int in ``[0, n)`` (``n >= 1``)."""
    return nb.int64(rng_next(rng) % nb.uint64(n))


def rng_next_py(state: int) -> tuple[int, int]:
    """The same generator in plain Python: ``(new_state, bits)`` (for reference tests)."""
    mask = (1 << 64) - 1
    z = (state + _GOLDEN) & mask
    new_state = z
    z = ((z ^ (z >> 30)) * _MIX1) & mask
    z = ((z ^ (z >> 27)) * _MIX2) & mask
    return new_state, z ^ (z >> 31)
