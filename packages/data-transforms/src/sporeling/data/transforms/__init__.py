"""sporeling.data.transforms: common transforms (MindSpore 1.8 `dataset.transforms`)."""

from sporeling.data.transforms._base import (
    PyTensorOperation,
    TensorOperation,
    Transform,
    resolve_operations,
    use_rng,
)
from sporeling.data.transforms.transforms import (
    Compose,
    Concatenate,
    Duplicate,
    Fill,
    Mask,
    OneHot,
    PadEnd,
    Plugin,
    RandomApply,
    RandomChoice,
    RandomOrder,
    Relational,
    Slice,
    TypeCast,
    Unique,
)

__all__ = [
    "Compose",
    "Concatenate",
    "Duplicate",
    "Fill",
    "Mask",
    "OneHot",
    "PadEnd",
    "Plugin",
    "PyTensorOperation",
    "RandomApply",
    "RandomChoice",
    "RandomOrder",
    "Relational",
    "Slice",
    "TensorOperation",
    "Transform",
    "TypeCast",
    "Unique",
    "resolve_operations",
    "use_rng",
]
