"""ROC curves and areas: ``ROC`` (MindSpore 1.8), ``auc(x, y)`` and a binary ``ROCAUC`` metric."""

from __future__ import annotations

from typing import Any

import numpy as np

from .metric import Metric, rearrange_inputs

__all__ = ["ROC", "ROCAUC", "auc"]


def _binary_clf_curve(
    preds: np.ndarray, target: np.ndarray, sample_weights: Any = None, pos_label: int = 1
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """False/true positive counts at each distinct score, scores descending."""
    if sample_weights is not None:
        sample_weights = np.asarray(sample_weights)
    if preds.ndim > target.ndim:
        preds = preds[:, 0]
    order = np.argsort(-preds, kind="stable")
    preds = preds[order]
    target = target[order]
    weight: Any = sample_weights[order] if sample_weights is not None else 1.0
    distinct = np.where(np.diff(preds))[0]
    threshold_idxs = np.append(distinct, target.shape[0] - 1)
    target = (target == pos_label).astype(np.int64)
    tps = np.cumsum(target * weight, axis=0)[threshold_idxs]
    if sample_weights is not None:
        fps = np.cumsum((1 - target) * weight, axis=0)[threshold_idxs]
    else:
        fps = 1 + threshold_idxs - tps
    return fps, tps, preds[threshold_idxs]


class ROC(Metric):
    """Receiver operating characteristic: ``eval() -> (fpr, tpr, thresholds)``.

    Binary: predictions and labels of the same shape, positives are ``pos_label``
    (default 1). Multi-class: predictions ``(N, class_num)`` and labels ``(N,)``; the result
    holds one curve per class (one-vs-rest) as lists. Unlike MindSpore 1.8, where each
    ``update`` replaced the previous batch, batches accumulate until ``clear()``.
    """

    def __init__(self, class_num: int | None = None, pos_label: int | None = None) -> None:
        super().__init__()
        for name, v in (("class_num", class_num), ("pos_label", pos_label)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
                raise TypeError(f"ROC: argument '{name}' expected an int or None, got {v!r}")
        self.class_num = class_num
        self.pos_label = pos_label
        self.clear()

    def clear(self) -> None:
        self.y_pred: list[np.ndarray] = []
        self.y: list[np.ndarray] = []
        self._is_update = False

    def _precision_recall_curve_update(
        self, y_pred: np.ndarray, y: np.ndarray, class_num: int | None, pos_label: int | None
    ) -> tuple[np.ndarray, np.ndarray, int, int | None]:
        if y_pred.ndim not in (y.ndim, y.ndim + 1):
            raise ValueError(
                "ROC: predictions need the labels' rank (binary) or one more (multi-class), "
                f"got {y_pred.shape} and {y.shape}"
            )
        if y_pred.ndim == y.ndim:
            if class_num is not None and class_num != 1:
                raise ValueError(
                    f"ROC: predictions shaped like the labels are binary; 'class_num' must be "
                    f"None or 1, got {class_num}"
                )
            return y_pred.reshape(-1), y.reshape(-1), 1, 1 if pos_label is None else pos_label
        if pos_label is not None:
            raise ValueError(
                f"ROC: multi-class predictions take no 'pos_label' (got {pos_label}); each class "
                "is the positive one in turn"
            )
        if class_num is None:
            class_num = y_pred.shape[1]
        if class_num != y_pred.shape[1]:
            raise ValueError(
                f"ROC: 'class_num' is {class_num} but the predictions have {y_pred.shape[1]} "
                "classes"
            )
        return np.moveaxis(y_pred, 1, -1).reshape(-1, class_num), y.reshape(-1), class_num, None

    @rearrange_inputs
    def update(self, *inputs: Any) -> None:
        self._check_update_inputs(inputs, 2, "predictions, labels")
        y_pred, y, class_num, pos_label = self._precision_recall_curve_update(
            self._convert_data(inputs[0]),
            self._convert_data(inputs[1]),
            self.class_num,
            self.pos_label,
        )
        self.y_pred.append(y_pred)
        self.y.append(y)
        self.class_num, self.pos_label = class_num, pos_label
        self._is_update = True

    def _roc_eval(
        self, y_pred: np.ndarray, y: np.ndarray, class_num: int, pos_label: Any, weights: Any = None
    ) -> Any:
        if class_num == 1:
            fps, tps, thresholds = _binary_clf_curve(y_pred, y, weights, pos_label)
            tps = np.concatenate([[0], tps])
            fps = np.concatenate([[0], fps])
            thresholds = np.concatenate([[thresholds[0] + 1], thresholds])
            if fps[-1] <= 0:
                raise ValueError("ROC: no negative samples in the labels; the FPR is undefined")
            if tps[-1] <= 0:
                raise ValueError("ROC: no positive samples in the labels; the TPR is undefined")
            return fps / fps[-1], tps / tps[-1], thresholds
        fpr, tpr, thr = [], [], []
        for c in range(class_num):
            res = self._roc_eval(y_pred[:, c], y, 1, c, weights)
            fpr.append(res[0])
            tpr.append(res[1])
            thr.append(res[2])
        return fpr, tpr, thr

    def roc(
        self,
        y_pred: Any,
        y: Any,
        class_num: int | None = None,
        pos_label: int | None = None,
        sample_weights: Any = None,
    ) -> Any:
        """The ROC of one set of inputs, without touching the accumulated state."""
        y_pred, y, class_num, pos_label = self._precision_recall_curve_update(
            self._convert_data(y_pred), self._convert_data(y), class_num, pos_label
        )
        return self._roc_eval(y_pred, y, class_num, pos_label, sample_weights)

    def eval(self) -> Any:
        if not self._is_update:
            raise RuntimeError("ROC.eval: call update() before eval()")
        return self._roc_eval(
            np.concatenate(self.y_pred),
            np.concatenate(self.y),
            self.class_num or 1,
            self.pos_label,
        )


def auc(x: Any, y: Any, reorder: bool = False) -> float:
    """Area under the curve through points ``(x, y)`` by the trapezoidal rule.

    ``x`` must be monotonic (increasing, or decreasing for a negative direction) unless
    ``reorder`` sorts it.

    >>> import numpy as np
    >>> auc(np.array([0.0, 0.5, 1.0]), np.array([0.0, 1.0, 1.0]))
    0.75
    """
    if not isinstance(x, np.ndarray) or not isinstance(y, np.ndarray):
        raise TypeError(
            f"auc: inputs must be numpy arrays, got {type(x).__name__}, {type(y).__name__}"
        )
    x = x.reshape(-1) if x.ndim == 2 and 1 in x.shape else x
    y = y.reshape(-1) if y.ndim == 2 and 1 in y.shape else y
    if x.ndim != 1 or y.ndim != 1 or x.shape != y.shape:
        raise ValueError(f"auc: x and y must be 1-d and of equal length, got {x.shape}, {y.shape}")
    if x.shape[0] < 2:
        raise ValueError(f"auc: at least 2 points are needed, got x.shape = {x.shape}")
    direction = 1.0
    if reorder:
        order = np.lexsort((y, x))
        x, y = x[order], y[order]
    else:
        dx = np.diff(x)
        if np.any(dx < 0):
            if np.all(dx <= 0):
                direction = -1.0
            else:
                raise ValueError(f"auc: x is not monotonic and reorder is False: {x}")
    area = np.sum((x[1:] - x[:-1]) * (y[1:] + y[:-1]) / 2.0)
    return float(direction * area)


class ROCAUC(Metric):
    """Area under the ROC curve of a binary classifier (scores vs 0/1 labels).

    Scores are ``(N,)``, ``(N, 1)`` or ``(N, 2)`` (the second column is the positive
    class); labels ``(N,)`` with positives equal to ``pos_label``.
    """

    def __init__(self, pos_label: int = 1) -> None:
        super().__init__()
        self.pos_label = pos_label
        self._roc = ROC(pos_label=pos_label)

    def clear(self) -> None:
        self._roc.clear()

    @rearrange_inputs
    def update(self, *inputs: Any) -> None:
        self._check_update_inputs(inputs, 2, "scores, labels")
        y_pred = self._convert_data(inputs[0])
        y = self._convert_data(inputs[1]).reshape(-1)
        if y_pred.ndim == 2 and y_pred.shape[1] == 2:
            y_pred = y_pred[:, 1]
        self._roc.update(y_pred.reshape(-1), y)

    def eval(self) -> float:
        fpr, tpr, _ = self._roc.eval()
        return auc(fpr, tpr)
