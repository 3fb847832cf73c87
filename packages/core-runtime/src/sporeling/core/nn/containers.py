"""Cell containers: ``SequentialCell``, ``CellList``, ``CellDict``."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator
from typing import Any

from .cell import Cell

__all__ = ["SequentialCell", "CellList", "CellDict"]


def _check_cell(op: str, value: Any) -> Cell:
    if not isinstance(value, Cell):
        raise TypeError(f"{op}: expected Cells, got {type(value).__name__}")
    return value


class SequentialCell(Cell):
    """Cells applied in order: ``SequentialCell([a, b])`` or ``SequentialCell(a, b)`` or an
    ``OrderedDict`` of named cells."""

    def __init__(self, *args: Any) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, cell in args[0].items():
                self.insert_child_to_cell(name, _check_cell("SequentialCell", cell))
        else:
            items = args[0] if len(args) == 1 and isinstance(args[0], list) else args
            for i, cell in enumerate(items):
                self.insert_child_to_cell(str(i), _check_cell("SequentialCell", cell))

    def construct(self, input_data: Any) -> Any:
        for cell in self._cells.values():
            input_data = cell(input_data)
        return input_data

    def __len__(self) -> int:
        return len(self._cells)

    def __getitem__(self, index: int | slice) -> Any:
        cells = list(self._cells.values())
        if isinstance(index, slice):
            return SequentialCell(cells[index])
        return cells[index]

    def __iter__(self) -> Iterator[Cell]:
        return iter(self._cells.values())

    def append(self, cell: Cell) -> SequentialCell:
        self.insert_child_to_cell(str(len(self._cells)), _check_cell("SequentialCell.append", cell))
        return self


class CellList(Cell):
    """A list of cells whose parameters are registered (``construct`` is not defined)."""

    def __init__(self, cells: Iterable[Cell] | None = None) -> None:
        super().__init__()
        for cell in cells or ():
            self.append(cell)

    def append(self, cell: Cell) -> CellList:
        self.insert_child_to_cell(str(len(self._cells)), _check_cell("CellList.append", cell))
        return self

    def extend(self, cells: Iterable[Cell]) -> CellList:
        for cell in cells:
            self.append(cell)
        return self

    def insert(self, index: int, cell: Cell) -> None:
        cells = list(self._cells.values())
        cells.insert(index, _check_cell("CellList.insert", cell))
        self._cells.clear()
        for i, c in enumerate(cells):
            self._cells[str(i)] = c
        if self._auto_prefix:
            cell.update_parameters_name(f"{cells.index(cell)}.")

    def __getitem__(self, index: int | slice) -> Any:
        cells = list(self._cells.values())
        return CellList(cells[index]) if isinstance(index, slice) else cells[index]

    def __setitem__(self, index: int, cell: Cell) -> None:
        key = list(self._cells)[index]
        self._cells[key] = _check_cell("CellList", cell)

    def __len__(self) -> int:
        return len(self._cells)

    def __iter__(self) -> Iterator[Cell]:
        return iter(self._cells.values())


class CellDict(Cell):
    """A dict of named cells whose parameters are registered."""

    def __init__(self, cells: Any = None) -> None:
        super().__init__()
        if cells:
            self.update(cells)

    def update(self, cells: Any) -> None:
        items = cells.items() if hasattr(cells, "items") else cells
        for key, cell in items:
            self[key] = cell

    def __setitem__(self, key: str, cell: Cell) -> None:
        self.insert_child_to_cell(key, _check_cell("CellDict", cell))

    def __getitem__(self, key: str) -> Cell:
        return self._cells[key]

    def __delitem__(self, key: str) -> None:
        del self._cells[key]

    def __contains__(self, key: object) -> bool:
        return key in self._cells

    def __len__(self) -> int:
        return len(self._cells)

    def __iter__(self) -> Iterator[str]:
        return iter(self._cells)

    def keys(self) -> Any:
        return self._cells.keys()

    def values(self) -> Any:
        return self._cells.values()

    def items(self) -> Any:
        return self._cells.items()

    def pop(self, key: str) -> Cell:
        return self._cells.pop(key)
