"""Loss and error metrics: Loss (mean of batch losses), MAE, MSE."""

from __future__ import annotations

from typing import Any

import numpy as np

from .metric import Metric, rearrange_inputs

__all__ = ["Loss", "MAE", "MSE"]


class Loss(Metric):
    """Mean of the per-batch losses given to ``update`` (each batch's loss is averaged first).

    >>> m = Loss(); m.update(0.5); m.update([1.0, 2.0]); m.eval()
    1.0
    """

    def __init__(self) -> None:
        super().__init__()
        self.clear()

    def clear(self) -> None:
        self._sum_loss = 0.0
        self._total_num = 0

    def _convert_data(self, data: Any) -> np.ndarray:
        if isinstance(data, (int, float, np.number)) and not isinstance(data, bool):
            return np.asarray(data, dtype=np.float64)
        return super()._convert_data(data)

    @rearrange_inputs
    def update(self, *inputs: Any) -> None:
        self._check_update_inputs(inputs, 1, "loss")
        loss = self._convert_data(inputs[0])
        if loss.ndim == 0:
            loss = loss.reshape(1)
        if loss.ndim != 1:
            raise ValueError(
                f"Loss.update: the loss must be a scalar or 1-d, got shape {loss.shape}"
            )
        self._sum_loss += float(loss.mean(-1))
        self._total_num += 1

    def eval(self) -> float:
        if self._total_num == 0:
            raise RuntimeError("Loss.eval: no losses; call update() before eval()")
        return self._sum_loss / self._total_num


class _ErrorSum(Metric):
    _power = 1

    def __init__(self) -> None:
        super().__init__()
        self.clear()

    def clear(self) -> None:
        self._error_sum = 0.0
        self._samples_num = 0

    @rearrange_inputs
    def update(self, *inputs: Any) -> None:
        self._check_update_inputs(inputs, 2, "predictions, labels")
        y_pred = self._convert_data(inputs[0]).astype(np.float64)
        y = self._convert_data(inputs[1]).astype(np.float64)
        if y.size != y_pred.size:
            raise ValueError(
                f"{type(self).__name__}.update: predictions {y_pred.shape} and labels {y.shape} "
                "hold different numbers of values"
            )
        err = np.abs(y.reshape(y_pred.shape) - y_pred) ** self._power
        self._error_sum += float(err.sum())
        self._samples_num += int(y.shape[0]) if y.ndim else 1

    def eval(self) -> float:
        if self._samples_num == 0:
            raise RuntimeError(f"{type(self).__name__}.eval: no samples; call update() first")
        return self._error_sum / self._samples_num


class MAE(_ErrorSum):
    """Mean absolute error per sample: ``sum |y - y_pred| / batch`` (summed over features).

    >>> MAE()([1.0, 2.0], [1.5, 2.0])
    0.25
    """

    _power = 1


class MSE(_ErrorSum):
    """Mean squared error per sample: ``sum (y - y_pred)^2 / batch`` (summed over features)."""

    _power = 2
