"""``sporeling-transformer``: ``train``, ``eval``, ``generate`` and ``plan`` from YAML run
configs (a file or a built-in name, with ``section.key=value`` overrides)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from ._version import __version__

OK, ERROR, USAGE = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="sporeling-transformer", description=__doc__)
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train", help="train a model from a run config")
    t.add_argument(
        "config", help="YAML file or built-in name (gpt_shakespeare_char, gpt_tiny, ...)"
    )
    t.add_argument("overrides", nargs="*", help="section.key=value, e.g. train.max_iters=100")
    e = sub.add_parser("eval", help="mean loss of a trained run on its data")
    e.add_argument("run_dir")
    e.add_argument("--split", choices=("val", "train"), default="val")
    ev = e.add_mutually_exclusive_group()
    ev.add_argument("--batches", type=int, default=None, help="fixed random batches (GPT)")
    ev.add_argument(
        "--whole", action="store_true", help="GPT: the windows that tile the whole split"
    )
    e.add_argument(
        "--draw-seed",
        type=int,
        default=None,
        help="GPT: draw the random batches with this seed, not the run's validation ones "
        "(nanoGPT's estimate_loss protocol)",
    )
    e.add_argument(
        "--test-size", type=int, default=None, help="T5: held-out strings (default: the run's)"
    )
    g = sub.add_parser("generate", help="continue prompts with a trained GPT")
    g.add_argument("run_dir")
    g.add_argument("--prompt", action="append", default=None, help="repeat for a batch")
    g.add_argument("--max-new-tokens", type=int, default=None)
    g.add_argument("--temperature", type=float, default=None)
    g.add_argument("--top-k", type=int, default=None)
    g.add_argument("--top-p", type=float, default=None)
    g.add_argument("--greedy", action="store_true")
    g.add_argument("--no-cache", action="store_true", help="recompute the window every step")
    g.add_argument("--seed", type=int, default=None)
    pl = sub.add_parser("plan", help="per-rank memory/communication estimate of a config")
    pl.add_argument("config")
    pl.add_argument("overrides", nargs="*")
    pl.add_argument("--bandwidth", type=float, default=5e9, help="link bytes/s (default 5e9)")
    pl.add_argument("--latency", type=float, default=5e-6, help="link latency s (default 5e-6)")
    pl.add_argument(
        "--device-flops", type=float, default=None, help="default: measured matmul peak"
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return _run(args)
    except (ValueError, FileNotFoundError, ImportError) as exc:
        print(f"sporeling-transformer {args.command}: error: {exc}", file=sys.stderr)
        return ERROR


def _run(args: argparse.Namespace) -> int:
    from .settings import load_config

    if args.command == "train":
        from .runner import train

        res = train(load_config(args.config, args.overrides))
        if res["rank"] == 0:
            print(json.dumps({k: v for k, v in res.items() if k != "history"}, indent=1))
    elif args.command == "eval":
        arch = _arch(args.run_dir)
        if arch == "t5":
            from .train_other import evaluate_t5

            print(f"exact match: {evaluate_t5(args.run_dir, args.test_size):.4f}")
        elif arch == "vit":
            from .train_other import evaluate_vit

            print(f"test accuracy: {evaluate_vit(args.run_dir):.4f}")
        else:
            from .runner import evaluate

            loss = evaluate(args.run_dir, args.split, args.batches, args.whole, args.draw_seed)
            how = "whole split" if args.whole else f"{args.batches or 'eval_iters'} batches"
            if args.draw_seed is not None:
                how += f" drawn with seed {args.draw_seed}"
            print(f"{args.split} loss: {loss:.4f} ({how})")
    elif args.command == "generate" and _arch(args.run_dir) == "t5":
        from .generation import generate_seq2seq
        from .tasks import DIGIT0, EOS
        from .train_other import load_t5

        net, _ = load_t5(args.run_dir)
        prompts = args.prompt or ["12345"]
        bad = [p for p in prompts if not p.isdigit()]
        if bad:
            raise ValueError(f"the digit-reversal T5 takes strings of digits, got {bad}")
        outs = generate_seq2seq(
            net, [[int(c) + DIGIT0 for c in p] for p in prompts], seed=args.seed
        )
        for p, o in zip(prompts, outs):
            print(p, "->", "".join(str(t - DIGIT0) for t in o if t != EOS))
    elif args.command == "generate":
        from .generation import generate
        from .runner import load_run

        net, tok, cfg = load_run(args.run_dir, use_past=not args.no_cache)
        gcfg = dict(cfg.get("generate", {}))
        prompts = args.prompt or ["\n"]
        outs = generate(
            net,
            [tok.encode(p) for p in prompts],
            args.max_new_tokens or int(gcfg.get("max_new_tokens", 100)),
            do_sample=not args.greedy,
            top_k=args.top_k if args.top_k is not None else int(gcfg.get("top_k", 0)),
            top_p=args.top_p if args.top_p is not None else float(gcfg.get("top_p", 1.0)),
            temperature=args.temperature or float(gcfg.get("temperature", 1.0)),
            seed=args.seed,
            slide=True,
        )
        for prompt, out in zip(prompts, outs):
            print(prompt + tok.decode(out))
            print("-" * 40)
    elif args.command == "plan":
        from .plan import plan, plan_text

        cfg = load_config(args.config, args.overrides)
        print(plan_text(plan(cfg, args.bandwidth, args.latency, args.device_flops)))
    return OK


def _arch(run_dir: str) -> str:
    from pathlib import Path

    import yaml

    cfg_path = Path(run_dir) / "config.yaml"
    if not cfg_path.exists():
        raise FileNotFoundError(f"{run_dir}: no config.yaml (not a training run's output_dir)")
    return str((yaml.safe_load(cfg_path.read_text()) or {}).get("arch", "gpt")).lower()
