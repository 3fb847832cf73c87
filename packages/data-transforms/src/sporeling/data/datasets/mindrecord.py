"""MindDataset: rows of MindRecord files (MindSpore's own dataset format), random access.

Rows are numbered across the shard files in order (file 0's rows, then file 1's, ...), as
MindSpore reads them, so sampling, sharding (``num_shards``/``shard_id`` interleave rows,
wrapping to even shards) and ``padded_sample`` give the rows MindSpore gives. Reads go
through each file's ``.db`` index and run on the pipeline's ``num_parallel_workers``.
"""

from __future__ import annotations

import bisect
import os
from typing import Any

import numpy as np

from ..engine.samplers import DistributedSampler
from ..engine.sources import MappableSource
from ..mindrecord._format import SCALAR_TYPES
from ..mindrecord.reader import open_shards
from .text import Shuffle

__all__ = ["MindDataset"]


class MindDataset(MappableSource):
    """Read MindRecord files written by ``FileWriter`` (ours or MindSpore's).

    ``dataset_files`` is one file (every shard its header lists is read) or a list of files
    (exactly those). ``columns_list`` picks and orders columns (default: every field,
    sorted by name as MindSpore does). Values come back as NumPy arrays: scalars 0-d of
    the field's dtype, strings 0-d ``str`` arrays, ``bytes`` fields 1-D uint8 arrays
    (MindSpore 1.8's form) and array fields in their schema shape. ``padded_sample`` (a
    dict with every column of ``columns_list``) is appended ``num_padded`` times so that
    ``num_shards`` shards get equal rows. ``shuffle`` may be a bool or a ``Shuffle`` mode:
    GLOBAL shuffles all rows, FILES the order of the files, INFILE the rows within each
    file (with FILES/INFILE, shards interleave rows without MindSpore's wrap-around).
    ``cache`` must be None.
    """

    def __init__(
        self,
        dataset_files: str | os.PathLike[str] | list[str],
        columns_list: list[str] | None = None,
        num_parallel_workers: int | None = None,
        shuffle: bool | Shuffle | None = None,
        num_shards: int | None = None,
        shard_id: int | None = None,
        sampler: Any = None,
        padded_sample: dict[str, Any] | None = None,
        num_padded: int | None = None,
        num_samples: int | None = None,
        cache: Any = None,
    ) -> None:
        where = "MindDataset"
        if cache is not None:
            raise ValueError(f"{where}: argument 'cache' is not supported (pass None)")
        mode = shuffle if shuffle in (Shuffle.FILES, Shuffle.INFILE) else None
        if isinstance(shuffle, Shuffle):
            shuffle = True
        if columns_list is not None and not isinstance(columns_list, list):
            raise TypeError(  # checked before the files are opened, as MindSpore does
                f"{where}: argument 'columns_list' expected a list of column names, got "
                f"{type(columns_list).__name__} {columns_list!r}"
            )
        if num_padded and padded_sample is None:
            raise RuntimeError(
                f"{where}: num_padded is specified but padded_sample is not (got "
                f"num_padded={num_padded!r}); give padded_sample too"
            )
        self._shards = open_shards(dataset_files, where)
        schema = self._shards[0].schema
        if columns_list is None:
            columns = list(schema.names)
        else:
            if not columns_list:
                raise ValueError(f"{where}: argument 'columns_list' should not be empty, got []")
            unknown = [c for c in columns_list if c not in schema.fields]
            if unknown:
                raise ValueError(
                    f"{where}: columns_list names {unknown}, not fields of the files "
                    f"(fields: {schema.names})"
                )
            columns = list(columns_list)
        self._columns = columns
        self._starts = np.cumsum([0] + [len(s) for s in self._shards])
        self._start_list = [int(v) for v in self._starts]
        self._padded = self._check_padding(
            where, padded_sample, num_padded, columns_list, num_shards
        )
        self._num_padded = int(num_padded or 0)
        super().__init__(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)
        if type(self.sampler) is DistributedSampler:
            s = self.sampler
            self.sampler = _EvenShards(s.num_shards, s.shard_id, s.shuffle, s.num_samples)
        if mode is not None and sampler is None:  # shuffle the file order, or rows per file
            from .text import _TextSampler

            bounds = np.append(self._starts, self._starts[-1] + self._num_padded)
            self.sampler = _TextSampler(
                mode, bounds.astype(np.int64), (num_shards, shard_id), num_samples
            )
        if self._num_padded and (int(self._starts[-1]) + self._num_padded) % int(num_shards):
            raise RuntimeError(
                f"{where}: {int(self._starts[-1])} rows + num_padded={self._num_padded} is not "
                f"divisible by num_shards={num_shards}"
            )

    def _check_padding(
        self, where: str, sample: Any, num_padded: Any, columns_list: Any, num_shards: Any
    ) -> tuple[Any, ...] | None:
        if sample is None:
            if num_padded:
                raise RuntimeError(f"{where}: num_padded needs padded_sample")
            return None
        if not isinstance(sample, dict):
            raise TypeError(f"{where}: argument 'padded_sample' expected a dict, got {sample!r}")
        if columns_list is None:
            raise RuntimeError(f"{where}: padded_sample is specified and requires columns_list")
        if num_shards is None:
            raise RuntimeError(f"{where}: padded_sample needs num_shards and shard_id")
        if type(num_padded) is not int or num_padded < 0:
            raise TypeError(
                f"{where}: argument 'num_padded' expected an int >= 0, got {num_padded!r}"
            )
        missing = [c for c in self._columns if c not in sample]
        if missing:
            raise ValueError(f"{where}: padded_sample lacks columns {missing}")
        schema = self._shards[0].schema
        values = []
        for name in self._columns:
            kind, value = schema.fields[name]["type"], sample[name]
            if kind == "bytes":
                values.append(np.frombuffer(bytes(value), np.uint8).copy())
            elif kind == "string":
                values.append(np.array(str(value)))
            else:
                values.append(np.asarray(value, SCALAR_TYPES[kind]))
        return tuple(values)

    def get_col_names(self) -> list[str]:
        return list(self._columns)

    def _indices(self, run: Any, epoch: int) -> np.ndarray:
        if getattr(self.sampler, "num_shards", None) is not None and not run.seeded:
            # every shard must draw the same file/row order, even without set_seed
            return self.sampler.get_indices(self._num_rows(), (0, epoch, run.node_id(self)))
        return super()._indices(run, epoch)

    def _num_rows(self) -> int:
        return int(self._starts[-1]) + self._num_padded

    def _locate(self, index: int) -> tuple[int, int]:
        if len(self._shards) == 1:
            return 0, index
        k = bisect.bisect_right(self._start_list, index) - 1
        return k, index - self._start_list[k]

    def _origin(self, index: int) -> Any:
        if index >= self._starts[-1]:
            return "padded_sample"
        k, row = self._locate(index)
        return f"{self._shards[k].path} row {row}"

    def _load(self, index: int) -> tuple[Any, ...]:
        if index >= self._starts[-1]:
            assert self._padded is not None
            return tuple(v.copy() for v in self._padded)
        k, row = self._locate(index)
        return tuple(self._shards[k].read_values(row, self._columns))


class _EvenShards(DistributedSampler):
    """MindSpore's sharding of MindDataset: rows interleaved over the shards, and the order
    wrapped around so every shard gets ``ceil(n / num_shards)`` rows (checked against
    MindSpore 2.10: with 11 rows, shard 2 of 3 reads rows 2, 5, 8 and then row 0)."""

    def _order(self, n: int, key: tuple[int, ...]) -> np.ndarray:
        if not n:
            return np.zeros(0, np.int64)
        if self.shuffle:
            order = np.random.default_rng([*key, 0xD15]).permutation(n).astype(np.int64)
        else:
            order = np.arange(n, dtype=np.int64)
        total = -(-n // self.num_shards) * self.num_shards
        return order[np.arange(self.shard_id, total, self.num_shards) % n]
