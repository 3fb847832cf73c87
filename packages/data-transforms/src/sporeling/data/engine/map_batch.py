"""Pipeline nodes for ``map`` and ``batch`` (row and batch functions, padding, workers)."""

from __future__ import annotations

import itertools
import numbers
import sys
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from .base import (
    INFINITE,
    INT32_MAX,
    BatchInfo,
    Dataset,
    DeferredArray,
    Item,
    PipelineError,
    Row,
    Run,
    _config,
    check_bool,
    check_columns,
    check_int,
    check_known,
    check_on_error,
    check_workers,
    default_workers,
    drop,
    pooled,
    to_numpy,
)
from .workers import TaskFailure


# ---- map -------------------------------------------------------------------------------------
def _op_name(op: Any) -> str:
    return getattr(op, "__name__", None) or type(op).__name__


def _resolve(operations: list[Any]) -> list[Callable[..., Any]]:
    try:
        from ..transforms._base import resolve_operations
    except ImportError:
        return list(operations)
    return list(resolve_operations(list(operations)))


def _fuse(chain: list[Callable[..., Any]]) -> list[Callable[..., Any]]:
    """MindSpore's tensor-op fusion (Decode + RandomResizedCrop, ...): `vision._fused`."""
    from ..vision._fused import fuse_operations

    return fuse_operations(chain)


def _deferring(op: Any) -> Any:
    """`op` as a variant that returns `DeferredArray`s where it can, else None (only the
    fused flip + Normalize + HWC2CHW of `vision._fused` has one)."""
    from ..vision._fused import FusedNormalizeCHW

    return op.deferring() if isinstance(op, FusedNormalizeCHW) else None


def _fusion_enabled() -> bool:
    from .. import config

    return config.get_map_fusion()


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
        return tuple(v if isinstance(v, DeferredArray) else to_numpy(v) for v in values)


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
            if not callable(op):  # ValueError, as MindSpore raises
                raise ValueError(
                    f"map: argument 'operations' expected callables (a python function, class "
                    f"method or transform object), got {type(op).__name__} {op!r}"
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
        chain = _resolve(ops)
        self._fn_unfused = _RowFunction(chain, len(outputs), outputs)
        fused = _fuse(chain)
        self._fn_fused = _RowFunction(fused, len(outputs), outputs)
        self._fn = self._fn_fused if len(fused) < len(chain) else self._fn_unfused
        # For a batch right above that stacks the rows: the last fused op may leave its
        # output to be written straight into the batch array (`DeferredArray`).
        last = _deferring(fused[-1]) if fused else None
        self._fn_deferred = (
            _RowFunction([*fused[:-1], last], len(outputs), outputs) if last is not None else None
        )

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

    def _stream(self, run: Run, epoch: int, start: int, defer: bool = False) -> Iterator[Item]:
        """The mapped rows; `defer` (a stacking batch right above, see `BatchDataset`): the
        outputs may be `DeferredArray`s, which that batch writes into its arrays."""
        if self.on_error == "skip" and start:
            yield from drop(self._stream(run, epoch, 0, defer), start)
            return
        child = self.children[0]
        in_idx = self._in_idx

        def tasks() -> Iterator[tuple[Any, tuple[Any, ...], Any]]:
            for k, (row, origin) in enumerate(child._stream(run, epoch, start)):
                i = start + k
                yield run.row_key(self, epoch, i), tuple(row[j] for j in in_idx), (row, origin, i)

        fn = self._fn if _fusion_enabled() else self._fn_unfused
        processes = self.python_multiprocessing and self._workers() > 1
        if defer and fn is self._fn_fused and self._fn_deferred is not None and not processes:
            fn = self._fn_deferred
        stream = pooled(
            run,
            self,
            fn,
            self._workers(),
            self.python_multiprocessing,
            self.max_rowsize,
            tasks(),
            overlap=True,
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


# A pooled buffer nobody else refers to: the pool's list and getrefcount's argument.
_FREE_REFS = 2
_GIL = getattr(sys, "_is_gil_enabled", lambda: True)()


class _BufferPool:
    """Batch arrays of one epoch's stream, reused once the consumer has dropped them.

    A fresh 20 MB batch array costs the kernel a page fault and a zeroed page per 4 KB
    (or 2 MB huge page) on first write, about 2.5x the copy of the rows into it. A pooled
    array is handed out again only when nothing but the pool refers to it (CPython's
    exact reference count: a batch the consumer holds, or any view, tensor, memoryview
    or DLPack export of it, keeps it out of reuse). At most `limit` arrays are pooled
    (the batches in flight), the most recent ones: a batch the consumer keeps is forgotten
    once `limit` newer arrays were made. On a free-threaded build nothing is pooled.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit if _GIL else 0
        self.buffers: list[np.ndarray] = []

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        buffers = self.buffers
        for k in range(len(buffers)):
            if sys.getrefcount(buffers[k]) == _FREE_REFS:
                b = buffers[k]
                if b.shape == shape and b.dtype == dtype:
                    return b
        b = np.empty(shape, dtype)
        if len(buffers) < self.limit:
            buffers.append(b)
        elif self.limit:
            # full: the new array replaces a free one (of another shape) or else the oldest
            # (the pool forgets a batch the consumer keeps; it is the consumer's now)
            for k in range(len(buffers)):
                if sys.getrefcount(buffers[k]) == _FREE_REFS:
                    del buffers[k]
                    break
            else:
                del buffers[0]
            buffers.append(b)
        return b


class _Stacker:
    """Builds a batch's columns while its rows arrive: each array is copied into a
    preallocated batch array right after the map made it (still in cache), instead of an
    `np.stack` over the whole batch at the end (a second pass over ~20 MB for 32 float32
    224x224 images). The batch arrays come from a `_BufferPool` when one is given. A
    column whose rows are not arrays of one shape and dtype is left to `_BatchFunction`
    (padding, the shape error)."""

    def __init__(self, size: int, pool: _BufferPool | None = None) -> None:
        self.size = size
        self.pool = pool
        self.columns: list[np.ndarray | None] = []

    def _empty(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        if self.pool is None:
            return np.empty(shape, dtype)
        return self.pool.empty(shape, dtype)

    def add(self, k: int, row: Row) -> None:
        if k == 0:
            self.columns = [
                self._empty((self.size, *v.shape), v.dtype)
                if isinstance(v, np.ndarray | DeferredArray) and not v.dtype.hasobject
                else None
                for v in row
            ]
        for c, v in enumerate(row):
            buf = self.columns[c]
            if buf is None:
                continue
            if isinstance(v, np.ndarray) and v.shape == buf.shape[1:] and v.dtype == buf.dtype:
                buf[k] = v
            elif isinstance(v, DeferredArray) and v.shape == buf.shape[1:] and v.dtype == buf.dtype:
                v.write_into(buf[k])
            else:
                self.columns[c] = None

    def result(self, count: int) -> list[np.ndarray | None]:
        return [None if b is None else b[:count] for b in self.columns]


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

    def __call__(
        self, batch_num: Any, epoch: Any, rows: list[Row], stacked: Any = None
    ) -> tuple[Any, ...]:
        columns: list[Any] = [list(c) for c in zip(*rows)]
        if stacked is not None:  # columns `_Stacker` already built
            columns = [col if s is None else s for col, s in zip(columns, stacked)]
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
            self.batch_size = check_int(where, "batch_size", batch_size, 1, high=INT32_MAX)
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

        stack = self.per_batch_map is None and self.pad_info is None
        workers = self.num_parallel_workers or 1

        def tasks() -> Iterator[tuple[Any, tuple[Any, ...], Any]]:
            if isinstance(child, MapDataset) and stack:
                # rows go to `_Stacker` (below): a map may leave them as `DeferredArray`s
                # (rows a stacked column drops are converted by `_BatchFunction`)
                defer = not (self.python_multiprocessing and workers > 1)
                rows_iter = iter(child._stream(run, epoch, child_start, defer=defer))
            else:
                rows_iter = iter(child._stream(run, epoch, child_start))
            b = base
            # batches in flight: the prefetch queue, one per worker, the consumer's
            pool = _BufferPool(_config().get_prefetch_size() + (self.num_parallel_workers or 1) + 2)
            while True:
                bs = self._batch_size(b, epoch)
                stacker = _Stacker(bs, pool) if stack else None
                chunk: list[Item] = []
                for row, origin in itertools.islice(rows_iter, bs):
                    if stacker is not None:
                        stacker.add(len(chunk), row)
                    chunk.append((row, origin))
                if not chunk or (len(chunk) < bs and self.drop_remainder):
                    return
                rows = [r for r, _ in chunk]
                origin = chunk[0][1] if len(chunk) == 1 else None
                stacked = None if stacker is None else stacker.result(len(chunk))
                yield run.row_key(self, epoch, b), (b, epoch, rows, stacked), (b, origin)
                b += 1

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
