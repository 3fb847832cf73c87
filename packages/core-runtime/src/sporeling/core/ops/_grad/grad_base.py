"""MindSpore's ``ops._grad.grad_base``: ``bprop_getters``."""

from ..bprop_registry import bprop_getters

__all__ = ["bprop_getters"]
