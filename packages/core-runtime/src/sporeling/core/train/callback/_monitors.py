"""Built-in reporting callbacks: LossMonitor, TimeMonitor, History, LambdaCallback, ProgressBar."""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from ...errors import check_int
from ._callback import Callback, RunContext, _handle_loss

__all__ = ["LossMonitor", "TimeMonitor", "History", "LambdaCallback", "ProgressBar"]


class LossMonitor(Callback):
    """Print the training loss every ``per_print_times`` steps; stop on a NaN/Inf loss.

    Prints ``epoch: 1 step: 10, loss is 0.25`` (the step counted within the epoch), and under
    ``Model.fit`` the validation results at each epoch end. ``per_print_times=0`` prints
    nothing. A NaN or infinite loss raises ``ValueError`` ("Invalid loss, terminating
    training"), as in MindSpore.
    """

    def __init__(self, per_print_times: int = 1) -> None:
        self._per_print_times = check_int("LossMonitor", "per_print_times", per_print_times, 0)
        self._last_print_time = 0

    def on_train_begin(self, run_context: RunContext) -> None:
        self._last_print_time = 0

    def on_train_step_end(self, run_context: RunContext) -> None:
        cb_params = run_context.original_args()
        loss = _handle_loss(cb_params.net_outputs)
        cur_step_in_epoch = (cb_params.cur_step_num - 1) % cb_params.batch_num + 1
        if isinstance(loss, float) and (math.isnan(loss) or math.isinf(loss)):
            raise ValueError(
                f"epoch: {cb_params.cur_epoch_num} step: {cur_step_in_epoch}. "
                "Invalid loss, terminating training."
            )
        if self._per_print_times != 0 and cb_params.cur_step_num <= self._last_print_time:
            # the step counter was rolled back (a resumed run): catch up
            while cb_params.cur_step_num <= self._last_print_time:
                self._last_print_time -= self._per_print_times
        if (
            self._per_print_times != 0
            and cb_params.cur_step_num - self._last_print_time >= self._per_print_times
        ):
            self._last_print_time = cb_params.cur_step_num
            print(
                f"epoch: {cb_params.cur_epoch_num} step: {cur_step_in_epoch}, loss is {loss}",
                flush=True,
            )

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        cb_params = run_context.original_args()
        metrics = cb_params.get("metrics")
        if metrics:
            print(f"Eval result: epoch {cb_params.cur_epoch_num}, metrics: {metrics}", flush=True)


class TimeMonitor(Callback):
    """Print each epoch's wall time and time per step, labelled "Train" or "Eval".

    ``data_size`` is the number of steps per epoch to divide by when the run does not say
    (the model's ``batch_num`` wins when it is known).
    """

    def __init__(self, data_size: int | None = None) -> None:
        if data_size is not None:
            check_int("TimeMonitor", "data_size", data_size, 1)
        self.data_size = data_size
        self.epoch_time = time.time()

    def on_train_epoch_begin(self, run_context: RunContext) -> None:
        self.epoch_time = time.time()

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        self._report(run_context, self.epoch_time)

    def on_eval_epoch_begin(self, run_context: RunContext) -> None:
        self._eval_time = time.time()  # kept apart so fit's validation doesn't reset training's

    def on_eval_epoch_end(self, run_context: RunContext) -> None:
        self._report(run_context, getattr(self, "_eval_time", self.epoch_time))

    def _report(self, run_context: RunContext, start: float) -> None:
        epoch_ms = (time.time() - start) * 1000
        cb_params = run_context.original_args()
        step_size = self.data_size
        batch_num = cb_params.get("batch_num")
        if isinstance(batch_num, int) and batch_num > 0:
            step_size = batch_num
        if not isinstance(step_size, int) or step_size < 1:
            raise ValueError(
                f"TimeMonitor: the step count must be a positive int, got {step_size!r}; pass "
                "data_size when the model does not report batch_num"
            )
        mode = str(cb_params.get("mode", "")).title()
        print(
            f"{mode} epoch time: {epoch_ms:5.3f} ms, per step time: {epoch_ms / step_size:5.3f} ms",
            flush=True,
        )


class History(Callback):
    """Record each epoch's network output (mean loss of the last step) and eval results.

    After training, ``history.epoch == {"epoch": [1, 2, ...]}`` and ``history.history`` maps
    ``"net_output"`` and, under ``Model.fit`` with validation, each metric name and
    ``"eval_loss"`` to one value per (validated) epoch.
    """

    def __init__(self) -> None:
        self.history: dict[str, list[Any]] = {}
        self.epoch: dict[str, list[int]] = {"epoch": []}

    def on_train_begin(self, run_context: RunContext) -> None:
        self.epoch = {"epoch": []}

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        cb_params = run_context.original_args()
        self.epoch["epoch"].append(cb_params.get("cur_epoch_num", 1))
        net_output = _handle_loss(cb_params.get("net_outputs"))
        cur = {"net_output": net_output}
        results = cb_params.get("eval_results") or cb_params.get("metrics")
        if results:
            cur.update(results)
        for key, value in cur.items():
            self.history.setdefault(key, []).append(value)


_LAMBDA_HOOKS = (
    "on_train_epoch_begin",
    "on_train_epoch_end",
    "on_train_step_begin",
    "on_train_step_end",
    "on_train_begin",
    "on_train_end",
    "on_eval_epoch_begin",
    "on_eval_epoch_end",
    "on_eval_step_begin",
    "on_eval_step_end",
    "on_eval_begin",
    "on_eval_end",
)


def _noop(run_context: RunContext) -> None:
    return None


class LambdaCallback(Callback):
    """A callback made of functions ``fn(run_context)``, one per hook you pass.

    >>> seen = []
    >>> cb = LambdaCallback(on_train_epoch_end=lambda ctx: seen.append(1))
    """

    def __init__(
        self,
        on_train_epoch_begin: Callable[[RunContext], Any] | None = None,
        on_train_epoch_end: Callable[[RunContext], Any] | None = None,
        on_train_step_begin: Callable[[RunContext], Any] | None = None,
        on_train_step_end: Callable[[RunContext], Any] | None = None,
        on_train_begin: Callable[[RunContext], Any] | None = None,
        on_train_end: Callable[[RunContext], Any] | None = None,
        on_eval_epoch_begin: Callable[[RunContext], Any] | None = None,
        on_eval_epoch_end: Callable[[RunContext], Any] | None = None,
        on_eval_step_begin: Callable[[RunContext], Any] | None = None,
        on_eval_step_end: Callable[[RunContext], Any] | None = None,
        on_eval_begin: Callable[[RunContext], Any] | None = None,
        on_eval_end: Callable[[RunContext], Any] | None = None,
    ) -> None:
        given = locals()
        for name in _LAMBDA_HOOKS:
            fn = given[name]
            if fn is not None and not callable(fn):
                raise TypeError(
                    f"LambdaCallback: argument '{name}' expected a callable, "
                    f"got {type(fn).__name__}"
                )
            setattr(self, name, fn if fn is not None else _noop)


class ProgressBar(Callback):
    """A per-epoch progress bar: tqdm when installed, else a plain one-line printer.

    ``enabled=None`` (the default) shows it only when ``file`` (stdout by default) is a
    terminal, so logs and CI output stay quiet. The bar shows the step, the last loss and,
    at the epoch end, the validation results under ``Model.fit``.
    """

    def __init__(
        self, enabled: bool | None = None, file: TextIO | None = None, width: int = 30
    ) -> None:
        if enabled is not None and not isinstance(enabled, bool):
            raise TypeError(
                f"ProgressBar: argument 'enabled' expected a bool or None, "
                f"got {type(enabled).__name__}"
            )
        self.width = check_int("ProgressBar", "width", width, 1)
        self._file = file
        self._enabled = enabled
        self._bar: Any = None
        self._start = 0.0
        self._loss_text = ""  # the last step's "loss=..." shown in the bar

    @property
    def file(self) -> TextIO:
        return self._file if self._file is not None else sys.stdout

    @property
    def enabled(self) -> bool:
        if self._enabled is not None:
            return self._enabled
        isatty = getattr(self.file, "isatty", None)
        return bool(isatty and isatty())

    def on_train_epoch_begin(self, run_context: RunContext) -> None:
        if not self.enabled:
            return
        cb_params = run_context.original_args()
        total = cb_params.get("batch_num")
        # epoch_num counts this run's epochs only (MindSpore's cb_params); when resuming
        # at initial_epoch the bar shows the absolute epoch out of the run's last one.
        num = cb_params.get("epoch_num")
        last = num + (cb_params.get("initial_epoch") or 0) if num is not None else "?"
        desc = f"epoch {cb_params.cur_epoch_num}/{last}"
        self._start = time.time()
        try:
            from tqdm import tqdm
        except ImportError:
            self._bar = _PlainBar(total, desc, self.file, self.width)
        else:
            self._bar = tqdm(total=total, desc=desc, file=self.file, leave=True)
        self._loss_text = ""

    def on_train_step_end(self, run_context: RunContext) -> None:
        if self._bar is None:
            return
        loss = _handle_loss(run_context.original_args().get("net_outputs"))
        self._loss_text = f"loss={loss:.4g}" if isinstance(loss, float) else ""
        self._bar.set_postfix_str(self._loss_text, refresh=False)
        self._bar.update(1)

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        if self._bar is None:
            return
        results = run_context.original_args().get("eval_results")
        if results:
            # the epoch's last loss stays beside the validation results (tqdm redraws at
            # most every 0.1 s, so the closing line may be the only one showing the loss)
            parts = [self._loss_text] if self._loss_text else []
            parts += [f"{k}={_fmt(v)}" for k, v in results.items()]
            self._bar.set_postfix_str(", ".join(parts), refresh=True)
        self._bar.close()
        self._bar = None

    def on_train_end(self, run_context: RunContext) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def _fmt(value: Any) -> str:
    try:
        return f"{float(value):.4g}"
    except (TypeError, ValueError):
        return str(value)


class _PlainBar:
    """A minimal tqdm stand-in: ``[=====>    ] 12/40 loss=0.31`` rewritten in place."""

    def __init__(self, total: int | None, desc: str, file: TextIO, width: int) -> None:
        self.total, self.desc, self.file, self.width = total, desc, file, width
        self.n = 0
        self.postfix = ""
        self.start = time.time()

    def set_postfix_str(self, text: str, refresh: bool = True) -> None:
        self.postfix = text
        if refresh:
            self._draw()

    def update(self, n: int = 1) -> None:
        self.n += n
        self._draw()

    def _draw(self) -> None:
        elapsed = time.time() - self.start
        if self.total:
            done = int(self.width * min(self.n, self.total) / self.total)
            bar = "=" * done + " " * (self.width - done)
            count = f"{self.n}/{self.total}"
        else:
            bar, count = "", str(self.n)
        line = f"\r{self.desc} [{bar}] {count} {elapsed:.1f}s {self.postfix}"
        self.file.write(line)
        self.file.flush()

    def close(self) -> None:
        self._draw()
        self.file.write("\n")
        self.file.flush()
