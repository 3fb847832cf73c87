"""``Schema``: column names, types and shapes for file sources (``TFRecordDataset``).

MindSpore's schema files are JSON: ``{"datasetType": "TF", "numRows": N, "columns":
{name: {"type": ..., "rank": r, "shape": [...]}}}`` (``columns`` may also be a list of
``{"name": ...}`` entries, as ``Schema.to_json`` writes).
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

__all__ = ["Schema"]

TYPES = {
    "bool": np.bool_,
    "int8": np.int8,
    "uint8": np.uint8,
    "int16": np.int16,
    "uint16": np.uint16,
    "int32": np.int32,
    "uint32": np.uint32,
    "int64": np.int64,
    "uint64": np.uint64,
    "float16": np.float16,
    "float32": np.float32,
    "float64": np.float64,
    "string": np.str_,
    "bytes": np.bytes_,
}


def _type_name(de_type: Any) -> str:
    if isinstance(de_type, str):
        name = de_type
    elif getattr(de_type, "np", None) is not None:  # a sporeling.core dtype
        name = np.dtype(de_type.np).name
    else:
        try:
            name = np.dtype(de_type).name
        except TypeError:
            name = str(de_type)
    name = {"str": "string", "str_": "string", "bytes_": "bytes", "bool_": "bool"}.get(name, name)
    if name not in TYPES:
        raise ValueError(f"Schema: column type {de_type!r} is not one of {sorted(TYPES)}")
    return name


class Schema:
    """Columns (name, type, optional shape) and an optional row count."""

    def __init__(self, schema_file: str | None = None) -> None:
        self.columns: list[dict[str, Any]] = []
        self.num_rows: int | None = None
        self.dataset_type = ""
        if schema_file is not None:
            if not isinstance(schema_file, (str, os.PathLike)) or not os.path.isfile(schema_file):
                raise ValueError(f"Schema: schema_file {schema_file!r} is not a file")
            try:
                with open(schema_file, encoding="utf-8") as f:
                    data = json.load(f)
            except json.JSONDecodeError as exc:
                raise RuntimeError(f"Schema: {schema_file} is not valid JSON: {exc}") from None
            self.from_json(data)

    def add_column(self, name: str, de_type: Any, shape: list[int] | None = None) -> None:
        if not isinstance(name, str) or not name:
            raise TypeError(f"Schema.add_column: argument 'name' expected a str, got {name!r}")
        if shape is not None and (
            not isinstance(shape, list) or not all(type(d) is int and d >= -1 for d in shape)
        ):
            raise TypeError(
                f"Schema.add_column: argument 'shape' expected a list of ints, got {shape!r}"
            )
        column: dict[str, Any] = {"name": name, "type": _type_name(de_type)}
        if shape is not None:
            column["rank"] = len(shape)
            column["shape"] = list(shape)
        else:
            column["rank"] = 1
        self.columns.append(column)

    def from_json(self, json_obj: dict[str, Any]) -> None:
        if not isinstance(json_obj, dict) or "columns" not in json_obj:
            raise RuntimeError("Schema: the JSON object has no 'columns'")
        self.columns = []
        columns = json_obj["columns"]
        items = (
            # a JSON object of columns comes out sorted by name, as MindSpore reads it
            [{"name": k, **columns[k]} for k in sorted(columns)]
            if isinstance(columns, dict)
            else columns
        )
        for col in items:
            if not isinstance(col, dict) or "name" not in col or "type" not in col:
                raise RuntimeError(f"Schema: a column entry lacks 'name' or 'type': {col!r}")
            self.add_column(col["name"], col["type"], col.get("shape"))
        rows = json_obj.get("numRows")
        if rows is not None and (type(rows) is not int or rows < 0):
            raise RuntimeError(f"Schema: numRows expected an int >= 0, got {rows!r}")
        self.num_rows = rows or None
        self.dataset_type = json_obj.get("datasetType", "")

    def parse_columns(self, columns: Any) -> None:
        self.from_json({"columns": columns})

    def to_json(self) -> str:
        out: dict[str, Any] = {"columns": self.columns}
        if self.num_rows:
            out["numRows"] = self.num_rows
        if self.dataset_type:
            out["datasetType"] = self.dataset_type
        return json.dumps(out, indent=2)

    def names(self) -> list[str]:
        return [c["name"] for c in self.columns]

    def __repr__(self) -> str:
        return self.to_json()
