"""``Dataset.flat_map(func)``: each row becomes a dataset (``func(*row)``), read in turn."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

from .base import Dataset, Item, Run

__all__ = ["FlatMapDataset"]


class FlatMapDataset(Dataset):
    """The rows of ``func(*row)`` for every row of the child, in order.

    ``func`` gets the row's columns as NumPy arrays and must return a Dataset; the column
    names are those of the dataset it returns for the first row. The size is found by
    reading the whole epoch once, as MindSpore does.
    """

    def __init__(self, child: Dataset, func: Callable[..., Dataset]) -> None:
        if not callable(func):
            raise TypeError(f"flat_map: argument 'func' expected a callable, got {func!r}")
        super().__init__([child])
        self.func = func
        self._names: list[str] | None = None
        self._count: int | None = None

    def _expand(self, row: tuple[Any, ...]) -> Dataset:
        out = self.func(*row)
        if not isinstance(out, Dataset):
            raise TypeError(
                f"flat_map: func must return a Dataset, got {type(out).__name__} for a row"
            )
        return out

    def get_col_names(self) -> list[str]:
        if self._names is None:
            first = next(
                iter(self.children[0].create_tuple_iterator(output_numpy=True, num_epochs=1)), None
            )
            if first is None:
                return []
            self._names = self._expand(tuple(first)).get_col_names()
        return list(self._names)

    def _rows(self, run: Run, epoch: int) -> Iterator[Item]:
        for row, origin in self.children[0]._stream(run, epoch, 0):
            inner = self._expand(tuple(row))
            for values in inner.create_tuple_iterator(output_numpy=True, num_epochs=1):
                yield tuple(values), origin

    def _size(self) -> float:
        if self._count is None:
            total = 0
            for row in self.children[0].create_tuple_iterator(output_numpy=True, num_epochs=1):
                total += self._expand(tuple(row)).get_dataset_size()
            self._count = total
        return self._count

    def _stream(self, run: Run, epoch: int, start: int) -> Iterator[Item]:
        yield from itertools.islice(self._rows(run, epoch), start, None)
