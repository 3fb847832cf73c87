"""Samplers: which rows of a random-access source an epoch reads, in which order.

MindSpore 1.8 names and signatures (``mindspore.dataset.SequentialSampler`` ...). A sampler
turns the source's row count ``n`` and an epoch key into an index array; random samplers
draw from ``numpy.random.default_rng((seed, epoch, ...))`` so an epoch's order is fixed by
the seed and the epoch and is the same in every shard.

Sharding (``num_shards`` / ``shard_id`` on a source, or :class:`DistributedSampler`) takes
every ``num_shards``-th index of the epoch's order, starting at ``shard_id``: the shards are
disjoint and together cover every sample exactly once (sizes differ by at most one; no
padding, unlike MindSpore's ``DistributedSampler``, which repeats samples to even them).
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = [
    "Sampler",
    "SequentialSampler",
    "RandomSampler",
    "DistributedSampler",
    "SubsetRandomSampler",
    "SubsetSampler",
    "WeightedRandomSampler",
]


def _check_int(
    where: str,
    name: str,
    value: Any,
    low: int,
    allow_none: bool = True,
    error: type[Exception] = ValueError,
) -> None:
    """A type error is TypeError; a value out of range is ``error``: MindSpore checks
    num_samples in Python (ValueError) and the other counts in C++ (RuntimeError)."""
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{where}: argument '{name}' expected an int, got {value!r}")
    if value < low:
        raise error(f"{where}: argument '{name}' expected an int >= {low}, got {value}")


def _check_indices(where: str, indices: Any) -> np.ndarray:
    if isinstance(indices, (str, bytes)) or not isinstance(indices, (Sequence, np.ndarray)):
        raise TypeError(
            f"{where}: argument 'indices' expected a list of ints, got {type(indices).__name__}"
        )
    arr = np.asarray(indices)
    if arr.size and (arr.dtype.kind not in "iu" or arr.ndim != 1):
        raise TypeError(f"{where}: argument 'indices' expected a 1-D list of ints, got {indices!r}")
    return arr.astype(np.int64).reshape(-1)


class Sampler:
    """Base class. Subclasses give ``_order(n, rng_key)``: the indices of one epoch."""

    def __init__(self, num_samples: int | None = None) -> None:
        _check_int(type(self).__name__, "num_samples", num_samples, 0)
        self.num_samples = None if num_samples in (None, 0) else int(num_samples)

    @property
    def is_random(self) -> bool:
        return False

    def _order(self, n: int, key: tuple[int, ...]) -> np.ndarray:
        raise NotImplementedError(f"{type(self).__name__} must define _order()")

    def get_indices(self, n: int, key: tuple[int, ...] = (0, 0)) -> np.ndarray:
        """The row indices an epoch reads from a source of ``n`` rows (``key``: seed, epoch).

        With a child sampler (``add_child``), this sampler picks from the child's indices.
        """
        child = getattr(self, "child", None)
        if child is None:
            order = self._order(n, key)
        else:
            ids = child.get_indices(n, (*key, 0xC41D))
            self._validate(len(ids))
            order = ids[self._order(len(ids), key)]
        if self.num_samples is not None:
            order = order[: self.num_samples]
        return order

    def add_child(self, sampler: Sampler) -> None:
        """Chain ``sampler`` under this one: it samples the rows, this one samples from them."""
        if not isinstance(sampler, Sampler):
            raise TypeError(
                f"{type(self).__name__}.add_child: expected a Sampler, got {type(sampler).__name__}"
            )
        if getattr(self, "child", None) is not None:
            raise RuntimeError(
                "Cannot add child sampler, this sampler already has a child sampler."
            )
        self.child = sampler

    def parse(self) -> Sampler:
        """For MindSpore code that calls it to validate a sampler: the checks already ran when
        the sampler was built (errors of the types MindSpore's ``parse`` raises)."""
        return self

    def get_child(self) -> Sampler | None:
        """The child sampler (``add_child``), or None."""
        return getattr(self, "child", None)

    def get_num_samples(self, n: int) -> int:
        return len(self.get_indices(n, (0, 0)))

    def _validate(self, n: int) -> None:
        """Raise if the sampler cannot run over ``n`` rows (indices out of range...)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(num_samples={self.num_samples})"


class SequentialSampler(Sampler):
    """Rows ``start_index, start_index + 1, ...`` in order."""

    def __init__(self, start_index: int | None = None, num_samples: int | None = None) -> None:
        super().__init__(num_samples)
        _check_int("SequentialSampler", "start_index", start_index, 0, error=RuntimeError)
        self.start_index = int(start_index or 0)

    def _order(self, n: int, key: tuple[int, ...]) -> np.ndarray:
        if n and self.start_index >= n:
            raise RuntimeError(
                f"SequentialSampler: start_index {self.start_index} is out of range for a "
                f"dataset of {n} rows"
            )
        return np.arange(self.start_index, n, dtype=np.int64)


class RandomSampler(Sampler):
    """A random permutation per epoch (``replacement=True``: draws with replacement)."""

    def __init__(self, replacement: bool = False, num_samples: int | None = None) -> None:
        super().__init__(num_samples)
        if not isinstance(replacement, bool):
            raise TypeError(
                f"RandomSampler: argument 'replacement' expected a bool, got {replacement!r}"
            )
        self.replacement = replacement

    @property
    def is_random(self) -> bool:
        return True

    def _order(self, n: int, key: tuple[int, ...]) -> np.ndarray:
        rng = np.random.default_rng([*key, 0x5A])
        if self.replacement:
            return rng.integers(0, n, size=self.num_samples or n) if n else np.zeros(0, np.int64)
        return rng.permutation(n).astype(np.int64)


class DistributedSampler(Sampler):
    """Shard ``shard_id`` of ``num_shards``: every ``num_shards``-th index of the epoch order.

    ``offset`` is accepted for MindSpore compatibility; only its default -1 is supported.
    """

    def __init__(
        self,
        num_shards: int,
        shard_id: int,
        shuffle: bool = True,
        num_samples: int | None = None,
        offset: int = -1,
    ) -> None:
        super().__init__(num_samples)
        _check_int("DistributedSampler", "num_shards", num_shards, 1, False, error=RuntimeError)
        _check_int("DistributedSampler", "shard_id", shard_id, 0, False, error=RuntimeError)
        if shard_id >= num_shards:
            raise RuntimeError(
                f"DistributedSampler: argument 'shard_id' expected an int in [0, {num_shards}), "
                f"got {shard_id}"
            )
        if not isinstance(shuffle, bool):
            raise TypeError(
                f"DistributedSampler: argument 'shuffle' expected a bool, got {shuffle!r}"
            )
        if isinstance(offset, bool) or not isinstance(offset, numbers.Integral):
            raise TypeError(
                f"DistributedSampler: argument 'offset' expected an int, got {offset!r}"
            )
        if offset > num_shards:
            raise RuntimeError(
                f"DistributedSampler: offset must be no more than num_shards({num_shards}), "
                f"got offset={offset}"
            )
        if offset != -1:
            raise RuntimeError(
                f"DistributedSampler: argument 'offset' other than -1 is not supported here, "
                f"got {offset} (not implemented)"
            )
        self.num_shards = int(num_shards)
        self.shard_id = int(shard_id)
        self.shuffle = shuffle
        self.offset = offset

    @property
    def is_random(self) -> bool:
        return self.shuffle

    def _order(self, n: int, key: tuple[int, ...]) -> np.ndarray:
        if self.shuffle:
            order = np.random.default_rng([*key, 0xD15]).permutation(n).astype(np.int64)
        else:
            order = np.arange(n, dtype=np.int64)
        return order[self.shard_id :: self.num_shards]

    def __repr__(self) -> str:
        return (
            f"DistributedSampler(num_shards={self.num_shards}, shard_id={self.shard_id}, "
            f"shuffle={self.shuffle}, num_samples={self.num_samples})"
        )


class SubsetSampler(Sampler):
    """The given indices, in the given order."""

    def __init__(self, indices: Sequence[int], num_samples: int | None = None) -> None:
        super().__init__(num_samples)
        self.indices = _check_indices(type(self).__name__, indices)

    def _validate(self, n: int) -> None:
        bad = self.indices[(self.indices < 0) | (self.indices >= n)]
        if bad.size:
            raise RuntimeError(
                f"{type(self).__name__}: indices {bad[:5].tolist()} are out of range for a "
                f"dataset of {n} rows"
            )

    def _order(self, n: int, key: tuple[int, ...]) -> np.ndarray:
        self._validate(n)
        return self.indices.copy()


class SubsetRandomSampler(SubsetSampler):
    """The given indices in a random order per epoch."""

    @property
    def is_random(self) -> bool:
        return True

    def _order(self, n: int, key: tuple[int, ...]) -> np.ndarray:
        self._validate(n)
        return np.random.default_rng([*key, 0x5B5]).permutation(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn with probability proportional to ``weights``."""

    def __init__(
        self, weights: Sequence[float], num_samples: int | None = None, replacement: bool = True
    ) -> None:
        super().__init__(num_samples)
        if not isinstance(weights, (list, np.ndarray)):  # MindSpore: a list (tuples refused)
            raise TypeError(
                f"WeightedRandomSampler: argument 'weights' expected a list of numbers, "
                f"got {type(weights).__name__} {weights!r}"
            )
        for i, v in enumerate(weights):
            if isinstance(v, bool) or not isinstance(v, (int, float, np.number)):
                raise TypeError(
                    f"WeightedRandomSampler: type of weights element must be number, got "
                    f"weights[{i}] = {v!r} ({type(v).__name__})"
                )
        w = np.asarray(weights, dtype=np.float64).reshape(-1)
        # RuntimeError and MindSpore's wording (its C++ parse() raises these)
        if w.size == 0:
            raise RuntimeError("WeightedRandomSampler: weights vector must not be empty, got []")
        if (w < 0).any() or not np.isfinite(w).all():
            raise RuntimeError(
                "WeightedRandomSampler: weights vector must not contain negative numbers "
                f"(nor NaN or inf), got: {list(weights)[:8]!r}"
            )
        if w.sum() <= 0:
            raise RuntimeError(
                "WeightedRandomSampler: elements of weights vector must not be all zero, "
                f"got: {list(weights)[:8]!r}"
            )
        if not isinstance(replacement, bool):
            raise TypeError(
                f"WeightedRandomSampler: argument 'replacement' expected a bool, "
                f"got {replacement!r}"
            )
        if not replacement and num_samples is not None and num_samples > int((w > 0).sum()):
            raise ValueError(
                f"WeightedRandomSampler: num_samples={num_samples} exceeds the "
                f"{int((w > 0).sum())} "
                "indices with a positive weight (replacement=False)"
            )
        self.weights = w
        self.replacement = replacement

    @property
    def is_random(self) -> bool:
        return True

    def _order(self, n: int, key: tuple[int, ...]) -> np.ndarray:
        if len(self.weights) > n:
            raise RuntimeError(
                f"WeightedRandomSampler: {len(self.weights)} weights for a dataset of {n} rows"
            )
        rng = np.random.default_rng([*key, 0x3E1])
        size = self.num_samples or len(self.weights)
        p = self.weights / self.weights.sum()
        return rng.choice(len(p), size=size, replace=self.replacement, p=p).astype(np.int64)
