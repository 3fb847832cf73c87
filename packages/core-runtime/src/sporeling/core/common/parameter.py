"""``mindspore.common.parameter``: ``Parameter`` and ``ParameterTuple``."""

from ..parameter_tuple import ParameterTuple
from ..tensor import Parameter

__all__ = ["Parameter", "ParameterTuple"]
