"""Pipeline nodes for shuffle, repeat, take, skip, zip, concat, project and rename."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import numpy as np

from .base import (
    INFINITE,
    INT32_MAX,
    Dataset,
    Item,
    Run,
    check_columns,
    check_int,
    check_known,
)


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
        self.buffer_size = check_int("shuffle", "buffer_size", buffer_size, 2, high=INT32_MAX)

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
                    raise RuntimeError(  # MindSpore's type and wording
                        f"zip: Invalid data, duplicate column '{c}' already exists when zipping "
                        f"datasets (in dataset {seen[c]} and dataset {i}); rename one of them"
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
                raise RuntimeError(  # MindSpore's type and wording
                    f"concat: Invalid columns, 'column name' or 'column order' of concat "
                    f"datasets should be the same: dataset {i} has {d.get_col_names()}, "
                    f"dataset 0 has {cols}"
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
