"""nanoGPT's baby-GPT run on PyTorch, re-implemented here: the side-by-side peer of
``sporeling-transformer train gpt_shakespeare_char``.

NOT nanoGPT's own script (it is not available offline on this machine): a re-implementation,
written for this comparison, of what nanoGPT's ``model.py`` and ``train.py`` do for the README's
CPU command (``config/train_shakespeare_char.py --device=cpu --compile=False --eval_iters=20
--log_interval=1 --block_size=64 --batch_size=12 --n_layer=4 --n_head=4 --n_embd=128
--max_iters=2000 --lr_decay_iters=2000 --dropout=0.0``):

- data: characters as tokens (sorted character set), first 90% train, last 10% validation;
  a batch is ``batch_size`` random windows (``randint(len - block_size)`` starts);
- model: token + position embeddings, pre-LN blocks (causal ``scaled_dot_product_attention``,
  4x MLP with erf-GELU), final LayerNorm, head tied to the token table, no biases
  (``bias=False``), init N(0, 0.02), residual projections N(0, 0.02 / sqrt(2 n_layer));
- AdamW(betas=(0.9, 0.99), eps 1e-8) with weight decay 0.1 on the >= 2-D parameters only;
- lr: linear warm-up over 100 iterations, cosine to 1e-4 at iteration 2000; grad clip 1.0;
- iterations 0..max_iters: evaluate every 250 (``eval_iters`` fresh random batches of each
  split, averaged), then step; so 2000 steps precede the last evaluation;
- then (not in nanoGPT) the final model's loss over the windows that tile the validation
  split, the same windows as ``sporeling-transformer eval RUN --whole``: a like-for-like
  number without the noise of 20 random batches.

Prints the evaluations, the wall time of the whole loop, and training tokens/s over the
steps (evaluations excluded). Usage (torch only, no Sporeling needed):

    python benchmarks/transformer/nanogpt_torch.py ../shared/data/tinyshakespeare/input.txt \
        [--threads 1] [--max-iters 2000] [--seed 1337] [--out result.json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F


class Attention(nn.Module):
    def __init__(self, n_embd: int, n_head: int) -> None:
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd, bias=False)
        self.c_proj = nn.Linear(n_embd, n_embd, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).reshape(b, t, c))


class Block(nn.Module):
    def __init__(self, n_embd: int, n_head: int) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd, bias=False)
        self.attn = Attention(n_embd, n_head)
        self.ln_2 = nn.LayerNorm(n_embd, bias=False)
        self.c_fc = nn.Linear(n_embd, 4 * n_embd, bias=False)
        self.c_proj = nn.Linear(4 * n_embd, n_embd, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.c_proj(F.gelu(self.c_fc(self.ln_2(x))))


class GPT(nn.Module):
    def __init__(self, vocab: int, block: int, n_layer: int, n_head: int, n_embd: int) -> None:
        super().__init__()
        self.wte = nn.Embedding(vocab, n_embd)
        self.wpe = nn.Embedding(block, n_embd)
        self.h = nn.ModuleList(Block(n_embd, n_head) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(n_embd, bias=False)
        self.lm_head = nn.Linear(n_embd, vocab, bias=False)
        self.wte.weight = self.lm_head.weight  # tied
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, 0.0, 0.02)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * n_layer))

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(idx.shape[1])
        x = self.wte(idx) + self.wpe(pos)
        for blk in self.h:
            x = blk(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def get_lr(it: int, lr: float, min_lr: float, warmup: int, decay_iters: int) -> float:
    if it < warmup:
        return lr * (it + 1) / (warmup + 1)
    if it > decay_iters:
        return min_lr
    ratio = (it - warmup) / (decay_iters - warmup)
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (lr - min_lr)


@torch.no_grad()
def whole_split_loss(
    model: GPT, data: torch.Tensor, block: int, batch: int
) -> tuple[float, list[float]]:
    """Token-weighted mean loss over the windows that tile ``data`` (starts 0, block,
    2 block, ...), in batches of ``batch``: the same windows as ``sporeling-transformer eval
    --whole``; also each full batch's loss."""
    model.eval()
    starts = range(0, len(data) - block, block)
    total, rows, per_batch = 0.0, 0, []
    for i in range(0, len(starts), batch):
        ix = starts[i : i + batch]
        x = torch.stack([data[j : j + block] for j in ix])
        y = torch.stack([data[j + 1 : j + 1 + block] for j in ix])
        loss = model(x, y).item()
        total, rows = total + loss * len(ix), rows + len(ix)
        if len(ix) == batch:
            per_batch.append(loss)
    model.train()
    return total / rows, per_batch


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data", help="Tiny Shakespeare input.txt")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--max-iters", type=int, default=2000)
    ap.add_argument("--eval-interval", type=int, default=250)
    ap.add_argument("--eval-iters", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1337)
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    with open(a.data, encoding="utf-8") as f:
        text = f.read()
    chars = sorted(set(text))
    stoi = {ch: i for i, ch in enumerate(chars)}
    ids = np.array([stoi[c] for c in text], dtype=np.int64)
    n = int(0.9 * len(ids))
    splits = {"train": torch.from_numpy(ids[:n]), "val": torch.from_numpy(ids[n:])}
    block, batch = 64, 12

    def get_batch(split: str) -> tuple[torch.Tensor, torch.Tensor]:
        data = splits[split]
        ix = torch.randint(len(data) - block, (batch,))
        x = torch.stack([data[i : i + block] for i in ix])
        y = torch.stack([data[i + 1 : i + 1 + block] for i in ix])
        return x, y

    model = GPT(len(chars), block, 4, 4, 128)
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.1},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]
    opt = torch.optim.AdamW(groups, lr=1e-3, betas=(0.9, 0.99))
    n_params = sum(p.numel() for p in model.parameters())

    @torch.no_grad()
    def estimate_loss() -> dict[str, float]:
        model.eval()
        out = {s: float(np.mean([model(*get_batch(s)).item() for _ in range(a.eval_iters)]))
               for s in ("train", "val")}  # fmt: skip
        model.train()
        return out

    history, step_seconds = [], 0.0
    t0 = time.perf_counter()
    for it in range(a.max_iters + 1):
        lr = get_lr(it, 1e-3, 1e-4, 100, a.max_iters)
        for g in opt.param_groups:
            g["lr"] = lr
        if it % a.eval_interval == 0 or it == a.max_iters:
            losses = estimate_loss()
            history.append({"step": it, **losses})
            print(f"step {it}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}")
        if it == a.max_iters:
            break  # nanoGPT steps once more after its last evaluation; no effect on it
        ts = time.perf_counter()
        loss = model(*get_batch("train"))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step_seconds += time.perf_counter() - ts
    wall = time.perf_counter() - t0
    whole, batch_losses = whole_split_loss(model, splits["val"], block, batch)
    print(f"step {a.max_iters}: val loss over the whole split {whole:.4f}")
    res = {
        "implementation": "nanoGPT re-implementation (benchmarks/transformer/nanogpt_torch.py)",
        "torch": torch.__version__,
        "threads": a.threads,
        "parameters": n_params,
        "wall_s": wall,
        "tokens_per_s": a.max_iters * batch * block / step_seconds,
        "best_val_loss": min(h["val"] for h in history),
        "seed": a.seed,
        "val_loss_whole_split": whole,
        # spread of one batch's loss over the tiles: / sqrt(eval_iters) is the standard
        # error of nanoGPT's estimate from eval_iters random batches
        "val_batch_loss_std": float(np.std(batch_losses)),
        "history": history,
        "load_average": os.getloadavg(),
    }
    print(json.dumps(res, indent=1))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
