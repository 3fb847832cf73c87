"""Loss scaling for float16 training (MindSpore 1.8's algorithms).

``TrainOneStepWithLossScaleCell(network, optimizer, scale_sense)`` back-propagates from
``loss * scale`` (the scale cast to the loss dtype, so small float16 gradients do not
flush to zero), divides the gradients by the scale, flags an overflow when any gradient is
not finite, skips the optimizer on overflow, lets the update cell adjust the scale, and
returns ``(loss, overflow, scale)``.

``DynamicLossScaleUpdateCell(loss_scale_value, scale_factor, scale_window)`` divides the
scale by ``scale_factor`` (not below 1) on overflow and multiplies it by ``scale_factor``
after ``scale_window`` consecutive steps without one; ``FixedLossScaleUpdateCell`` keeps it.
The managers (``FixedLossScaleManager``, ``DynamicLossScaleManager``) are the host-side
versions that ``Model`` uses and that hand out the update cells.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import dtype as _dt
from ... import ops
from ...autograd import value_and_grad
from ...errors import op_error
from ...tensor import Parameter, Tensor
from ..cell import Cell
from .cell_wrapper import TrainOneStepCell, _forward_of

__all__ = [
    "FixedLossScaleUpdateCell",
    "DynamicLossScaleUpdateCell",
    "TrainOneStepWithLossScaleCell",
    "LossScaleManager",
    "FixedLossScaleManager",
    "DynamicLossScaleManager",
]


def _number(cls: str, arg: str, value: Any, minimum: float, strict: bool = False) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        raise op_error(cls, arg, value, "a number", TypeError)
    bad = value <= minimum if strict else value < minimum
    if bad or not np.isfinite(value):
        raise op_error(cls, arg, value, f"a finite number {'>' if strict else '>='} {minimum}")
    return float(value)


def _positive_int(cls: str, arg: str, value: Any) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise op_error(cls, arg, value, "a positive int", TypeError)
    if value <= 0:
        raise op_error(cls, arg, value, "a positive int")
    return int(value)


def _overflow(grads: Any) -> Tensor:
    """A bool scalar: True when any gradient holds an inf or a NaN."""
    finite = True
    for g in grads:
        if isinstance(g, Tensor) and g.dtype.category == 2:
            finite = finite and bool(ops.reduce_all(ops.isfinite(g)))
    return Tensor(np.array(not finite))


class FixedLossScaleUpdateCell(Cell):
    """Keeps the loss scale fixed: ``construct(loss_scale, overflow)`` returns ``overflow``."""

    def __init__(self, loss_scale_value: float) -> None:
        super().__init__()
        self.loss_scale_value = _number(self.cls_name, "loss_scale_value", loss_scale_value, 1.0)

    def extend_repr(self) -> str:
        return f"loss_scale_value={self.loss_scale_value}"

    def get_loss_scale(self) -> float:
        """The loss scale value."""
        return self.loss_scale_value

    def construct(self, _: Any, overflow: Any) -> Any:
        return overflow


class DynamicLossScaleUpdateCell(Cell):
    """Updates ``loss_scale`` (a Parameter, in place): divided by ``scale_factor`` (at least
    1) on overflow, multiplied by it after ``scale_window`` steps without overflow.

    The step counters are Parameters (``current_iterator_step``,
    ``last_overflow_iterator_step``) so that checkpoints keep them, as in MindSpore.
    """

    def __init__(self, loss_scale_value: float, scale_factor: float, scale_window: int) -> None:
        super().__init__()
        cls = self.cls_name
        self.loss_scale_value = _number(cls, "loss_scale_value", loss_scale_value, 1.0)
        self.scale_factor = _number(cls, "scale_factor", scale_factor, 1.0, strict=True)
        self.scale_window = _positive_int(cls, "scale_window", scale_window)
        self.cur_iter = Parameter(
            Tensor(1, dtype=_dt.int32), name="current_iterator_step", requires_grad=False
        )
        self.last_overflow_iter = Parameter(
            Tensor(0, dtype=_dt.int32), name="last_overflow_iterator_step", requires_grad=False
        )

    def extend_repr(self) -> str:
        return (
            f"loss_scale_value={self.loss_scale_value}, scale_factor={self.scale_factor}, "
            f"scale_window={self.scale_window}"
        )

    def get_loss_scale(self) -> float:
        """The initial loss scale value (the running one lives in the training cell)."""
        return self.loss_scale_value

    def construct(self, loss_scale: Any, overflow: Any) -> Any:
        if not isinstance(loss_scale, Tensor):
            raise op_error(self.cls_name, "loss_scale", loss_scale, "a Tensor", TypeError)
        over = bool(overflow)
        scale = loss_scale.asnumpy().astype(np.float64)
        cur = int(self.cur_iter.asnumpy())
        last = int(self.last_overflow_iter.asnumpy())
        on_overflow = np.maximum(scale / self.scale_factor, 1.0) if over else scale
        should_inc = cur - last >= self.scale_window
        if over or should_inc:
            last = cur
        new_scale = on_overflow * self.scale_factor if should_inc and not over else on_overflow
        loss_scale.assign_value(Tensor(new_scale.astype(loss_scale.dtype.np)))
        self.last_overflow_iter.assign_value(Tensor(np.int32(last)))
        self.cur_iter.assign_value(Tensor(np.int32(cur + 1)))
        return overflow


def _unscale(g: Tensor, inv: float) -> Tensor:
    # float16 gradients are divided in float32 and cast back: 1/scale can underflow float16
    if g.dtype in (_dt.float32, _dt.float64):
        return g * ops.cast(Tensor(inv), g.dtype)
    return ops.cast(ops.cast(g, _dt.float32) * inv, g.dtype)


class TrainOneStepWithLossScaleCell(TrainOneStepCell):
    """A training step with loss scaling; returns ``(loss, overflow, loss_scale)``.

    ``scale_sense`` is an update Cell (:class:`DynamicLossScaleUpdateCell`,
    :class:`FixedLossScaleUpdateCell`), or a Tensor of shape () or (1,) that stays fixed
    until :meth:`set_sense_scale`. The scale lives in the Parameter ``scale_sense``.
    ``loss_scale`` in the output is the scale this step used (before the update cell's
    adjustment). On overflow the optimizer is not called.
    """

    def __init__(self, network: Cell, optimizer: Cell, scale_sense: Any) -> None:
        super().__init__(network, optimizer, sens=None)
        cls = self.cls_name
        manager: Cell | None = None
        if isinstance(scale_sense, Cell):
            if not hasattr(scale_sense, "get_loss_scale"):
                raise op_error(
                    cls,
                    "scale_sense",
                    scale_sense,
                    "an update Cell with get_loss_scale()",
                    TypeError,
                )
            manager = scale_sense
            self.scale_sense = Parameter(
                Tensor(scale_sense.get_loss_scale(), dtype=_dt.float32), name="scale_sense"
            )
        elif isinstance(scale_sense, Tensor):
            if scale_sense.shape not in ((), (1,)):
                raise ValueError(
                    f"{cls}: the shape of 'scale_sense' must be (1,) or (), got {scale_sense.shape}"
                )
            self.scale_sense = Parameter(scale_sense, name="scale_sense")
        else:
            raise op_error(cls, "scale_sense", scale_sense, "a Cell or a Tensor", TypeError)
        self.loss_scaling_manager = manager

    def set_sense_scale(self, sens: Any) -> None:
        """Replace the loss scale (a Tensor of the same shape)."""
        if not isinstance(sens, Tensor):
            raise op_error(self.cls_name, "sens", sens, "a Tensor", TypeError)
        self.scale_sense.set_data(ops.cast(sens, self.scale_sense.dtype))

    def start_overflow_check(self, pre_cond: Any, compute_input: Any) -> tuple[Any, Any]:
        """Kept for API compatibility: there is no device float status to clear here."""
        return False, compute_input

    def get_overflow_status(self, status: Any, compute_output: Any) -> Tensor:
        """True (a bool scalar Tensor) when any of ``compute_output`` is inf or NaN."""
        return _overflow(compute_output)

    def process_loss_scale(self, overflow: Any) -> Any:
        """Let the update cell adjust the scale; returns ``overflow``."""
        if self.loss_scaling_manager is not None:
            return self.loss_scaling_manager(self.scale_sense, overflow)
        return overflow

    def construct(self, *inputs: Any) -> tuple[Tensor, Tensor, Tensor]:  # type: ignore[override]
        status, _ = self.start_overflow_check(None, self.scale_sense)
        scaling_sens = Tensor(self.scale_sense.asnumpy().copy())
        forward = _forward_of(self.network)

        def scaled(*xs: Any) -> tuple[Tensor, Tensor]:
            loss = forward(*xs)
            return loss * ops.cast(scaling_sens, loss.dtype), loss

        # Overflow is expected here and detected below, so NumPy's warnings are silenced
        # (CuPy, like MindSpore's kernels, never warns).
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            step = value_and_grad(scaled, None, self.weights, has_aux=True)
            (_, loss), grads = step(*inputs)
            value = float(scaling_sens.asnumpy().reshape(-1)[0])
            inv = 1.0 / value if value != 0 else float("inf")
            grads = tuple(_unscale(g, inv) for g in grads)
        grads = self.grad_reducer(grads)
        cond = self.get_overflow_status(status, grads)
        overflow = self.process_loss_scale(cond)
        if not bool(overflow):
            self.optimizer(self.process_grads(grads))
        return loss, cond, scaling_sens


class LossScaleManager:
    """Base of the host-side loss scale managers used by ``Model``."""

    def get_loss_scale(self) -> float:
        raise NotImplementedError(f"{type(self).__name__} must define get_loss_scale()")

    def update_loss_scale(self, overflow: bool) -> None:
        raise NotImplementedError(f"{type(self).__name__} must define update_loss_scale()")

    def get_update_cell(self) -> Cell | None:
        raise NotImplementedError(f"{type(self).__name__} must define get_update_cell()")


class FixedLossScaleManager(LossScaleManager):
    """A constant loss scale. With ``drop_overflow_update=False`` no update cell is made and
    updates are applied even on overflow (``Model`` then uses a fixed ``sens``)."""

    def __init__(self, loss_scale: float = 128.0, drop_overflow_update: bool = True) -> None:
        self._loss_scale = _number("FixedLossScaleManager", "loss_scale", loss_scale, 1.0)
        if not isinstance(drop_overflow_update, (bool, np.bool_)):
            raise op_error(
                "FixedLossScaleManager",
                "drop_overflow_update",
                drop_overflow_update,
                "a bool",
                TypeError,
            )
        self._drop_overflow_update = bool(drop_overflow_update)

    def get_loss_scale(self) -> float:
        return self._loss_scale

    def get_drop_overflow_update(self) -> bool:
        return self._drop_overflow_update

    def update_loss_scale(self, overflow: bool) -> None:
        """Nothing to do: the scale is fixed."""

    def get_update_cell(self) -> Cell | None:
        if not self._drop_overflow_update:
            return None
        return FixedLossScaleUpdateCell(self._loss_scale)


class DynamicLossScaleManager(LossScaleManager):
    """A loss scale divided by ``scale_factor`` on overflow (not below 1) and multiplied by
    it after ``scale_window`` steps without overflow."""

    def __init__(
        self, init_loss_scale: float = 2**24, scale_factor: int = 2, scale_window: int = 2000
    ) -> None:
        cls = "DynamicLossScaleManager"
        self.loss_scale = _number(cls, "init_loss_scale", init_loss_scale, 1.0)
        self.scale_factor = _number(cls, "scale_factor", scale_factor, 1.0, strict=True)
        self.scale_window = _positive_int(cls, "scale_window", scale_window)
        self.increase_ratio = self.scale_factor
        self.decrease_ratio = 1 / self.scale_factor
        self.cur_iter = 1
        self.last_overflow_iter = 0
        self.bad_step_max = 1000
        self.bad_step = 0

    def get_loss_scale(self) -> float:
        return self.loss_scale

    def update_loss_scale(self, overflow: bool) -> None:
        """Adjust the scale after one step (``overflow``: whether it overflowed)."""
        if overflow:
            self.loss_scale = max(self.loss_scale * self.decrease_ratio, 1.0)
            self.last_overflow_iter = self.cur_iter
            self.bad_step += 1
        else:
            if (self.cur_iter - self.last_overflow_iter) % self.scale_window == 0:
                self.loss_scale *= self.increase_ratio
            self.bad_step = 0
        if self.bad_step > self.bad_step_max:
            raise RuntimeError(
                f"DynamicLossScaleManager: the loss overflowed {self.bad_step} steps in a row"
            )
        self.cur_iter += 1

    def get_drop_overflow_update(self) -> bool:
        return True

    def get_update_cell(self) -> Cell:
        return DynamicLossScaleUpdateCell(self.loss_scale, self.scale_factor, self.scale_window)
