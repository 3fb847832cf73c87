"""Training wrappers (MindSpore 1.8's ``nn.WithLossCell``, ``nn.TrainOneStepCell``, ...).

``TrainOneStepCell(network, optimizer, sens=1.0)`` runs one optimisation step per call: the
loss of ``network(*inputs)``, its gradients with respect to ``optimizer.parameters`` (via
:func:`sporeling.core.value_and_grad`), the gradients times ``sens``, the ``grad_reducer``
hook (identity on one device), then ``optimizer(grads)``, which updates the parameters in
place; it returns the loss.

>>> import numpy as np
>>> from sporeling.core import Parameter, Tensor, nn
>>> class Scale(nn.Cell):
...     def __init__(self):
...         super().__init__()
...         self.w = Parameter(Tensor(np.ones(1, np.float32)), name="w")
...     def construct(self, x):
...         return x * self.w
>>> net = nn.WithLossCell(Scale(), nn.MSELoss())
>>> float(net(Tensor([2.0]), Tensor([4.0])))
4.0
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import numpy as np

from ... import _hooks, ops
from ... import dtype as _dt
from ...autograd import grad as _grad
from ...autograd import value_and_grad
from ...errors import op_error
from ...tensor import Parameter, Tensor
from ..cell import Cell

__all__ = [
    "WithLossCell",
    "WithGradCell",
    "WithEvalCell",
    "TrainOneStepCell",
    "ParameterUpdate",
]


def _identity(grads: Any) -> Any:
    return grads


def _check_cell(cls: str, arg: str, value: Any) -> Cell:
    if not isinstance(value, Cell):
        raise op_error(cls, arg, value, "a Cell", TypeError)
    return value


def _sens_value(cls: str, sens: Any) -> float | None:
    if sens is None:
        return None
    if isinstance(sens, (bool, np.bool_)) or not isinstance(
        sens, (int, float, np.integer, np.floating)
    ):
        raise op_error(cls, "sens", sens, "a float", TypeError)
    return float(sens)


class WithLossCell(Cell):
    """``loss_fn(backbone(data), label)``: a network together with its loss."""

    def __init__(self, backbone: Cell, loss_fn: Cell) -> None:
        super().__init__(auto_prefix=False)
        self._backbone = _check_cell("WithLossCell", "backbone", backbone)
        if not callable(loss_fn):
            raise op_error("WithLossCell", "loss_fn", loss_fn, "a loss Cell", TypeError)
        self._loss_fn = loss_fn

    def construct(self, data: Any, label: Any) -> Tensor:
        out = self._backbone(data)
        return self._loss_fn(out, label)

    @property
    def backbone_network(self) -> Cell:
        """The backbone (the network without its loss)."""
        return self._backbone


class WithGradCell(Cell):
    """The gradients of ``network`` (with ``loss_fn`` when given) with respect to its
    trainable parameters; ``sens`` scales them (the output's sensitivity)."""

    def __init__(self, network: Cell, loss_fn: Cell | None = None, sens: Any = None) -> None:
        super().__init__(auto_prefix=False)
        self.network = _check_cell("WithGradCell", "network", network)
        self.loss_fn = loss_fn
        self.weights = tuple(network.trainable_params())
        self.sens = _sens_value("WithGradCell", sens)
        self.network_with_loss = network if loss_fn is None else WithLossCell(network, loss_fn)
        self.network_with_loss.set_grad()

    def construct(self, *inputs: Any) -> tuple[Tensor, ...]:
        grads = _grad(_forward_of(self.network_with_loss), None, self.weights)(*inputs)
        if self.sens is not None and self.sens != 1.0:
            grads = tuple(g * self.sens for g in grads)
        return grads


class WithEvalCell(Cell):
    """``(loss, outputs, label)`` for evaluation; ``add_cast_fp32`` casts the outputs and
    the label to float32 before the loss (for float16 networks)."""

    def __init__(self, network: Cell, loss_fn: Cell, add_cast_fp32: bool = False) -> None:
        super().__init__(auto_prefix=False)
        self._network = _check_cell("WithEvalCell", "network", network)
        if not callable(loss_fn):
            raise op_error("WithEvalCell", "loss_fn", loss_fn, "a loss Cell", TypeError)
        self._loss_fn = loss_fn
        if not isinstance(add_cast_fp32, (bool, np.bool_)):
            raise op_error("WithEvalCell", "add_cast_fp32", add_cast_fp32, "a bool", TypeError)
        self.add_cast_fp32 = bool(add_cast_fp32)

    def construct(self, data: Any, label: Any) -> tuple[Tensor, Tensor, Tensor]:
        outputs = self._network(data)
        if self.add_cast_fp32:
            if isinstance(label, Tensor) and label.dtype.category == 2:
                label = ops.cast(label, _dt.float32)
            outputs = ops.cast(outputs, _dt.float32)
        loss = self._loss_fn(outputs, label)
        return loss, outputs, label


def _forward_of(cell: Cell) -> Callable[..., Any]:
    # A plain function (functools.wraps inside grad would otherwise copy the Cell's __dict__).
    def forward(*inputs: Any) -> Any:
        return cell(*inputs)

    return forward


class TrainOneStepCell(Cell):
    """One training step: loss, gradients w.r.t. ``optimizer.parameters`` times ``sens``,
    ``grad_reducer`` (identity here), ``optimizer(grads)``; returns the loss.

    Subclasses may override :meth:`process_grads` (applied after the reducer, before the
    optimizer) — :class:`TrainOneStepWithClipCell` clips there.
    """

    def __init__(self, network: Cell, optimizer: Cell, sens: Any = 1.0) -> None:
        super().__init__(auto_prefix=False)
        cls = self.cls_name
        self.network = _check_cell(cls, "network", network)
        self.network.set_grad()
        if not callable(optimizer) or not hasattr(optimizer, "parameters"):
            raise op_error(
                cls, "optimizer", optimizer, "an Optimizer (a Cell with .parameters)", TypeError
            )
        self.optimizer = optimizer
        self.weights = optimizer.parameters
        self.sens = _sens_value(cls, sens)
        self.reducer_flag = False
        self.grad_reducer: Callable[[Any], Any] = _identity
        # As in MindSpore: under data_parallel / hybrid_parallel the gradients are
        # all-reduced (bucketed, overlapped with backward; sporeling.core.parallel).
        reducer = _hooks.parallel.grad_reducer_for(cls, self.weights, optimizer)
        if reducer is not None:
            self.reducer_flag = True
            self.grad_reducer = reducer

    def _loss_and_grads(self, inputs: tuple[Any, ...]) -> tuple[Tensor, tuple[Tensor, ...]]:
        loss, grads = value_and_grad(_forward_of(self.network), None, self.weights)(*inputs)
        if self.sens is not None and self.sens != 1.0:
            grads = tuple(g * ops.cast(Tensor(self.sens), g.dtype) for g in grads)
        return loss, grads

    def process_grads(self, grads: tuple[Tensor, ...]) -> tuple[Tensor, ...]:
        """Hook between the gradient reducer and the optimizer (identity here)."""
        return grads

    def construct(self, *inputs: Any) -> Tensor:
        capture = getattr(self.grad_reducer, "capture", None)
        with capture() if capture is not None else contextlib.nullcontext():
            loss, grads = self._loss_and_grads(inputs)
        grads = self.grad_reducer(grads)
        grads = self.process_grads(grads)
        self.optimizer(grads)
        return loss


class ParameterUpdate(Cell):
    """``construct(x)`` writes ``x`` into ``param`` (in place) and returns ``x``."""

    def __init__(self, param: Parameter) -> None:
        super().__init__(auto_prefix=False)
        if not isinstance(param, Parameter):
            raise op_error("ParameterUpdate", "param", param, "a Parameter", TypeError)
        self._param = param

    def construct(self, x: Any) -> Any:
        ops.assign(self._param, x)
        return x
