"""``nn.MicroBatchInterleaved`` (MindSpore 1.8's "multi-copy parallel" wrapper).

``MicroBatchInterleaved(network, interleave_num=2)`` slices every Tensor input along dim 0
into ``interleave_num`` equal copies, runs ``network`` on each copy and returns the **sum**
of the copies' outputs (tuples are summed element by element), as MindSpore does: with a
sum-reduced loss the result and its gradients equal the full batch's; with a mean-reduced
loss they are ``interleave_num`` times the full-batch mean.

A batch that does not divide raises ``ValueError``. Non-Tensor inputs are passed to every
copy unchanged.

Overlap: the copies are independent, so a scheduler may run one copy's collectives while
another computes (MindSpore's graph mode does). In Sporeling's eager mode the copies run
one after the other; each op sees ``1 / interleave_num`` of the batch.

>>> import numpy as np
>>> from sporeling.core import Tensor, nn
>>> net = nn.MicroBatchInterleaved(nn.Dense(3, 2), 2)
>>> net(Tensor(np.ones((4, 3), np.float32))).shape
(2, 2)
"""

from __future__ import annotations

from typing import Any

from ... import ops
from ...tensor import Tensor
from ..cell import Cell
from ._utils import arg_error, check_int

__all__ = ["MicroBatchInterleaved"]


def _add(a: Any, b: Any) -> Any:
    if isinstance(a, (tuple, list)):
        return type(a)(_add(x, y) for x, y in zip(a, b, strict=True))
    return a + b


class MicroBatchInterleaved(Cell):
    """Run ``network`` on ``interleave_num`` slices of the batch and sum the outputs."""

    def __init__(self, network: Cell, interleave_num: int = 2) -> None:
        super().__init__(auto_prefix=False)
        if not isinstance(network, Cell):
            raise arg_error("MicroBatchInterleaved", "network", network, "a Cell", TypeError)
        self.network = network
        self.interleave_num = check_int(
            "MicroBatchInterleaved", "interleave_num", interleave_num, 1
        )

    def construct(self, *inputs: Any) -> Any:
        n = self.interleave_num
        batch = None
        for i, x in enumerate(inputs):
            if isinstance(x, Tensor):
                if x.ndim == 0 or x.shape[0] % n:
                    raise ValueError(
                        f"MicroBatchInterleaved: input {i} of shape {x.shape} cannot be split "
                        f"into interleave_num={n} equal parts along dim 0"
                    )
                if batch is None:
                    batch = x.shape[0]
        if batch is None:
            raise ValueError("MicroBatchInterleaved: no Tensor input to split along dim 0")
        out: Any = None
        for k in range(n):
            part = [ops.split(x, 0, n)[k] if isinstance(x, Tensor) else x for x in inputs]
            y = self.network(*part)
            out = y if out is None else _add(out, y)
        return out
