"""``LearningCurve``: the training loss and every metric per epoch, drawn to a PNG.

The mean of the epoch's step losses and each value of ``eval_results`` (what ``Model.fit``
computes on the validation set) are recorded per epoch, and the PNG is rewritten at the end
of every epoch, so an interrupted run still has its curve. Epoch numbers are absolute: a
run resumed with ``initial_epoch`` continues the axis. matplotlib is the ``[demo]`` extra,
imported when the callback is made (so a missing one fails before training, not after).
"""

from __future__ import annotations

import math
import os
from typing import Any

from ._callback import Callback, RunContext, _handle_loss

__all__ = ["LearningCurve"]

_EXTRA = "pip install 'sporeling-core-runtime[demo]'"


def _pyplot() -> Any:
    try:
        import matplotlib  # type: ignore[import-not-found, unused-ignore]

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # type: ignore[import-not-found, unused-ignore]
    except ImportError as exc:
        raise ImportError(
            f"LearningCurve needs matplotlib, the [demo] extra of sporeling-core-runtime: {_EXTRA}"
        ) from exc
    return plt


class LearningCurve(Callback):
    """Record loss and metrics per epoch and write them as a PNG at ``path``.

    ``history`` maps ``"epoch"``, ``"train_loss"`` and each metric name to a list with one
    value per finished epoch (NaN where an epoch had no evaluation).
    """

    def __init__(self, path: str | os.PathLike[str] = "learning_curve.png", title: str = ""):
        if not isinstance(path, (str, os.PathLike)) or not str(path):
            raise TypeError(f"LearningCurve: argument 'path' expected a file path, got {path!r}")
        if not isinstance(title, str):
            raise TypeError(f"LearningCurve: argument 'title' expected a str, got {title!r}")
        self._plt = _pyplot()
        self.path = os.fspath(path)
        self.title = title
        self.history: dict[str, list[float]] = {"epoch": [], "train_loss": []}
        self._losses: list[float] = []

    def on_train_epoch_begin(self, run_context: RunContext) -> None:
        self._losses = []

    def on_train_step_end(self, run_context: RunContext) -> None:
        loss = _handle_loss(run_context.original_args().get("net_outputs"))
        if isinstance(loss, float):
            self._losses.append(loss)

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        cb = run_context.original_args()
        done = len(self.history["epoch"])
        self.history["epoch"].append(float(cb.get("cur_epoch_num", done + 1)))
        losses = self._losses
        self.history["train_loss"].append(sum(losses) / len(losses) if losses else math.nan)
        results = cb.get("eval_results") or {}
        for name, value in results.items():
            try:
                v = float(value)
            except (TypeError, ValueError):
                continue  # a metric with several values (e.g. per class) is not drawn
            self.history.setdefault(name, [math.nan] * done).append(v)
        for values in self.history.values():
            if len(values) == done:  # a metric missing this epoch
                values.append(math.nan)
        self.write()

    def write(self) -> None:
        """Draw the curves recorded so far to ``path`` (losses left, other metrics right)."""
        plt = self._plt
        epochs = self.history["epoch"]
        losses = [k for k in self.history if k != "epoch" and "loss" in k]
        others = [k for k in self.history if k != "epoch" and k not in losses]
        fig, axes = plt.subplots(
            1, 2 if others else 1, figsize=(10 if others else 5, 4), constrained_layout=True
        )
        axes = list(axes) if others else [axes]
        for ax, keys, label in ((axes[0], losses, "loss"), (axes[-1], others, "metric")):
            if not keys:
                continue
            for key in keys:
                ax.plot(epochs, self.history[key], "o-", label=key)
            ax.set(xlabel="epoch", ylabel=label)
            ax.grid(alpha=0.3)
            ax.legend()
            ax.xaxis.get_major_locator().set_params(integer=True)
        if self.title:
            fig.suptitle(self.title)
        fig.savefig(self.path, dpi=100)
        plt.close(fig)
