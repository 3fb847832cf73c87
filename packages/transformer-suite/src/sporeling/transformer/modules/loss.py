"""``CrossEntropyLoss``: the masked mean of token cross-entropies that GPT trains with,
``sum(ce * input_mask) / (sum(input_mask) + 1e-5)`` as in MindSpore 1.8."""

from __future__ import annotations

from sporeling.core import Tensor, nn, ops
from sporeling.core import dtype as mstype

from .config import OpParallelConfig, default_dpmp_config

__all__ = ["CrossEntropyLoss"]


class CrossEntropyLoss(nn.Cell):
    """``construct(logits, label, input_mask)``: logits (N, C), label (N,) ints, input_mask (N,)."""

    def __init__(self, parallel_config: OpParallelConfig = default_dpmp_config) -> None:
        super().__init__()
        if not isinstance(parallel_config, OpParallelConfig):
            raise TypeError(
                "For 'CrossEntropyLoss', the argument 'parallel_config' must be an "
                "OpParallelConfig, "
                f"but got {type(parallel_config).__name__}."
            )
        self.parallel_config = parallel_config

    def construct(self, logits: Tensor, label: Tensor, input_mask: Tensor) -> Tensor:
        if (
            logits.ndim != 2
            or label.shape != logits.shape[:1]
            or input_mask.shape != logits.shape[:1]
        ):
            raise ValueError(
                "For 'CrossEntropyLoss', expected logits (N, C), label (N,) and input_mask (N,), "
                "but got "
                f"{list(logits.shape)}, {list(label.shape)} and {list(input_mask.shape)}."
            )
        dt = logits.dtype if logits.dtype == mstype.float64 else mstype.float32
        logp = ops.log_softmax(ops.cast(logits, dt), -1)
        picked = ops.gather_elements(logp, 1, ops.reshape(ops.cast(label, mstype.int32), (-1, 1)))
        ce = -ops.reshape(picked, (-1,))
        mask = ops.cast(input_mask, dt)
        return ops.reduce_sum(ce * mask) / (ops.reduce_sum(mask) + 1e-5)
