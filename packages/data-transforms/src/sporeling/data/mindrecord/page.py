"""``MindPage``: rows of MindRecord files by category (a value of an index field), in pages.

Categories are the distinct values of ``category_field`` in the files' ``.db`` indexes,
sorted by their text (as MindSpore: "-1" before "-2"), numbered from 0; a page is
``num_row`` rows of one category in file order. Scalars come back as Python values, bytes
fields as ``bytes`` and arrays as NumPy arrays, as MindSpore returns them.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import numpy as np

from ._format import MindRecordError
from .reader import open_shards

__all__ = ["MindPage"]


def _python(value: np.ndarray, kind: str) -> Any:
    if kind == "bytes":
        return value.tobytes()
    if value.ndim == 0:
        return value.item()
    return value


class MindPage:
    """Read MindRecord rows page by page within a category (``mindspore.mindrecord.MindPage``)."""

    def __init__(self, file_name: Any, num_consumer: int = 4) -> None:
        self._shards = open_shards(file_name, "MindPage")
        first = self._shards[0]
        fields = first.header.get("index_fields") or []
        self._candidates = [f["index_field"] for f in fields if isinstance(f, dict)]
        self._field: str | None = None
        self._values: list[Any] = []  # per global row, the category field's value
        self._categories: list[Any] = []

    @property
    def candidate_fields(self) -> list[str]:
        """The index fields that can be category fields."""
        return list(self._candidates)

    @property
    def category_field(self) -> str | None:
        return self._field

    @category_field.setter
    def category_field(self, field: str) -> None:
        self.set_category_field(field)

    def set_category_field(self, category_field: str) -> int:
        """Choose the field whose values are the categories; returns 0."""
        if category_field not in self._candidates:
            raise ValueError(
                f"MindPage: category_field {category_field!r} is not an index field of the files "
                f"(candidates: {self._candidates})"
            )
        values: list[Any] = []
        for shard in self._shards:
            db = shard.path + ".db"
            try:
                conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
                try:
                    rows = conn.execute(
                        f'SELECT "{category_field}_0" FROM INDEXES ORDER BY ROW_ID'
                    ).fetchall()
                finally:
                    conn.close()
            except sqlite3.Error as exc:
                raise MindRecordError(
                    f"{db}: cannot read index field '{category_field}': {exc}"
                ) from None
            if len(rows) != len(shard):
                raise MindRecordError(
                    f"{db}: the index has {len(rows)} rows, the file {len(shard)}"
                )
            values += [r[0] for r in rows]
        self._field = category_field
        self._values = values
        self._categories = sorted(set(values), key=str)  # MindSpore orders the names as text
        return 0

    def _need_field(self) -> str:
        if self._field is None:
            raise RuntimeError("MindPage: set category_field first")
        return self._field

    def read_category_info(self) -> str:
        """JSON: every category's id, name and row count, and the index column."""
        field = self._need_field()
        counts: dict[Any, int] = {}
        for v in self._values:
            counts[v] = counts.get(v, 0) + 1
        cats = [
            {"count": counts[v], "id": i, "name": str(v)} for i, v in enumerate(self._categories)
        ]
        info = {"categories": cats, "key": f"{field}_0"}
        return json.dumps(info, separators=(",", ":"), ensure_ascii=False)

    def _page(self, value: Any, page: Any, num_row: Any) -> list[dict[str, Any]]:
        for arg, x in (("page", page), ("num_row", num_row)):
            if type(x) is not int or x < (0 if arg == "page" else 1):
                raise ValueError(f"MindPage: argument '{arg}' expected an int >= "
                                 f"{0 if arg == 'page' else 1}, got {x!r}")  # fmt: skip
        rows = [i for i, v in enumerate(self._values) if v == value]
        chosen = rows[page * num_row : (page + 1) * num_row]
        starts = np.cumsum([0] + [len(s) for s in self._shards])
        schema = self._shards[0].schema
        out = []
        for g in chosen:
            k = int(np.searchsorted(starts, g, side="right")) - 1
            values = self._shards[k].read(g - int(starts[k]), schema.names)
            out.append({n: _python(values[n], schema.fields[n]["type"]) for n in schema.names})
        return out

    def read_at_page_by_id(self, category_id: int, page: int, num_row: int) -> list[dict[str, Any]]:
        """Page ``page`` (``num_row`` rows) of category number ``category_id``."""
        self._need_field()
        if type(category_id) is not int or not 0 <= category_id < len(self._categories):
            raise ValueError(
                f"MindPage: category_id expected an int in [0, {len(self._categories)}), "
                f"got {category_id!r}"
            )
        return self._page(self._categories[category_id], page, num_row)

    def read_at_page_by_name(
        self, category_name: str, page: int, num_row: int
    ) -> list[dict[str, Any]]:
        """Page ``page`` (``num_row`` rows) of the category whose name is ``category_name``."""
        self._need_field()
        names = {str(v): v for v in self._categories}
        if category_name not in names:
            raise ValueError(f"MindPage: no category named {category_name!r}")
        return self._page(names[category_name], page, num_row)
