"""``sporeling.core.train.callback``: the Callback base and the built-in callbacks.

Each part's owner adds an import of its module's names below and lists them in ``__all__``
(Model treats these names as built-in callbacks). ``__all__`` is written out (not computed)
so type checkers see every name; tests/test_exports.py checks that it is every imported
submodule's ``__all__``.
"""

from ._callback import (
    Callback,
    RunContext,
)
from ._monitors import (
    History,
    LambdaCallback,
    LossMonitor,
    ProgressBar,
    TimeMonitor,
)
from ._plateau import (
    EarlyStopping,
    ReduceLROnPlateau,
)
from .checkpoint import (
    CheckpointConfig,
    ModelCheckpoint,
)
from .learning_curve import LearningCurve

__all__ = [
    # ._callback
    "Callback",
    "RunContext",
    # ._monitors
    "LossMonitor",
    "TimeMonitor",
    "History",
    "LambdaCallback",
    "ProgressBar",
    # ._plateau
    "EarlyStopping",
    "ReduceLROnPlateau",
    # .checkpoint
    "CheckpointConfig",
    "ModelCheckpoint",
    # .learning_curve
    "LearningCurve",
]
