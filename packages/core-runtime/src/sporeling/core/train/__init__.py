"""``sporeling.core.train``: Model, callbacks, metrics, checkpoints and in-memory datasets.

Each part's owner adds one import line for its module below; ``__all__`` collects the
``__all__`` of every imported submodule.
"""

from types import ModuleType as _ModuleType

from .callback import *  # noqa: F403
from .dataset import *  # noqa: F403
from .metrics import *  # noqa: F403
from .model import *  # noqa: F403
from .serialization import *  # noqa: F403

__all__ = list(
    dict.fromkeys(
        _name
        for _mod in list(globals().values())
        if isinstance(_mod, _ModuleType) and _mod.__name__.startswith(__name__ + ".")
        for _name in getattr(_mod, "__all__", ())
    )
)
