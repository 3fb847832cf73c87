"""``sporeling.core.nn`` layers with MindSpore 1.8 names, signatures and defaults."""

from . import activation, attention, basic, conv, embedding, normalization, pooling, rnn
from .activation import *  # noqa: F403
from .attention import *  # noqa: F403
from .basic import *  # noqa: F403
from .conv import *  # noqa: F403
from .embedding import *  # noqa: F403
from .micro_batch import MicroBatchInterleaved  # noqa: F401
from .normalization import *  # noqa: F403
from .pooling import *  # noqa: F403
from .rnn import *  # noqa: F403

__all__ = (
    activation.__all__
    + attention.__all__
    + basic.__all__
    + conv.__all__
    + embedding.__all__
    + ["MicroBatchInterleaved"]
    + normalization.__all__
    + pooling.__all__
    + rnn.__all__
)
