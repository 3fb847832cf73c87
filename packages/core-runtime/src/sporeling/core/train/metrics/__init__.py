"""``sporeling.core.train.metrics``: evaluation metrics with MindSpore 1.8's names.

``get_metrics({'accuracy', 'loss'})`` builds metrics by name (what ``Model(metrics=...)``
accepts); ``names()`` lists the names.
"""

from __future__ import annotations

from typing import Any

from ._classification import (
    F1,
    Accuracy,
    ConfusionMatrix,
    Fbeta,
    Precision,
    Recall,
    Top1CategoricalAccuracy,
    Top5CategoricalAccuracy,
    TopKCategoricalAccuracy,
)
from ._regression import MAE, MSE, Loss
from ._roc import ROC, ROCAUC, auc
from ._text_and_overlap import BleuScore, CosineSimilarity, Dice, Perplexity
from .metric import Metric, rearrange_inputs

__all__ = [
    "Metric",
    "rearrange_inputs",
    "Accuracy",
    "Loss",
    "Precision",
    "Recall",
    "Fbeta",
    "F1",
    "MAE",
    "MSE",
    "TopKCategoricalAccuracy",
    "Top1CategoricalAccuracy",
    "Top5CategoricalAccuracy",
    "ConfusionMatrix",
    "ROC",
    "ROCAUC",
    "auc",
    "Dice",
    "Perplexity",
    "BleuScore",
    "CosineSimilarity",
    "names",
    "get_metric_fn",
    "get_metrics",
]

# MindSpore 1.8's names ('auc' builds the binary ROC-AUC metric here, so {'auc'} works)
__factory__: dict[str, Any] = {
    "accuracy": Accuracy,
    "acc": Accuracy,
    "precision": Precision,
    "recall": Recall,
    "F1": F1,
    "roc": ROC,
    "auc": ROCAUC,
    "mae": MAE,
    "mse": MSE,
    "top_k_categorical_accuracy": TopKCategoricalAccuracy,
    "top_1_categorical_accuracy": Top1CategoricalAccuracy,
    "top_5_categorical_accuracy": Top5CategoricalAccuracy,
    "loss": Loss,
    "confusion_matrix": ConfusionMatrix,
    "dice": Dice,
    "perplexity": Perplexity,
    "bleu_score": BleuScore,
    "cosine_similarity": CosineSimilarity,
}


def names() -> list[str]:
    """The metric names :func:`get_metric_fn` knows, sorted."""
    return sorted(__factory__)


def get_metric_fn(name: str, *args: Any, **kwargs: Any) -> Metric:
    """A new metric by name, e.g. ``get_metric_fn('top_k_categorical_accuracy', k=3)``."""
    if name not in __factory__:
        raise KeyError(f"get_metric_fn: unknown metric {name!r}; known metrics: {names()}")
    return __factory__[name](*args, **kwargs)


def get_metrics(metrics: Any) -> dict[str, Metric] | None:
    """``None``, a dict ``{name: Metric}`` (checked), or a set of names -> ``{name: Metric}``."""
    if metrics is None:
        return None
    if isinstance(metrics, dict):
        for name, metric in metrics.items():
            if not isinstance(name, str) or not isinstance(metric, Metric):
                raise TypeError(
                    "metrics: a dict must map names (str) to Metric objects, got "
                    f"{name!r}: {type(metric).__name__}"
                )
        return metrics
    if isinstance(metrics, set):
        out = {}
        for name in metrics:
            if not isinstance(name, str):
                raise TypeError(f"metrics: a set must hold metric names, got {name!r}")
            out[name] = get_metric_fn(name)
        return out
    raise TypeError(
        "metrics: expected None, a dict {name: Metric} or a set of names, "
        f"got {type(metrics).__name__}"
    )
