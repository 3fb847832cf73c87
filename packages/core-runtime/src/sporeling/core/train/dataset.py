"""``ArrayDataset``: in-memory batches for ``Model`` with MindSpore's iterator interface.

``ArrayDataset(x, y, batch_size=32, shuffle=True, seed=0)`` slices equal-length arrays
along their first axis. ``create_tuple_iterator()`` yields one list of Tensors per batch
(NumPy arrays with ``output_numpy=True``); iterating the iterator again starts the next
epoch. With ``shuffle`` every epoch draws a new order; with a ``seed`` (or, without one,
after :func:`sporeling.core.set_seed`) epoch ``e``'s order is fixed by ``(seed, e)``.

``num_shards``/``shard_id`` split the rows for data parallelism as MindSpore's
``DistributedSampler`` does: every shard sees the same epoch order and takes its rows
``shard_id, shard_id + num_shards, ...`` (wrapping around, so each shard has
``ceil(rows / num_shards)`` rows). The union of the shards' batch ``b`` is then the
single-process batch ``b`` of ``batch_size * num_shards`` rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from ..random_state import get_seed
from ..tensor import Tensor

__all__ = ["ArrayDataset"]


class ArrayDataset:
    """Batches of equal-length arrays (``numpy`` arrays, Tensors or nested lists).

    >>> ds = ArrayDataset(np.arange(5.0), np.arange(5), batch_size=2)
    >>> ds.get_dataset_size(), [b[0].tolist() for b in ds.create_tuple_iterator()]
    (3, [[0.0, 1.0], [2.0, 3.0], [4.0]])
    """

    def __init__(
        self,
        *arrays: Any,
        batch_size: int = 1,
        shuffle: bool = False,
        drop_remainder: bool = False,
        seed: int | None = None,
        column_names: list[str] | None = None,
        num_shards: int | None = None,
        shard_id: int | None = None,
    ) -> None:
        if not arrays:
            raise ValueError("ArrayDataset: give at least one array")
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)):
            raise TypeError(
                f"ArrayDataset: argument 'batch_size' expected an int, got {batch_size!r}"
            )
        if batch_size < 1:
            raise ValueError(
                f"ArrayDataset: argument 'batch_size' expected a positive int, got {batch_size}"
            )
        for name, flag in (("shuffle", shuffle), ("drop_remainder", drop_remainder)):
            if not isinstance(flag, bool):
                raise TypeError(f"ArrayDataset: argument '{name}' expected a bool, got {flag!r}")
        if seed is not None and (
            isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0
        ):
            raise ValueError(
                f"ArrayDataset: argument 'seed' expected a non-negative int or None, got {seed!r}"
            )
        self._arrays = [a.asnumpy() if isinstance(a, Tensor) else np.asarray(a) for a in arrays]
        lengths = {len(a) if a.ndim else -1 for a in self._arrays}
        if len(lengths) != 1 or -1 in lengths:
            shapes = [a.shape for a in self._arrays]
            raise ValueError(
                f"ArrayDataset: arrays must share their first dimension, got shapes {shapes}"
            )
        if column_names is None:
            column_names = [f"column_{i}" for i in range(len(arrays))]
        if len(column_names) != len(arrays) or not all(isinstance(c, str) for c in column_names):
            raise ValueError(
                f"ArrayDataset: argument 'column_names' expected {len(arrays)} names, "
                f"got {column_names!r}"
            )
        self._column_names = list(column_names)
        self._num_rows = lengths.pop()
        self._batch_size = int(batch_size)
        self._shuffle = shuffle
        self._drop_remainder = drop_remainder
        self._seed = None if seed is None else int(seed)
        self._epoch = 0  # epochs started so far (drives the shuffle order)
        self._num_shards, self._shard_id = _check_shards(num_shards, shard_id)

    # ---- MindSpore dataset interface ---------------------------------------------------
    @property
    def batch_size(self) -> int:
        return self._batch_size

    def get_batch_size(self) -> int:
        return self._batch_size

    def get_dataset_size(self) -> int:
        """Batches per epoch."""
        full, rest = divmod(self._shard_rows(), self._batch_size)
        return full + (1 if rest and not self._drop_remainder else 0)

    def get_col_names(self) -> list[str]:
        return list(self._column_names)

    def __len__(self) -> int:
        return self.get_dataset_size()

    def reset(self) -> None:
        """Kept for MindSpore compatibility (each iterator tracks its own epochs)."""

    @property
    def epoch(self) -> int:
        """Epochs started so far; epoch ``e``'s shuffle order depends only on ``(seed, e)``."""
        return self._epoch

    def set_epoch(self, epoch: int) -> None:
        """Continue from epoch ``epoch`` (so a resumed run sees the same shuffle orders)."""
        if isinstance(epoch, bool) or not isinstance(epoch, (int, np.integer)) or epoch < 0:
            raise ValueError(
                f"ArrayDataset.set_epoch: argument 'epoch' expected an int >= 0, got {epoch!r}"
            )
        self._epoch = int(epoch)

    def create_tuple_iterator(
        self,
        columns: list[str] | None = None,
        num_epochs: int = -1,
        output_numpy: bool = False,
        do_copy: bool = True,
    ) -> _EpochIterator:
        """An iterator over batches (lists of Tensors, one per column); loop it once per epoch."""
        idx = self._column_indices(columns)
        return _EpochIterator(self, num_epochs, lambda batch: [batch[i] for i in idx], output_numpy)

    def create_dict_iterator(
        self, num_epochs: int = -1, output_numpy: bool = False, do_copy: bool = True
    ) -> _EpochIterator:
        """Like :meth:`create_tuple_iterator` with ``{column name: value}`` batches."""
        names = self._column_names
        return _EpochIterator(self, num_epochs, lambda batch: dict(zip(names, batch)), output_numpy)

    def __iter__(self) -> Iterator[list[Any]]:
        return iter(self.create_tuple_iterator(num_epochs=1, output_numpy=True))

    # ---- internals ---------------------------------------------------------------------
    def _column_indices(self, columns: list[str] | None) -> list[int]:
        if columns is None:
            return list(range(len(self._arrays)))
        unknown = [c for c in columns if c not in self._column_names]
        if unknown:
            raise ValueError(
                f"ArrayDataset: unknown columns {unknown}; the columns are {self._column_names}"
            )
        return [self._column_names.index(c) for c in columns]

    def _shard_rows(self) -> int:
        return -(-self._num_rows // self._num_shards)

    def _order(self, epoch: int) -> np.ndarray:
        n = self._num_rows
        if not self._shuffle:
            order = np.arange(n)
        else:
            seed = self._seed if self._seed is not None else get_seed()
            rng = np.random.default_rng(None if seed is None else [seed, epoch])
            order = rng.permutation(n)
        if self._num_shards == 1:
            return order
        picks = np.arange(self._shard_rows()) * self._num_shards + self._shard_id
        return order[picks % n]

    def _epoch_batches(self, output_numpy: bool) -> Iterator[list[Any]]:
        order = self._order(self._epoch)
        self._epoch += 1
        bs = self._batch_size
        for b in range(self.get_dataset_size()):
            rows = order[b * bs : (b + 1) * bs]
            batch = [a[rows] for a in self._arrays]
            yield batch if output_numpy else [Tensor.from_numpy(x) for x in batch]

    def __repr__(self) -> str:
        return (
            f"ArrayDataset(rows={self._num_rows}, columns={self._column_names}, "
            f"batch_size={self._batch_size}, shuffle={self._shuffle}, "
            f"drop_remainder={self._drop_remainder})"
        )


def _check_shards(num_shards: Any, shard_id: Any) -> tuple[int, int]:
    if num_shards is None and shard_id is None:
        return 1, 0
    if num_shards is None or shard_id is None:
        raise ValueError(
            "ArrayDataset: arguments 'num_shards' and 'shard_id' must be given together, got "
            f"num_shards={num_shards!r} and shard_id={shard_id!r}"
        )
    for name, v in (("num_shards", num_shards), ("shard_id", shard_id)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"ArrayDataset: argument '{name}' expected an int, got {v!r}")
    if num_shards < 1:
        raise ValueError(
            f"ArrayDataset: argument 'num_shards' expected an int >= 1, got {num_shards}"
        )
    if not 0 <= shard_id < num_shards:
        raise ValueError(
            f"ArrayDataset: argument 'shard_id' expected an int in [0, {num_shards}), "
            f"got {shard_id}"
        )
    return int(num_shards), int(shard_id)


class _EpochIterator:
    """Iterates one epoch per ``for`` loop, up to ``num_epochs`` epochs (-1: no limit)."""

    def __init__(
        self, dataset: ArrayDataset, num_epochs: int, shape: Any, output_numpy: bool
    ) -> None:
        if isinstance(num_epochs, bool) or not isinstance(num_epochs, (int, np.integer)):
            raise TypeError(
                f"create_iterator: argument 'num_epochs' expected an int, got {num_epochs!r}"
            )
        if num_epochs < -1 or num_epochs == 0:
            raise ValueError(
                f"create_iterator: argument 'num_epochs' expected -1 or a positive int, "
                f"got {num_epochs}"
            )
        self._dataset = dataset
        self._num_epochs = int(num_epochs)
        self._shape = shape
        self._output_numpy = output_numpy
        self._epochs_done = 0
        self._current: Iterator[list[Any]] | None = None

    def __iter__(self) -> _EpochIterator:
        return self

    def __next__(self) -> Any:
        if self._current is None:
            if self._num_epochs != -1 and self._epochs_done >= self._num_epochs:
                raise StopIteration
            self._current = self._dataset._epoch_batches(self._output_numpy)
        try:
            return self._shape(next(self._current))
        except StopIteration:
            self._current = None
            self._epochs_done += 1
            raise
