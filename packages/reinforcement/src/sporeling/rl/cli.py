"""``sporeling-rl``: train and evaluate agents, play board games against MCTS.

sporeling-rl train --algo dqn|ppo|a2c|ac|ddpg|sac [--env CartPole-v1] [--steps 50000]
                   [--seed 0] [--ckpt DIR]
sporeling launch -n 2 sporeling-rl train --algo ppo --policy multi-actor --actors 2
sporeling-rl eval --algo dqn --ckpt DIR [--env CartPole-v1] [--episodes 100]
sporeling-rl play [--game tictactoe|connectfour] [--opponent human|minimax|random|mcts]
                  [--sims 3000] [--mcts-plays first|second|both] [--games 1] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import numpy as np

from ._version import __version__

OK, FAILED, USAGE_ERROR = 0, 1, 2


def _threads(n: int) -> Any:
    from threadpoolctl import threadpool_limits

    return threadpool_limits(n)


def cmd_train(args: argparse.Namespace) -> int:
    from .algorithm.registry import get_algorithm

    _threads(args.threads)
    algo = get_algorithm(args.algo)
    t0 = time.perf_counter()
    if args.policy is not None:
        result = algo.train_distributed(args.policy, args.actors, args.env, args.steps,
                                        args.seed, args.eval_episodes)  # fmt: skip
        result["wall_s"] = round(time.perf_counter() - t0, 1)
        print(json.dumps(result))
        return OK
    result = algo.train(env=args.env, steps=args.steps, seed=args.seed, ckpt=args.ckpt,
                        eval_episodes=args.eval_episodes, log_every=args.log_every)  # fmt: skip
    result["wall_s"] = round(time.perf_counter() - t0, 1)
    print(json.dumps(result))
    return OK


def cmd_eval(args: argparse.Namespace) -> int:
    from .algorithm.registry import get_algorithm

    _threads(args.threads)
    algo = get_algorithm(args.algo)
    mean = algo.evaluate(env=args.env, ckpt=args.ckpt, episodes=args.episodes, seed=args.seed)
    print(json.dumps({"algo": args.algo, "env": args.env, "episodes": args.episodes,
                      "mean_return": mean}))  # fmt: skip
    return OK


def _human_move(env: Any, legal: np.ndarray) -> int:
    print(env.render())
    while True:
        text = input(f"your move {np.flatnonzero(legal).tolist()}: ").strip()
        if text.isdigit() and int(text) < legal.size and legal[int(text)]:
            return int(text)
        print(f"{text!r} is not a legal move")


def cmd_play(args: argparse.Namespace) -> int:
    from .environment import ConnectFourEnvironment, TicTacToeEnvironment
    from .environment.opponents import minimax_tictactoe, random_move
    from .mcts import MCTS

    env_cls = {"tictactoe": TicTacToeEnvironment, "connectfour": ConnectFourEnvironment}[args.game]
    if args.opponent == "minimax" and args.game != "tictactoe":
        print("sporeling-rl play: the minimax opponent plays tic-tac-toe only", file=sys.stderr)
        return USAGE_ERROR
    rng = np.random.default_rng(args.seed)
    tally = {"mcts_win": 0, "draw": 0, "mcts_loss": 0}
    for game in range(args.games):
        env = env_cls({"num_envs": 1})
        env.reset_np()
        mcts_side = {"first": 0, "second": 1, "both": game % 2}[args.mcts_plays]
        players = {mcts_side: MCTS(env, max_iteration=args.sims, seed=args.seed + game)}
        if args.opponent == "mcts":
            players[1 - mcts_side] = MCTS(env, max_iteration=args.sims, seed=10_000 + game)
        done, reward = False, np.zeros(2)
        while not done:
            p = env.current_player()
            legal = env.legal_action_np()[0]
            if p in players:
                action, handle = players[p].mcts_search()
                players[p].restore_tree_data(handle)
            elif args.opponent == "minimax":
                action = minimax_tictactoe(env.save())
            elif args.opponent == "random":
                action = random_move(legal, rng)
            else:
                action = _human_move(env, legal)
            _, r, d = env.step_np([action])
            done, reward = bool(d[0]), r[0]
        outcome = (
            "mcts_win"
            if reward[mcts_side] > 0
            else "mcts_loss"
            if reward[mcts_side] < 0
            else "draw"
        )  # noqa: E501
        tally[outcome] += 1
        if args.opponent == "human" or args.verbose:
            print(env.render())
            print(f"game {game}: {outcome.replace('_', ' ')} (MCTS played {'XO'[mcts_side]})")
    print(json.dumps({"game": args.game, "opponent": args.opponent, "sims": args.sims,
                      "games": args.games, **tally}))  # fmt: skip
    return OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sporeling-rl", description=__doc__.split("\n")[0])
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    train = sub.add_parser("train", help="train an algorithm (fixed seed), print a JSON summary")
    train.add_argument("--algo", required=True, help="dqn, ppo, a2c, ac, ddpg, sac")
    train.add_argument("--env", default="CartPole-v1")
    train.add_argument("--steps", type=int, default=50_000, help="environment steps")
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--ckpt", default=None, help="directory for the final checkpoint")
    train.add_argument("--eval-episodes", type=int, default=100)
    train.add_argument("--log-every", type=int, default=10_000, help="steps between log lines")
    train.add_argument("--threads", type=int, default=1, help="BLAS threads")
    train.add_argument(
        "--policy",
        choices=["single", "multi-actor", "async"],
        default=None,
        help="distribution policy (multi-actor: one actor per MPI rank, synchronous, "
        "`sporeling launch -n N ... --actors N`; async: rank 0 learns, one actor per other "
        "rank, `sporeling launch -n N+1 ... --actors N`)",
    )
    train.add_argument("--actors", type=int, default=1, help="actors under --policy")
    train.set_defaults(fn=cmd_train)
    ev = sub.add_parser("eval", help="evaluate a checkpoint greedily")
    ev.add_argument("--algo", required=True)
    ev.add_argument("--env", default="CartPole-v1")
    ev.add_argument("--ckpt", required=True)
    ev.add_argument("--episodes", type=int, default=100)
    ev.add_argument("--seed", type=int, default=1000)
    ev.add_argument("--threads", type=int, default=1)
    ev.set_defaults(fn=cmd_eval)
    play = sub.add_parser("play", help="MCTS against a human or a built-in opponent")
    play.add_argument("--game", choices=["tictactoe", "connectfour"], default="tictactoe")
    play.add_argument("--opponent", choices=["human", "minimax", "random", "mcts"], default="human")
    play.add_argument("--sims", type=int, default=3000, help="MCTS simulations per move")
    play.add_argument("--mcts-plays", choices=["first", "second", "both"], default="both")
    play.add_argument("--games", type=int, default=1)
    play.add_argument("--seed", type=int, default=0)
    play.add_argument("--verbose", action="store_true")
    play.set_defaults(fn=cmd_play)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.fn(args))
    except (ValueError, KeyError, FileNotFoundError) as exc:
        print(f"sporeling-rl {args.command}: error: {exc}", file=sys.stderr)
        return FAILED
