"""Segmentation/classification losses of MindSpore 1.8: ``FocalLoss``, ``DiceLoss``,
``MultiClassDiceLoss``, and the pairwise ``CosineEmbeddingLoss``; formulas as MindSpore's
(e.g. FocalLoss averages over the class axis before ``reduction``)."""

from __future__ import annotations

from typing import Any

from ... import ops
from ...tensor import Tensor
from ..cell import Cell
from .loss import LossBase, _check_tensor

__all__ = ["FocalLoss", "DiceLoss", "MultiClassDiceLoss", "CosineEmbeddingLoss"]


class FocalLoss(LossBase):
    """``-(1 - p)^gamma * log(p)`` at the label's class, averaged over the class axis, then
    reduced. ``logits`` (N, C, ...), ``labels`` (N, ...) or (N, 1, ...) class indices;
    ``weight`` (C,) scales each class."""

    def __init__(self, weight: Any = None, gamma: float = 2.0, reduction: str = "mean") -> None:
        super().__init__(reduction)
        if isinstance(gamma, bool) or not isinstance(gamma, (int, float)):
            raise TypeError(f"FocalLoss: argument 'gamma' expected a float, got {gamma!r}")
        if weight is not None and (not isinstance(weight, Tensor) or weight.ndim != 1):
            raise TypeError(f"FocalLoss: argument 'weight' expected a 1-D Tensor, got {weight!r}")
        self.gamma = float(gamma)
        self.weight = weight

    def construct(self, logits: Tensor, labels: Tensor) -> Tensor:
        x = _check_tensor("FocalLoss", "logits", logits)
        y = _check_tensor("FocalLoss", "labels", labels)
        if x.ndim < 2:
            raise ValueError(f"FocalLoss: 'logits' needs shape (N, C, ...), got {x.shape}")
        if y.ndim == x.ndim:
            if y.shape[1] != 1:
                raise ValueError(
                    f"FocalLoss: 'labels' of rank {y.ndim} needs a class axis of size 1, "
                    f"got shape {y.shape}"
                )
            y = ops.squeeze(y, 1)
        c = x.shape[1]
        if self.weight is not None and self.weight.shape[0] != c:
            raise ValueError(
                f"FocalLoss: 'weight' has {self.weight.shape[0]} entries for {c} classes"
            )
        onehot = ops.one_hot(ops.cast(y, "int32"), c, Tensor(1.0), Tensor(0.0), 1)
        onehot = ops.cast(onehot, x.dtype)
        logp = ops.log_softmax(x, 1)
        p = ops.exp(logp)
        loss = -ops.pow(1 - p, self.gamma) * logp * onehot
        if self.weight is not None:
            shape = (1, c) + (1,) * (x.ndim - 2)
            loss = loss * ops.reshape(ops.cast(self.weight, x.dtype), shape)
        return self.get_loss(ops.reduce_mean(loss, 1))


def _dice(logits: Tensor, label: Tensor, smooth: float) -> Tensor:
    inter = ops.reduce_sum(logits * label)
    union = ops.reduce_sum(logits * logits) + ops.reduce_sum(label * label)
    return 1 - 2 * inter / (union + smooth)


class DiceLoss(Cell):
    """``1 - 2 sum(x*y) / (sum(x*x) + sum(y*y) + smooth)`` over the whole batch."""

    def __init__(self, smooth: float = 1e-5) -> None:
        super().__init__()
        if isinstance(smooth, bool) or not isinstance(smooth, (int, float)) or smooth <= 0:
            raise ValueError(
                f"DiceLoss: argument 'smooth' expected a positive float, got {smooth!r}"
            )
        self.smooth = float(smooth)

    def construct(self, logits: Tensor, label: Tensor) -> Tensor:
        x = _check_tensor("DiceLoss", "logits", logits)
        y = _check_tensor("DiceLoss", "label", label)
        if x.shape != y.shape:
            raise ValueError(f"DiceLoss: 'logits' {x.shape} and 'label' {y.shape} must match")
        return _dice(x, ops.cast(y, x.dtype), self.smooth)


class MultiClassDiceLoss(Cell):
    """The mean over classes (axis 1) of the Dice loss of ``activation(logits)`` against the
    one-hot ``label``; ``weights`` (C,) scale classes, ``ignore_indiex`` skips one."""

    def __init__(self, weights: Any = None, ignore_indiex: Any = None,
                 activation: Any = "softmax") -> None:  # fmt: skip
        super().__init__()
        if activation not in ("softmax", "sigmoid", None) and not isinstance(activation, Cell):
            raise ValueError(
                "MultiClassDiceLoss: argument 'activation' expected 'softmax', 'sigmoid', a "
                f"Cell or None, got {activation!r}"
            )
        self.weights = weights
        self.ignore_indiex = ignore_indiex
        self.activation = activation
        self.smooth = 1e-5

    def construct(self, logits: Tensor, label: Tensor) -> Tensor:
        x = _check_tensor("MultiClassDiceLoss", "logits", logits)
        y = _check_tensor("MultiClassDiceLoss", "label", label)
        if x.shape != y.shape or x.ndim < 2:
            raise ValueError(
                f"MultiClassDiceLoss: 'logits' {x.shape} and 'label' {y.shape} must match, "
                "with classes on axis 1"
            )
        if self.activation == "softmax":
            x = ops.softmax(x, 1)
        elif self.activation == "sigmoid":
            x = ops.sigmoid(x)
        elif isinstance(self.activation, Cell):
            x = self.activation(x)
        y = ops.cast(y, x.dtype)
        c = x.shape[1]
        total = None
        for i in range(c):
            if i == self.ignore_indiex:
                continue
            d = _dice(x[:, i], y[:, i], self.smooth)
            if self.weights is not None:
                d = d * self.weights[i]
            total = d if total is None else total + d
        return total / c


class CosineEmbeddingLoss(LossBase):
    """``1 - cos(x1, x2)`` where ``labels == 1``, ``max(0, cos - margin)`` where it is -1."""

    def __init__(self, margin: float = 0.0, reduction: str = "mean") -> None:
        super().__init__(reduction)
        if (
            isinstance(margin, bool)
            or not isinstance(margin, (int, float))
            or not -1 <= margin <= 1
        ):
            raise ValueError(
                "CosineEmbeddingLoss: argument 'margin' expected a float in [-1, 1], "
                f"got {margin!r}"
            )
        self.margin = float(margin)

    def construct(self, logits_x1: Tensor, logits_x2: Tensor, labels: Tensor) -> Tensor:
        a = _check_tensor("CosineEmbeddingLoss", "logits_x1", logits_x1)
        b = _check_tensor("CosineEmbeddingLoss", "logits_x2", logits_x2)
        y = _check_tensor("CosineEmbeddingLoss", "labels", labels)
        if a.shape != b.shape or a.ndim < 1 or y.shape != a.shape[:-1]:
            raise ValueError(
                f"CosineEmbeddingLoss: inputs of shapes {a.shape}, {b.shape} and labels "
                f"{y.shape} do not match (labels: the inputs' shape without the last axis)"
            )
        dot = ops.reduce_sum(a * b, -1)
        den = ops.sqrt(ops.reduce_sum(a * a, -1)) * ops.sqrt(ops.reduce_sum(b * b, -1))
        cos = dot / den
        zeros = ops.zeros_like(cos)
        pos = ops.select(ops.equal(y, ops.ones_like(y)), 1 - cos, zeros)
        neg = ops.select(ops.equal(y, -ops.ones_like(y)), ops.maximum(cos - self.margin, zeros),
                         zeros)  # fmt: skip
        return self.get_loss(pos + neg)
