"""Loss cells (MindSpore 1.8's ``mindspore.nn`` losses) on top of the functional losses.

Every cell is a :class:`~sporeling.core.nn.Cell` whose ``construct(logits, labels)`` returns
the loss. Element-wise losses go through :meth:`LossBase.get_loss`, which (as in MindSpore)
multiplies by optional ``weights`` and reduces over every axis; the class-index and binary
losses call the fused functional ops in :mod:`sporeling.core.ops.loss` directly.

>>> from sporeling.core import Tensor, nn
>>> float(nn.MSELoss()(Tensor([1.0, 2.0]), Tensor([1.0, 4.0])))
2.0
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import dtype as _dt
from ... import ops
from ...errors import describe, op_error
from ...tensor import Tensor
from ..cell import Cell

__all__ = [
    "LossBase",
    "L1Loss",
    "MAELoss",
    "MSELoss",
    "RMSELoss",
    "SmoothL1Loss",
    "HuberLoss",
    "SoftMarginLoss",
    "SoftmaxCrossEntropyWithLogits",
    "CrossEntropyLoss",
    "NLLLoss",
    "KLDivLoss",
    "BCELoss",
    "BCEWithLogitsLoss",
]

_REDUCTIONS = ("none", "mean", "sum")


def _check_reduction(cls: str, reduction: Any, allowed: tuple[str, ...] = _REDUCTIONS) -> str:
    if not isinstance(reduction, str):
        raise op_error(cls, "reduction", reduction, "a str", TypeError)
    if reduction not in allowed:
        raise op_error(cls, "reduction", reduction, " or ".join(repr(r) for r in allowed))
    return reduction


def _check_tensor(cls: str, arg: str, value: Any) -> Tensor:
    if not isinstance(value, Tensor):
        raise op_error(cls, arg, value, "a Tensor", TypeError)
    return value


def _optional_tensor(cls: str, arg: str, value: Any) -> Tensor | None:
    if value is None:
        return None
    if isinstance(value, np.ndarray):
        return Tensor(value)
    return _check_tensor(cls, arg, value)


def _positive(cls: str, arg: str, value: Any) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        raise op_error(cls, arg, value, "a float", TypeError)
    if not value > 0:
        raise op_error(cls, arg, value, "a float > 0")
    return float(value)


def _work_dtype(dt: _dt.DType) -> _dt.DType:
    # MindSpore reduces in float32; float64 inputs stay float64 here so float64 gradient
    # checks (and users who ask for float64) keep their precision.
    return dt if dt in (_dt.float32, _dt.float64) else _dt.float32


class LossBase(Cell):
    """Base class of losses: ``construct`` computes the element-wise loss and hands it to
    :meth:`get_loss`, which applies ``weights`` and ``reduction`` ('mean', 'sum' or 'none').
    """

    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = _check_reduction(self.cls_name, reduction)
        self.average = reduction == "mean"
        self.reduce = reduction != "none"

    def extend_repr(self) -> str:
        return f"reduction={self.reduction}"

    def get_axis(self, x: Tensor) -> tuple[int, ...]:
        """Every axis of ``x``: ``(0, 1, ..., x.ndim - 1)``."""
        return tuple(range(len(x.shape)))

    def get_loss(self, x: Tensor, weights: Any = 1.0) -> Tensor:
        """``x * weights`` reduced over every axis by ``reduction``; computed in float32 (or
        float64 for float64 inputs) and returned in ``x``'s dtype. ``weights`` is a number or
        a tensor of rank 0 or of ``x``'s rank that broadcasts to ``x``'s shape."""
        x = _check_tensor(self.cls_name, "x", x)
        in_dtype = x.dtype
        work = _work_dtype(in_dtype)
        x = ops.cast(x, work)
        if isinstance(weights, Tensor):
            if weights.ndim not in (0, x.ndim) or (
                np.broadcast_shapes(weights.shape, x.shape) != x.shape
            ):
                raise ValueError(
                    f"{self.cls_name}.get_loss: argument 'weights' expected rank 0 or a shape "
                    f"that broadcasts to {x.shape}, got {describe(weights)}"
                )
            x = x * ops.cast(weights, work)
        elif isinstance(weights, (bool, np.bool_)) or not isinstance(
            weights, (int, float, np.integer, np.floating)
        ):
            raise op_error(
                f"{self.cls_name}.get_loss", "weights", weights, "a float or a Tensor", TypeError
            )
        elif weights != 1.0:
            x = x * float(weights)
        if self.reduce:
            axis = self.get_axis(x)
            x = ops.reduce_mean(x, axis) if self.average else ops.reduce_sum(x, axis)
        return ops.cast(x, in_dtype)

    def construct(self, logits: Any, labels: Any) -> Tensor:
        raise NotImplementedError(f"{self.cls_name} must define construct(logits, labels)")


class _Elementwise(LossBase):
    def _diff(self, logits: Any, labels: Any) -> Tensor:
        x = _check_tensor(self.cls_name, "logits", logits)
        y = _check_tensor(self.cls_name, "labels", labels)
        try:
            np.broadcast_shapes(x.shape, y.shape)
        except ValueError:
            raise ValueError(
                f"{self.cls_name}: arguments 'logits' {describe(x)} and 'labels' "
                f"{describe(y)} do not broadcast together"
            ) from None
        return x - y


class L1Loss(_Elementwise):
    r"""Mean absolute error: ``get_loss(|logits - labels|)``.

    >>> float(L1Loss()(Tensor([1.0, 2.0, 3.0]), Tensor([1.0, 2.0, 2.0])))
    0.3333333432674408
    """

    def construct(self, logits: Any, labels: Any) -> Tensor:
        return self.get_loss(ops.abs(self._diff(logits, labels)))


class MAELoss(L1Loss):
    """Mean absolute error (MindSpore's ``MAELoss``; the same computation as :class:`L1Loss`)."""


class MSELoss(_Elementwise):
    """Mean squared error: ``get_loss((logits - labels)^2)``."""

    def construct(self, logits: Any, labels: Any) -> Tensor:
        return self.get_loss(ops.square(self._diff(logits, labels)))


class RMSELoss(LossBase):
    """Root mean squared error ``sqrt(mean((logits - label)^2))`` (no ``reduction``)."""

    def __init__(self) -> None:
        super().__init__("mean")
        self.MSELoss = MSELoss()

    def construct(self, logits: Any, label: Any) -> Tensor:
        return ops.sqrt(self.MSELoss(logits, label))


class SmoothL1Loss(LossBase):
    """``0.5 d^2 / beta`` where ``|d| < beta`` else ``|d| - 0.5 beta`` (``d = logits -
    labels``, same shapes); ``reduction`` defaults to 'none' as in MindSpore."""

    def __init__(self, beta: float = 1.0, reduction: str = "none") -> None:
        super().__init__(reduction)
        self.beta = _positive(self.cls_name, "beta", beta)

    def extend_repr(self) -> str:
        return f"beta={self.beta}, reduction={self.reduction}"

    def construct(self, logits: Any, labels: Any) -> Tensor:
        x = _check_tensor(self.cls_name, "logits", logits)
        y = _check_tensor(self.cls_name, "labels", labels)
        return ops.smooth_l1_loss(x, y, self.beta, self.reduction)


class HuberLoss(_Elementwise):
    """``0.5 d^2`` where ``|d| < delta`` else ``delta (|d| - 0.5 delta)``, then
    :meth:`get_loss`."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction)
        self.delta = _positive(self.cls_name, "delta", delta)

    def extend_repr(self) -> str:
        return f"reduction={self.reduction}, delta={self.delta}"

    def construct(self, logits: Any, labels: Any) -> Tensor:
        z = ops.abs(self._diff(logits, labels))
        quad = 0.5 * ops.square(z)
        lin = self.delta * (z - 0.5 * self.delta)
        return self.get_loss(ops.select(z < self.delta, quad, lin))


class SoftMarginLoss(_Elementwise):
    """Two-class logistic loss ``log(1 + exp(-labels * logits))`` (labels in {1, -1})."""

    def construct(self, logits: Any, labels: Any) -> Tensor:
        x = _check_tensor(self.cls_name, "logits", logits)
        y = _check_tensor(self.cls_name, "labels", labels)
        if x.shape != y.shape:
            raise ValueError(
                f"{self.cls_name}: argument 'labels' expected the shape of 'logits' "
                f"{x.shape}, got {describe(y)}"
            )
        z = ops.cast(y, x.dtype) * x
        return self.get_loss(ops.neg(ops.logsigmoid(z)))


class SoftmaxCrossEntropyWithLogits(LossBase):
    r"""Cross entropy of ``softmax(logits)`` (N, C) and the labels:
    ``-sum_c labels[c] log softmax(logits)[c]`` per sample. With ``sparse=True`` the labels
    are class indices (N,). ``reduction`` defaults to 'none' (one loss per sample).

    >>> loss = SoftmaxCrossEntropyWithLogits(sparse=True)
    >>> [round(v, 4) for v in loss(Tensor([[0.0, 0.0]]), Tensor([1])).tolist()]
    [0.6931]
    """

    def __init__(self, sparse: bool = False, reduction: str = "none") -> None:
        super().__init__(reduction)
        if not isinstance(sparse, (bool, np.bool_)):
            raise op_error(self.cls_name, "sparse", sparse, "a bool", TypeError)
        self.sparse = bool(sparse)

    def extend_repr(self) -> str:
        return f"sparse={self.sparse}, reduction={self.reduction}"

    def construct(self, logits: Any, labels: Any) -> Tensor:
        x = _check_tensor(self.cls_name, "logits", logits)
        y = _check_tensor(self.cls_name, "labels", labels)
        if self.sparse:
            if y.dtype.category != 1:
                raise op_error(
                    self.cls_name,
                    "labels",
                    y,
                    "int32 or int64 class indices (sparse=True)",
                    TypeError,
                )
            if self.reduction == "mean":
                return ops.sparse_softmax_cross_entropy_with_logits(x, y)
            per_sample = ops.cross_entropy(x, y, reduction="none")
        else:
            if y.dtype.category != 2:
                raise op_error(
                    self.cls_name,
                    "labels",
                    y,
                    "float labels like 'logits' (sparse=False)",
                    TypeError,
                )
            per_sample = ops.softmax_cross_entropy_with_logits(x, y)[0]
        return self.get_loss(per_sample)


def _class_loss_args(
    cls: str, weight: Any, ignore_index: Any, reduction: Any
) -> tuple[Tensor | None, int, str]:
    w = _optional_tensor(cls, "weight", weight)
    if w is not None and (w.ndim != 1 or w.dtype.category != 2):
        raise op_error(cls, "weight", w, "a 1-d float Tensor of per-class weights")
    if isinstance(ignore_index, (bool, np.bool_)) or not isinstance(
        ignore_index, (int, np.integer)
    ):
        raise op_error(cls, "ignore_index", ignore_index, "an int", TypeError)
    return w, int(ignore_index), _check_reduction(cls, reduction)


class CrossEntropyLoss(LossBase):
    """Cross entropy of logits (N, C) or (N, C, d1, ...) with class indices or class
    probabilities (see :func:`sporeling.core.ops.cross_entropy`): per-class ``weight``,
    ``ignore_index`` for index targets and ``label_smoothing``."""

    def __init__(
        self,
        weight: Any = None,
        ignore_index: int = -100,
        reduction: str = "mean",
        label_smoothing: float = 0.0,
    ) -> None:
        super().__init__(reduction)
        self.weight, self.ignore_index, _ = _class_loss_args(
            self.cls_name, weight, ignore_index, reduction
        )
        if isinstance(label_smoothing, (bool, np.bool_)) or not isinstance(
            label_smoothing, (int, float, np.integer, np.floating)
        ):
            raise op_error(self.cls_name, "label_smoothing", label_smoothing, "a float", TypeError)
        if not 0.0 <= label_smoothing <= 1.0:
            raise op_error(self.cls_name, "label_smoothing", label_smoothing, "a float in [0, 1]")
        self.label_smoothing = float(label_smoothing)

    def extend_repr(self) -> str:
        return (
            f"weight={'None' if self.weight is None else self.weight.shape}, "
            f"ignore_index={self.ignore_index}, reduction={self.reduction}, "
            f"label_smoothing={self.label_smoothing}"
        )

    def construct(self, logits: Any, labels: Any) -> Tensor:
        x = _check_tensor(self.cls_name, "logits", logits)
        y = _check_tensor(self.cls_name, "labels", labels)
        return ops.cross_entropy(
            x, y, self.weight, self.ignore_index, self.reduction, self.label_smoothing
        )


class NLLLoss(LossBase):
    """Negative log-likelihood of class indices under log-probabilities (N, C) or
    (N, C, d1, ...): ``-weight[t] logits[n, t]``; 'mean' divides by the summed weights."""

    def __init__(self, weight: Any = None, ignore_index: int = -100, reduction: str = "mean"):
        super().__init__(reduction)
        self.weight, self.ignore_index, _ = _class_loss_args(
            self.cls_name, weight, ignore_index, reduction
        )

    def extend_repr(self) -> str:
        return f"ignore_index={self.ignore_index}, reduction={self.reduction}"

    def construct(self, logits: Any, labels: Any) -> Tensor:
        x = _check_tensor(self.cls_name, "logits", logits)
        y = _check_tensor(self.cls_name, "labels", labels)
        return ops.nll_loss(x, y, self.weight, self.ignore_index, self.reduction)


class KLDivLoss(LossBase):
    """``labels * (log(labels) - logits)`` for log-probabilities ``logits``; reduction
    'mean' (over elements), 'batchmean' (the true KL divergence per sample), 'sum', 'none'."""

    def __init__(self, reduction: str = "mean") -> None:
        Cell.__init__(self)
        self.reduction = _check_reduction(
            self.cls_name, reduction, ("none", "mean", "sum", "batchmean")
        )
        self.average = reduction == "mean"
        self.reduce = reduction != "none"

    def construct(self, logits: Any, labels: Any) -> Tensor:
        x = _check_tensor(self.cls_name, "logits", logits)
        y = _check_tensor(self.cls_name, "labels", labels)
        return ops.kl_div(x, y, self.reduction)


class BCELoss(LossBase):
    """Binary cross entropy of probabilities ``logits`` and targets ``labels`` (same shape),
    optionally weighted; ``reduction`` defaults to 'none' as in MindSpore 1.8."""

    def __init__(self, weight: Any = None, reduction: str = "none") -> None:
        super().__init__(reduction)
        self.weight = _optional_tensor(self.cls_name, "weight", weight)

    def construct(self, logits: Any, labels: Any) -> Tensor:
        x = _check_tensor(self.cls_name, "logits", logits)
        y = _check_tensor(self.cls_name, "labels", labels)
        return ops.binary_cross_entropy(x, y, self.weight, self.reduction)


class BCEWithLogitsLoss(LossBase):
    """Binary cross entropy of ``sigmoid(logits)`` and ``labels``, computed stably, with
    optional element ``weight`` and positive-class ``pos_weight`` (both broadcast)."""

    def __init__(self, reduction: str = "mean", weight: Any = None, pos_weight: Any = None):
        super().__init__(reduction)
        self.weight = _optional_tensor(self.cls_name, "weight", weight)
        self.pos_weight = _optional_tensor(self.cls_name, "pos_weight", pos_weight)

    def construct(self, logits: Any, labels: Any) -> Tensor:
        x = _check_tensor(self.cls_name, "logits", logits)
        y = _check_tensor(self.cls_name, "labels", labels)
        return ops.binary_cross_entropy_with_logits(
            x, y, self.weight, self.pos_weight, self.reduction
        )
