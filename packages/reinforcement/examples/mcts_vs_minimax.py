"""MCTS (vanilla UCT, random rollouts) against a perfect tic-tac-toe player, both sides.

python examples/mcts_vs_minimax.py --games 200 --sims 1000 3000 10000
"""

from __future__ import annotations

import argparse

from sporeling.rl.cli import main as cli


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--sims", type=int, nargs="+", default=[1000, 3000, 10000])
    args = parser.parse_args()
    for sims in args.sims:
        cli(["play", "--opponent", "minimax", "--games", str(args.games), "--sims", str(sims),
             "--mcts-plays", "both"])  # fmt: skip


if __name__ == "__main__":
    main()
