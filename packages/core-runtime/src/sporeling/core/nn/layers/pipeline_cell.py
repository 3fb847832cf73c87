"""``nn.PipelineCell`` (MindSpore 1.8): micro-batches through pipeline stages on MPI ranks.

``PipelineCell(network, micro_size)`` splits every Tensor input along dim 0 into
``micro_size`` equal micro-batches and returns the **sum** of the network's outputs (its
loss) over them, as MindSpore does: with a sum-reduced loss the result and its gradients
equal the full batch's; with a mean-reduced loss they are ``micro_size`` times the full
batch's mean.

With ``set_auto_parallel_context(pipeline_stages=N)`` (N > 1, N processes under
``sporeling launch -n N``), the cells marked ``cell.pipeline_stage = k`` run on stage ``k``
only and the ranks run a real schedule over MPI point-to-point messages
(:mod:`sporeling.core.parallel.pipeline`): ``schedule = "gpipe"`` (default; all forwards,
then all backwards) or ``"1f1b"``. Every rank returns the summed loss;
:meth:`trainable_params` then lists only this rank's stage's parameters, so an optimizer
built from it updates only them. With ``k * N`` processes each stage runs data parallel on
``k`` ranks (ranks ``s*k .. s*k+k-1`` run stage ``s``, as in MindSpore): its gradients and
the loss are summed over them (averaged with ``gradients_mean``); with ``model_parallel``
m > 1 (a Sporeling attribute) the ``k`` ranks of a stage are ``k / m`` copies of m
tensor-parallel shards, and each shard's gradients are reduced over its copies only. With
``enable_parallel_optimizer`` an optimizer shards its state over the same data-parallel
ranks of its stage. ``last_order`` lists
the last call's forwards and backwards on this rank (``["F0", "F1", "B0", ...]``). The
schedule runs eagerly: under GRAPH_MODE the outermost cell (``TrainOneStepCell``) falls
back to PYNATIVE with a warning; higher-order gradients through the pipeline raise.
"""

from __future__ import annotations

from typing import Any

from ... import _hooks
from ...tensor import Tensor
from ..cell import Cell
from ._utils import arg_error, check_int

__all__ = ["PipelineCell"]


def _stages() -> int:
    return _hooks.parallel.get_auto_parallel_context("pipeline_stages")


class PipelineCell(Cell):
    """Run ``network`` on ``micro_size`` micro-batches, staged over ranks; sum the outputs."""

    def __init__(self, network: Cell, micro_size: int) -> None:
        super().__init__(auto_prefix=False)
        if not isinstance(network, Cell):
            raise arg_error("PipelineCell", "network", network, "a Cell", TypeError)
        self.network = network
        self.micro_size = check_int("PipelineCell", "micro_size", micro_size, 1)
        self.schedule = "gpipe"
        # Sporeling: the ranks of each stage form groups of this many consecutive ranks that
        # hold tensor-parallel shards (the parallel.tensor_parallel layers on their groups);
        # the stage's data-parallel reduction then runs over the ranks of one shard index
        self.model_parallel = 1
        self.last_order: list[str] = []  # the last call's schedule on this rank ("F0", "B0", ...)

    # ---- the stage layout ----------------------------------------------------------------
    def _layout(self) -> tuple[Any, int, list[int], str | None] | None:
        """``(plan, stage, peers, dp_group)`` when a pipeline over ranks is configured
        (``peers[s]``: the rank running stage ``s`` on this rank's data; ``dp_group``: the
        ranks of this stage, when several share it), else ``None``."""
        if _stages() == 1:
            return None
        return _hooks.parallel.pipeline_layout(self)  # the parallel layer's stage plan

    def trainable_params(self, recurse: bool = True) -> list[Any]:
        """This rank's stage's trainable parameters under a pipeline, else all of them."""
        layout = self._layout()
        if layout is None:
            return super().trainable_params(recurse)
        plan, stage = layout[0], layout[1]
        return [p for p in plan.params_of(stage) if p.requires_grad]

    # ---- the call ------------------------------------------------------------------------
    def _split(self, inputs: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        n = self.micro_size
        found = False
        for i, x in enumerate(inputs):
            if isinstance(x, Tensor):
                found = True
                if x.ndim == 0 or x.shape[0] % n:
                    raise ValueError(
                        f"PipelineCell: input {i} of shape {x.shape} cannot be split into "
                        f"micro_size={n} equal micro-batches along dim 0 (the batch size must "
                        "be a multiple of micro_size)"
                    )
        if not found:
            raise ValueError("PipelineCell: no Tensor input to split into micro-batches")
        parts = []
        for k in range(n):
            part = []
            for x in inputs:
                if isinstance(x, Tensor):
                    m = x.shape[0] // n
                    x = x[k * m : (k + 1) * m]
                part.append(x)
            parts.append(tuple(part))
        return parts

    def construct(self, *inputs: Any) -> Any:
        if self.schedule not in ("gpipe", "1f1b"):
            raise arg_error(
                "PipelineCell", "schedule", self.schedule, "'gpipe' or '1f1b'", ValueError
            )
        parts = self._split(inputs)
        layout = self._layout()
        if layout is None:  # one process: micro-batches one after the other, summed
            total = None
            for part in parts:
                out = self.network(*part)
                total = out if total is None else total + out
            return total
        return self._pipeline(parts, *layout)

    def _pipeline(
        self, parts: list[tuple[Any, ...]], plan: Any, rank: int, peers: list[int], group: Any
    ) -> Tensor:
        return _hooks.parallel.pipeline_run(self, parts, plan, rank, peers, group)
