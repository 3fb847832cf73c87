"""MCTS simulations per second on tic-tac-toe: Sporeling's compiled search, a plain Python
UCT, and OpenSpiel's C++ MCTSBot when ``pyspiel`` imports (``pip install open_spiel``).

Every searcher runs 10,000 simulations from the empty board with UCT (c = sqrt 2) and one
uniformly random rollout per leaf. Times are the median of ``--repeats`` searches after one
warm-up search (Numba compilation and caches excluded).

    python benchmarks/rl/mcts_bench.py [--sims 10000] [--repeats 5] [--python-sims 10000]
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "packages/reinforcement/tests"))


def timed(fn, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def sporeling_rate(sims: int, repeats: int, batch: int = 1) -> float:
    from sporeling.rl.environment import TicTacToeEnvironment
    from sporeling.rl.mcts import BatchedMCTS

    m = BatchedMCTS(TicTacToeEnvironment, batch_size=batch, max_nodes=sims + 1, c=math.sqrt(2))
    roots = np.zeros((batch, 11), np.float32)
    return batch * sims / timed(lambda: m.search(roots, sims), repeats)


def python_rate(sims: int) -> float:
    from naive import TicTacToe, uct_search

    t0 = time.perf_counter()
    uct_search(TicTacToe(), sims, math.sqrt(2), 0)
    return sims / (time.perf_counter() - t0)


def openspiel_rate(sims: int, repeats: int) -> float | None:
    try:
        import pyspiel
    except ImportError:
        return None
    game = pyspiel.load_game("tic_tac_toe")
    evaluator = pyspiel.RandomRolloutEvaluator(1, 0)
    bot = pyspiel.MCTSBot(game, evaluator, math.sqrt(2), sims, 1000, False, 0, False)
    state = game.new_initial_state()
    return sims / timed(lambda: bot.step(state), repeats)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sims", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--python-sims", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=16, help="roots of the batched run")
    args = parser.parse_args()
    results = {
        "sporeling_compiled_1_root": sporeling_rate(args.sims, args.repeats),
        f"sporeling_compiled_{args.batch}_roots": sporeling_rate(
            args.sims, args.repeats, args.batch
        ),
        "plain_python_uct": python_rate(args.python_sims),
        "openspiel_cpp_mctsbot": openspiel_rate(args.sims, args.repeats),
    }
    print(json.dumps({"machine": platform.processor() or platform.machine(),
                      "sims_per_search": args.sims,
                      "simulations_per_s": {k: None if v is None else round(v)
                                            for k, v in results.items()}}, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
