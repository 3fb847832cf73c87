"""``nn.MicroBatchInterleaved`` (MindSpore 1.8's "multi-copy parallel" wrapper).

``MicroBatchInterleaved(network, interleave_num=2)`` slices every Tensor input along dim 0
into ``interleave_num`` equal copies, runs ``network`` on each copy and returns the **sum**
of the copies' outputs (tuples are summed element by element), as MindSpore does: with a
sum-reduced loss the result and its gradients equal the full batch's; with a mean-reduced
loss they are ``interleave_num`` times the full-batch mean.

A batch that does not divide raises ``ValueError``. Non-Tensor inputs are passed to every
copy unchanged.

Overlap (eager mode): the copies take turns on threads, handing the turn on at each
collective, which is started non-blocking -- so copy ``k+1`` computes while copy ``k``'s
all-reduce or all-gather (e.g. a ``RowParallelDense``'s) is in flight, in the forward and
again in the backward (:mod:`sporeling.core.communication.overlap`,
:mod:`sporeling.core.parallel.interleave`). Every rank starts its collectives in the same
order, and MPI needs only ``MPI_THREAD_SERIALIZED``.

``overlap`` (attribute): ``None`` (default) takes turns on threads when the world has more
than one process (and MPI allows calls from several threads; if not, a warning says so)
and runs the copies one after the other otherwise; ``True``/``False`` force either
(``False`` is the no-overlap baseline; ``True`` without MPI thread support raises).
``events`` (attribute) is the :class:`~sporeling.core.communication.overlap.EventLog` of
the last step: compute turns and each collective's start/wait/completion, forward and
backward. Taking turns costs a thread wake-up per collective: on a machine where ranks
share cores with other work that can outweigh the hidden communication
(``benchmarks/bench_distributed.py``, case ``micro-batch``).

Under graph-mode tracing, and inside nested differentiation (``grad`` of ``grad``), the
copies run one after the other on the caller's tape, as plain ops.

>>> import numpy as np
>>> from sporeling.core import Tensor, nn
>>> net = nn.MicroBatchInterleaved(nn.Dense(3, 2), 2)
>>> net(Tensor(np.ones((4, 3), np.float32))).shape
(2, 2)
"""

from __future__ import annotations

from typing import Any

from ... import _hooks, ops
from ...tensor import Tensor
from ..cell import Cell
from ._utils import arg_error, check_int

__all__ = ["MicroBatchInterleaved"]


def _add(a: Any, b: Any) -> Any:
    if isinstance(a, (tuple, list)):
        return type(a)(_add(x, y) for x, y in zip(a, b, strict=True))
    return a + b


def _eager_outermost() -> bool:
    """True when copies may run on threads: eager execution, no nested differentiation."""
    from ..._eager import EagerInterpreter
    from ..._primitive import current_interpreter
    from ...autograd import functional

    return isinstance(current_interpreter(), EagerInterpreter) and functional._DEPTH[0] <= 1


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
        self.overlap: bool | None = None
        self.events = _hooks.parallel.event_log()

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
        if n == 1:
            return self.network(*inputs)
        if self.overlap not in (None, True, False):
            raise arg_error(
                "MicroBatchInterleaved", "overlap", self.overlap, "None, True or False", TypeError
            )
        if not _eager_outermost():
            return self._on_caller_tape(inputs)
        hooks = _hooks.parallel  # the engine lives in the parallel layer
        threads = hooks.interleave_threads() if self.overlap is None else bool(self.overlap)
        self.events.clear()
        return hooks.interleaved_call(self.network, inputs, n, threads, self.events)

    def _on_caller_tape(self, inputs: tuple[Any, ...]) -> Any:
        """The copies one after the other as plain ops (graph tracing, higher order)."""
        n = self.interleave_num
        out: Any = None
        for k in range(n):
            part = [ops.split(x, 0, n)[k] if isinstance(x, Tensor) else x for x in inputs]
            y = self.network(*part)
            out = y if out is None else _add(out, y)
        return out
