"""The ``Metric`` base class (MindSpore 1.8): ``clear()``, ``update(*inputs)``, ``eval()``.

Inputs may be Tensors, NumPy arrays or lists; metrics accumulate on the host in NumPy.
``set_indexes([i, j])`` makes ``update`` pick those positions of the network's outputs
(methods decorated with :func:`rearrange_inputs`).
"""

from __future__ import annotations

import functools
from abc import ABCMeta, abstractmethod
from collections.abc import Callable
from typing import Any

import numpy as np

from ...tensor import Tensor

__all__ = ["Metric", "rearrange_inputs"]


def rearrange_inputs(func: Callable[..., Any]) -> Callable[..., Any]:
    """Decorator for ``update``: reorder/select inputs by the metric's ``indexes``."""

    @functools.wraps(func)
    def wrapper(self: Metric, *inputs: Any) -> Any:
        indexes = self.indexes
        inputs = inputs if not indexes else tuple(inputs[i] for i in indexes)
        return func(self, *inputs)

    return wrapper


class Metric(metaclass=ABCMeta):
    """Base class of evaluation metrics; calling one runs ``clear``, ``update``, ``eval``."""

    def __init__(self) -> None:
        self._indexes: list[int] | None = None

    def _convert_data(self, data: Any) -> np.ndarray:
        if isinstance(data, Tensor):
            return data.asnumpy()
        if isinstance(data, list):
            return np.array(data)
        if isinstance(data, np.ndarray):
            return data
        raise TypeError(
            f"{type(self).__name__}: inputs must be Tensors, lists or numpy arrays, "
            f"got {type(data).__name__}"
        )

    @staticmethod
    def _check_onehot_data(data: np.ndarray) -> bool:
        """Whether ``data`` (ndim > 1) holds one-hot rows along axis 1."""
        if data.ndim > 1 and np.equal(data**2, data).all():
            return bool(np.equal(data.sum(axis=1), 1).all())
        return False

    def _check_update_inputs(self, inputs: tuple[Any, ...], n: int, what: str) -> None:
        if len(inputs) != n:
            raise ValueError(
                f"{type(self).__name__}.update: expected {n} inputs ({what}), got {len(inputs)}"
            )

    @property
    def indexes(self) -> list[int] | None:
        return getattr(self, "_indexes", None)

    def set_indexes(self, indexes: list[int]) -> Metric:
        """Use outputs ``indexes`` of the eval network as this metric's inputs."""
        if not isinstance(indexes, list) or not all(
            isinstance(i, int) and not isinstance(i, bool) for i in indexes
        ):
            raise ValueError(
                f"{type(self).__name__}.set_indexes: argument 'indexes' expected a list of ints, "
                f"got {indexes!r}"
            )
        self._indexes = indexes
        return self

    def __call__(self, *inputs: Any) -> Any:
        self.clear()
        self.update(*inputs)
        return self.eval()

    @abstractmethod
    def clear(self) -> None:
        """Reset the accumulated state."""

    @abstractmethod
    def update(self, *inputs: Any) -> None:
        """Accumulate one batch."""

    @abstractmethod
    def eval(self) -> Any:
        """The metric over everything accumulated since ``clear``."""


class EvaluationBase(Metric):
    """Shared shape checks of classification metrics (``'classification'``/``'multilabel'``)."""

    def __init__(self, eval_type: str) -> None:
        super().__init__()
        if eval_type not in ("classification", "multilabel"):
            raise ValueError(
                f"{type(self).__name__}: argument 'eval_type' expected 'classification' or "
                f"'multilabel', got {eval_type!r}"
            )
        self._type = eval_type

    def _check_shape(self, y_pred: np.ndarray, y: np.ndarray) -> None:
        name = type(self).__name__
        if self._type == "classification":
            if y_pred.ndim != y.ndim + 1:
                raise ValueError(
                    f"{name}: for classification the predictions need one more dimension than "
                    f"the labels, got predictions {y_pred.shape} and labels {y.shape}"
                )
            if y.shape != (y_pred.shape[0],) + y_pred.shape[2:]:
                raise ValueError(
                    f"{name}: predictions {y_pred.shape} (batch, classes, ...) do not match "
                    f"labels {y.shape}"
                )
        elif y_pred.shape != y.shape:
            raise ValueError(
                f"{name}: for multilabel the predictions and labels need the same shape, "
                f"got {y_pred.shape} and {y.shape}"
            )

    def _check_value(self, y_pred: np.ndarray, y: np.ndarray) -> None:
        if self._type != "classification" and not (
            np.equal(y_pred**2, y_pred).all() and np.equal(y**2, y).all()
        ):
            raise ValueError(
                f"{type(self).__name__}: for multilabel the predictions and labels must be 0 or 1"
            )

    def _labels_and_classes(self, inputs: tuple[Any, ...]) -> tuple[np.ndarray, np.ndarray]:
        self._check_update_inputs(inputs, 2, "predictions, labels")
        y_pred = self._convert_data(inputs[0])
        y = self._convert_data(inputs[1])
        if self._type == "classification" and y_pred.ndim == y.ndim and self._check_onehot_data(y):
            y = y.argmax(axis=1)
        self._check_shape(y_pred, y)
        self._check_value(y_pred, y)
        class_num = getattr(self, "_class_num", 0)
        if class_num == 0:
            self._class_num = y_pred.shape[1]
        elif y_pred.shape[1] != class_num:
            raise ValueError(
                f"{type(self).__name__}.update: earlier predictions had {class_num} classes, "
                f"these have {y_pred.shape[1]}"
            )
        return y_pred, y

    def eval(self) -> Any:  # pragma: no cover - abstract in subclasses
        raise NotImplementedError(f"{type(self).__name__} must define eval()")
