"""KV-cache generation A/B in one process: the suite's earlier path against the current one,
interleaved with ``transformers`` on the same weights (GPT-2-small shape, context 256, batch
1, a 16-token prompt, greedy).

Variants: ``window`` = 1.8's prompt pass over all 256 positions and op-by-op steps (the
path before the prompt bucket and the compiled step), ``bucket`` = the prompt pass over the
prompt rounded up to ``PROMPT_BUCKET``, op-by-op steps, ``new`` = bucket + the ``jit`` decode
step (what ``generate`` does now), ``torch`` = ``model.generate(use_cache=True)``. Each
round runs every variant once; the minimum over rounds is kept, as wall time and as process
CPU time (with ``--one-thread`` every side computes on one thread, so CPU time measures the
work whatever the machine's load; wall time on a shared machine does not).

    python benchmarks/transformer/ab_generation.py [--layers 12] [--tokens 32] [--rounds 3]
        [--one-thread]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

if "--one-thread" in sys.argv:  # before NumPy, Numba and torch load
    for _k in ("OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS", "OMP_NUM_THREADS"):
        os.environ[_k] = "1"

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--one-thread", action="store_true")
    args = ap.parse_args()
    import torch
    import transformers as tr

    import sporeling.transformer.generation as gen
    from sporeling.transformer.hf import load_hf_gpt2

    if args.one_thread:
        torch.set_num_threads(1)
    n = args.tokens
    torch.manual_seed(0)
    cfg = tr.GPT2Config(
        n_embd=768, n_layer=args.layers, n_head=12, n_positions=256, vocab_size=50257
    )
    th = tr.GPT2LMHeadModel(cfg).eval()
    with tempfile.TemporaryDirectory() as d:
        th.save_pretrained(d, safe_serialization=True)
        sp = load_hf_gpt2(d, use_past=True)
    prompt = np.random.default_rng(0).integers(0, 50257, 16)
    bucket = gen.PROMPT_BUCKET

    def th_gen() -> list[int]:
        with torch.no_grad():
            out = th.generate(
                torch.tensor(prompt[None]),
                max_new_tokens=n,
                min_new_tokens=n,
                do_sample=False,
                use_cache=True,
                pad_token_id=0,
            )
        return out[0, 16:].tolist()

    def sp_gen(prompt_bucket: int, compiled: bool):
        def run() -> list[int]:
            gen.PROMPT_BUCKET = prompt_bucket
            try:
                return gen.generate(sp, [prompt.tolist()], n, compiled=compiled)[0]
            finally:
                gen.PROMPT_BUCKET = bucket

        return run

    variants = {
        "window": sp_gen(1 << 30, False),
        "bucket": sp_gen(bucket, False),
        "new": sp_gen(bucket, True),
        "torch": th_gen,
    }
    ref = th_gen()
    for name, fn in variants.items():  # also the warm-up (compiles, caches)
        same = sum(a == b for a, b in zip(fn(), ref))
        print(f"{name}: tokens equal to transformers' {same}/{n}", flush=True)
    wall = dict.fromkeys(variants, float("inf"))
    cpu = dict.fromkeys(variants, float("inf"))
    for r in range(args.rounds):
        for name, fn in variants.items():
            c0, t0 = time.process_time(), time.perf_counter()
            fn()
            wall[name] = min(wall[name], time.perf_counter() - t0)
            cpu[name] = min(cpu[name], time.process_time() - c0)
        print(
            f"round {r}, load {os.getloadavg()[0]:.1f}: tokens/s wall "
            + " ".join(f"{k} {n / v:.1f}" for k, v in wall.items())
            + " | cpu "
            + " ".join(f"{k} {n / v:.1f}" for k, v in cpu.items()),
            flush=True,
        )
    print("wall ratio vs transformers:", {k: round(wall["torch"] / v, 2) for k, v in wall.items()})
    print("cpu ratio vs transformers:", {k: round(cpu["torch"] / v, 2) for k, v in cpu.items()})


if __name__ == "__main__":
    main()
