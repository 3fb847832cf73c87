"""The PyTorch twin of Sporeling's WideDeepModel, for the side-by-side runs.

Same layout: wide ``nn.Embedding(vocab, 1, sparse=True)`` times the values, summed, plus a
bias; deep ``nn.Embedding(vocab, emb, sparse=True)`` times the values, flattened, into ReLU
``Linear`` layers ending in one unit; weights N(0, 0.01^2). PyTorch has no FTRL: both tables
train with ``SparseAdam`` and the dense part with ``Adam`` (lr 3.5e-4, eps 1e-8).
"""

from __future__ import annotations

import torch
from torch import nn


class TorchWideDeep(nn.Module):
    def __init__(self, vocab: int, fields: int, emb: int, dims: tuple[int, ...]) -> None:
        super().__init__()
        self.fields, self.emb = fields, emb
        self.wide = nn.Embedding(vocab, 1, sparse=True)
        self.deep = nn.Embedding(vocab, emb, sparse=True)
        self.wide_b = nn.Parameter(torch.zeros(1))
        sizes = [fields * emb, *dims, 1]
        layers: list[nn.Module] = []
        for i in range(len(sizes) - 1):
            layers.append(nn.Linear(sizes[i], sizes[i + 1]))
            if i < len(sizes) - 2:
                layers.append(nn.ReLU())
        self.mlp = nn.Sequential(*layers)
        for p in self.parameters():
            if p is not self.wide_b:
                nn.init.normal_(p, 0.0, 0.01)

    def forward(self, ids: torch.Tensor, vals: torch.Tensor) -> torch.Tensor:
        mask = vals.unsqueeze(-1)
        wide = (self.wide(ids) * mask).sum(1) + self.wide_b
        deep = self.mlp((self.deep(ids) * mask).reshape(len(ids), -1))
        return wide + deep


def make_step(model: TorchWideDeep, adam_lr: float = 3.5e-4, sparse_lr: float = 3.5e-4):
    """One training step ``step(ids, vals, label) -> loss`` (SparseAdam + Adam)."""
    sparse = torch.optim.SparseAdam([model.wide.weight, model.deep.weight], lr=sparse_lr, eps=1e-8)
    dense = torch.optim.Adam(
        [p for n, p in model.named_parameters() if not n.startswith(("wide.", "deep."))],
        lr=adam_lr, eps=1e-8,
    )  # fmt: skip
    loss_fn = nn.BCEWithLogitsLoss()

    def step(ids: torch.Tensor, vals: torch.Tensor, label: torch.Tensor) -> float:
        sparse.zero_grad()
        dense.zero_grad()
        loss = loss_fn(model(ids, vals), label)
        loss.backward()
        sparse.step()
        dense.step()
        return float(loss.detach())

    return step
