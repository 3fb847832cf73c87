"""``mindspore.common.initializer``: the core's initializers under MindSpore's module path."""

from ..initializer import *  # noqa: F403
from ..initializer import __all__ as __all__  # noqa: F401
