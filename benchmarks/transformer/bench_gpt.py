"""Transformer-suite benchmarks against PyTorch on the same weights (CPU, one process).

1. GPT training step (the baby-GPT shape: 4 layers, 4 heads, emb 128, block 64, batch 12,
   vocab 65; AdamW): Sporeling's GPT/GPTWithLoss/TrainOneStepCell under ``jit`` against
   ``transformers``' GPT2LMHeadModel in PyTorch eager, the same initial weights (loaded into
   Sporeling through ``sporeling.transformer.hf``); first-step losses printed side by side.
2. KV-cache greedy generation, GPT-2-small shape (12 layers, 12 heads, emb 768, vocab 50257)
   with a 256-token context: batch 1, a 16-token prompt, 32 new tokens; Sporeling's 1.8-style
   fixed-length cache against ``model.generate(use_cache=True)``; the generated tokens must agree.

Needs torch and transformers (not dependencies of the suite):
    pip install torch==2.13.0 transformers && python benchmarks/transformer/bench_gpt.py [--quick]
Numbers on a shared machine are noisy; the script prints the load average with them.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np


def _best(fn, repeats: int) -> float:
    fn()  # warm-up (graph compile / caches)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def training(repeats: int) -> None:
    import torch
    import transformers as tr

    from sporeling.core import Tensor, jit, nn, set_context

    set_context(enable_graph_kernel=True)  # measured with kernel fusion (off by default)
    from sporeling.transformer.hf import load_hf_gpt2
    from sporeling.transformer.models.gpt import GPTWithLoss

    torch.manual_seed(0)
    cfg = tr.GPT2Config(
        n_embd=128,
        n_layer=4,
        n_head=4,
        n_positions=64,
        vocab_size=65,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
    )
    th = tr.GPT2LMHeadModel(cfg)
    with tempfile.TemporaryDirectory() as d:
        th.save_pretrained(d, safe_serialization=True)
        sp = load_hf_gpt2(d)
    ids = np.random.default_rng(0).integers(0, 65, (12, 65))
    x_th = torch.tensor(ids[:, :-1])
    y_th = torch.tensor(ids[:, 1:])
    th_opt = torch.optim.AdamW(th.parameters(), lr=1e-3, weight_decay=0.1)
    th.train()

    def th_step():
        logits = th(x_th).logits
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 65), y_th.reshape(-1))
        th_opt.zero_grad(set_to_none=True)
        loss.backward()
        th_opt.step()
        return loss.detach().item()

    step = jit(
        nn.TrainOneStepCell(
            GPTWithLoss(sp), nn.AdamW(sp.trainable_params(), learning_rate=1e-3, weight_decay=0.1)
        )
    )
    sp_ids = Tensor(ids.astype(np.int32))
    first_th = th_step()
    first_sp = float(step(sp_ids).asnumpy())
    tokens = 12 * 64
    ts = _best(lambda: step(sp_ids), repeats)
    tt = _best(th_step, repeats)
    print(
        f"GPT train step (baby shape): first-step loss sporeling {first_sp:.5f} vs torch "
        f"{first_th:.5f}"
    )
    print(
        f"  sporeling jit {tokens / ts:,.0f} tokens/s, torch eager {tokens / tt:,.0f} tokens/s, "
        f"ratio {tt / ts:.2f}"
    )


def generation(new_tokens: int, layers: int) -> None:
    import torch
    import transformers as tr

    from sporeling.transformer.generation import generate
    from sporeling.transformer.hf import load_hf_gpt2

    torch.manual_seed(0)
    cfg = tr.GPT2Config(n_embd=768, n_layer=layers, n_head=12, n_positions=256, vocab_size=50257)
    th = tr.GPT2LMHeadModel(cfg).eval()
    with tempfile.TemporaryDirectory() as d:
        th.save_pretrained(d, safe_serialization=True)
        sp = load_hf_gpt2(d, use_past=True)
    prompt = np.random.default_rng(0).integers(0, 50257, 16)

    def th_gen():
        with torch.no_grad():
            out = th.generate(
                torch.tensor(prompt[None]),
                max_new_tokens=new_tokens,
                min_new_tokens=new_tokens,
                do_sample=False,
                use_cache=True,
                pad_token_id=0,
            )
        return out[0, 16:].tolist()

    def sp_gen():
        return generate(sp, [prompt.tolist()], new_tokens)[0]

    a, b = sp_gen(), th_gen()
    same = sum(x == y for x, y in zip(a, b))
    ts = _best(sp_gen, 1)
    tt = _best(th_gen, 1)
    print(
        f"KV-cache greedy generation, GPT-2-small shape ({layers} layers, context 256): tokens "
        f"agree {same}/{len(b)}"
    )
    print(
        f"  sporeling {new_tokens / ts:,.1f} tokens/s, transformers {new_tokens / tt:,.1f} "
        "tokens/s, "
        f"ratio {tt / ts:.2f}"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer repeats, 4 layers for generation")
    ap.add_argument("--only", choices=("training", "generation"), help="run one of the two")
    ap.add_argument("--layers", type=int, help="generation's layers (default 12, 4 with --quick)")
    args = ap.parse_args()
    print(f"load average {os.getloadavg()}, cpus {os.cpu_count()}")
    if args.only != "generation":
        training(3 if args.quick else 10)
    if args.only != "training":
        layers = args.layers or (4 if args.quick else 12)
        generation(16 if args.quick else 32, layers)


if __name__ == "__main__":
    main()
