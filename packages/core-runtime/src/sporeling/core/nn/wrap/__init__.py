"""Training wrappers: ``WithLossCell``, ``TrainOneStepCell``, gradient clipping, loss scaling."""

from .cell_wrapper import (
    ParameterUpdate,
    TrainOneStepCell,
    WithEvalCell,
    WithGradCell,
    WithLossCell,
)
from .grad_clip import ClipByNorm, TrainOneStepWithClipCell
from .loss_scale import (
    DynamicLossScaleManager,
    DynamicLossScaleUpdateCell,
    FixedLossScaleManager,
    FixedLossScaleUpdateCell,
    LossScaleManager,
    TrainOneStepWithLossScaleCell,
)

__all__ = [
    "WithLossCell",
    "WithGradCell",
    "WithEvalCell",
    "TrainOneStepCell",
    "ParameterUpdate",
    "ClipByNorm",
    "TrainOneStepWithClipCell",
    "FixedLossScaleUpdateCell",
    "DynamicLossScaleUpdateCell",
    "TrainOneStepWithLossScaleCell",
    "LossScaleManager",
    "FixedLossScaleManager",
    "DynamicLossScaleManager",
]

from .forward_value_and_grad import ForwardValueAndGrad  # noqa: E402

__all__ += ["ForwardValueAndGrad"]
