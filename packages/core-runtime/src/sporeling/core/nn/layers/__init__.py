"""``sporeling.core.nn`` layers with MindSpore 1.8 names, signatures and defaults.

``__all__`` is written out (not computed) so type checkers see every name: it is each
submodule's ``__all__`` in import order; tests/test_exports.py checks that they agree.
"""

from . import activation as activation
from . import attention as attention
from . import basic as basic
from . import conv as conv
from . import embedding as embedding
from . import normalization as normalization
from . import pooling as pooling
from . import rnn as rnn
from .activation import (
    CELU,
    ELU,
    GELU,
    FastGelu,
    HShrink,
    HSigmoid,
    HSwish,
    LeakyReLU,
    LogSigmoid,
    LogSoftmax,
    Mish,
    PReLU,
    ReLU,
    ReLU6,
    SeLU,
    Sigmoid,
    SiLU,
    Softmax,
    Softplus,
    SoftShrink,
    Softsign,
    Tanh,
    get_activation,
)
from .attention import MultiheadAttention
from .basic import (
    Dense,
    Dropout,
    Flatten,
    Identity,
)
from .conv import (
    Conv1d,
    Conv1dTranspose,
    Conv2d,
    Conv2dTranspose,
    Conv3d,
    Conv3dTranspose,
)
from .embedding import (
    Embedding,
    EmbeddingLookup,
    RowTensor,
)
from .micro_batch import MicroBatchInterleaved
from .normalization import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    GroupNorm,
    LayerNorm,
)
from .pipeline_cell import PipelineCell
from .pooling import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveMaxPool1d,
    AdaptiveMaxPool2d,
    AvgPool1d,
    AvgPool2d,
    MaxPool1d,
    MaxPool2d,
)
from .rnn import (
    GRU,
    LSTM,
    RNN,
    GRUCell,
    LSTMCell,
    RNNCell,
)

__all__ = [
    # .activation
    "ReLU",
    "ReLU6",
    "LeakyReLU",
    "ELU",
    "CELU",
    "SeLU",
    "GELU",
    "FastGelu",
    "Sigmoid",
    "LogSigmoid",
    "Tanh",
    "Softmax",
    "LogSoftmax",
    "SiLU",
    "HSwish",
    "HSigmoid",
    "Mish",
    "SoftShrink",
    "HShrink",
    "Softsign",
    "Softplus",
    "PReLU",
    "get_activation",
    # .attention
    "MultiheadAttention",
    # .basic
    "Dense",
    "Flatten",
    "Dropout",
    "Identity",
    # .conv
    "Conv1d",
    "Conv2d",
    "Conv3d",
    "Conv1dTranspose",
    "Conv2dTranspose",
    "Conv3dTranspose",
    # .embedding
    "Embedding",
    "EmbeddingLookup",
    "RowTensor",
    # .micro_batch
    "MicroBatchInterleaved",
    # .pipeline_cell
    "PipelineCell",
    # .normalization
    "BatchNorm1d",
    "BatchNorm2d",
    "BatchNorm3d",
    "LayerNorm",
    "GroupNorm",
    # .pooling
    "MaxPool1d",
    "MaxPool2d",
    "AvgPool1d",
    "AvgPool2d",
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d",
    # .rnn
    "RNN",
    "LSTM",
    "GRU",
    "RNNCell",
    "LSTMCell",
    "GRUCell",
]

# layers added for MindSpore 1.8 scripts being ported (one module per purpose)
from . import activation_more as activation_more  # noqa: E402
from . import combined as combined  # noqa: E402
from . import image as image  # noqa: E402
from . import sync_batch_norm as sync_batch_norm  # noqa: E402
from .activation_more import L1Regularizer, RReLU, Softmax2d, Tanhshrink  # noqa: E402
from .combined import Conv2dBnAct, DenseBnAct  # noqa: E402
from .image import InstanceNorm1d, InstanceNorm2d, Pad, ResizeBilinear, Unfold  # noqa: E402
from .sync_batch_norm import SyncBatchNorm  # noqa: E402

__all__ += [
    # .activation_more
    "RReLU",
    "Tanhshrink",
    "Softmax2d",
    "L1Regularizer",
    # .combined
    "Conv2dBnAct",
    "DenseBnAct",
    # .image
    "Pad",
    "ResizeBilinear",
    "Unfold",
    "InstanceNorm1d",
    "InstanceNorm2d",
    # .sync_batch_norm
    "SyncBatchNorm",
]
