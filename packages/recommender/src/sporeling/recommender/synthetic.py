"""Synthetic Criteo-like data: 13 dense + 26 categorical fields with power-law id frequencies
per field and labels that depend on the ids (so a model can learn them), for throughput and
scale runs without the real logs."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from .records import write_records

__all__ = ["SyntheticCriteo", "generate"]


class SyntheticCriteo:
    """Rows over a vocabulary of ``vocab_size`` ids laid out as the preprocessor does: ids
    ``0..num_dense-1`` are the dense fields, each categorical field owns an equal share of the
    rest. Within a field, the id of rank ``r`` has frequency ~ ``(r + 1) ** -alpha``.
    Labels: ``Bernoulli(sigmoid(sum of hidden per-id weights * scale + bias))``."""

    def __init__(
        self,
        vocab_size: int,
        num_dense: int = 13,
        num_sparse: int = 26,
        alpha: float = 1.2,
        seed: int = 0,
    ) -> None:
        if vocab_size < num_dense + num_sparse:
            raise ValueError(
                f"SyntheticCriteo: argument 'vocab_size' expected >= {num_dense + num_sparse} "
                f"(one id per field at least), got {vocab_size}"
            )
        if alpha <= 1.0:
            raise ValueError(f"SyntheticCriteo: argument 'alpha' expected > 1, got {alpha}")
        self.vocab_size = vocab_size
        self.num_dense, self.num_sparse, self.alpha = num_dense, num_sparse, alpha
        self.per_field = (vocab_size - num_dense) // num_sparse
        self.base = num_dense + self.per_field * np.arange(num_sparse)
        self.seed = seed

    def _hidden(self, ids: np.ndarray) -> np.ndarray:
        """A fixed pseudo-random weight per id (a hash, so no table of vocab_size is needed)."""
        x = ids.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(self.seed + 1)
        x = (x ^ (x >> np.uint64(31))) * np.uint64(0xBF58476D1CE4E5B9)
        x = x ^ (x >> np.uint64(29))
        return (x >> np.uint64(11)).astype(np.float64) / float(1 << 53) * 2.0 - 1.0

    def rows(self, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(feat_ids int32 (n, F), feat_vals float32 (n, F), label float32 (n, 1))``."""
        rng = np.random.default_rng([self.seed, seed])
        F = self.num_dense + self.num_sparse
        ids = np.empty((n, F), np.int64)
        vals = np.ones((n, F), np.float32)
        ids[:, : self.num_dense] = np.arange(self.num_dense)
        vals[:, : self.num_dense] = rng.random((n, self.num_dense), dtype=np.float32)
        # inverse-CDF draw of a bounded power law over ranks 0..per_field-1
        u = rng.random((n, self.num_sparse))
        a1 = 1.0 - self.alpha
        top = (self.per_field + 1.0) ** a1
        rank = np.floor((1.0 + u * (top - 1.0)) ** (1.0 / a1)) - 1.0
        rank = np.clip(rank, 0, self.per_field - 1).astype(np.int64)
        ids[:, self.num_dense :] = self.base + rank
        score = self._hidden(ids[:, self.num_dense :]).sum(1) * (2.0 / np.sqrt(self.num_sparse))
        score += (vals[:, : self.num_dense] - 0.5).sum(1) * 0.3 - 1.0
        label = (rng.random(n) < 1.0 / (1.0 + np.exp(-score))).astype(np.float32)
        return ids.astype(np.int32), vals, label[:, None]


def generate(
    out_dir: str | os.PathLike[str],
    rows: int,
    vocab_size: int,
    test_rows: int = 0,
    line_per_sample: int = 1000,
    alpha: float = 1.2,
    seed: int = 0,
) -> dict[str, Any]:
    """Write synthetic train (and test) records in the preprocessor's layout."""
    gen = SyntheticCriteo(vocab_size, alpha=alpha, seed=seed)
    splits = {"train": gen.rows(rows, seed=1)}
    if test_rows:
        splits["test"] = gen.rows(test_rows, seed=2)
    write_records(out_dir, splits, line_per_sample, vocab_size, extra={"synthetic": True})
    return {"train_rows": rows, "test_rows": test_rows, "vocab_size": vocab_size}
