"""Base classes of the dataset sources: random-access (samplers) and streaming ones.

A random-access source knows its row count and reads row ``i`` on demand (``_load``); an
epoch reads the indices its sampler gives, sharded and capped by ``num_samples``, and can
start at any position. Loads run on ``num_parallel_workers`` threads (or processes for
``GeneratorDataset(python_multiprocessing=True)``), results in order.

A streaming source (a Python generator or iterable) reads rows in order; sharding takes
every ``num_shards``-th row, ``start`` is reached by reading and dropping rows.
"""

from __future__ import annotations

import itertools
import traceback
from collections.abc import Iterator
from typing import Any

import numpy as np

from .base import (
    Dataset,
    Item,
    PipelineError,
    Row,
    Run,
    check_bool,
    check_int,
    check_on_error,
    check_workers,
    pooled,
)
from .pk_sampler import bind_source
from .samplers import DistributedSampler, RandomSampler, Sampler, SequentialSampler
from .workers import TaskFailure

__all__ = ["MappableSource", "StreamSource", "resolve_sampler", "check_shards"]


def check_shards(where: str, num_shards: Any, shard_id: Any) -> tuple[int | None, int | None]:
    # RuntimeError and MindSpore's wording, as its dataset tests check them
    if num_shards is not None and shard_id is None:
        raise RuntimeError(
            f"{where}: num_shards is specified and currently requires shard_id as well "
            f"(got num_shards={num_shards!r}, shard_id=None; give both or neither)"
        )
    if shard_id is not None and num_shards is None:
        raise RuntimeError(
            f"{where}: shard_id is specified but num_shards is not "
            f"(got shard_id={shard_id!r}; give both or neither)"
        )
    if num_shards is None:
        return None, None
    n = check_int(where, "num_shards", num_shards, 1)
    s = check_int(where, "shard_id", shard_id, 0)
    if s >= n:
        raise ValueError(f"{where}: argument 'shard_id' expected an int in [0, {n}), got {s}")
    return n, s


def resolve_sampler(
    where: str,
    num_samples: Any,
    shuffle: Any,
    sampler: Any,
    num_shards: Any,
    shard_id: Any,
    default_shuffle: bool = True,
) -> Sampler:
    """The sampler MindSpore 1.8 builds from a source's arguments."""
    num_samples = check_int(where, "num_samples", num_samples, 0, none=True)
    shuffle = check_bool(where, "shuffle", shuffle, none=True)
    shards = check_shards(where, num_shards, shard_id)
    if sampler is not None:
        if shuffle is not None:
            raise RuntimeError(
                f"{where}: sampler and shuffle cannot be specified at the same time (got "
                f"sampler={type(sampler).__name__}, shuffle={shuffle}; give one of them)"
            )
        if shards[0] is not None:
            raise RuntimeError(
                f"{where}: sampler and sharding cannot be specified at the same time (got "
                f"sampler={type(sampler).__name__}, num_shards={shards[0]}; use "
                "DistributedSampler to shard with a sampler)"
            )
        if num_samples is not None:
            raise RuntimeError(
                f"{where}: sampler and num_samples cannot be specified at the same time (got "
                f"sampler={type(sampler).__name__}, num_samples={num_samples}; give the sampler "
                "its num_samples)"
            )
        if isinstance(sampler, (list, tuple, np.ndarray)):
            from .samplers import SubsetSampler

            sampler = SubsetSampler(list(sampler))
        if not isinstance(sampler, Sampler):
            raise TypeError(
                f"{where}: argument 'sampler' expected a Sampler or a list of indices, got "
                f"{type(sampler).__name__}"
            )
        return sampler
    do_shuffle = default_shuffle if shuffle is None else shuffle
    if shards[0] is not None:
        return DistributedSampler(
            shards[0], int(shards[1] or 0), shuffle=do_shuffle, num_samples=num_samples
        )
    if do_shuffle:
        return RandomSampler(num_samples=num_samples)
    return SequentialSampler(num_samples=num_samples)


def _sharded(sampler: Sampler) -> bool:
    return isinstance(sampler, DistributedSampler)


class MappableSource(Dataset):
    """A source with random access: ``_num_rows()``, ``_load(i)``, ``_origin(i)``."""

    _where = "Dataset"
    _user_code = False
    _processes = False
    _max_rowsize = 16.0

    def __init__(
        self,
        num_samples: Any = None,
        num_parallel_workers: Any = None,
        shuffle: Any = None,
        sampler: Any = None,
        num_shards: Any = None,
        shard_id: Any = None,
        on_error: str = "raise",
        default_shuffle: bool = True,
    ) -> None:
        where = type(self).__name__
        super().__init__((), check_workers(where, num_parallel_workers))
        self.sampler = resolve_sampler(
            where, num_samples, shuffle, sampler, num_shards, shard_id, default_shuffle
        )
        self.on_error = check_on_error(where, on_error)
        self._size_cache: int | None = None

    def use_sampler(self, new_sampler: Any) -> None:
        """Read the rows ``new_sampler`` picks from now on (MindSpore's ``use_sampler``)."""
        where = f"{type(self).__name__}.use_sampler"
        if new_sampler is None:
            raise TypeError(f"{where}: Input sampler can not be None.")
        if isinstance(new_sampler, (list, tuple, np.ndarray)):
            from .samplers import SubsetSampler

            new_sampler = SubsetSampler(list(new_sampler))
        if not isinstance(new_sampler, Sampler):
            raise TypeError(
                f"{where}: Input sampler is not an instance of a sampler (got "
                f"{type(new_sampler).__name__} {new_sampler!r:.60})"
            )
        self.sampler = new_sampler
        self._size_cache = None

    # -- to override ------------------------------------------------------------------------
    def _num_rows(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} must define _num_rows()")

    def _load(self, index: int) -> Row:
        raise NotImplementedError(f"{type(self).__name__} must define _load()")

    def _origin(self, index: int) -> Any:
        return None

    # -- engine ---------------------------------------------------------------------------
    def _indices(self, run: Run, epoch: int) -> np.ndarray:
        bind_source(self.sampler, self)
        seed = run.base_seed
        if not run.seeded and _sharded(self.sampler):
            seed = 0  # every shard must draw the same permutation, even without set_seed
        return self.sampler.get_indices(self._num_rows(), (seed, epoch, run.node_id(self)))

    def _size(self) -> float:
        if self._size_cache is None:
            n = self._num_rows()
            bind_source(self.sampler, self)
            self.sampler._validate(n)
            self._size_cache = self.sampler.get_num_samples(n)
        return self._size_cache

    def _load_checked(self, index: Any) -> Row:
        return self._load(int(index))

    def _stream(self, run: Run, epoch: int, start: int) -> Iterator[Item]:
        if self.on_error == "skip" and start:
            yield from itertools.islice(self._stream(run, epoch, 0), start, None)
            return
        indices = self._indices(run, epoch)[start:]
        workers = self.num_parallel_workers or 1
        keyed = self._user_code  # only user code (GeneratorDataset) may draw random numbers
        if workers <= 1 and not keyed:
            # one worker and no random draws: load in this thread, without a task per row
            stream: Iterator[tuple[Any, Any]] = _loaded(self._load_checked, start, indices)
        else:
            tasks = (
                (
                    run.row_key(self, epoch, start + k) if keyed else None,
                    (np.int64(i),),
                    (start + k, int(i)),
                )
                for k, i in enumerate(indices)
            )
            stream = pooled(
                run, self, self._load_checked, workers, self._processes, self._max_rowsize, tasks
            )
        where = type(self).__name__
        for (_pos, index), out in stream:
            if isinstance(out, TaskFailure):
                origin = self._origin(index)
                if self.on_error == "skip":
                    run.skip(where, origin, index, out.message)
                    continue
                file = f" (file {origin})" if origin is not None else ""
                raise PipelineError(
                    f"{where}: cannot read row {index}{file}: {out.message}"
                    + ("" if out.exc is not None else f"\nworker traceback:\n{out.traceback}"),
                    origin,
                    index,
                ) from out.exc
            yield out, self._origin(index)


def _loaded(load: Any, start: int, indices: np.ndarray) -> Iterator[tuple[Any, Any]]:
    """``((position, index), row or TaskFailure)`` as the worker pool gives them."""
    for k, i in enumerate(indices.tolist(), start):
        try:
            yield (k, i), load(i)
        except Exception as exc:  # reported by the caller, which raises or skips
            yield (k, i), TaskFailure(exc, f"{type(exc).__name__}: {exc}", traceback.format_exc())


class StreamSource(Dataset):
    """A source read in order (``_rows()`` yields rows); sharded by striding."""

    def __init__(
        self, num_samples: Any = None, num_shards: Any = None, shard_id: Any = None
    ) -> None:
        where = type(self).__name__
        super().__init__(())
        self.num_samples = check_int(where, "num_samples", num_samples, 0, none=True) or None
        self.num_shards, self.shard_id = check_shards(where, num_shards, shard_id)
        self._count: int | None = None

    def _rows(self) -> Iterator[Row]:
        raise NotImplementedError(f"{type(self).__name__} must define _rows()")

    def _epoch_rows(self) -> Iterator[Row]:
        rows: Iterator[Row] = self._rows()
        if self.num_shards is not None:
            rows = itertools.islice(rows, self.shard_id, None, self.num_shards)
        if self.num_samples is not None:
            rows = itertools.islice(rows, self.num_samples)
        return rows

    def _size(self) -> float:
        if self._count is None:  # as MindSpore does: read the source once to count it
            self._count = sum(1 for _ in self._epoch_rows())
        return self._count

    def _stream(self, run: Run, epoch: int, start: int) -> Iterator[Item]:
        for row in itertools.islice(self._epoch_rows(), start, None):
            yield row, None
