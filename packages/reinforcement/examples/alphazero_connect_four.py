"""AlphaZero-lite on Connect-Four: a small policy-value network trained on its own self-play
with the compiled PUCT search, then matched against a random player and against plain MCTS
(UCT, random rollouts) with the same number of simulations per move, as first and as second
player.

    python examples/alphazero_connect_four.py --iterations 10 --games 32 --sims 100
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from threadpoolctl import threadpool_limits

from sporeling.rl.environment import ConnectFourEnvironment as Game
from sporeling.rl.mcts import BatchedMCTS
from sporeling.rl.mcts.alphazero import (
    AlphaZeroConfig,
    network_func,
    play_match,
    train_alphazero,
)


def searcher(func, games, sims, seed, c):
    node = "PUCT" if func is not None else "UCT"
    s = BatchedMCTS(Game, games, sims + 1, node, c if func is not None else 1.4142, func, seed)
    s.sims = sims
    return s


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--iterations", type=int, default=10)
    p.add_argument("--games", type=int, default=32, help="self-play games per iteration")
    p.add_argument("--sims", type=int, default=100, help="simulations per move")
    p.add_argument("--eval-games", type=int, default=50, help="games per side and opponent")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--noise", type=float, default=0.0, help="Dirichlet alpha at the roots")
    args = p.parse_args()
    threadpool_limits(1)
    cfg = AlphaZeroConfig(
        iterations=args.iterations,
        games_per_iteration=args.games,
        simulations=args.sims,
        seed=args.seed,
        noise_alpha=args.noise,
    )
    t0 = time.perf_counter()
    net = train_alphazero(Game, cfg, log=lambda m: print(m, flush=True))
    train_s = time.perf_counter() - t0
    func, n, rng = network_func(net), args.eval_games, np.random.default_rng(args.seed + 1)
    results = {"config": vars(args), "train_s": round(train_s, 1)}
    for name, opp in (("random", lambda: "random"),
                      ("mcts", lambda: searcher(None, n, args.sims, 7, 1.4142))):  # fmt: skip
        az_first = play_match(Game, searcher(func, n, args.sims, 3, cfg.c), opp(), n, rng)
        opp_first = play_match(Game, opp(), searcher(func, n, args.sims, 5, cfg.c), n, rng)
        wins, draws = az_first[0] + opp_first[2], az_first[1] + opp_first[1]
        results[f"vs_{name}"] = {
            "alphazero_first": az_first,
            "alphazero_second": opp_first[::-1],
            "win_rate": wins / (2 * n),
            "draw_rate": draws / (2 * n),
        }
        print(f"AlphaZero-lite vs {name}: {json.dumps(results[f'vs_{name}'])}", flush=True)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
