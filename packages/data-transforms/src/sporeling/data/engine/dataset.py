"""The dataset graph: a ``Dataset`` node per source or pipeline operation.

Every node answers three questions, which is all the iterators need:

* ``get_col_names()``: the columns of its rows;
* ``_size()``: rows per epoch, exactly (``INFINITE`` after ``repeat()``);
* ``_stream(run, epoch, start)``: the rows of epoch ``epoch`` from position ``start``, as
  ``(row, origin)`` pairs (``row`` a tuple of NumPy values, ``origin`` the file a row came
  from, or None).

``start`` is what makes resuming cheap and exact: a node that can seek passes it on
(``map`` and ``project`` 1:1, ``batch`` times the batch size, ``skip``/``take``/``repeat``/
``concat`` by offsets, a random-access source by slicing its index order), and a node that
cannot (a plain generator, ``map(on_error='skip')``) replays from 0 and drops rows.
Seeking never changes the result because every random draw is keyed by
``(seed, epoch, node, row)``, never by how many rows ran before (see ``_rng``).
"""

from __future__ import annotations

import itertools
import logging
import math
import numbers
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from ._rng import derive_seed, row_random_scope
from .workers import TaskFailure, WorkerPool

__all__ = [
    "Dataset",
    "BatchInfo",
    "PipelineError",
    "INFINITE",
    "zip_datasets",
]

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
def check_int(where: str, name: str, value: Any, low: int | None = None, none: bool = False):
    if value is None and none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{where}: argument '{name}' expected an int, got {value!r}")
    if low is not None and value < low:
        raise ValueError(f"{where}: argument '{name}' expected an int >= {low}, got {value}")
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
    if not isinstance(value, (list, tuple)) or not value:
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
    if unknown:
        raise ValueError(
            f"{where}: argument '{name}' names unknown column(s) {unknown}; the columns are {known}"
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
) -> Iterator[tuple[Any, Any]]:
    """Run ``tasks`` through one of ``node``'s pools (returned to the run when done)."""
    pool = run.acquire(node, lambda: WorkerPool(fn, workers, processes, max_rowsize))
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
        raise NotImplementedError

    def _size(self) -> float:
        raise NotImplementedError

    def _stream(self, run: Run, epoch: int, start: int) -> Iterator[Item]:
        raise NotImplementedError

    # -- sizes and metadata --------------------------------------------------------------------
    def get_dataset_size(self) -> int:
        """Rows (batches after ``batch``) per epoch; -1 after an infinite ``repeat()``."""
        size = self._size()
        return -1 if size == INFINITE else int(size)

    def get_batch_size(self) -> int:
        """The batch size of the last ``batch`` in the pipeline (1 without one)."""
        node: Dataset | None = self
        while node is not None:
            if isinstance(node, BatchDataset):
                bs = node.batch_size
                return bs if isinstance(bs, int) else -1
            node = node.children[0] if len(node.children) == 1 else None
        return 1

    def get_repeat_count(self) -> int:
        """The count of the last ``repeat`` in the pipeline (1 without one, -1: infinite)."""
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

    def shuffle(self, buffer_size: int) -> ShuffleDataset:
        """Shuffle rows through a buffer of ``buffer_size`` rows (a new order every epoch)."""
        return ShuffleDataset(self, buffer_size)

    def repeat(self, count: int | None = None) -> RepeatDataset:
        """Repeat the dataset ``count`` times (None or -1: forever) within one epoch."""
        return RepeatDataset(self, count)

    def take(self, count: int = -1) -> TakeDataset:
        """The first ``count`` rows (-1: all)."""
        return TakeDataset(self, count)

    def skip(self, count: int) -> SkipDataset:
        """All rows but the first ``count``."""
        return SkipDataset(self, count)

    def zip(self, datasets: Dataset | Sequence[Dataset]) -> ZipDataset:
        """Rows side by side (columns joined); as many rows as the shortest dataset."""
        if isinstance(datasets, Dataset):
            datasets = [datasets]
        return ZipDataset([self, *check_datasets("Dataset.zip", datasets)])

    def concat(self, datasets: Dataset | Sequence[Dataset]) -> ConcatDataset:
        """This dataset's rows followed by each of ``datasets``' (same columns)."""
        if isinstance(datasets, Dataset):
            datasets = [datasets]
        return ConcatDataset([self, *check_datasets("Dataset.concat", datasets)])

    def __add__(self, other: Dataset) -> ConcatDataset:
        return self.concat(other)

    def project(self, columns: str | list[str]) -> ProjectDataset:
        """Keep ``columns``, in that order."""
        return ProjectDataset(self, columns)

    def rename(
        self, input_columns: str | list[str], output_columns: str | list[str]
    ) -> RenameDataset:
        """Rename ``input_columns`` to ``output_columns``."""
        return RenameDataset(self, input_columns, output_columns)

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
    return ZipDataset(ds)


# ---- map -------------------------------------------------------------------------------------
def _op_name(op: Any) -> str:
    return getattr(op, "__name__", None) or type(op).__name__


def _resolve(operations: list[Any]) -> list[Callable[..., Any]]:
    try:
        from ..transforms._base import resolve_operations
    except ImportError:
        return list(operations)
    return list(resolve_operations(list(operations)))


class _RowFunction:
    """Applies a map's resolved operations to the values of one row (picklable for spawn)."""

    def __init__(self, ops: list[Callable[..., Any]], n_out: int, names: list[str]) -> None:
        self.ops = ops
        self.n_out = n_out
        self.names = names

    def __call__(self, *values: Any) -> tuple[Any, ...]:
        for op in self.ops:
            out = op(*values)
            values = tuple(out) if isinstance(out, tuple) else (out,)
        if len(values) != self.n_out:
            raise ValueError(
                f"the operations gave {len(values)} value(s) but output_columns has "
                f"{self.n_out}: {self.names}"
            )
        return tuple(to_numpy(v) for v in values)


def _place(
    child_cols: list[str], inputs: list[str], outputs: list[str]
) -> tuple[list[str], list[tuple[str, int]]]:
    """Columns after replacing ``inputs`` by ``outputs`` at the first input's position."""
    first = min(child_cols.index(c) for c in inputs)
    kept = [c for c in child_cols if c not in inputs]
    at = sum(1 for c in child_cols[:first] if c not in inputs)
    cols = kept[:at] + outputs + kept[at:]
    plan = []  # (source, index): ("row", i) from the input row or ("out", j) from the outputs
    for c in cols:
        plan.append(("out", outputs.index(c)) if c in outputs else ("row", child_cols.index(c)))
    return cols, plan


class MapDataset(Dataset):
    def __init__(
        self,
        child: Dataset,
        operations: Any,
        input_columns: Any,
        output_columns: Any,
        column_order: Any,
        num_parallel_workers: Any,
        python_multiprocessing: Any,
        max_rowsize: Any,
        on_error: Any,
    ) -> None:
        where = "map"
        super().__init__([child], check_workers(where, num_parallel_workers))
        if operations is None:
            raise ValueError("map: argument 'operations' is required (a callable or a list)")
        ops = list(operations) if isinstance(operations, (list, tuple)) else [operations]
        if not ops:
            raise ValueError("map: argument 'operations' expected at least one operation")
        for op in ops:
            if not callable(op):
                raise TypeError(
                    f"map: argument 'operations' expected callables, got {type(op).__name__}"
                )
        self.operations = ops
        self.python_multiprocessing = check_bool(
            where, "python_multiprocessing", python_multiprocessing
        )
        if isinstance(max_rowsize, bool) or not isinstance(max_rowsize, numbers.Real):
            raise TypeError(f"map: argument 'max_rowsize' expected a number, got {max_rowsize!r}")
        if max_rowsize <= 0:
            raise ValueError(f"map: argument 'max_rowsize' expected > 0 (MB), got {max_rowsize}")
        self.max_rowsize = float(max_rowsize)
        self.on_error = check_on_error(where, on_error)
        child_cols = child.get_col_names()
        inputs = check_columns(where, "input_columns", input_columns) or child_cols[:1]
        check_known(where, "input_columns", inputs, child_cols)
        outputs = check_columns(where, "output_columns", output_columns) or list(inputs)
        clash = [c for c in outputs if c in child_cols and c not in inputs]
        if clash:
            raise ValueError(
                f"map: output_columns {clash} already exist and are not input columns; "
                "rename them first or pick other names"
            )
        self.input_columns, self.output_columns = inputs, outputs
        cols, self._plan = _place(child_cols, inputs, outputs)
        self._in_idx = [child_cols.index(c) for c in inputs]
        self._order: list[int] | None = None
        if column_order is not None:
            order = check_columns(where, "column_order", column_order, none=False) or []
            check_known(where, "column_order", order, cols)
            self._order = [cols.index(c) for c in order]
            cols = order
        self._cols = cols
        self._fn = _RowFunction(_resolve(ops), len(outputs), outputs)

    def get_col_names(self) -> list[str]:
        return list(self._cols)

    def _size(self) -> float:
        return self.children[0]._size()

    def _workers(self) -> int:
        return self.num_parallel_workers or default_workers()

    def _assemble(self, row: Row, out: tuple[Any, ...]) -> Row:
        full = tuple(out[i] if src == "out" else row[i] for src, i in self._plan)
        if self._order is not None:
            full = tuple(full[i] for i in self._order)
        return full

    def _stream(self, run: Run, epoch: int, start: int) -> Iterator[Item]:
        if self.on_error == "skip" and start:
            yield from drop(self._stream(run, epoch, 0), start)
            return
        child = self.children[0]
        in_idx = self._in_idx

        def tasks() -> Iterator[tuple[Any, tuple[Any, ...], Any]]:
            for k, (row, origin) in enumerate(child._stream(run, epoch, start)):
                i = start + k
                yield run.row_key(self, epoch, i), tuple(row[j] for j in in_idx), (row, origin, i)

        stream = pooled(
            run,
            self,
            self._fn,
            self._workers(),
            self.python_multiprocessing,
            self.max_rowsize,
            tasks(),
        )
        for (row, origin, i), out in stream:
            if isinstance(out, TaskFailure):
                names = ", ".join(_op_name(op) for op in self.operations)
                where = f"map [{names}] on columns {self.input_columns}"
                if self.on_error == "skip":
                    run.skip(where, origin, i, out.message)
                    continue
                file = f" (file {origin})" if origin is not None else ""
                detail = "" if out.exc is not None else f"\nworker traceback:\n{out.traceback}"
                raise PipelineError(
                    f"{where}: failed on row {i} of epoch {epoch}{file}: {out.message}{detail}",
                    origin,
                    i,
                ) from out.exc
            yield self._assemble(row, out), origin


# ---- batch -----------------------------------------------------------------------------------
def _pad_to(where: str, col: str, values: list[Any], spec: Any) -> list[np.ndarray]:
    pad_shape, pad_value = spec
    arrays = [np.asarray(v) for v in values]
    ndim = {a.ndim for a in arrays}
    if len(ndim) != 1:
        raise ValueError(f"{where}: column '{col}' has rows of different ranks {sorted(ndim)}")
    nd = ndim.pop()
    largest = [max(a.shape[d] for a in arrays) for d in range(nd)]
    if pad_shape is None:
        target = largest
    else:
        if len(pad_shape) != nd:
            raise ValueError(
                f"{where}: pad_info['{col}'] shape {list(pad_shape)} has {len(pad_shape)} dims "
                f"but the column's rows have {nd}"
            )
        target = [largest[d] if s is None else int(s) for d, s in enumerate(pad_shape)]
    out = []
    for a in arrays:
        if any(a.shape[d] > target[d] for d in range(nd)):
            raise ValueError(
                f"{where}: a row of column '{col}' has shape {list(a.shape)}, larger than the "
                f"pad shape {target}"
            )
        if list(a.shape) == target:
            out.append(a)
            continue
        value = 0 if pad_value is None else pad_value
        padded = np.full(target, value, dtype=a.dtype)
        padded[tuple(slice(0, s) for s in a.shape)] = a
        out.append(padded)
    return out


class _BatchFunction:
    """per_batch_map (optional), padding and stacking of one batch (runs in a worker)."""

    def __init__(self, node: BatchDataset) -> None:
        self.per_batch_map = node.per_batch_map
        self.in_idx = node._in_idx
        self.n_out = len(node._outputs)
        self.outputs = node._outputs
        self.plan = node._plan
        self.order = node._order
        self.cols = node._pre_cols
        self.pad_info = node.pad_info

    def __call__(self, batch_num: Any, epoch: Any, rows: list[Row]) -> tuple[Any, ...]:
        columns = [list(c) for c in zip(*rows)]
        where = "batch"
        if self.per_batch_map is not None:
            args = [columns[i] for i in self.in_idx]
            out = self.per_batch_map(*args, BatchInfo(int(batch_num), int(epoch)))
            out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
            if len(out) != self.n_out:
                raise ValueError(
                    f"batch: per_batch_map returned {len(out)} column(s) but "
                    f"{self.n_out} are expected ({self.outputs}); set output_columns"
                )
            columns = [list(out[i]) if src == "out" else columns[i] for src, i in self.plan]
        stacked = []
        for name, values in zip(self.cols, columns):
            if isinstance(values, np.ndarray):
                stacked.append(values)
                continue
            values = [to_numpy(v) for v in values]
            if self.pad_info is not None and name in self.pad_info:
                values = _pad_to(where, name, values, self.pad_info[name])
            shapes = {np.shape(v) for v in values}
            if len(shapes) > 1:
                raise ValueError(
                    f"batch: column '{name}' has rows of different shapes "
                    f"{sorted(shapes, key=str)[:4]} in batch {int(batch_num)}; give "
                    f"pad_info={{'{name}': (None, 0)}} to pad them"
                )
            stacked.append(np.stack(values))
        if self.order is not None:
            stacked = [stacked[i] for i in self.order]
        return tuple(stacked)


class BatchDataset(Dataset):
    def __init__(
        self,
        child: Dataset,
        batch_size: Any,
        drop_remainder: Any,
        num_parallel_workers: Any,
        per_batch_map: Any,
        input_columns: Any,
        output_columns: Any,
        column_order: Any,
        pad_info: Any,
        python_multiprocessing: Any,
        max_rowsize: Any,
    ) -> None:
        where = "batch"
        super().__init__([child], check_workers(where, num_parallel_workers))
        if callable(batch_size):
            self.batch_size: Any = batch_size
        else:
            self.batch_size = check_int(where, "batch_size", batch_size, 1)
        self.drop_remainder = check_bool(where, "drop_remainder", drop_remainder)
        if per_batch_map is not None and not callable(per_batch_map):
            raise TypeError(
                f"batch: argument 'per_batch_map' expected a callable, got {per_batch_map!r}"
            )
        self.per_batch_map = per_batch_map
        self.python_multiprocessing = check_bool(
            where, "python_multiprocessing", python_multiprocessing
        )
        self.max_rowsize = float(max_rowsize)
        child_cols = child.get_col_names()
        inputs = check_columns(where, "input_columns", input_columns)
        outputs = check_columns(where, "output_columns", output_columns)
        if per_batch_map is None and (inputs or outputs):
            raise ValueError("batch: input_columns/output_columns need a per_batch_map")
        if inputs is None:
            inputs = list(child_cols)
        check_known(where, "input_columns", inputs, child_cols)
        outputs = outputs or list(inputs)
        self._in_idx = [child_cols.index(c) for c in inputs]
        self._outputs = outputs
        cols, self._plan = (
            _place(child_cols, inputs, outputs)
            if per_batch_map
            else (
                list(child_cols),
                [("row", i) for i in range(len(child_cols))],
            )
        )
        self._pre_cols = list(cols)
        self._order: list[int] | None = None
        if column_order is not None:
            order = check_columns(where, "column_order", column_order, none=False) or []
            check_known(where, "column_order", order, cols)
            self._order = [cols.index(c) for c in order]
            cols = order
        self._cols = cols
        if pad_info is not None:
            if not isinstance(pad_info, dict):
                raise TypeError(
                    f"batch: argument 'pad_info' expected a dict {{column: (shape, value)}}, "
                    f"got {type(pad_info).__name__}"
                )
            checked = {}
            for col, spec in pad_info.items():
                if col not in self._pre_cols:
                    raise ValueError(
                        f"batch: pad_info names unknown column '{col}'; the columns are "
                        f"{self._pre_cols}"
                    )
                if spec is None:
                    spec = (None, None)
                if not isinstance(spec, (tuple, list)) or len(spec) != 2:
                    raise TypeError(
                        f"batch: pad_info['{col}'] expected (pad_shape, pad_value), got {spec!r}"
                    )
                shape, value = spec
                if shape is not None:
                    if not isinstance(shape, (list, tuple)):
                        raise TypeError(
                            f"batch: pad_info['{col}'] shape expected a list of ints/None, "
                            f"got {shape!r}"
                        )
                    for s in shape:
                        if s is not None:
                            check_int(where, f"pad_info['{col}'] shape", s, 1)
                checked[col] = (None if shape is None else list(shape), value)
            pad_info = checked
        self.pad_info = pad_info
        self._fn = _BatchFunction(self)

    def get_col_names(self) -> list[str]:
        return list(self._cols)

    def _sizes(self, epoch: int, n: int) -> Iterator[int]:
        """Sizes of the batches of an epoch of ``n`` rows (callable batch_size)."""
        done, b = 0, 0
        while done < n:
            bs = self._batch_size(b, epoch)
            take = min(bs, n - done)
            if take < bs and self.drop_remainder:
                return
            yield take
            done += take
            b += 1

    def _batch_size(self, batch_num: int, epoch: int) -> int:
        if not callable(self.batch_size):
            return self.batch_size
        bs = self.batch_size(BatchInfo(batch_num, epoch))
        return check_int("batch", "batch_size (returned by the callable)", bs, 1)

    def _size(self) -> float:
        n = self.children[0]._size()
        if n == INFINITE:
            return INFINITE
        if callable(self.batch_size):
            return sum(1 for _ in self._sizes(0, int(n)))
        full, rest = divmod(int(n), self.batch_size)
        return full + (1 if rest and not self.drop_remainder else 0)

    def _stream(self, run: Run, epoch: int, start: int) -> Iterator[Item]:
        child = self.children[0]
        if callable(self.batch_size):
            base, child_start = 0, 0
        else:
            base, child_start = start, start * self.batch_size

        def tasks() -> Iterator[tuple[Any, tuple[Any, ...], Any]]:
            rows_iter = iter(child._stream(run, epoch, child_start))
            b = base
            while True:
                bs = self._batch_size(b, epoch)
                chunk = list(itertools.islice(rows_iter, bs))
                if not chunk or (len(chunk) < bs and self.drop_remainder):
                    return
                rows = [r for r, _ in chunk]
                origin = chunk[0][1] if len(chunk) == 1 else None
                yield run.row_key(self, epoch, b), (b, epoch, rows), (b, origin)
                b += 1

        workers = self.num_parallel_workers or 1
        stream = pooled(
            run, self, self._fn, workers, self.python_multiprocessing, self.max_rowsize, tasks()
        )
        skip = start if callable(self.batch_size) else 0
        for (b, origin), out in stream:
            if isinstance(out, TaskFailure):
                raise PipelineError(
                    f"batch: failed on batch {b} of epoch {epoch}: {out.message}"
                    + ("" if out.exc is not None else f"\nworker traceback:\n{out.traceback}"),
                    origin,
                    b,
                ) from out.exc
            if skip:
                skip -= 1
                continue
            yield out, origin


# ---- shuffle ---------------------------------------------------------------------------------
def buffer_order(n: int, buffer_size: int, rng: np.random.Generator) -> list[int]:
    """Emission order of a reservoir shuffle over ``n`` rows (depends on counts only).

    Fill a buffer with the first ``buffer_size`` rows; for each further row emit a random
    buffer slot and put the row there; at the end emit what is left in random order.
    """
    buf = list(range(min(buffer_size, n)))
    order = []
    if n > buffer_size:
        slots = rng.integers(0, buffer_size, size=n - buffer_size)
        for pos, j in zip(range(buffer_size, n), slots.tolist()):
            order.append(buf[j])
            buf[j] = pos
    order.extend(np.asarray(buf, dtype=np.int64)[rng.permutation(len(buf))].tolist())
    return order


class ShuffleDataset(Dataset):
    def __init__(self, child: Dataset, buffer_size: Any) -> None:
        super().__init__([child])
        self.buffer_size = check_int("shuffle", "buffer_size", buffer_size, 2)

    def get_col_names(self) -> list[str]:
        return self.children[0].get_col_names()

    def _size(self) -> float:
        return self.children[0]._size()

    def _stream(self, run: Run, epoch: int, start: int) -> Iterator[Item]:
        child = self.children[0]
        rng = np.random.default_rng(list(run.row_key(self, epoch, 0)))
        n = child._size()
        if n == INFINITE:
            raise ValueError(
                "shuffle: cannot shuffle an infinite dataset (put shuffle before repeat())"
            )
        order = buffer_order(int(n), self.buffer_size, rng)
        todo = order[start:]
        if not todo:
            return
        needed = set(todo)
        first = min(todo)
        held: dict[int, Item] = {}
        k = 0
        for pos, item in enumerate(child._stream(run, epoch, first), start=first):
            if pos in needed:
                held[pos] = item
            while k < len(todo) and todo[k] in held:
                yield held.pop(todo[k])
                k += 1
        if k < len(todo):  # pragma: no cover - the child gave fewer rows than its size
            raise RuntimeError(
                f"shuffle: the input gave fewer rows than its size {int(n)} in epoch {epoch}"
            )


# ---- repeat / take / skip --------------------------------------------------------------------
class RepeatDataset(Dataset):
    def __init__(self, child: Dataset, count: Any) -> None:
        super().__init__([child])
        if count is None:
            count = -1
        count = check_int("repeat", "count", count)
        if count == 0 or count < -1:
            raise ValueError(
                f"repeat: argument 'count' expected -1, None or an int >= 1, got {count}"
            )
        self.count = count

    def get_col_names(self) -> list[str]:
        return self.children[0].get_col_names()

    def _size(self) -> float:
        n = self.children[0]._size()
        if self.count == -1:
            return INFINITE if n else 0
        return n * self.count

    def _stream(self, run: Run, epoch: int, start: int) -> Iterator[Item]:
        child = self.children[0]
        n = child._size()
        if n == 0:
            return
        r, offset = divmod(start, int(n)) if n != INFINITE else (0, start)
        while self.count == -1 or r < self.count:
            # Each pass is its own child epoch, so shuffles differ between passes.
            child_epoch = epoch * self.count + r if self.count != -1 else r
            yield from child._stream(run, child_epoch, offset)
            offset = 0
            r += 1


class TakeDataset(Dataset):
    def __init__(self, child: Dataset, count: Any) -> None:
        super().__init__([child])
        count = check_int("take", "count", count)
        if count == 0 or count < -1:
            raise ValueError(f"take: argument 'count' expected -1 or an int >= 1, got {count}")
        self.count = count

    def get_col_names(self) -> list[str]:
        return self.children[0].get_col_names()

    def _size(self) -> float:
        n = self.children[0]._size()
        return n if self.count == -1 else min(n, self.count)

    def _stream(self, run: Run, epoch: int, start: int) -> Iterator[Item]:
        stream = self.children[0]._stream(run, epoch, start)
        if self.count == -1:
            yield from stream
        else:
            yield from itertools.islice(stream, max(self.count - start, 0))


class SkipDataset(Dataset):
    def __init__(self, child: Dataset, count: Any) -> None:
        super().__init__([child])
        self.count = check_int("skip", "count", count, 0)

    def get_col_names(self) -> list[str]:
        return self.children[0].get_col_names()

    def _size(self) -> float:
        n = self.children[0]._size()
        return n if n == INFINITE else max(n - self.count, 0)

    def _stream(self, run: Run, epoch: int, start: int) -> Iterator[Item]:
        yield from self.children[0]._stream(run, epoch, self.count + start)


# ---- zip / concat / project / rename ---------------------------------------------------------
class ZipDataset(Dataset):
    def __init__(self, datasets: list[Dataset]) -> None:
        super().__init__(datasets)
        seen: dict[str, int] = {}
        for i, d in enumerate(datasets):
            for c in d.get_col_names():
                if c in seen:
                    raise ValueError(
                        f"zip: column '{c}' is in dataset {seen[c]} and dataset {i}; "
                        "rename one of them first"
                    )
                seen[c] = i
        self._cols = list(seen)

    def get_col_names(self) -> list[str]:
        return list(self._cols)

    def _size(self) -> float:
        return min(d._size() for d in self.children)

    def _stream(self, run: Run, epoch: int, start: int) -> Iterator[Item]:
        streams = [d._stream(run, epoch, start) for d in self.children]
        for items in zip(*streams):
            row = tuple(v for r, _ in items for v in r)
            origin = next((o for _, o in items if o is not None), None)
            yield row, origin


class ConcatDataset(Dataset):
    def __init__(self, datasets: list[Dataset]) -> None:
        super().__init__(datasets)
        cols = datasets[0].get_col_names()
        for i, d in enumerate(datasets[1:], start=1):
            if d.get_col_names() != cols:
                raise ValueError(
                    f"concat: dataset {i} has columns {d.get_col_names()}, expected {cols}"
                )
        self._cols = cols

    def get_col_names(self) -> list[str]:
        return list(self._cols)

    def _size(self) -> float:
        return sum(d._size() for d in self.children)

    def _stream(self, run: Run, epoch: int, start: int) -> Iterator[Item]:
        for d in self.children:
            n = d._size()
            if start >= n:
                start -= int(n)
                continue
            yield from d._stream(run, epoch, start)
            start = 0


class ProjectDataset(Dataset):
    def __init__(self, child: Dataset, columns: Any) -> None:
        super().__init__([child])
        cols = check_columns("project", "columns", columns, none=False) or []
        child_cols = child.get_col_names()
        check_known("project", "columns", cols, child_cols)
        self._cols = cols
        self._idx = [child_cols.index(c) for c in cols]

    def get_col_names(self) -> list[str]:
        return list(self._cols)

    def _size(self) -> float:
        return self.children[0]._size()

    def _stream(self, run: Run, epoch: int, start: int) -> Iterator[Item]:
        idx = self._idx
        for row, origin in self.children[0]._stream(run, epoch, start):
            yield tuple(row[i] for i in idx), origin


class RenameDataset(Dataset):
    def __init__(self, child: Dataset, input_columns: Any, output_columns: Any) -> None:
        super().__init__([child])
        ins = check_columns("rename", "input_columns", input_columns, none=False) or []
        outs = check_columns("rename", "output_columns", output_columns, none=False) or []
        if len(ins) != len(outs):
            raise ValueError(
                f"rename: {len(ins)} input_columns but {len(outs)} output_columns; give one new "
                "name per column"
            )
        child_cols = child.get_col_names()
        check_known("rename", "input_columns", ins, child_cols)
        mapping = dict(zip(ins, outs))
        cols = [mapping.get(c, c) for c in child_cols]
        if len(set(cols)) != len(cols):
            raise ValueError(f"rename: the new names would give duplicate columns {cols}")
        self._cols = cols

    def get_col_names(self) -> list[str]:
        return list(self._cols)

    def _size(self) -> float:
        return self.children[0]._size()

    def _stream(self, run: Run, epoch: int, start: int) -> Iterator[Item]:
        return self.children[0]._stream(run, epoch, start)


def base_seed_for_run() -> tuple[int, bool]:
    """(base seed, seeded?) from ``config.get_seed()``; fresh entropy when no seed is set."""
    config = _config()
    seed = config.get_seed() if config._seed_is_set() else None
    if seed is None:
        return int(np.random.SeedSequence().generate_state(1, np.uint64)[0] >> 1), False
    return derive_seed(int(seed)), True


__all__ += [
    "MapDataset",
    "BatchDataset",
    "ShuffleDataset",
    "RepeatDataset",
    "TakeDataset",
    "SkipDataset",
    "ZipDataset",
    "ConcatDataset",
    "ProjectDataset",
    "RenameDataset",
]
_ = row_random_scope  # re-exported for sources that open scopes themselves
