"""Sparse tensors: :class:`COOTensor` and :class:`CSRTensor` (MindSpore 1.8's classes).

Defined beside the sparse ops they are made of (``ops/_sparse_tensor.py``); this module keeps
their import path.
"""

from .ops._sparse_tensor import COOTensor, CSRTensor

__all__ = ["COOTensor", "CSRTensor"]
