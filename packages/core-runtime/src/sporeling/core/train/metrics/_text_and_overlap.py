"""Metrics of MindSpore 1.8 for segmentation, language models and embeddings: ``Dice``,
``Perplexity``, ``BleuScore``, ``CosineSimilarity`` (NumPy on the host, as MindSpore's)."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np

from .metric import Metric

__all__ = ["Dice", "Perplexity", "BleuScore", "CosineSimilarity"]


class Dice(Metric):
    """Mean over batches of ``2 sum(p*y) / (sum(p*p) + sum(y*y) + smooth)``."""

    def __init__(self, smooth: float = 1e-5) -> None:
        super().__init__()
        if isinstance(smooth, bool) or not isinstance(smooth, (int, float)) or smooth <= 0:
            raise ValueError(f"Dice: argument 'smooth' expected a positive float, got {smooth!r}")
        self.smooth = float(smooth)
        self.clear()

    def clear(self) -> None:
        self._dice_coeff_sum = 0.0
        self._samples_num = 0

    def update(self, *inputs: Any) -> None:
        self._check_update_inputs(inputs, 2, "y_pred, y")
        p = self._convert_data(inputs[0]).astype(np.float64).reshape(-1)
        y = self._convert_data(inputs[1]).astype(np.float64).reshape(-1)
        if p.shape != y.shape:
            raise ValueError(f"Dice.update: y_pred and y need one size, got {p.size} and {y.size}")
        inter = float(p @ y)
        union = float(p @ p + y @ y)
        self._dice_coeff_sum += 2 * inter / (union + self.smooth)
        self._samples_num += 1

    def eval(self) -> float:
        if self._samples_num == 0:
            raise RuntimeError("Dice.eval: no data; call update first")
        return self._dice_coeff_sum / self._samples_num


class Perplexity(Metric):
    """``exp(-mean log p(label))`` over every (not ignored) label; ``preds`` are
    probabilities (..., C), ``labels`` class indices (...)."""

    def __init__(self, ignore_label: int | None = None) -> None:
        super().__init__()
        if ignore_label is not None and (
            isinstance(ignore_label, bool) or not isinstance(ignore_label, int)
        ):
            raise TypeError(
                f"Perplexity: argument 'ignore_label' expected an int, got {ignore_label!r}"
            )
        self.ignore_label = ignore_label
        self.clear()

    def clear(self) -> None:
        self._sum_metric = 0.0
        self._num_inst = 0

    def update(self, *inputs: Any) -> None:
        self._check_update_inputs(inputs, 2, "preds, labels")
        pred = self._convert_data(inputs[0]).astype(np.float64)
        label = self._convert_data(inputs[1]).reshape(-1)
        if pred.size % max(label.size, 1) or pred.size // max(label.size, 1) < 1:
            raise ValueError(
                f"Perplexity.update: preds of shape {pred.shape} do not hold one row per label "
                f"({label.size} labels)"
            )
        pred = pred.reshape(label.size, -1)
        keep = np.ones(label.size, bool)
        if self.ignore_label is not None:
            keep = label != self.ignore_label
        idx = np.where(keep, label, 0).astype(np.int64)
        probs = pred[np.arange(label.size), idx]
        self._sum_metric -= float(np.sum(np.log(np.maximum(1e-10, probs[keep]))))
        self._num_inst += int(keep.sum())

    def eval(self) -> float:
        if self._num_inst == 0:
            raise RuntimeError("Perplexity.eval: no data; call update first")
        return math.exp(self._sum_metric / self._num_inst)


def _ngrams(tokens: list[Any], n: int) -> Counter:
    c: Counter = Counter()
    for k in range(1, n + 1):
        for i in range(len(tokens) - k + 1):
            c[tuple(tokens[i : i + k])] += 1
    return c


class BleuScore(Metric):
    """Corpus BLEU (MindSpore's ``BleuScore``): clipped n-gram precisions up to ``n_gram``,
    their geometric mean, times the brevity penalty; ``smooth`` adds one to each count."""

    def __init__(self, n_gram: int = 4, smooth: bool = False) -> None:
        super().__init__()
        if isinstance(n_gram, bool) or not isinstance(n_gram, int) or not 1 <= n_gram <= 4:
            raise ValueError(
                f"BleuScore: argument 'n_gram' expected an int in [1, 4], got {n_gram!r}"
            )
        self.n_gram = n_gram
        self.smooth = bool(smooth)
        self.clear()

    def clear(self) -> None:
        self._numerator = np.zeros(self.n_gram)
        self._denominator = np.zeros(self.n_gram)
        self._candidate_len = 0
        self._reference_len = 0

    def update(self, *inputs: Any) -> None:
        self._check_update_inputs(inputs, 2, "candidate_corpus, reference_corpus")
        cands, refs = inputs
        if len(cands) != len(refs):
            raise ValueError(
                f"BleuScore.update: {len(cands)} candidates but {len(refs)} reference lists"
            )
        for cand, references in zip(cands, refs, strict=True):
            self._candidate_len += len(cand)
            lens = [len(r) for r in references]
            diffs = [abs(len(cand) - n) for n in lens]
            self._reference_len += lens[diffs.index(min(diffs))]
            cand_count = _ngrams(list(cand), self.n_gram)
            ref_count: Counter = Counter()
            for r in references:
                ref_count |= _ngrams(list(r), self.n_gram)
            for gram, n in (cand_count & ref_count).items():
                self._numerator[len(gram) - 1] += n
            for gram, n in cand_count.items():
                self._denominator[len(gram) - 1] += n

    def eval(self) -> float:
        if self._candidate_len == 0:
            raise RuntimeError("BleuScore.eval: no data; call update first")
        if self._numerator.min() == 0.0:
            return 0.0
        if self.smooth:
            prec = (self._numerator + 1) / (self._denominator + 1)
        else:
            prec = self._numerator / self._denominator
        geo = math.exp(float(np.mean(np.log(prec))))
        if self._candidate_len > self._reference_len:
            bp = 1.0
        else:
            bp = math.exp(1 - self._reference_len / self._candidate_len)
        return bp * geo


class CosineSimilarity(Metric):
    """The (N, N) similarity of the accumulated rows: ``'cosine'`` (normalized) or
    ``'dot'``; ``zero_diagonal`` zeroes self-similarity; ``reduction`` 'none', 'sum' or
    'mean' over the last axis."""

    def __init__(self, similarity: str = "cosine", reduction: str = "none",
                 zero_diagonal: bool = True) -> None:  # fmt: skip
        super().__init__()
        if similarity not in ("cosine", "dot"):
            raise ValueError(
                "CosineSimilarity: argument 'similarity' expected 'cosine' or 'dot', "
                f"got {similarity!r}"
            )
        if reduction not in ("none", "sum", "mean"):
            raise ValueError(
                "CosineSimilarity: argument 'reduction' expected 'none', 'sum' or 'mean', "
                f"got {reduction!r}"
            )
        self.similarity, self.reduction, self.zero_diagonal = (
            similarity,
            reduction,
            bool(zero_diagonal),
        )
        self.clear()

    def clear(self) -> None:
        self.sqr_mtx_res = None

    def update(self, *inputs: Any) -> None:
        self._check_update_inputs(inputs, 1, "inputs")
        x = self._convert_data(inputs[0]).astype(np.float64)
        if x.ndim != 2:
            raise ValueError(f"CosineSimilarity.update: expected a 2-D input, got shape {x.shape}")
        self.sqr_mtx_res = x if self.sqr_mtx_res is None else np.concatenate([self.sqr_mtx_res, x])

    def eval(self) -> Any:
        if self.sqr_mtx_res is None:
            raise RuntimeError("CosineSimilarity.eval: no data; call update first")
        x = self.sqr_mtx_res
        if self.similarity == "cosine":
            x = x / np.linalg.norm(x, axis=1, keepdims=True)
        sim = x @ x.T
        if self.zero_diagonal:
            np.fill_diagonal(sim, 0)
        if self.reduction == "mean":
            return sim.mean(-1)
        if self.reduction == "sum":
            return sim.sum(-1)
        return sim
