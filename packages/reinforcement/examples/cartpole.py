"""CartPole-v1 learning runs with fixed seeds: the 100-episode greedy mean return after a
budget of environment steps, per seed.

    python examples/cartpole.py --algo dqn --steps 50000 --seeds 0 1 2
    python examples/cartpole.py --algo ppo --steps 100000 --seeds 0 1 2
    python examples/cartpole.py --algo a2c --steps 200000 --seeds 0
"""

from __future__ import annotations

import argparse
import json

from threadpoolctl import threadpool_limits

from sporeling.rl.algorithm.registry import get_algorithm


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--algo", required=True, choices=["dqn", "ppo", "a2c", "ac"])
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--target", type=float, default=475.0)
    args = parser.parse_args()
    threadpool_limits(1)  # small networks: one BLAS thread is fastest on a shared machine
    results = []
    for seed in args.seeds:
        r = get_algorithm(args.algo).train("CartPole-v1", args.steps, seed, eval_episodes=100)
        results.append(r)
        print(json.dumps(r), flush=True)
    reached = sum(r["eval_mean_return"] >= args.target for r in results)
    print(f"{args.algo}: {reached} of {len(results)} seeds reached a 100-episode mean of "
          f">= {args.target} within {args.steps} steps; returns "
          f"{[round(r['eval_mean_return'], 1) for r in results]}, train wall "
          f"{[r['train_s'] for r in results]} s")  # fmt: skip


if __name__ == "__main__":
    main()
