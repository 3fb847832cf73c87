"""Sporeling core: tensors, autograd and MindSpore's functional ops on NumPy/Numba and CuPy.

>>> from sporeling.core import Tensor, ops, grad
>>> grad(lambda x: ops.reduce_sum(x * x))(Tensor([3.0])).tolist()
[6.0]
"""

from . import (  # noqa: E402
    _eager,  # noqa: F401  (installs the eager interpreter)
    communication,
    dtype,
    initializer,
    nn,
    ops,  # noqa: E402  (attaches Tensor methods)
    parallel,
)
from ._version import __version__
from .autograd import (
    enable_grad,
    grad,
    is_grad_enabled,
    jvp,
    no_grad,
    stop_gradient,
    value_and_grad,
    vjp,
    vmap,
)
from .compiler import jit, mutable
from .context import GRAPH_MODE, PYNATIVE_MODE, get_context, set_context
from .dtype import (
    DType,
    bfloat16,
    bool_,
    complex64,
    complex128,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)
from .kernels.cpu import _malloc  # noqa: F401  (tunes glibc's malloc at import: fewer page faults)
from .nn.layers.embedding import RowTensor
from .parallel import (
    ParallelMode,
    get_auto_parallel_context,
    reset_auto_parallel_context,
    set_auto_parallel_context,
)
from .parameter_tuple import ParameterTuple
from .random_state import get_seed, set_seed
from .sparse_tensor import COOTensor, CSRTensor
from .tensor import Parameter, Tensor
from .train.model import Model
from .train.serialization import load_checkpoint, load_param_into_net, save_checkpoint

ms_function = jit  # MindSpore 1.8's name for jit

__all__ = [
    "__version__",
    "Model",
    "Tensor",
    "Parameter",
    "ParameterTuple",
    "jit",
    "ms_function",
    "mutable",
    "RowTensor",
    "COOTensor",
    "CSRTensor",
    "ops",
    "nn",
    "initializer",
    "set_seed",
    "get_seed",
    "dtype",
    "DType",
    "bool_",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "bfloat16",
    "complex64",
    "complex128",
    "set_context",
    "get_context",
    "communication",
    "parallel",
    "ParallelMode",
    "set_auto_parallel_context",
    "get_auto_parallel_context",
    "reset_auto_parallel_context",
    "GRAPH_MODE",
    "PYNATIVE_MODE",
    "grad",
    "value_and_grad",
    "vjp",
    "jvp",
    "vmap",
    "stop_gradient",
    "no_grad",
    "enable_grad",
    "is_grad_enabled",
    "save_checkpoint",
    "load_checkpoint",
    "load_param_into_net",
]
