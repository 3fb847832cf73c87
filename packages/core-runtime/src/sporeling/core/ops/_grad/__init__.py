"""MindSpore's ``ops._grad`` path (``from mindspore.ops._grad.grad_base import
bprop_getters``); the registry lives in :mod:`sporeling.core.ops.bprop_registry`."""

from ..bprop_registry import bprop_getters

__all__ = ["bprop_getters"]
