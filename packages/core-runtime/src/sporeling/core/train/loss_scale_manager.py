"""``mindspore.train.loss_scale_manager``: the loss-scale managers ``Model`` accepts."""

from ..nn.wrap.loss_scale import (
    DynamicLossScaleManager,
    FixedLossScaleManager,
    LossScaleManager,
)

__all__ = ["LossScaleManager", "FixedLossScaleManager", "DynamicLossScaleManager"]
