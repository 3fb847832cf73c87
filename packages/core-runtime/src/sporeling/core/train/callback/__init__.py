"""``sporeling.core.train.callback``: the Callback base and the built-in callbacks.

Each part's owner adds one import line for its module below; ``__all__`` collects the
``__all__`` of every imported submodule (Model treats these names as built-in callbacks).
"""

from types import ModuleType as _ModuleType

from ._callback import *  # noqa: F403
from ._monitors import *  # noqa: F403
from ._plateau import *  # noqa: F403
from .checkpoint import *  # noqa: F403

__all__ = [
    _name
    for _mod in list(globals().values())
    if isinstance(_mod, _ModuleType) and _mod.__name__.startswith(__name__ + ".")
    for _name in getattr(_mod, "__all__", ())
]
