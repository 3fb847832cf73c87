"""``mindspore.common.dtype`` (``mstype``): the core's dtypes under MindSpore's module path."""

from ..dtype import *  # noqa: F403
from ..dtype import __all__ as _all

# MindSpore's spelled-out aliases
from ..dtype import bool_ as bool_  # noqa: E402
from ..dtype import float16 as half  # noqa: E402
from ..dtype import float32 as single  # noqa: E402
from ..dtype import float64 as double  # noqa: E402
from ..dtype import int32 as int_  # noqa: E402

__all__ = [*_all, "half", "single", "double", "int_"]
