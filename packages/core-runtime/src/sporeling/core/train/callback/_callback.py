"""The Callback base class, ``RunContext`` and the parameter bag callbacks read (MindSpore 1.8).

A callback overrides any of the ``on_train_*`` / ``on_eval_*`` hooks. The old-style names
(``begin``, ``epoch_begin``, ``step_begin``, ``step_end``, ``epoch_end``, ``end``) are still
called by the default ``on_*`` hooks, as in MindSpore 1.8; ``Model.fit`` rejects custom
callbacks that define them and ``Model.train``/``Model.eval`` warn.
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

import numpy as np

from ...tensor import Tensor

__all__ = ["Callback", "RunContext"]


class Callback:
    """Base class of training/evaluation callbacks; override the hooks you need.

    Callbacks are context managers: ``Model`` enters them before the run and exits them
    after it (to open and close files, for instance).

    >>> class StepCounter(Callback):
    ...     def __init__(self):
    ...         self.steps = 0
    ...     def on_train_step_end(self, run_context):
    ...         self.steps += 1
    """

    def __enter__(self) -> Callback:
        return self

    def __exit__(self, *err: Any) -> None:
        return None

    # old-style hooks (MindSpore <= 1.7); the on_* defaults call them
    def begin(self, run_context: RunContext) -> None:
        """Called once before the run (old-style name)."""

    def epoch_begin(self, run_context: RunContext) -> None:
        """Called before each epoch (old-style name)."""

    def epoch_end(self, run_context: RunContext) -> None:
        """Called after each epoch (old-style name)."""

    def step_begin(self, run_context: RunContext) -> None:
        """Called before each step (old-style name)."""

    def step_end(self, run_context: RunContext) -> None:
        """Called after each step (old-style name)."""

    def end(self, run_context: RunContext) -> None:
        """Called once after the run (old-style name)."""

    # training hooks
    def on_train_begin(self, run_context: RunContext) -> None:
        self.begin(run_context)

    def on_train_epoch_begin(self, run_context: RunContext) -> None:
        self.epoch_begin(run_context)

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        self.epoch_end(run_context)

    def on_train_step_begin(self, run_context: RunContext) -> None:
        self.step_begin(run_context)

    def on_train_step_end(self, run_context: RunContext) -> None:
        self.step_end(run_context)

    def on_train_end(self, run_context: RunContext) -> None:
        self.end(run_context)

    # evaluation hooks
    def on_eval_begin(self, run_context: RunContext) -> None:
        self.begin(run_context)

    def on_eval_epoch_begin(self, run_context: RunContext) -> None:
        self.epoch_begin(run_context)

    def on_eval_epoch_end(self, run_context: RunContext) -> None:
        self.epoch_end(run_context)

    def on_eval_step_begin(self, run_context: RunContext) -> None:
        self.step_begin(run_context)

    def on_eval_step_end(self, run_context: RunContext) -> None:
        self.step_end(run_context)

    def on_eval_end(self, run_context: RunContext) -> None:
        self.end(run_context)


_HOOKS = (
    "begin",
    "epoch_begin",
    "epoch_end",
    "step_begin",
    "step_end",
    "end",
    "on_train_begin",
    "on_train_epoch_begin",
    "on_train_epoch_end",
    "on_train_step_begin",
    "on_train_step_end",
    "on_train_end",
    "on_eval_begin",
    "on_eval_epoch_begin",
    "on_eval_epoch_end",
    "on_eval_step_begin",
    "on_eval_step_end",
    "on_eval_end",
)


class _CallbackManager(Callback):
    """Runs a list of callbacks in order at every hook; enters and exits them as a group."""

    def __init__(self, callbacks: Any) -> None:
        self._callbacks: list[Callback] = []
        self._stack: ExitStack | None = None
        if isinstance(callbacks, Callback):
            self._callbacks.append(callbacks)
        elif isinstance(callbacks, (list, tuple)):
            for i, cb in enumerate(callbacks):
                if not isinstance(cb, Callback):
                    raise TypeError(
                        f"callbacks: element {i} expected a Callback, got {type(cb).__name__}"
                    )
                self._callbacks.append(cb)
        elif callbacks is not None:
            raise TypeError(
                "callbacks: expected a Callback or a list of Callbacks, "
                f"got {type(callbacks).__name__}"
            )
        for name in _HOOKS:
            object.__setattr__(self, name, self._dispatcher(name))

    def _dispatcher(self, name: str) -> Any:
        def run(run_context: RunContext) -> None:
            for cb in self._callbacks:
                getattr(cb, name)(run_context)

        run.__name__ = name
        return run

    def __enter__(self) -> _CallbackManager:
        if self._stack is None:
            stack = ExitStack().__enter__()
            entered = []
            for cb in self._callbacks:
                target = stack.enter_context(cb)
                entered.append(target if isinstance(target, Callback) else cb)
            self._callbacks = entered
            self._stack = stack
        return self

    def __exit__(self, *err: Any) -> Any:
        stack, self._stack = self._stack, None
        return stack.__exit__(*err) if stack is not None else None


class _InternalCallbackParam(dict[str, Any]):
    """The ``cb_params`` bag: a dict whose keys are also attributes."""

    def __getattr__(self, key: str) -> Any:
        try:
            return self[key]
        except KeyError:
            raise AttributeError(f"cb_params has no attribute '{key}'") from None

    def __setattr__(self, key: str, value: Any) -> None:
        self[key] = value


class RunContext:
    """What a callback sees of the run: ``original_args()`` (the cb_params) and stop requests.

    >>> ctx = RunContext({"cur_epoch_num": 1})
    >>> ctx.request_stop(); ctx.get_stop_requested()
    True
    """

    def __init__(self, original_args: dict[str, Any]) -> None:
        if not isinstance(original_args, dict):
            raise TypeError(
                "RunContext: argument 'original_args' expected a dict, "
                f"got {type(original_args).__name__}"
            )
        self._original_args = original_args
        self._stop_requested = False

    def original_args(self) -> Any:
        """The ``cb_params`` of the run (train_network, cur_epoch_num, net_outputs, ...)."""
        return self._original_args

    def request_stop(self) -> None:
        """Ask the model to stop after the current step (or epoch, at an epoch end)."""
        self._stop_requested = True

    def get_stop_requested(self) -> bool:
        return self._stop_requested


def _handle_loss(loss: Any) -> Any:
    """The scalar training loss from a network's outputs (first element of a tuple, mean)."""
    if isinstance(loss, (tuple, list)) and loss and isinstance(loss[0], (Tensor, np.ndarray)):
        loss = loss[0]
    if isinstance(loss, Tensor):
        loss = loss.asnumpy()
    if isinstance(loss, np.ndarray):
        loss = float(np.mean(loss))
    return loss
