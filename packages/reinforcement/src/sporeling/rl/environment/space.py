"""``Space``: the shape, dtype and bounds of observations and actions (MindSpore RL 0.5)."""

from __future__ import annotations

from typing import Any

import numpy as np

from sporeling.core import dtype as _dtype


class Space:
    """A discrete (integer dtype, ``low``..``high``-1) or continuous (float dtype) space.

    ``Space((), np.int32, low=0, high=2)`` is CartPole's two actions; ``Space((3,),
    np.float32, low=-1, high=1)`` a box. ``batch_shape`` is prepended for batched envs.
    """

    def __init__(
        self,
        feature_shape: tuple[int, ...],
        dtype: Any,
        low: Any = None,
        high: Any = None,
        batch_shape: tuple[int, ...] | None = None,
    ) -> None:
        self._feature_shape = tuple(int(d) for d in feature_shape)
        self._batch_shape = tuple(batch_shape) if batch_shape else ()
        self._np_dtype = np.dtype(_dtype.to_dtype(dtype).np)
        self._low, self._high = low, high
        if self.is_discrete and (low is None or high is None):
            self._low = 0 if low is None else low
            if high is None:
                raise ValueError("Space: a discrete space needs 'high' (the number of values)")

    @property
    def shape(self) -> tuple[int, ...]:
        return self._batch_shape + self._feature_shape

    @property
    def np_dtype(self) -> np.dtype:
        return self._np_dtype

    @property
    def ms_dtype(self) -> _dtype.DType:
        return _dtype.from_numpy(self._np_dtype)

    @property
    def is_discrete(self) -> bool:
        return self._np_dtype.kind in "iu"

    @property
    def num_values(self) -> int:
        """Discrete: the number of actions; continuous: the flattened size of one sample."""
        if self.is_discrete:
            return int(np.asarray(self._high).max() - np.asarray(self._low).min())
        return int(np.prod(self._feature_shape, dtype=np.int64))

    @property
    def boundary(self) -> tuple[Any, Any]:
        return self._low, self._high

    def sample(self, rng: np.random.Generator | None = None) -> np.ndarray:
        rng = rng if rng is not None else np.random.default_rng()
        if self.is_discrete:
            return rng.integers(self._low, self._high, self.shape).astype(self._np_dtype)
        low = -1.0 if self._low is None else self._low
        high = 1.0 if self._high is None else self._high
        return rng.uniform(low, high, self.shape).astype(self._np_dtype)

    def __repr__(self) -> str:
        return (
            f"Space(shape={self.shape}, dtype={self._np_dtype}, low={self._low}, high={self._high})"
        )
