"""``mindspore.common.api``: ``jit`` and its 1.8 name ``ms_function``."""

from ..compiler import jit

ms_function = jit

__all__ = ["jit", "ms_function"]
