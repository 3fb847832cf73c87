"""EarlyStopping and ReduceLROnPlateau: MindSpore 1.8's algorithms, edge cases included.

Both read a monitored value at each training epoch end: ``"loss"`` is the training network's
output at the last step (the first element of a tuple, averaged), anything else is looked
up in ``cb_params.eval_results`` (``"eval_loss"`` or a metric name), so it needs
``Model.fit`` with a validation set. A missing value warns (listing the available keys)
and the epoch is skipped; a non-scalar value raises ``ValueError``. On a single device the
cross-rank averaging MindSpore does under data parallelism is the identity.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ...errors import check_bool
from ...tensor import Parameter, Tensor
from ._callback import Callback, RunContext, _handle_loss

__all__ = ["EarlyStopping", "ReduceLROnPlateau"]

# monitors where smaller is better in mode='auto' (MindSpore's list)
_smaller_better_metrics = [
    "hausdorff_distance",
    "mae",
    "mse",
    "loss",
    "perplexity",
    "mean_surface_distance",
    "root_mean_square_distance",
    "eval_loss",
]


def _check_type(owner: str, name: str, value: Any, types: tuple[type, ...], what: str) -> Any:
    if isinstance(value, bool) or not isinstance(value, types):
        raise TypeError(f"{owner}: argument '{name}' expected {what}, got {type(value).__name__}")
    return value


def _check_non_negative_int(owner: str, name: str, value: Any) -> int:
    _check_type(owner, name, value, (int, np.integer), "an int")
    if value < 0:
        raise ValueError(f"{owner}: argument '{name}' expected a non-negative int, got {value}")
    return int(value)


class _PlateauMonitor(Callback):
    """Shared monitor/mode handling for the two plateau callbacks."""

    _owner = ""
    _what = ""

    def _init_monitor(self, monitor: Any, mode: Any, min_delta: Any) -> None:
        owner = self._owner
        self.monitor = _check_type(owner, "monitor", monitor, (str,), "a str")
        self.mode = _check_type(owner, "mode", mode, (str,), "a str")
        _check_type(owner, "min_delta", min_delta, (int, float, np.number), "a float or int")
        self.min_delta = abs(float(min_delta))
        if self.mode not in ("auto", "min", "max"):
            raise ValueError(
                f"{owner}: argument 'mode' expected 'auto', 'min' or 'max', got {self.mode!r}"
            )
        self._minimize = self.mode == "min" or (
            self.mode == "auto" and self.monitor in _smaller_better_metrics
        )
        self.best: Any = self._initial_best()

    def _initial_best(self) -> float:
        return np.inf if self._minimize else -np.inf

    def is_improvement(self, current: Any, best: Any) -> bool:
        """min: ``current < best - |min_delta|``; max: ``current > best + |min_delta|``."""
        if self._minimize:
            return bool(np.less(current, best - self.min_delta))
        return bool(np.greater(current, best + self.min_delta))

    def _get_monitor_value(self, cb_params: Any) -> np.ndarray | None:
        candidates: dict[str, Any] = {}
        if self.monitor == "loss":
            value = _handle_loss(cb_params.get("net_outputs"))
            if isinstance(value, float) and not np.isfinite(value):
                warnings.warn(f"{self._owner}: invalid {self.monitor} ({value})", stacklevel=3)
        else:
            candidates = cb_params.get("eval_results") or {}
            value = candidates.get(self.monitor)
        if value is None:
            keys = sorted({"loss", *candidates})
            warnings.warn(
                f"{self._what} is conditioned on {self.monitor!r}, which is not available. "
                f"Available choices are: {keys}",
                stacklevel=3,
            )
            return None
        if isinstance(value, Tensor):
            value = value.asnumpy()
        arr = np.asarray(value)
        if arr.shape != ():
            raise ValueError(
                f"{self._owner} only supports a scalar monitor; {self.monitor!r} has shape "
                f"{arr.shape}"
            )
        return arr


class EarlyStopping(_PlateauMonitor):
    """Stop training when the monitored value stops improving (MindSpore 1.8 semantics).

    ``EarlyStopping(monitor='eval_loss', min_delta=0, patience=0, verbose=False, mode='auto',
    baseline=None, restore_best_weights=False)``.

    At each epoch end: ``wait += 1``; on an improvement, ``best = current`` (and the weights
    are snapshotted when ``restore_best_weights``), and ``wait`` is reset to 0 unless a
    ``baseline`` is set and not beaten; then if ``wait >= patience`` the run stops (and
    restores the best weights). So with the default ``patience=0`` training stops after
    the first epoch, and with ``restore_best_weights`` the first epoch is always
    snapshotted. The snapshot covers every parameter of the training network, optimizer
    state included, as MindSpore's does.
    """

    _owner = "EarlyStopping"
    _what = "Early stopping"

    def __init__(
        self,
        monitor: str = "eval_loss",
        min_delta: float = 0,
        patience: int = 0,
        verbose: bool = False,
        mode: str = "auto",
        baseline: float | None = None,
        restore_best_weights: bool = False,
    ) -> None:
        self._init_monitor(monitor, mode, min_delta)
        self.patience = _check_non_negative_int(self._owner, "patience", patience)
        self.verbose = check_bool(self._owner, "verbose", verbose)
        if baseline is not None:
            _check_type(self._owner, "baseline", baseline, (int, float, np.number), "a float")
            baseline = float(baseline)
        self.baseline = baseline
        self.restore_best_weights = check_bool(
            self._owner, "restore_best_weights", restore_best_weights
        )
        self.wait = 0
        self.stopped_epoch = 0
        self.best_weights_param_dict: dict[str, Any] | None = None

    def on_train_begin(self, run_context: RunContext) -> None:
        self.wait = 0
        self.stopped_epoch = 0
        self.best = self._initial_best()
        self.best_weights_param_dict = None

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        cb_params = run_context.original_args()
        current = self._get_monitor_value(cb_params)
        if current is None:
            return
        network = cb_params.train_network
        if self.restore_best_weights and self.best_weights_param_dict is None:
            self.best_weights_param_dict = _snapshot(network)
        self.wait += 1
        if self.is_improvement(current, self.best):
            self.best = current
            if self.restore_best_weights:
                self.best_weights_param_dict = _snapshot(network)
            if self.baseline is None or self.is_improvement(current, self.baseline):
                self.wait = 0
        if self.wait >= self.patience:
            self.stopped_epoch = cb_params.cur_epoch_num
            run_context.request_stop()
            if self.restore_best_weights and self.best_weights_param_dict is not None:
                if self.verbose:
                    print("Restoring model weights from the end of the best epoch.")
                _restore(network, self.best_weights_param_dict)

    def on_train_end(self, run_context: RunContext) -> None:
        if self.stopped_epoch > 0 and self.verbose:
            print(f"Epoch {self.stopped_epoch:05d}: early stopping")


def _snapshot(network: Any) -> dict[str, Any]:
    return {name: p._data.copy() for name, p in network.parameters_dict().items()}


def _restore(network: Any, snapshot: dict[str, Any]) -> None:
    from ...ops import assign

    for name, p in network.parameters_dict().items():
        if name in snapshot:
            assign(p, Tensor._wrap(snapshot[name], p._device))


class ReduceLROnPlateau(_PlateauMonitor):
    """Multiply the learning rate by ``factor`` when the monitored value plateaus.

    ``ReduceLROnPlateau(monitor='eval_loss', factor=0.1, patience=10, verbose=False,
    mode='auto', min_delta=1e-4, cooldown=0, min_lr=0)``; ``0 < factor < 1``. The
    optimizer's ``learning_rate`` must be a scalar Parameter (a fixed number given to the
    optimizer); schedules and grouped rates raise ``ValueError``.

    At each epoch end: during a cooldown, count it down and reset ``wait``; on an
    improvement, ``best = current, wait = 0``; otherwise, when not cooling down,
    ``wait += 1`` and once ``wait >= patience`` set ``lr = max(lr * factor, min_lr)``
    (only if ``lr > min_lr``), start the cooldown and reset ``wait``.
    """

    _owner = "ReduceLROnPlateau"
    _what = "Learning rate reduction"

    def __init__(
        self,
        monitor: str = "eval_loss",
        factor: float = 0.1,
        patience: int = 10,
        verbose: bool = False,
        mode: str = "auto",
        min_delta: float = 1e-4,
        cooldown: int = 0,
        min_lr: float = 0,
    ) -> None:
        self._init_monitor(monitor, mode, min_delta)
        _check_type(self._owner, "factor", factor, (int, float, np.number), "a float")
        if not 0.0 < factor < 1.0:
            raise ValueError(
                f"{self._owner}: argument 'factor' expected a value in (0, 1), got {factor}"
            )
        self.factor = float(factor)
        self.patience = _check_non_negative_int(self._owner, "patience", patience)
        self.verbose = check_bool(self._owner, "verbose", verbose)
        self.cooldown = _check_non_negative_int(self._owner, "cooldown", cooldown)
        _check_type(self._owner, "min_lr", min_lr, (int, float, np.number), "a float or int")
        self.min_lr = min_lr
        self.cooldown_counter = 0
        self.wait = 0

    def on_train_begin(self, run_context: RunContext) -> None:
        self.cooldown_counter = 0
        self.wait = 0
        self.best = self._initial_best()

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        cb_params = run_context.original_args()
        optimizer = cb_params.get("optimizer")
        lr = getattr(optimizer, "learning_rate", None)
        if not isinstance(lr, Parameter) or lr.size != 1:
            raise ValueError(
                "ReduceLROnPlateau needs the optimizer's learning_rate to be a scalar "
                f"Parameter (a fixed number), got {type(lr).__name__}; dynamic learning rates "
                "and group learning rates are not supported"
            )
        current = self._get_monitor_value(cb_params)
        if current is None:
            return
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.wait = 0
        if self.is_improvement(current, self.best):
            self.best = current
            self.wait = 0
        elif self.cooldown_counter <= 0:
            self.wait += 1
            if self.wait >= self.patience:
                cur_lr = float(lr.asnumpy().reshape(()))
                if cur_lr > self.min_lr:
                    new_lr = max(cur_lr * self.factor, self.min_lr)
                    from ...ops import assign

                    assign(lr, Tensor(np.full(lr.shape, new_lr, lr.dtype.np), device=lr.device))
                    if self.verbose:
                        print(
                            f"Epoch {cb_params.cur_epoch_num:05d}: ReduceLROnPlateau reducing "
                            f"learning rate to {new_lr:.6g}."
                        )
                self.cooldown_counter = self.cooldown
                self.wait = 0
