"""Classification metrics: Accuracy, Precision, Recall, Fbeta/F1, top-k, ConfusionMatrix."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from .metric import EvaluationBase, Metric, rearrange_inputs

__all__ = [
    "Accuracy",
    "Precision",
    "Recall",
    "Fbeta",
    "F1",
    "TopKCategoricalAccuracy",
    "Top1CategoricalAccuracy",
    "Top5CategoricalAccuracy",
    "ConfusionMatrix",
]

_EPS = sys.float_info.min


def _empty(name: str) -> RuntimeError:
    return RuntimeError(
        f"{name}.eval: no samples; call update() with predictions and labels before eval()"
    )


def _check_average(name: str, average: Any) -> None:
    if not isinstance(average, bool):
        raise TypeError(f"{name}.eval: argument 'average' expected a bool, got {average!r}")


def _one_hot_counts(
    name: str, y_pred: np.ndarray, y: np.ndarray, class_num: int
) -> tuple[np.ndarray, np.ndarray]:
    """One-hot labels and one-hot argmax predictions, flattened to (samples, classes)."""
    labels = y.reshape(-1).astype(np.int64)
    if labels.size and (labels.max() >= class_num or labels.min() < 0):
        raise ValueError(
            f"{name}.update: labels must lie in [0, {class_num}), got values up to {labels.max()}"
        )
    pred = np.moveaxis(y_pred, 1, -1).reshape(-1, class_num).argmax(axis=1)
    eye = np.eye(class_num)
    return eye[labels], eye[pred]


class Accuracy(EvaluationBase):
    """Fraction of correct predictions: argmax over axis 1 (``'classification'``) or exact
    0/1 rows (``'multilabel'``). Labels may be class indices or one-hot.

    >>> Accuracy()([[0.2, 0.8], [0.9, 0.1]], [1, 1])
    0.5
    """

    def __init__(self, eval_type: str = "classification") -> None:
        super().__init__(eval_type)
        self.clear()

    def clear(self) -> None:
        self._correct_num = 0
        self._total_num = 0
        self._class_num = 0

    @rearrange_inputs
    def update(self, *inputs: Any) -> None:
        y_pred, y = self._labels_and_classes(inputs)
        if self._type == "classification":
            result = np.equal(y_pred.argmax(axis=1), y).reshape(-1)
        else:
            c = self._class_num
            result = np.equal(
                np.moveaxis(y_pred, 1, -1).reshape(-1, c), np.moveaxis(y, 1, -1).reshape(-1, c)
            ).all(axis=1)
        self._correct_num += int(result.sum())
        self._total_num += int(result.shape[0])

    def eval(self) -> float:
        if self._total_num == 0:
            raise _empty("Accuracy")
        return self._correct_num / self._total_num


class _PerClass(EvaluationBase):
    """Precision/Recall: per-class ratios, or their mean with ``eval(average=True)``."""

    _count_labels = False  # Recall divides by actual positives, Precision by predicted ones

    def __init__(self, eval_type: str = "classification") -> None:
        super().__init__(eval_type)
        self.eps = _EPS
        self.clear()

    def clear(self) -> None:
        self._class_num = 0
        if self._type == "multilabel":
            self._true_positives: Any = np.empty(0)
            self._positives: Any = np.empty(0)
            self._true_positives_average = 0.0
            self._positives_average = 0
        else:
            self._true_positives = 0
            self._positives = 0

    @rearrange_inputs
    def update(self, *inputs: Any) -> None:
        y_pred, y = self._labels_and_classes(inputs)
        c = self._class_num
        name = type(self).__name__
        if self._type == "classification":
            y, y_pred = _one_hot_counts(name, y_pred, y, c)
        else:  # per sample: which of its labels were predicted / present
            y_pred = np.moveaxis(y_pred, 1, 0).reshape(c, -1)
            y = np.moveaxis(y, 1, 0).reshape(c, -1)
        positives = (y if self._count_labels else y_pred).sum(axis=0)
        true_positives = (y * y_pred).sum(axis=0)
        if self._type == "multilabel":
            self._true_positives_average += float(np.sum(true_positives / (positives + self.eps)))
            self._positives_average += len(positives)
            self._true_positives = np.concatenate((self._true_positives, true_positives))
            self._positives = np.concatenate((self._positives, positives))
        else:
            self._true_positives = self._true_positives + true_positives
            self._positives = self._positives + positives

    def eval(self, average: bool = False) -> Any:
        name = type(self).__name__
        if self._class_num == 0:
            raise _empty(name)
        _check_average(name, average)
        result = self._true_positives / (self._positives + self.eps)
        if average:
            if self._type == "multilabel":
                return self._true_positives_average / (self._positives_average + self.eps)
            return float(result.mean())
        return result


class Precision(_PerClass):
    """Per-class precision ``TP / (TP + FP)`` (``eval(average=True)``: their mean).

    >>> Precision()([[0.2, 0.8], [0.9, 0.1], [0.3, 0.7]], [1, 0, 0]).tolist()
    [1.0, 0.5]
    """

    _count_labels = False


class Recall(_PerClass):
    """Per-class recall ``TP / (TP + FN)`` (``eval(average=True)``: their mean).

    >>> Recall()([[0.2, 0.8], [0.9, 0.1], [0.3, 0.7]], [1, 0, 0]).tolist()
    [0.5, 1.0]
    """

    _count_labels = True


class Fbeta(Metric):
    """Per-class F-beta ``(1 + b^2) TP / (b^2 (TP + FN) + TP + FP)``."""

    def __init__(self, beta: float) -> None:
        super().__init__()
        if isinstance(beta, bool) or not isinstance(beta, (int, float)) or not beta > 0:
            raise ValueError(f"{type(self).__name__}: argument 'beta' must be > 0, got {beta!r}")
        self.eps = _EPS
        self.beta = beta
        self.clear()

    def clear(self) -> None:
        self._true_positives: Any = 0
        self._actual_positives: Any = 0
        self._positives: Any = 0
        self._class_num = 0

    @rearrange_inputs
    def update(self, *inputs: Any) -> None:
        self._check_update_inputs(inputs, 2, "predictions, labels")
        y_pred = self._convert_data(inputs[0])
        y = self._convert_data(inputs[1])
        if y_pred.ndim == y.ndim and self._check_onehot_data(y):
            y = y.argmax(axis=1)
        if self._class_num == 0:
            self._class_num = y_pred.shape[1]
        elif y_pred.shape[1] != self._class_num:
            raise ValueError(
                f"{type(self).__name__}.update: earlier predictions had {self._class_num} "
                f"classes, these have {y_pred.shape[1]}"
            )
        y, y_pred = _one_hot_counts(type(self).__name__, y_pred, y, self._class_num)
        self._true_positives = self._true_positives + (y * y_pred).sum(axis=0)
        self._positives = self._positives + y_pred.sum(axis=0)
        self._actual_positives = self._actual_positives + y.sum(axis=0)

    def eval(self, average: bool = False) -> Any:
        name = type(self).__name__
        _check_average(name, average)
        if self._class_num == 0:
            raise _empty(name)
        b2 = self.beta**2
        fbeta = (
            (1.0 + b2)
            * self._true_positives
            / (b2 * self._actual_positives + self._positives + self.eps)
        )
        return float(fbeta.mean()) if average else fbeta


class F1(Fbeta):
    """Per-class F1 score (``Fbeta`` with beta 1)."""

    def __init__(self) -> None:
        super().__init__(1.0)


class TopKCategoricalAccuracy(Metric):
    """Fraction of samples whose label is among the ``k`` highest scores.

    >>> TopKCategoricalAccuracy(2)([[0.1, 0.5, 0.4], [0.6, 0.3, 0.1]], [2, 2])
    0.5
    """

    def __init__(self, k: int) -> None:
        super().__init__()
        if isinstance(k, bool) or not isinstance(k, int):
            raise TypeError(f"{type(self).__name__}: argument 'k' expected an int, got {k!r}")
        if k < 1:
            raise ValueError(f"{type(self).__name__}: argument 'k' must be at least 1, got {k}")
        self.k = k
        self.clear()

    def clear(self) -> None:
        self._correct_num = 0
        self._samples_num = 0

    @rearrange_inputs
    def update(self, *inputs: Any) -> None:
        self._check_update_inputs(inputs, 2, "predictions, labels")
        y_pred = self._convert_data(inputs[0])
        y = self._convert_data(inputs[1])
        if y_pred.ndim == y.ndim and self._check_onehot_data(y):
            y = y.argmax(axis=1)
        indices = np.argsort(-y_pred, axis=1, kind="stable")[:, : self.k]
        correct = np.equal(indices, y.reshape(-1, 1)).any(axis=1)
        self._correct_num += int(correct.sum())
        self._samples_num += int(correct.shape[0])

    def eval(self) -> float:
        if self._samples_num == 0:
            raise _empty(type(self).__name__)
        return self._correct_num / self._samples_num


class Top1CategoricalAccuracy(TopKCategoricalAccuracy):
    def __init__(self) -> None:
        super().__init__(1)


class Top5CategoricalAccuracy(TopKCategoricalAccuracy):
    def __init__(self) -> None:
        super().__init__(5)


class ConfusionMatrix(Metric):
    """``num_classes x num_classes`` counts, rows = true class, columns = predicted class.

    ``normalize``: ``'no_norm'``, ``'target'`` (rows sum to 1), ``'prediction'`` (columns) or
    ``'all'``; predictions with the labels' rank are thresholded at ``threshold``.
    """

    def __init__(self, num_classes: int, normalize: str = "no_norm", threshold: float = 0.5):
        super().__init__()
        if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 1:
            raise TypeError(
                f"ConfusionMatrix: argument 'num_classes' expected a positive int, "
                f"got {num_classes!r}"
            )
        if normalize not in ("target", "prediction", "all", "no_norm"):
            raise ValueError(
                "ConfusionMatrix: argument 'normalize' expected 'no_norm', 'target', "
                f"'prediction' or 'all', got {normalize!r}"
            )
        if isinstance(threshold, bool) or not isinstance(threshold, float):
            raise TypeError(
                f"ConfusionMatrix: argument 'threshold' expected a float, got {threshold!r}"
            )
        self.num_classes = num_classes
        self.normalize = normalize
        self.threshold = threshold
        self.clear()

    def clear(self) -> None:
        self.confusion_matrix = np.zeros((self.num_classes, self.num_classes))
        self._is_update = False

    @rearrange_inputs
    def update(self, *inputs: Any) -> None:
        self._check_update_inputs(inputs, 2, "predictions, labels")
        y_pred = self._convert_data(inputs[0])
        y = self._convert_data(inputs[1])
        if y_pred.ndim not in (y.ndim, y.ndim + 1):
            raise ValueError(
                "ConfusionMatrix.update: predictions need the labels' rank or one more, got "
                f"{y_pred.shape} and {y.shape}"
            )
        if y_pred.ndim == y.ndim + 1:
            y_pred = np.argmax(y_pred, axis=1)
        elif y_pred.dtype.kind == "f":
            y_pred = (y_pred >= self.threshold).astype(np.int64)
        n = self.num_classes
        trans = (y.reshape(-1) * n + y_pred.reshape(-1)).astype(np.int64)
        self.confusion_matrix += np.bincount(trans, minlength=n * n)[: n * n].reshape(n, n)
        self._is_update = True

    def eval(self) -> np.ndarray:
        if not self._is_update:
            raise _empty("ConfusionMatrix")
        cm = self.confusion_matrix.astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            if self.normalize == "target":
                cm = cm / cm.sum(axis=1, keepdims=True)
            elif self.normalize == "prediction":
                cm = cm / cm.sum(axis=0, keepdims=True)
            elif self.normalize == "all":
                cm = cm / cm.sum()
        cm[np.isnan(cm)] = 0
        return cm
