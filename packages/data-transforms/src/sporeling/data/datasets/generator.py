"""GeneratorDataset and NumpySlicesDataset (MindSpore 1.8 signatures)."""

from __future__ import annotations

import numbers
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..engine.base import PipelineError, check_bool, check_columns, check_workers
from ..engine.sources import MappableSource, StreamSource

__all__ = ["GeneratorDataset", "NumpySlicesDataset"]


def _as_dtype(where: str, t: Any) -> np.dtype:
    if hasattr(t, "asnumpy_dtype"):
        t = t.asnumpy_dtype()
    try:
        from sporeling.core import dtype as core_dtype

        conv = getattr(core_dtype, "dtype_to_nptype", None)
        if conv is not None and not isinstance(t, (type, np.dtype, str)):
            t = conv(t)
    except Exception:
        pass
    try:
        return np.dtype(t)
    except TypeError as exc:
        raise TypeError(
            f"{where}: argument 'column_types' expected NumPy dtypes, got {t!r}"
        ) from exc


class _RowMaker:
    """Turns one item of the user's source into a row of NumPy values."""

    def __init__(self, where: str, names: list[str], types: list[np.dtype] | None) -> None:
        self.where = where
        self.names = names
        self.types = types

    def __call__(self, item: Any, index: int | None) -> tuple[Any, ...]:
        n = len(self.names)
        if isinstance(item, tuple) or (isinstance(item, list) and n > 1):
            values = tuple(item)
        elif isinstance(item, dict):
            values = tuple(item[c] for c in self.names)
        else:
            values = (item,)
        if len(values) != n:
            at = f" at index {index}" if index is not None else ""
            raise ValueError(
                f"{self.where}: the source gave {len(values)} value(s){at} but column_names has "
                f"{n}: {self.names}"
            )
        out = []
        for j, v in enumerate(values):
            a = v.asnumpy() if hasattr(v, "asnumpy") else np.asarray(v)
            if self.types is not None and a.dtype != self.types[j]:
                a = a.astype(self.types[j])
            out.append(a)
        return tuple(out)


def _random_access(source: Any) -> bool:
    return hasattr(source, "__getitem__") and hasattr(source, "__len__")


class _StreamGenerator(StreamSource):
    def __init__(self, source: Any, make: _RowMaker, **kw: Any) -> None:
        super().__init__(**kw)
        self._source = source
        self._make = make

    def _rows(self) -> Iterator[tuple[Any, ...]]:
        row = 0
        try:
            it = self._source() if callable(self._source) else iter(self._source)
        except Exception as exc:
            raise _failed(row, exc) from exc
        while True:
            try:
                item = next(it)
            except StopIteration:
                return
            except Exception as exc:  # the user's generator failed: say which row (README)
                raise _failed(row, exc) from exc
            try:
                made = self._make(item, None)
            except Exception as exc:  # a row that does not fit the columns: RuntimeError too
                raise _failed(row, exc) from exc
            yield made
            row += 1


def _failed(row: int, exc: Exception) -> PipelineError:
    return PipelineError(
        f"GeneratorDataset: cannot read row {row}: {type(exc).__name__}: {exc}", row=row
    )


class GeneratorDataset(MappableSource):
    """Rows from Python: a generator function, an iterable, or a random-access object.

    A random-access source (``__getitem__`` and ``__len__``, e.g. a list) supports
    ``shuffle`` (default: shuffled), samplers, sharding and parallel reads
    (``num_parallel_workers``; processes with shared memory when
    ``python_multiprocessing=True``, else threads). A generator function is called once per
    epoch; an iterable is iterated once per epoch (a one-shot iterator gives one epoch).
    ``column_names=None`` names the columns ``column_0, column_1, ...`` after the first row.
    ``schema`` is accepted and ignored.
    """

    _user_code = True
    _source: Any
    _random_access: bool
    _names: list[str]
    _make: Any

    def __init__(
        self,
        source: Any,
        column_names: str | list[str] | None = None,
        column_types: list[Any] | None = None,
        schema: Any = None,
        num_samples: int | None = None,
        num_parallel_workers: int = 1,
        shuffle: bool | None = None,
        sampler: Any = None,
        num_shards: int | None = None,
        shard_id: int | None = None,
        python_multiprocessing: bool = True,
        max_rowsize: int = 6,
    ) -> None:
        where = type(self).__name__
        if source is None or not (
            callable(source) or hasattr(source, "__iter__") or _random_access(source)
        ):
            raise TypeError(
                f"{where}: argument 'source' expected a generator function, an iterable or an "
                f"object with __getitem__ and __len__, got {type(source).__name__}"
            )
        names = check_columns(where, "column_names", column_names)
        types = None
        if column_types is not None:
            if not isinstance(column_types, (list, tuple)):
                raise TypeError(f"{where}: argument 'column_types' expected a list of dtypes")
            types = [_as_dtype(where, t) for t in column_types]
            if names is not None and len(types) != len(names):
                raise ValueError(
                    f"{where}: {len(types)} column_types for {len(names)} column_names"
                )
        self.python_multiprocessing = check_bool(
            where, "python_multiprocessing", python_multiprocessing
        )
        self._processes = self.python_multiprocessing
        if (
            isinstance(max_rowsize, bool)
            or not isinstance(max_rowsize, numbers.Real)
            or (max_rowsize <= 0)
        ):
            raise ValueError(f"{where}: argument 'max_rowsize' expected a number > 0 (MB)")
        self._max_rowsize = float(max_rowsize)
        self.schema = schema
        self._source = source
        self._random_access = _random_access(source)
        workers = check_workers(where, num_parallel_workers)
        if names is None:
            names = self._infer_names()
            if types is not None and len(types) != len(names):
                raise ValueError(f"{where}: {len(types)} column_types for {len(names)} columns")
        self._names = names
        make = _RowMaker(where, names, types)
        if self._random_access:
            super().__init__(num_samples, workers, shuffle, sampler, num_shards, shard_id)
            self._make = make
            self._inner: StreamSource | None = None
        else:
            if shuffle or sampler is not None:
                raise ValueError(
                    f"{where}: 'shuffle' and 'sampler' need a random-access source (with "
                    "__getitem__ and __len__); use .shuffle(buffer_size) on a generator"
                )
            super().__init__(num_samples, workers, False, None, num_shards, shard_id)
            self._inner = _StreamGenerator(
                source, make, num_samples=num_samples, num_shards=num_shards, shard_id=shard_id
            )

    def _infer_names(self) -> list[str]:
        if self._random_access:
            first = self._source[0] if len(self._source) else None
        else:
            it = self._source() if callable(self._source) else iter(self._source)
            if it is self._source:
                raise ValueError(
                    f"{type(self).__name__}: give column_names for a one-shot iterator source"
                )
            first = next(iter(it), None)
        if first is None:
            raise ValueError(f"{type(self).__name__}: give column_names (the source is empty)")
        if isinstance(first, dict):
            return [str(k) for k in first]
        n = len(first) if isinstance(first, (tuple, list)) else 1
        return [f"column_{i}" for i in range(n)]

    def get_col_names(self) -> list[str]:
        return list(self._names)

    def _num_rows(self) -> int:
        return len(self._source)

    def _load(self, index: int) -> tuple[Any, ...]:
        return self._make(self._source[index], index)

    def _size(self) -> float:
        if self._inner is not None:
            return self._inner._size()
        return super()._size()

    def _stream(self, run: Any, epoch: int, start: int) -> Any:
        if self._inner is not None:
            return self._inner._stream(run, epoch, start)
        return super()._stream(run, epoch, start)


def _slices(where: str, data: Any, column_names: Any) -> tuple[list[str], list[np.ndarray]]:
    if isinstance(data, dict):
        names = [str(k) for k in data]
        cols = [np.asarray(v.asnumpy() if hasattr(v, "asnumpy") else v) for v in data.values()]
    elif isinstance(data, tuple):
        names = [f"column_{i}" for i in range(len(data))]
        cols = [np.asarray(v.asnumpy() if hasattr(v, "asnumpy") else v) for v in data]
    elif isinstance(data, (list, np.ndarray)) or hasattr(data, "asnumpy"):
        names = ["column_0"]
        cols = [np.asarray(data.asnumpy() if hasattr(data, "asnumpy") else data)]
    else:
        raise TypeError(
            f"{where}: argument 'data' expected a list, tuple, dict or numpy.ndarray, got "
            f"{type(data).__name__}"
        )
    if not cols:
        raise ValueError(f"{where}: argument 'data' holds no columns")
    for c in cols:
        if c.ndim == 0:
            raise ValueError(f"{where}: every column must have a first dimension to slice along")
    lengths = {len(c) for c in cols}
    if len(lengths) != 1:
        raise ValueError(
            f"{where}: the columns must have the same length along the first dimension, got "
            f"{[len(c) for c in cols]}"
        )
    if column_names is not None:
        given = check_columns(where, "column_names", column_names) or []
        if len(given) != len(cols):
            raise ValueError(
                f"{where}: {len(given)} column_names for {len(cols)} column(s) of data"
            )
        names = given
    return names, cols


class NumpySlicesDataset(MappableSource):
    """Rows sliced along the first dimension of a list, tuple (columns), dict or array."""

    def __init__(
        self,
        data: Any,
        column_names: str | list[str] | None = None,
        num_samples: int | None = None,
        num_parallel_workers: int = 1,
        shuffle: bool | None = None,
        sampler: Any = None,
        num_shards: int | None = None,
        shard_id: int | None = None,
    ) -> None:
        self._names, self._cols = _slices(type(self).__name__, data, column_names)
        super().__init__(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)

    def get_col_names(self) -> list[str]:
        return list(self._names)

    def _num_rows(self) -> int:
        return len(self._cols[0])

    def _load(self, index: int) -> tuple[Any, ...]:
        return tuple(c[index] for c in self._cols)
