"""Gradient clipping: MindSpore's ``nn.ClipByNorm`` cell and a training step that clips.

``TrainOneStepWithClipCell`` is a :class:`TrainOneStepCell` whose gradients are clipped
before the optimizer sees them: by global norm (``ops.clip_by_global_norm``, the default),
per tensor by norm (:class:`ClipByNorm`), or by value.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import dtype as _dt
from ... import ops
from ...errors import describe, op_error
from ...tensor import Tensor
from ..cell import Cell
from .cell_wrapper import TrainOneStepCell

__all__ = ["ClipByNorm", "TrainOneStepWithClipCell"]

_CLIP_TYPES = ("global_norm", "norm", "value")


def _check_axis(axis: Any) -> tuple[int, ...] | None:
    if axis is None:
        return None
    items = axis if isinstance(axis, (tuple, list)) else (axis,)
    for a in items:
        if isinstance(a, (bool, np.bool_)) or not isinstance(a, (int, np.integer)):
            raise op_error("ClipByNorm", "axis", axis, "None, an int or a tuple of ints", TypeError)
    return tuple(int(a) for a in items)


def _positive_number(cls: str, arg: str, value: Any) -> float:
    if isinstance(value, Tensor):
        if value.size != 1:
            raise op_error(cls, arg, value, "a positive scalar")
        value = float(value.asnumpy().reshape(()))
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        raise op_error(cls, arg, value, "a positive float", TypeError)
    if not value > 0:
        raise op_error(cls, arg, value, "a positive float")
    return float(value)


class ClipByNorm(Cell):
    r"""``x * clip_norm / max(||x||_2, clip_norm)``: rescales ``x`` so its L2 norm (over
    ``axis``, all axes by default) is at most ``clip_norm``; unchanged when already smaller.

    >>> ClipByNorm()(Tensor([3.0, 4.0]), 1.0).tolist()
    [0.6000000238418579, 0.800000011920929]
    """

    def __init__(self, axis: Any = None) -> None:
        super().__init__()
        self.axis = _check_axis(axis)

    def extend_repr(self) -> str:
        return f"axis={self.axis}"

    def construct(self, x: Any, clip_norm: Any) -> Tensor:
        if not isinstance(x, Tensor) or x.dtype.category != 2:
            raise op_error("ClipByNorm", "x", x, "a floating Tensor", TypeError)
        work = _dt.float64 if x.dtype == _dt.float64 else _dt.float32
        xw = ops.cast(x, work)
        c: Tensor | float
        if isinstance(clip_norm, Tensor):
            c = ops.cast(clip_norm, work)
            if np.broadcast_shapes(c.shape, x.shape) != x.shape:
                raise ValueError(
                    f"ClipByNorm: argument 'clip_norm' expected a scalar or a shape that "
                    f"broadcasts to {x.shape}, got {describe(clip_norm)}"
                )
        else:
            c = _positive_number("ClipByNorm", "clip_norm", clip_norm)
        axis = self.axis if self.axis is not None else ()
        l2sum = ops.reduce_sum(ops.square(xw), axis, keep_dims=True)
        positive = l2sum > 0
        # sqrt of a safe value, so a zero tensor gets a zero norm and a finite gradient
        l2norm = ops.select(positive, ops.sqrt(ops.select(positive, l2sum, 1.0)), l2sum)
        out = xw * c / ops.maximum(l2norm, c)
        return ops.cast(out, x.dtype)


class TrainOneStepWithClipCell(TrainOneStepCell):
    """:class:`TrainOneStepCell` that clips the gradients before the update.

    ``clip_type``: 'global_norm' (default; all gradients scaled together so their global
    L2 norm is at most ``clip_norm``, :func:`sporeling.core.ops.clip_by_global_norm`),
    'norm' (each gradient separately, :class:`ClipByNorm`) or 'value' (each element
    clamped to ``[-clip_norm, clip_norm]``).
    """

    def __init__(
        self,
        network: Cell,
        optimizer: Cell,
        sens: Any = 1.0,
        clip_norm: float = 1.0,
        clip_type: str = "global_norm",
    ) -> None:
        super().__init__(network, optimizer, sens)
        self.clip_norm = _positive_number(self.cls_name, "clip_norm", clip_norm)
        if clip_type not in _CLIP_TYPES:
            raise op_error(
                self.cls_name, "clip_type", clip_type, " or ".join(repr(t) for t in _CLIP_TYPES)
            )
        self.clip_type = clip_type
        self.clip_by_norm = ClipByNorm()

    def extend_repr(self) -> str:
        return f"clip_type={self.clip_type}, clip_norm={self.clip_norm}"

    def process_grads(self, grads: tuple[Tensor, ...]) -> tuple[Tensor, ...]:
        if not grads:
            return grads
        if self.clip_type == "global_norm":
            return ops.clip_by_global_norm(tuple(grads), self.clip_norm)
        if self.clip_type == "norm":
            return tuple(self.clip_by_norm(g, self.clip_norm) for g in grads)
        return tuple(ops.clip_by_value(g, -self.clip_norm, self.clip_norm) for g in grads)
