"""Loss cells: ``MSELoss``, ``CrossEntropyLoss``, ``SoftmaxCrossEntropyWithLogits``, ..."""

from .loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    LossBase,
    MAELoss,
    MSELoss,
    NLLLoss,
    RMSELoss,
    SmoothL1Loss,
    SoftMarginLoss,
    SoftmaxCrossEntropyWithLogits,
)

__all__ = [
    "LossBase",
    "L1Loss",
    "MAELoss",
    "MSELoss",
    "RMSELoss",
    "SmoothL1Loss",
    "HuberLoss",
    "SoftMarginLoss",
    "SoftmaxCrossEntropyWithLogits",
    "CrossEntropyLoss",
    "NLLLoss",
    "KLDivLoss",
    "BCELoss",
    "BCEWithLogitsLoss",
]

from .segmentation import (  # noqa: E402
    CosineEmbeddingLoss,
    DiceLoss,
    FocalLoss,
    MultiClassDiceLoss,
)

__all__ += ["FocalLoss", "DiceLoss", "MultiClassDiceLoss", "CosineEmbeddingLoss"]
