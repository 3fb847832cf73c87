"""Dataset base class: argument checks, run state, and the pipeline/iterator entry points."""

from __future__ import annotations

import itertools
import logging
import math
import numbers
import os
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ._rng import derive_seed
from .workers import WorkerPool

if TYPE_CHECKING:
    from .filter_bucket import BucketBatchByLengthDataset, FilterDataset
    from .map_batch import BatchDataset, MapDataset
    from .structural import (
        ConcatDataset,
        ProjectDataset,
        RenameDataset,
        RepeatDataset,
        ShuffleDataset,
        SkipDataset,
        TakeDataset,
        ZipDataset,
    )

logger = logging.getLogger("sporeling.data")

INFINITE = math.inf
Row = tuple[Any, ...]
Item = tuple[Row, Any]  # (row, origin)

_ON_ERROR = ("raise", "skip")


class PipelineError(RuntimeError):
    """An operation or a reader failed on one row; ``origin`` names its file when known."""

    def __init__(self, message: str, origin: Any = None, row: int | None = None) -> None:
        super().__init__(message)
        self.origin = origin
        self.row = row


# ---- argument checks ---------------------------------------------------------------------
INT32_MAX = 2**31 - 1


def check_int(
    where: str,
    name: str,
    value: Any,
    low: int | None = None,
    none: bool = False,
    high: int | None = None,
):
    if value is None and none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{where}: argument '{name}' expected an int, got {value!r}")
    if low is not None and value < low:
        raise ValueError(f"{where}: argument '{name}' expected an int >= {low}, got {value}")
    if high is not None and value > high:  # MindSpore's C++ layer takes int32 counts
        raise ValueError(
            f"{where}: argument '{name}' is not within the required interval of "
            f"[{low}, {high}], got {value}"
        )
    return int(value)


def check_bool(where: str, name: str, value: Any, none: bool = False) -> Any:
    if value is None and none:
        return None
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{where}: argument '{name}' expected a bool, got {value!r}")
    return bool(value)


def check_columns(where: str, name: str, value: Any, none: bool = True) -> list[str] | None:
    if value is None and none:
        return None
    if isinstance(value, str):
        value = [value]
    if isinstance(value, (list, tuple)) and not value:  # ValueError, as MindSpore
        raise ValueError(f"{where}: argument '{name}' should not be empty, got {value!r}")
    if not isinstance(value, (list, tuple)):
        raise TypeError(
            f"{where}: argument '{name}' expected a column name or a non-empty list of names, "
            f"got {value!r}"
        )
    for c in value:
        if not isinstance(c, str) or not c:
            raise TypeError(f"{where}: argument '{name}' expected column names (str), got {c!r}")
    if len(set(value)) != len(value):
        raise ValueError(f"{where}: argument '{name}' names a column twice: {list(value)}")
    return list(value)


def check_known(where: str, name: str, cols: list[str], known: list[str]) -> None:
    unknown = [c for c in cols if c not in known]
    if unknown:  # RuntimeError, as MindSpore's pipeline raises (its tests check the type)
        raise RuntimeError(
            f"{where}: Invalid column, argument '{name}' names column(s) {unknown} that do not "
            f"exist; the columns are {known}"
        )


def check_on_error(where: str, value: Any) -> str:
    if value not in _ON_ERROR:
        raise ValueError(f"{where}: argument 'on_error' expected 'raise' or 'skip', got {value!r}")
    return str(value)


def check_workers(where: str, value: Any) -> int | None:
    if value is None:
        return None
    n = check_int(where, "num_parallel_workers", value, 1)
    cap = max(os.cpu_count() or 1, 1) * 4
    if n > cap:
        raise ValueError(
            f"{where}: argument 'num_parallel_workers' expected an int in [1, {cap}], got {n}"
        )
    return n


def _config() -> Any:
    from .. import config

    return config


def default_workers() -> int:
    try:
        return int(_config().get_num_parallel_workers())
    except Exception:
        return 1


class DeferredArray:
    """A map output computed only when a batch stacks it: `write_into` writes the values
    straight into the batch array's row (no array of its own, no copy into the batch).
    A map makes these only for a batch directly above it that stacks the column
    (`MapDataset._stream(..., defer=True)`); anything else converts it with `np.asarray`."""

    __slots__ = ("dtype", "shape")

    def __init__(self, shape: tuple[int, ...], dtype: np.dtype) -> None:
        self.shape = shape
        self.dtype = dtype

    def write_into(self, out: np.ndarray) -> None:
        raise NotImplementedError(f"{type(self).__name__} must define write_into()")

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = np.empty(self.shape, self.dtype)
        self.write_into(out)
        return out if dtype is None else out.astype(dtype, copy=False)


def to_numpy(value: Any) -> Any:
    """A column value as NumPy (PIL images and Tensors converted, arrays kept)."""
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "asnumpy"):
        return value.asnumpy()
    if type(value).__module__.startswith("PIL."):
        return np.asarray(value)
    return np.asarray(value)


class BatchInfo:
    """What ``per_batch_map`` and a callable ``batch_size`` receive (MindSpore ``BatchInfo``)."""

    def __init__(self, batch_num: int, epoch_num: int) -> None:
        self._batch_num = batch_num
        self._epoch_num = epoch_num

    def get_batch_num(self) -> int:
        """Index of this batch within the epoch (0-based)."""
        return self._batch_num

    def get_epoch_num(self) -> int:
        """Index of the epoch (0-based)."""
        return self._epoch_num

    def __repr__(self) -> str:
        return f"BatchInfo(batch_num={self._batch_num}, epoch_num={self._epoch_num})"


# ---- one iterator's run: seeds, node ids, worker pools ---------------------------------------
class Run:
    """State of one iterator over a graph: the base seed, node ids and worker pools."""

    def __init__(self, root: Dataset, base_seed: int, seeded: bool) -> None:
        self.base_seed = int(base_seed)
        self.seeded = seeded
        self._ids: dict[int, int] = {}
        self._pools: dict[int, list[WorkerPool]] = {}
        self._idle: dict[int, list[WorkerPool]] = {}
        self.skipped: list[tuple[Any, str]] = []
        stack = [root]
        while stack:  # pre-order ids: the same graph built the same way gets the same ids
            node = stack.pop()
            if id(node) not in self._ids:
                self._ids[id(node)] = len(self._ids)
                stack.extend(reversed(node.children))

    def node_id(self, node: Dataset) -> int:
        return self._ids.setdefault(id(node), len(self._ids))

    def row_key(self, node: Dataset, epoch: int, row: int) -> tuple[int, ...]:
        return (self.base_seed, epoch, self.node_id(node), row)

    def acquire(self, node: Dataset, factory: Callable[[], WorkerPool]) -> WorkerPool:
        nid = self.node_id(node)
        idle = self._idle.setdefault(nid, [])
        if idle:
            return idle.pop()
        pool = factory()
        self._pools.setdefault(nid, []).append(pool)
        return pool

    def release(self, node: Dataset, pool: WorkerPool) -> None:
        if getattr(pool._runner, "broken", False):
            return
        self._idle.setdefault(self.node_id(node), []).append(pool)

    def skip(self, where: str, origin: Any, row: int, message: str) -> None:
        self.skipped.append((origin, message))
        logger.warning(
            "%s: skipped row %d%s: %s",
            where,
            row,
            f" (file {origin})" if origin is not None else "",
            message,
        )

    def close(self) -> None:
        pools = [p for ps in self._pools.values() for p in ps]
        self._pools.clear()
        self._idle.clear()
        for pool in pools:
            pool.close()


def pooled(
    run: Run,
    node: Dataset,
    fn: Callable[..., Any],
    workers: int,
    processes: bool,
    max_rowsize: float,
    tasks: Iterator[tuple[Any, tuple[Any, ...], Any]],
    overlap: bool = False,
) -> Iterator[tuple[Any, Any]]:
    """Run ``tasks`` through one of ``node``'s pools (returned to the run when done);
    ``overlap``: a single worker moves heavy rows to its own thread (`workers._InlineRunner`)."""
    pool = run.acquire(node, lambda: WorkerPool(fn, workers, processes, max_rowsize, overlap))
    gen = pool.imap(tasks)
    try:
        yield from gen
    finally:
        gen.close()
        run.release(node, pool)


def drop(stream: Iterator[Item], count: int) -> Iterator[Item]:
    """Skip ``count`` items by consuming them (for nodes that cannot seek)."""
    return itertools.islice(stream, count, None)


# ---- the node base class -------------------------------------------------------------------
class Dataset:
    """Base class of every source and pipeline operation (MindSpore ``mindspore.dataset.Dataset``).

    Pipeline methods return a new node; the node they are called on is not changed.
    """

    def __init__(self, children: Sequence[Dataset] = (), num_parallel_workers: int | None = None):
        self.children: list[Dataset] = list(children)
        self.num_parallel_workers = num_parallel_workers
        self._epoch = 0

    # -- graph interface (overridden) ---------------------------------------------------------
    def get_col_names(self) -> list[str]:
        """The column names of the rows this dataset gives."""
        raise NotImplementedError(f"{type(self).__name__} must define get_col_names()")

    def _size(self) -> float:
        raise NotImplementedError(f"{type(self).__name__} must define _size()")

    def _stream(self, run: Run, epoch: int, start: int) -> Iterator[Item]:
        raise NotImplementedError(f"{type(self).__name__} must define _stream()")

    # -- sizes and metadata --------------------------------------------------------------------
    def use_sampler(self, new_sampler: Any) -> None:
        """Make the pipeline's sources read the rows ``new_sampler`` picks (MindSpore's
        ``use_sampler``; on a pipeline it goes to the sources below)."""
        if not self.children:
            raise TypeError(f"{type(self).__name__}.use_sampler: this source has no sampler")
        for child in self.children:
            child.use_sampler(new_sampler)

    def get_dataset_size(self) -> int:
        """Rows (batches after ``batch``) per epoch; -1 after an infinite ``repeat()``."""
        size = self._size()
        return -1 if size == INFINITE else int(size)

    def get_batch_size(self) -> int:
        """The batch size of the last ``batch`` in the pipeline (1 without one)."""
        from .map_batch import BatchDataset

        node: Dataset | None = self
        while node is not None:
            if isinstance(node, BatchDataset):
                bs = node.batch_size
                return bs if isinstance(bs, int) else -1
            node = node.children[0] if len(node.children) == 1 else None
        return 1

    def get_repeat_count(self) -> int:
        """The count of the last ``repeat`` in the pipeline (1 without one, -1: infinite)."""
        from .structural import RepeatDataset

        node: Dataset | None = self
        while node is not None:
            if isinstance(node, RepeatDataset):
                return node.count
            node = node.children[0] if len(node.children) == 1 else None
        return 1

    def _first_row(self) -> Row:
        from .iterators import TupleIterator

        it = TupleIterator(self, None, 1, True, True, prefetch=False)
        try:
            return tuple(next(it))
        except StopIteration:
            raise ValueError(f"{type(self).__name__}: the dataset gives no rows") from None
        finally:
            it.stop()

    def output_shapes(self) -> list[list[int]]:
        """Shapes of the columns of the first row (batch) of the pipeline."""
        return [list(np.shape(v)) for v in self._first_row()]

    def output_types(self) -> list[np.dtype]:
        """NumPy dtypes of the columns of the first row (batch) of the pipeline."""
        return [np.asarray(v).dtype for v in self._first_row()]

    # -- epochs (for Model's resume at initial_epoch) ------------------------------------------
    @property
    def epoch(self) -> int:
        """Epochs started so far by iterators over this dataset; a new iterator starts here."""
        return self._epoch

    def set_epoch(self, epoch: int) -> None:
        """Make the next iterator start at ``epoch`` (its shuffle orders and random draws)."""
        self._epoch = check_int(f"{type(self).__name__}.set_epoch", "epoch", epoch, 0)

    # -- iterators -----------------------------------------------------------------------------
    def create_tuple_iterator(
        self,
        columns: list[str] | None = None,
        num_epochs: int = -1,
        output_numpy: bool = False,
        do_copy: bool = True,
        *,
        state: dict[str, Any] | None = None,
    ) -> Any:
        """An iterator over rows as lists (core Tensors, or NumPy arrays with ``output_numpy``).

        Each ``for`` loop over it runs one epoch; ``num_epochs=-1`` allows any number.
        ``state`` (from ``iterator.get_state()``) resumes at that epoch and step.
        """
        from .iterators import TupleIterator

        it = TupleIterator(self, columns, num_epochs, output_numpy, do_copy)
        if state is not None:
            it.set_state(state)
        return it

    def create_dict_iterator(
        self,
        num_epochs: int = -1,
        output_numpy: bool = False,
        do_copy: bool = True,
        *,
        state: dict[str, Any] | None = None,
    ) -> Any:
        """Like :meth:`create_tuple_iterator` with ``{column: value}`` rows."""
        from .iterators import DictIterator

        it = DictIterator(self, None, num_epochs, output_numpy, do_copy)
        if state is not None:
            it.set_state(state)
        return it

    def __iter__(self) -> Iterator[Any]:
        return iter(self.create_tuple_iterator(num_epochs=1))

    # -- pipeline operations -------------------------------------------------------------------
    def map(
        self,
        operations: Any = None,
        input_columns: str | list[str] | None = None,
        output_columns: str | list[str] | None = None,
        column_order: list[str] | None = None,
        num_parallel_workers: int | None = None,
        python_multiprocessing: bool = False,
        cache: Any = None,
        callbacks: Any = None,
        max_rowsize: int = 16,
        offload: Any = None,
        *,
        on_error: str = "raise",
    ) -> MapDataset:
        """Apply ``operations`` to ``input_columns`` of every row.

        ``on_error='skip'`` drops a row whose operations raise (logged, and listed in the
        iterator's ``skipped``); the default ``'raise'`` stops the pipeline with a
        :class:`PipelineError` naming the row and its file.
        """
        from .map_batch import MapDataset

        return MapDataset(
            self,
            operations,
            input_columns,
            output_columns,
            column_order,
            num_parallel_workers,
            python_multiprocessing,
            max_rowsize,
            on_error,
        )

    def batch(
        self,
        batch_size: int | Callable[[BatchInfo], int],
        drop_remainder: bool = False,
        num_parallel_workers: int | None = None,
        per_batch_map: Callable[..., Any] | None = None,
        input_columns: str | list[str] | None = None,
        output_columns: str | list[str] | None = None,
        column_order: list[str] | None = None,
        pad_info: dict[str, Any] | None = None,
        python_multiprocessing: bool = False,
        max_rowsize: int = 16,
    ) -> BatchDataset:
        """Stack ``batch_size`` consecutive rows into one (``pad_info`` pads ragged columns)."""
        from .map_batch import BatchDataset

        return BatchDataset(
            self,
            batch_size,
            drop_remainder,
            num_parallel_workers,
            per_batch_map,
            input_columns,
            output_columns,
            column_order,
            pad_info,
            python_multiprocessing,
            max_rowsize,
        )

    def filter(
        self,
        predicate: Callable[..., Any],
        input_columns: str | list[str] | None = None,
        num_parallel_workers: int | None = None,
    ) -> FilterDataset:
        """Keep the rows for which ``predicate(*input_columns)`` returns True.

        ``input_columns=None`` passes every column. The predicate must return a bool; it runs
        on ``num_parallel_workers`` threads (1 by default), in row order.
        ``get_dataset_size()`` runs the input once (epoch 0) and counts the kept rows, as
        MindSpore does; the count is cached. Resuming mid-epoch replays the epoch.
        """
        from .filter_bucket import FilterDataset

        return FilterDataset(self, predicate, input_columns, num_parallel_workers)

    def bucket_batch_by_length(
        self,
        column_names: str | list[str],
        bucket_boundaries: list[int],
        bucket_batch_sizes: list[int],
        element_length_function: Callable[..., int] | None = None,
        pad_info: dict[str, Any] | None = None,
        pad_to_bucket_boundary: bool = False,
        drop_remainder: bool = False,
    ) -> BucketBatchByLengthDataset:
        """Batch rows by length: ``n`` boundaries give ``n + 1`` buckets.

        The buckets are ``[0, b[0])``, ``[b[i], b[i+1])``, ..., ``[b[n-1], inf)``. A row's length
        is ``element_length_function(*column_names)``, or without one the ``shape[0]`` of the
        single column in ``column_names`` (0 for a scalar). When bucket ``i`` holds
        ``bucket_batch_sizes[i]`` rows they are padded and stacked into one batch; at the end
        of the epoch the partial buckets follow in bucket order (unless ``drop_remainder``).

        ``pad_info`` (``{column: (shape, value)}``): given, every column is padded (columns not
        in it to the longest row of the batch with 0; ``None`` dims likewise, or to the bucket's
        boundary - 1 with ``pad_to_bucket_boundary``, in which case a row in the last bucket is
        an error). ``None``: no padding. ``get_dataset_size()`` runs the input once and counts,
        as MindSpore does (cached). Resuming mid-epoch replays the epoch.
        """
        from .filter_bucket import BucketBatchByLengthDataset

        return BucketBatchByLengthDataset(
            self,
            column_names,
            bucket_boundaries,
            bucket_batch_sizes,
            element_length_function,
            pad_info,
            pad_to_bucket_boundary,
            drop_remainder,
        )

    def shuffle(self, buffer_size: int) -> ShuffleDataset:
        """Shuffle rows through a buffer of ``buffer_size`` rows (a new order every epoch)."""
        from .structural import ShuffleDataset

        return ShuffleDataset(self, buffer_size)

    def repeat(self, count: int | None = None) -> RepeatDataset:
        """Repeat the dataset ``count`` times (None or -1: forever) within one epoch."""
        from .structural import RepeatDataset

        return RepeatDataset(self, count)

    def take(self, count: int = -1) -> TakeDataset:
        """The first ``count`` rows (-1: all)."""
        from .structural import TakeDataset

        return TakeDataset(self, count)

    def skip(self, count: int) -> SkipDataset:
        """All rows but the first ``count``."""
        from .structural import SkipDataset

        return SkipDataset(self, count)

    def zip(self, datasets: Dataset | Sequence[Dataset]) -> ZipDataset:
        """Rows side by side (columns joined); as many rows as the shortest dataset."""
        if isinstance(datasets, Dataset):
            datasets = [datasets]
        from .structural import ZipDataset

        return ZipDataset([self, *check_datasets("Dataset.zip", datasets)])

    def concat(self, datasets: Dataset | Sequence[Dataset]) -> ConcatDataset:
        """This dataset's rows followed by each of ``datasets``' (same columns)."""
        if isinstance(datasets, Dataset):
            datasets = [datasets]
        from .structural import ConcatDataset

        return ConcatDataset([self, *check_datasets("Dataset.concat", datasets)])

    def __add__(self, other: Dataset) -> ConcatDataset:
        return self.concat(other)

    def project(self, columns: str | list[str]) -> ProjectDataset:
        """Keep ``columns``, in that order."""
        from .structural import ProjectDataset

        return ProjectDataset(self, columns)

    def rename(
        self, input_columns: str | list[str], output_columns: str | list[str]
    ) -> RenameDataset:
        """Rename ``input_columns`` to ``output_columns``."""
        from .structural import RenameDataset

        return RenameDataset(self, input_columns, output_columns)

    def flat_map(self, func: Callable[..., Dataset]) -> Dataset:
        """Replace every row by the rows of the dataset ``func(*row)`` returns."""
        from .flat_map import FlatMapDataset

        return FlatMapDataset(self, func)

    def padded_batch(
        self,
        batch_size: int | Callable[[BatchInfo], int],
        drop_remainder: bool = False,
        num_parallel_workers: int | None = None,
        pad_info: dict[str, Any] | None = None,
    ) -> BatchDataset:
        """``batch`` that pads ragged columns: ``pad_info`` or, by default, every column to
        the batch's largest shape with 0, as MindSpore 2.x's ``padded_batch``."""
        if pad_info is None:
            pad_info = {name: (None, None) for name in self.get_col_names()}
        return self.batch(batch_size, drop_remainder, num_parallel_workers, pad_info=pad_info)

    def split(self, sizes: list[int] | list[float], randomize: bool = True) -> tuple[Dataset, ...]:
        """Split into datasets of ``sizes`` rows (ints) or fractions (floats); see ``split.py``."""
        from .split import split_dataset

        return split_dataset(self, sizes, randomize)

    def apply(self, apply_func: Callable[[Dataset], Dataset]) -> Dataset:
        """``apply_func(self)``, which must return a Dataset."""
        out = apply_func(self)
        if not isinstance(out, Dataset):
            raise TypeError(
                f"Dataset.apply: apply_func must return a Dataset, got {type(out).__name__}"
            )
        return out

    def __repr__(self) -> str:
        return f"{type(self).__name__}(columns={self.get_col_names()})"


def check_datasets(where: str, datasets: Any) -> list[Dataset]:
    if not isinstance(datasets, (list, tuple)) or not datasets:
        raise TypeError(f"{where}: expected a Dataset or a non-empty list of Datasets")
    for d in datasets:
        if not isinstance(d, Dataset):
            raise TypeError(f"{where}: expected Datasets, got {type(d).__name__}")
    return list(datasets)


def zip_datasets(datasets: Sequence[Dataset]) -> ZipDataset:
    """``mindspore.dataset.zip``: rows of several datasets side by side."""
    if isinstance(datasets, Dataset):
        raise TypeError("zip: expected a tuple of at least two Datasets, got one Dataset")
    ds = check_datasets("zip", datasets)
    if len(ds) < 2:
        raise ValueError(f"zip: expected at least two datasets, got {len(ds)}")
    from .structural import ZipDataset

    return ZipDataset(ds)


def base_seed_for_run() -> tuple[int, bool]:
    """(base seed, seeded?) from ``config.get_seed()``; fresh entropy when no seed is set."""
    config = _config()
    seed = config.get_seed() if config._seed_is_set() else None
    if seed is None:
        return int(np.random.SeedSequence().generate_state(1, np.uint64)[0] >> 1), False
    return derive_seed(int(seed)), True
