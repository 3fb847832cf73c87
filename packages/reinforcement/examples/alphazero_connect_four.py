"""AlphaZero-lite on Connect-Four: a small policy-value network trained on its own self-play
with the compiled PUCT search, then matched against a random player and against plain MCTS
(UCT, random rollouts) with the same number of simulations per move, as first and as second
player.

    python examples/alphazero_connect_four.py --iterations 10 --games 32 --sims 100

``--save net.safetensors`` keeps the trained network (the core's safetensors checkpoint);
``--load net.safetensors`` skips training and only evaluates that network.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from threadpoolctl import threadpool_limits

from sporeling.core import load_checkpoint, save_checkpoint
from sporeling.rl.environment import ConnectFourEnvironment as Game
from sporeling.rl.mcts import BatchedMCTS
from sporeling.rl.mcts.alphazero import (
    AlphaZeroConfig,
    PolicyValueNet,
    network_func,
    play_match,
    train_alphazero,
)


def searcher(func, games, sims, seed, c):
    node = "PUCT" if func is not None else "UCT"
    s = BatchedMCTS(Game, games, sims + 1, node, c if func is not None else 1.4142, func, seed)
    s.sims = sims
    return s


class Timed:
    """A player for ``play_match`` that keeps the wall time of its searches (one search =
    one move in every game of the batch), for comparisons at equal time per move."""

    def __init__(self, player):
        self.player, self.sims, self.seconds, self.moves = player, player.sims, 0.0, 0

    def search(self, states, sims):
        t0 = time.perf_counter()
        out = self.player.search(states, sims)
        self.seconds, self.moves = self.seconds + time.perf_counter() - t0, self.moves + 1
        return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--iterations", type=int, default=10)
    p.add_argument("--games", type=int, default=32, help="self-play games per iteration")
    p.add_argument("--sims", type=int, default=100, help="simulations per move")
    p.add_argument("--eval-games", type=int, default=50, help="games per side and opponent")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--noise", type=float, default=0.0, help="Dirichlet alpha at the roots")
    p.add_argument("--save", help="write the trained network here (safetensors checkpoint)")
    p.add_argument("--load", help="evaluate this saved network instead of training one")
    p.add_argument("--mcts-sims", type=int, help="plain MCTS's simulations (default --sims)")
    p.add_argument("--opponents", default="random,mcts", help="comma-separated: random, mcts")
    args = p.parse_args()
    names = args.opponents.split(",")
    if bad := [name for name in names if name not in ("random", "mcts")]:
        p.error(f"--opponents: {bad[0]!r} is not one of random, mcts")
    threadpool_limits(1)
    cfg = AlphaZeroConfig(
        iterations=args.iterations,
        games_per_iteration=args.games,
        simulations=args.sims,
        seed=args.seed,
        noise_alpha=args.noise,
    )
    t0 = time.perf_counter()
    if args.load:
        net = PolicyValueNet(hidden=cfg.hidden, actions=Game.max_action)
        load_checkpoint(args.load, net=net, strict_load=True)
    else:
        net = train_alphazero(Game, cfg, log=lambda m: print(m, flush=True))
    train_s = time.perf_counter() - t0
    if args.save:
        save_checkpoint(net, args.save)
    func, n, rng = network_func(net), args.eval_games, np.random.default_rng(args.seed + 1)
    results = {"config": vars(args), "train_s": round(train_s, 1)}
    opponents = {"random": lambda: "random",
                 "mcts": lambda: Timed(searcher(None, n, mcts_sims, 7, 1.4142))}  # fmt: skip
    mcts_sims = args.mcts_sims or args.sims
    for name in names:
        opp = opponents[name]
        az = [Timed(searcher(func, n, args.sims, seed, cfg.c)) for seed in (3, 5)]
        ops = [opp(), opp()]
        az_first = play_match(Game, az[0], ops[0], n, rng)
        opp_first = play_match(Game, ops[1], az[1], n, rng)
        wins, draws = az_first[0] + opp_first[2], az_first[1] + opp_first[1]
        results[f"vs_{name}"] = {
            "alphazero_first": az_first,
            "alphazero_second": opp_first[::-1],
            "win_rate": wins / (2 * n),
            "draw_rate": draws / (2 * n),
        }
        if name == "mcts":  # seconds per move of a batch of n games, each side
            for who, players in (("alphazero", az), ("mcts", ops)):
                per_move = sum(q.seconds for q in players) / sum(q.moves for q in players)
                results[f"vs_{name}"][f"{who}_s_per_move"] = round(per_move, 4)
        print(f"AlphaZero-lite vs {name}: {json.dumps(results[f'vs_{name}'])}", flush=True)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
