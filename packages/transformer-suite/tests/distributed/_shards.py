"""What a rank's parameter should hold, given the one-process run's whole parameter: the
scripts compare each rank's (possibly tensor-parallel) parameters with one process's."""

import numpy as np


def expected_shard(full: np.ndarray, shape: tuple[int, ...], j: int) -> np.ndarray:
    """``full`` itself, or, where ``shape`` is smaller along one axis, the ``j``-th slice
    of that size along it (rank ``j`` of the tensor-parallel group)."""
    if tuple(shape) == full.shape:
        return full
    axis = next(i for i, (a, b) in enumerate(zip(shape, full.shape)) if a != b)
    k = shape[axis]
    return np.take(full, range(j * k, (j + 1) * k), axis=axis)
