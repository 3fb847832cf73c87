"""A leaf value for the GPU checks: valid for both @njit and CUDA device compilation."""

from __future__ import annotations

import numba as nb

from sporeling.rl.mcts import SIMULATION_SIG, rng_randint


@nb.njit(SIMULATION_SIG, cache=True)
def centre_value(state, returns, rng):  # pragma: no cover - jit
    """A heuristic leaf value plus splitmix64 noise (exact in binary: 0.25 steps), so both
    backends must draw the same numbers in the same order to agree."""
    v = 0.0
    for cell in (0, 2, 4, 4, 6, 8):  # corners once, the centre twice
        if state[cell] == 1.0:
            v += 0.25
        elif state[cell] == 2.0:
            v -= 0.25
    v += 0.5 * (rng_randint(rng, 3) - 1)
    returns[0] = v
    returns[1] = -v
