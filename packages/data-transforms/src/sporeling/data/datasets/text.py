"""Text sources: TextFileDataset (one row per line) and CSVDataset (MindSpore 1.8).

Both index the line offsets of their files once (a newline scan over a memory map, in
chunks) and then read lines at random, so ``shuffle=Shuffle.GLOBAL`` (the default),
sharding and mid-epoch resume work as for the other random-access sources. Empty lines
are skipped. A CSV record must fit on one line (quoted fields may not hold newlines).
"""

from __future__ import annotations

import csv
import glob
import os
from enum import StrEnum
from pathlib import Path
from typing import Any

import numpy as np

from ..engine.base import check_int
from ..engine.samplers import Sampler
from ..engine.sources import MappableSource, check_shards

__all__ = ["Shuffle", "TextFileDataset", "CSVDataset"]

_CHUNK = 1 << 26


class Shuffle(StrEnum):
    """How file-based sources shuffle: all rows, the file order, or rows within each file."""

    GLOBAL = "global"
    FILES = "file"
    INFILE = "infile"


def _files(where: str, dataset_files: Any) -> list[Path]:
    if isinstance(dataset_files, (str, os.PathLike)):
        patterns = [dataset_files]
    elif isinstance(dataset_files, (list, tuple)) and dataset_files:
        patterns = list(dataset_files)
    else:
        raise TypeError(
            f"{where}: argument 'dataset_files' expected a path, a glob pattern or a list of "
            f"them, got {dataset_files!r}"
        )
    out: list[Path] = []
    for pat in patterns:
        if not isinstance(pat, (str, os.PathLike)):
            raise TypeError(f"{where}: dataset_files holds {pat!r}, not a path")
        p = Path(pat)
        if p.is_file():
            out.append(p)
            continue
        matches = sorted(glob.glob(os.fspath(pat)))
        if not matches:
            raise ValueError(f"{where}: no file matches {os.fspath(pat)!r}")
        out.extend(Path(m) for m in matches if Path(m).is_file())
    return out


def _line_spans(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """(starts, ends) byte offsets of the non-blank lines of ``path`` (ends exclude \\n)."""
    size = path.stat().st_size
    if size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    mm = np.memmap(path, dtype=np.uint8, mode="r")
    newlines = [np.flatnonzero(mm[i : i + _CHUNK] == 10) + i for i in range(0, size, _CHUNK)]
    nl = np.concatenate(newlines).astype(np.int64)
    starts = np.concatenate([[0], nl + 1])
    ends = np.concatenate([nl, [size]])
    # Drop \r of CRLF files.
    has_cr = ends > starts
    cr = np.zeros_like(has_cr)
    cr[has_cr] = mm[ends[has_cr] - 1] == 13
    ends = ends - cr
    keep = ends > starts
    starts, ends = starts[keep], ends[keep]
    del mm
    return starts, ends


def _read(path: Path, start: int, end: int) -> bytes:
    with open(path, "rb") as f:
        f.seek(start)
        return f.read(end - start)


class _TextSampler(Sampler):
    """Shuffle.GLOBAL / FILES / INFILE / none over per-file line ranges, then shards."""

    def __init__(
        self, mode: Shuffle | None, bounds: np.ndarray, shards: tuple[Any, Any], num_samples: Any
    ) -> None:
        super().__init__(num_samples)
        self.mode = mode
        self.bounds = bounds  # row offsets of each file: [0, n0, n0+n1, ...]
        self.num_shards, self.shard_id = shards

    @property
    def is_random(self) -> bool:
        return self.mode is not None

    def _order(self, n: int, key: tuple[int, ...]) -> np.ndarray:
        rng = np.random.default_rng([*key, 0x7E7])
        b = self.bounds
        ranges = [np.arange(b[i], b[i + 1], dtype=np.int64) for i in range(len(b) - 1)]
        if self.mode is Shuffle.GLOBAL:
            order = rng.permutation(n).astype(np.int64)
        elif self.mode is Shuffle.FILES:
            order = np.concatenate(
                [ranges[i] for i in rng.permutation(len(ranges))] or [np.zeros(0, np.int64)]
            )
        elif self.mode is Shuffle.INFILE:
            order = np.concatenate([rng.permutation(r) for r in ranges] or [np.zeros(0, np.int64)])
        else:
            order = np.arange(n, dtype=np.int64)
        order = order.astype(np.int64)
        if self.num_shards is not None:
            order = order[self.shard_id :: self.num_shards]
        return order


def _check_shuffle(where: str, shuffle: Any) -> Shuffle | None:
    if shuffle is True:
        return Shuffle.GLOBAL
    if shuffle is False or shuffle is None:
        return None
    if isinstance(shuffle, Shuffle):
        return shuffle
    raise TypeError(  # MindSpore's type
        f"{where}: argument 'shuffle' must be of boolean or enum of 'Shuffle' values "
        f"(Shuffle.GLOBAL/FILES/INFILE), got {shuffle!r}"
    )


class _LineSource(MappableSource):
    def _index(self, where: str, files: list[Path], skip_first: bool) -> None:
        starts, ends, fids, bounds = [], [], [], [0]
        for k, f in enumerate(files):
            s, e = _line_spans(f)
            if skip_first and len(s):
                s, e = s[1:], e[1:]
            starts.append(s)
            ends.append(e)
            fids.append(np.full(len(s), k, dtype=np.int32))
            bounds.append(bounds[-1] + len(s))
        self._files = files
        self._starts = np.concatenate(starts) if starts else np.zeros(0, np.int64)
        self._ends = np.concatenate(ends) if ends else np.zeros(0, np.int64)
        self._fids = np.concatenate(fids) if fids else np.zeros(0, np.int32)
        self._bounds = np.asarray(bounds, dtype=np.int64)

    def _setup(
        self,
        where: str,
        num_samples: Any,
        num_parallel_workers: Any,
        shuffle: Any,
        num_shards: Any,
        shard_id: Any,
    ) -> None:
        mode = _check_shuffle(where, shuffle)
        shards = check_shards(where, num_shards, shard_id)
        num_samples = check_int(where, "num_samples", num_samples, 0, none=True)
        super().__init__(None, num_parallel_workers, False, None, None, None)
        self.sampler = _TextSampler(mode, self._bounds, shards, num_samples)

    def _num_rows(self) -> int:
        return len(self._starts)

    def _line(self, index: int) -> str:
        path = self._files[self._fids[index]]
        return _read(path, int(self._starts[index]), int(self._ends[index])).decode("utf-8")

    def _origin(self, index: int) -> Any:
        return str(self._files[self._fids[index]])

    def _sharded_by_sampler(self) -> bool:
        return self.sampler.num_shards is not None  # type: ignore[attr-defined]

    def _indices(self, run: Any, epoch: int) -> np.ndarray:
        seed = run.base_seed
        if not run.seeded and self._sharded_by_sampler():
            seed = 0
        return self.sampler.get_indices(self._num_rows(), (seed, epoch, run.node_id(self)))


class TextFileDataset(_LineSource):
    """One row per non-blank line of ``dataset_files``; column ``text`` (a string)."""

    def __init__(
        self,
        dataset_files: str | list[str],
        num_samples: int | None = None,
        num_parallel_workers: int | None = None,
        shuffle: bool | Shuffle = Shuffle.GLOBAL,
        num_shards: int | None = None,
        shard_id: int | None = None,
        cache: Any = None,
    ) -> None:
        where = type(self).__name__
        self._index(where, _files(where, dataset_files), skip_first=False)
        self._setup(where, num_samples, num_parallel_workers, shuffle, num_shards, shard_id)

    def get_col_names(self) -> list[str]:
        return ["text"]

    def _load(self, index: int) -> tuple[Any, ...]:
        return (np.array(self._line(index)),)


_TYPES = {int: np.int32, float: np.float32, str: np.str_}


class CSVDataset(_LineSource):
    """Rows of CSV files. ``column_defaults`` sets each column's type (int -> int32,
    float -> float32, str) and the value of an empty field; without it every column is a
    string. Without ``column_names`` the first line of each file is the header.
    """

    def __init__(
        self,
        dataset_files: str | list[str],
        field_delim: str = ",",
        column_defaults: list[Any] | None = None,
        column_names: list[str] | None = None,
        num_samples: int | None = None,
        num_parallel_workers: int | None = None,
        shuffle: bool | Shuffle = Shuffle.GLOBAL,
        num_shards: int | None = None,
        shard_id: int | None = None,
        cache: Any = None,
    ) -> None:
        where = type(self).__name__
        if not isinstance(field_delim, str) or len(field_delim) != 1 or field_delim in '\r\n"':
            raise ValueError(
                f"{where}: argument 'field_delim' expected one character (not a quote or "
                f"newline), got {field_delim!r}"
            )
        self.field_delim = field_delim
        files = _files(where, dataset_files)
        if column_names is None:
            header = None
            for f in files:
                s, e = _line_spans(f)
                if len(s):
                    header = self._split(_read(f, int(s[0]), int(e[0])).decode("utf-8"))
                    break
            if header is None:
                raise ValueError(f"{where}: give column_names (the files have no header line)")
            names = [h.strip() for h in header]
        else:
            if isinstance(column_names, str) or not isinstance(column_names, (list, tuple)):
                raise TypeError(f"{where}: argument 'column_names' expected a list of names")
            names = [str(c) for c in column_names]
        if len(set(names)) != len(names) or not all(names):
            raise ValueError(f"{where}: column names must be unique and non-empty, got {names}")
        if column_defaults is not None:
            if not isinstance(column_defaults, (list, tuple)):
                raise TypeError(f"{where}: argument 'column_defaults' expected a list")
            if len(column_defaults) != len(names):
                raise ValueError(
                    f"{where}: {len(column_defaults)} column_defaults for {len(names)} columns "
                    f"{names}"
                )
            for d in column_defaults:
                if type(d) not in _TYPES:
                    raise TypeError(
                        f"{where}: column_defaults expected int, float or str values, got {d!r}"
                    )
        self.column_defaults = None if column_defaults is None else list(column_defaults)
        self._names = names
        self._index(where, files, skip_first=column_names is None)
        self._setup(where, num_samples, num_parallel_workers, shuffle, num_shards, shard_id)

    def _split(self, line: str) -> list[str]:
        return next(csv.reader([line], delimiter=self.field_delim))

    def get_col_names(self) -> list[str]:
        return list(self._names)

    def _load(self, index: int) -> tuple[Any, ...]:
        fields = self._split(self._line(index))
        where = f"CSVDataset: {self._origin(index)} row {index}"
        if len(fields) != len(self._names):
            raise ValueError(
                f"{where}: {len(fields)} fields, expected {len(self._names)} ({self._names})"
            )
        if self.column_defaults is None:
            return tuple(np.array(f) for f in fields)
        out: list[Any] = []
        for name, f, d in zip(self._names, fields, self.column_defaults):
            t = type(d)
            if f == "":
                value = d
            else:
                try:
                    value = t(f.strip()) if t is not str else f
                except ValueError:
                    raise ValueError(
                        f"{where}: column '{name}' value {f!r} is not a valid {t.__name__}"
                    ) from None
            out.append(np.array(value, dtype=_TYPES[t]))
        return tuple(out)
