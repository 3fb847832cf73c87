"""``mindspore.common`` module paths that 1.8 scripts import from.

``from mindspore.common import dtype as mstype``, ``common.initializer``,
``common.parameter`` (Parameter, ParameterTuple), ``common.tensor``, ``common.api``
(``jit``/``ms_function``), ``common.set_seed``: each re-exports the core's own object.
"""

from ..compiler import jit, mutable
from ..parameter_tuple import ParameterTuple
from ..random_state import get_seed, set_seed
from ..tensor import Parameter, Tensor
from . import api, dtype, initializer, parameter, tensor

ms_function = jit

__all__ = [
    "dtype",
    "initializer",
    "parameter",
    "tensor",
    "api",
    "Tensor",
    "Parameter",
    "ParameterTuple",
    "jit",
    "ms_function",
    "mutable",
    "set_seed",
    "get_seed",
]
