"""Sporeling custom operators: MindSpore's ``ops.Custom`` off Ascend.

One ``@kernel`` (Hybrid DSL) function runs NumPy-interpreted, compiled for the CPU with
Numba and for the GPU with Numba CUDA; ``Custom`` turns it (or a Python function, an
ahead-of-time compiled C/C++/CUDA kernel, or a Julia function) into a first-class
``sporeling.core`` primitive that works eagerly, under ``grad`` and in graph mode.

>>> import numpy as np
>>> from sporeling.core import Tensor
>>> from sporeling.customop import Custom, kernel
>>> @kernel
... def scale_add(a, b):
...     c = output_tensor(a.shape, a.dtype)
...     for i in parallel(a.shape[0]):
...         c[i] = a[i] * 2.0 + b[i]
...     return c
>>> op = Custom(scale_add)
>>> op(Tensor(np.ones(3, np.float32)), Tensor(np.arange(3, dtype=np.float32))).tolist()
[2.0, 3.0, 4.0]
"""

from ._custom import FUNC_TYPES, Custom
from ._dsl import HybridKernel, kernel, ms_hybrid, ms_kernel
from ._errors import AutodiffError, DSLTypeError, DSLValueError, HybridDSLError
from ._reginfo import CustomRegOp, DataType, custom_info_register
from ._version import __version__

__all__ = [
    "Custom",
    "FUNC_TYPES",
    "kernel",
    "ms_kernel",
    "ms_hybrid",
    "HybridKernel",
    "CustomRegOp",
    "custom_info_register",
    "DataType",
    "HybridDSLError",
    "DSLTypeError",
    "DSLValueError",
    "AutodiffError",
    "__version__",
]
