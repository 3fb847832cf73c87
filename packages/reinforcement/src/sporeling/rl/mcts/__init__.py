"""Monte Carlo tree search (``mindspore_rl.utils.MCTS``), compiled with Numba."""

from .contract import (
    LEGAL_SIG,
    PLAYER_SIG,
    PRIOR_SIG,
    SCORE_SIG,
    SIMULATION_SIG,
    STEP_SIG,
    rng_next,
    rng_randint,
)
from .mcts import MCTS, AlgorithmFunc, BatchedMCTS, VanillaFunc
from .node_policy import puct_score, uct_score

__all__ = [
    "MCTS", "BatchedMCTS", "AlgorithmFunc", "VanillaFunc", "uct_score", "puct_score",
    "LEGAL_SIG", "STEP_SIG", "PLAYER_SIG", "PRIOR_SIG", "SIMULATION_SIG", "SCORE_SIG",
    "rng_next", "rng_randint",
]  # fmt: skip
