"""Pipeline nodes for ``filter`` and ``bucket_batch_by_length`` (MindSpore 1.8 semantics).

Neither node can seek: how many rows a ``filter`` keeps, and which rows make up a bucket's
batch, are only known by running the input. Resuming at ``start`` therefore replays the epoch
from its beginning and drops what was already given (``bucket_batch_by_length`` computes only
the lengths of the dropped batches, it does not pad or stack them). Since every random draw is
keyed by (seed, epoch, node, row), the replay gives the same rows as the first run.

Their ``get_dataset_size()`` is counted the way MindSpore does it: by running the input once
(epoch 0) and counting; the count is cached on the node. It is exact when the predicate and
the lengths do not depend on random augmentations upstream.
"""

from __future__ import annotations

import bisect
import numbers
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from .base import (
    INFINITE,
    Dataset,
    Item,
    PipelineError,
    Row,
    Run,
    base_seed_for_run,
    check_bool,
    check_columns,
    check_int,
    check_known,
    check_workers,
    drop,
    pooled,
    to_numpy,
)
from .map_batch import _pad_to
from .workers import TaskFailure


def _count(node: Dataset, consume: Callable[[Run, Iterator[Item]], int]) -> int:
    """Run ``node``'s input once (epoch 0, its own run) and count with ``consume``."""
    child = node.children[0]
    seed, seeded = base_seed_for_run()
    run = Run(node, seed, seeded)
    stream = child._stream(run, 0, 0)
    try:
        return consume(run, stream)
    finally:
        stream.close()  # type: ignore[attr-defined]
        run.close()


# ---- filter ----------------------------------------------------------------------------------
class _Predicate:
    """Calls the predicate on one row's input columns and checks it gave a bool."""

    def __init__(self, predicate: Callable[..., Any]) -> None:
        self.predicate = predicate

    def __call__(self, *values: Any) -> bool:
        out = self.predicate(*values)
        arr = np.asarray(out) if not isinstance(out, (bool, np.bool_)) else None
        if arr is not None and not (arr.dtype == np.bool_ and arr.size == 1):
            raise TypeError(f"the predicate must return a bool, got {out!r}")
        return bool(out if arr is None else arr.reshape(()))


class FilterDataset(Dataset):
    """Keeps the rows for which ``predicate(*input_columns)`` is True."""

    def __init__(
        self, child: Dataset, predicate: Any, input_columns: Any, num_parallel_workers: Any
    ) -> None:
        where = "filter"
        super().__init__([child], check_workers(where, num_parallel_workers))
        if not callable(predicate):
            raise TypeError(f"filter: argument 'predicate' expected a callable, got {predicate!r}")
        self.predicate = predicate
        child_cols = child.get_col_names()
        inputs = check_columns(where, "input_columns", input_columns) or list(child_cols)
        check_known(where, "input_columns", inputs, child_cols)
        self.input_columns = inputs
        self._in_idx = [child_cols.index(c) for c in inputs]
        self._fn = _Predicate(predicate)
        self._count: int | None = None

    def get_col_names(self) -> list[str]:
        return self.children[0].get_col_names()

    def _size(self) -> float:
        n = self.children[0]._size()
        if n == INFINITE or n == 0:
            return n
        if self._count is None:  # as MindSpore does: run the input once and count
            self._count = _count(self, lambda run, s: sum(1 for _ in self._kept(s, run, 0)))
        return self._count

    def _kept(self, stream: Iterator[Item], run: Run, epoch: int) -> Iterator[Item]:
        in_idx = self._in_idx

        def tasks() -> Iterator[tuple[Any, tuple[Any, ...], Any]]:
            for i, (row, origin) in enumerate(stream):
                yield run.row_key(self, epoch, i), tuple(row[j] for j in in_idx), (row, origin, i)

        workers = self.num_parallel_workers or 1
        for (row, origin, i), keep in pooled(run, self, self._fn, workers, False, 16, tasks()):
            if isinstance(keep, TaskFailure):
                file = f" (file {origin})" if origin is not None else ""
                detail = "" if keep.exc is not None else f"\nworker traceback:\n{keep.traceback}"
                raise PipelineError(
                    f"filter on columns {self.input_columns}: predicate failed on row {i} of "
                    f"epoch {epoch}{file}: {keep.message}{detail}",
                    origin,
                    i,
                ) from keep.exc
            if keep:
                yield row, origin

    def _stream(self, run: Run, epoch: int, start: int) -> Iterator[Item]:
        kept = self._kept(self.children[0]._stream(run, epoch, 0), run, epoch)
        yield from (drop(kept, start) if start else kept)


# ---- bucket_batch_by_length ------------------------------------------------------------------
def _int_list(where: str, name: str, value: Any, low: int) -> list[int]:
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{where}: argument '{name}' expected a list of ints, got {value!r}")
    out = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise TypeError(f"{where}: argument '{name}' expected a list of ints, got {value!r}")
        if v < low:
            raise ValueError(
                f"{where}: argument '{name}' must only contain positive numbers, got {list(value)}"
            )
        out.append(int(v))
    return out


def _check_pad_info(where: str, pad_info: Any, cols: list[str]) -> dict[str, Any] | None:
    if pad_info is None:
        return None
    if not isinstance(pad_info, dict):
        raise TypeError(
            f"{where}: argument 'pad_info' expected a dict {{column: (shape, value)}}, "
            f"got {type(pad_info).__name__}"
        )
    checked: dict[str, Any] = {}
    for col, spec in pad_info.items():
        if col not in cols:
            raise ValueError(
                f"{where}: argument 'pad_info' names unknown column '{col}'; the columns are {cols}"
            )
        if spec is None:
            spec = (None, None)
        if not isinstance(spec, (tuple, list)) or len(spec) != 2:
            raise TypeError(
                f"{where}: argument 'pad_info' ['{col}'] expected (pad_shape, pad_value), "
                f"got {spec!r}"
            )
        shape, value = spec
        if shape is not None:
            if not isinstance(shape, (list, tuple)):
                raise TypeError(
                    f"{where}: argument 'pad_info' ['{col}'] shape expected a list of ints/None, "
                    f"got {shape!r}"
                )
            for s in shape:
                if s is not None:
                    check_int(where, f"pad_info['{col}'] shape", s, 1)
        checked[col] = (None if shape is None else list(shape), value)
    return checked


class BucketBatchByLengthDataset(Dataset):
    """Rows grouped by length into buckets; a bucket is padded and batched when it is full."""

    def __init__(
        self,
        child: Dataset,
        column_names: Any,
        bucket_boundaries: Any,
        bucket_batch_sizes: Any,
        element_length_function: Any,
        pad_info: Any,
        pad_to_bucket_boundary: Any,
        drop_remainder: Any,
    ) -> None:
        where = "bucket_batch_by_length"
        super().__init__([child])
        child_cols = child.get_col_names()
        names = check_columns(where, "column_names", column_names, none=False) or []
        check_known(where, "column_names", names, child_cols)
        bounds = _int_list(where, "bucket_boundaries", bucket_boundaries, 1)
        for a, b in zip(bounds, bounds[1:]):
            if b <= a:
                raise ValueError(
                    f"{where}: argument 'bucket_boundaries' must be strictly increasing, "
                    f"got {bounds}"
                )
        sizes = _int_list(where, "bucket_batch_sizes", bucket_batch_sizes, 1)
        if len(sizes) != len(bounds) + 1:
            raise ValueError(
                f"{where}: argument 'bucket_batch_sizes' must have one element more than "
                f"bucket_boundaries ({len(bounds) + 1}), got {len(sizes)}"
            )
        if element_length_function is None:
            if len(names) != 1:
                raise ValueError(
                    f"{where}: argument 'column_names' must name exactly one column when "
                    f"element_length_function is not given, got {names}"
                )
        elif not callable(element_length_function):
            raise TypeError(
                f"{where}: argument 'element_length_function' expected a callable, "
                f"got {element_length_function!r}"
            )
        self.column_names = names
        self.bucket_boundaries = bounds
        self.bucket_batch_sizes = sizes
        self.element_length_function = element_length_function
        self.pad_info = _check_pad_info(where, pad_info, child_cols)
        self.pad_to_bucket_boundary = check_bool(
            where, "pad_to_bucket_boundary", pad_to_bucket_boundary
        )
        self.drop_remainder = check_bool(where, "drop_remainder", drop_remainder)
        self._cols = list(child_cols)
        self._in_idx = [child_cols.index(c) for c in names]
        self._count: int | None = None

    def get_col_names(self) -> list[str]:
        return list(self._cols)

    # -- bucketing -------------------------------------------------------------------------
    def _length(self, row: Row) -> int:
        values = [row[i] for i in self._in_idx]
        if self.element_length_function is None:
            arr = np.asarray(values[0])
            return int(arr.shape[0]) if arr.ndim else 0
        out = self.element_length_function(*values)
        if isinstance(out, np.ndarray) and out.size == 1:
            out = out.reshape(()).item()
        if isinstance(out, bool) or not isinstance(out, numbers.Integral):
            raise TypeError(
                f"bucket_batch_by_length: element_length_function must return an int, got {out!r}"
            )
        if out < 0:
            raise ValueError(
                f"bucket_batch_by_length: element_length_function returned {out}; lengths "
                "must be >= 0"
            )
        return int(out)

    def _bucket(self, row: Row) -> int:
        b = bisect.bisect_right(self.bucket_boundaries, self._length(row))
        if self.pad_to_bucket_boundary and b == len(self.bucket_boundaries):
            raise ValueError(
                f"bucket_batch_by_length: a row of length {self._length(row)} falls into the "
                f"last bucket [{self.bucket_boundaries[-1] if self.bucket_boundaries else 0}, "
                "inf), which has no boundary to pad to (pad_to_bucket_boundary=True)"
            )
        return b

    def _groups(self, stream: Iterator[Item]) -> Iterator[tuple[int, list[Item]]]:
        """(bucket, items) of each batch in the order MindSpore gives them."""
        buckets: list[list[Item]] = [[] for _ in self.bucket_batch_sizes]
        for item in stream:
            b = self._bucket(item[0])
            buckets[b].append(item)
            if len(buckets[b]) == self.bucket_batch_sizes[b]:
                yield b, buckets[b]
                buckets[b] = []
        if not self.drop_remainder:  # the partial buckets at the end, in bucket order
            for b, items in enumerate(buckets):
                if items:
                    yield b, items

    def _make(self, bucket: int, items: list[Item]) -> Row:
        where = "bucket_batch_by_length"
        columns = [list(c) for c in zip(*(r for r, _ in items))]
        out = []
        for name, values in zip(self._cols, columns):
            values = [to_numpy(v) for v in values]
            if self.pad_info is not None:
                shape, value = self.pad_info.get(name, (None, 0))
                if self.pad_to_bucket_boundary and shape is not None:
                    edge = self.bucket_boundaries[bucket] - 1
                    shape = [edge if s is None else s for s in shape]
                values = _pad_to(where, name, values, (shape, value))
            shapes = {np.shape(v) for v in values}
            if len(shapes) > 1:
                raise ValueError(
                    f"{where}: column '{name}' has rows of different shapes "
                    f"{sorted(shapes, key=str)[:4]}; give pad_info={{'{name}': (None, 0)}} "
                    "to pad them"
                )
            out.append(np.stack(values))
        return tuple(out)

    def _size(self) -> float:
        n = self.children[0]._size()
        if n == INFINITE or n == 0:
            return n
        if self._count is None:  # as MindSpore does: run the input once and count

            def consume(run: Run, stream: Iterator[Item]) -> int:
                per = [0] * len(self.bucket_batch_sizes)
                for row, _ in stream:
                    per[self._bucket(row)] += 1
                total = 0
                for k, bs in zip(per, self.bucket_batch_sizes):
                    full, rest = divmod(k, bs)
                    total += full + (1 if rest and not self.drop_remainder else 0)
                return total

            self._count = _count(self, consume)
        return self._count

    def _stream(self, run: Run, epoch: int, start: int) -> Iterator[Item]:
        groups = self._groups(self.children[0]._stream(run, epoch, 0))
        for k, (bucket, items) in enumerate(groups):
            if k < start:  # resuming: replay the epoch, without padding what was given
                continue
            origin = items[0][1] if len(items) == 1 else None
            yield self._make(bucket, items), origin
