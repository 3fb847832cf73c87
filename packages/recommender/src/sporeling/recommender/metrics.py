"""``AUCMetric`` (the model zoo's, which called sklearn's ``roc_auc_score``) computed exactly
from rank statistics, and the log loss."""

from __future__ import annotations

from typing import Any

import numpy as np

from sporeling.core.train.metrics import Metric

__all__ = ["AUCMetric", "auc_score", "log_loss"]


def _flat(x: Any) -> np.ndarray:
    return np.asarray(x.asnumpy() if hasattr(x, "asnumpy") else x, np.float64).reshape(-1)


def auc_score(y_true: Any, y_score: Any) -> float:
    """Area under the ROC curve = P(score of a random positive > a random negative), ties
    counting one half: the Mann-Whitney statistic from tie-averaged ranks (exact, O(n log n))."""
    y = _flat(y_true)
    s = _flat(y_score)
    if y.shape != s.shape:
        raise ValueError(f"auc_score: {y.size} labels but {s.size} scores")
    pos = y > 0.5
    n_pos = int(pos.sum())
    n_neg = y.size - n_pos
    if n_pos == 0 or n_neg == 0:
        raise ValueError(
            f"auc_score: AUC needs both classes, got {n_pos} positives and {n_neg} negatives"
        )
    uniq, inv, counts = np.unique(s, return_inverse=True, return_counts=True)
    # the average rank (1-based) of each distinct score: its first rank plus (count - 1) / 2
    first = np.cumsum(counts) - counts + 1
    avg_rank = first + (counts - 1) / 2.0
    rank_sum = float(avg_rank[inv.reshape(-1)][pos].sum())
    return (rank_sum - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg)


def log_loss(y_true: Any, p: Any, eps: float = 1e-7) -> float:
    """Mean binary cross entropy of probabilities ``p`` (clipped to [eps, 1 - eps])."""
    y = _flat(y_true)
    q = np.clip(_flat(p), eps, 1 - eps)
    return float(-np.mean(y * np.log(q) + (1 - y) * np.log(1 - q)))


class AUCMetric(Metric):
    """ROC-AUC over everything seen since ``clear()``; ``update(logits, predictions, labels)``
    takes what ``PredictWithSigmoid`` returns (MindSpore Wide&Deep's ``AUCMetric``)."""

    def __init__(self) -> None:
        super().__init__()
        self.clear()

    def clear(self) -> None:
        self.true_labels: list[np.ndarray] = []
        self.pred_probs: list[np.ndarray] = []

    def update(self, *inputs: Any) -> None:
        if len(inputs) != 3:
            raise ValueError(
                f"AUCMetric.update: expected (logits, predictions, labels), got {len(inputs)} "
                "inputs"
            )
        self.pred_probs.append(_flat(inputs[1]))
        self.true_labels.append(_flat(inputs[2]))

    def eval(self) -> float:
        if not self.true_labels:
            raise RuntimeError("AUCMetric.eval: update() was never called since clear()")
        return auc_score(np.concatenate(self.true_labels), np.concatenate(self.pred_probs))

    def log_loss(self) -> float:
        return log_loss(np.concatenate(self.true_labels), np.concatenate(self.pred_probs))
