"""Which rows ``FileWriter.write_raw_data`` skips: MindSpore's ``_verify_based_on_schema``.

MindSpore checks every row against the schema by the Python type *name* of each value and
drops the rows that fail, logging one warning per row, before writing the others (it also
removes them from the caller's list). A row is dropped when a schema field is missing, or:

- a scalar field's value is not of a type MindSpore maps to the field's type: ``int`` for
  int32/int64, ``float`` for float32/float64, ``str`` for string, ``bytes`` for bytes, or a
  NumPy scalar whose type name is the field's type (``np.int32(1)`` for int32, but not
  ``np.int64(1)``; no ``bool``, ``None``, ``bytearray``, ``np.str_``, lists);
- an array field's value is not an ``ndarray`` whose dtype is the field's type exactly and
  whose values reshape to the field's shape (``-1`` allowed).

Rows that pass are encoded by the schema, which still raises ValueError for what MindSpore's
C++ writer refuses (an int that does not fit int32, ...). Fields outside the schema are
ignored. Checked against MindSpore 2.10 writing the same rows (tests/test_mindrecord.py).
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

logger = logging.getLogger("sporeling.data.mindrecord")

# MindSpore's VALUE_TYPE_MAP: a value's Python type name -> the schema types it may fill
_VALUE_TYPES: dict[str, tuple[str, ...]] = {
    "int": ("int32", "int64"),
    "float": ("float32", "float64"),
    "str": ("string",),
    "bytes": ("bytes",),
    "int32": ("int32",),
    "int64": ("int64",),
    "float32": ("float32",),
    "float64": ("float64",),
    "ndarray": ("int32", "int64", "float32", "float64"),
}


def invalid_reason(fields: dict[str, dict[str, Any]], row: dict[str, Any]) -> str | None:
    """Why MindSpore would skip ``row`` (the first failing field in schema order), or None."""
    for name, spec in fields.items():
        if name not in row:
            return f"there is no field '{name}' in the row"
        value = row[name]
        kind = type(value).__name__
        if kind not in _VALUE_TYPES or spec["type"] not in _VALUE_TYPES[kind]:
            return (
                f"field '{name}' of type {spec['type']} got a {kind} value (expected "
                f"{_expected(spec)})"
            )
        if kind == "ndarray":
            if "shape" not in spec:
                return f"field '{name}' is a scalar {spec['type']} field, got an array"
            if str(value.dtype) != spec["type"]:
                return f"field '{name}' expected a {spec['type']} array, got dtype {value.dtype}"
            try:
                np.reshape(value, spec["shape"])
            except ValueError:
                return (
                    f"field '{name}' has shape {value.shape}, which does not fit the "
                    f"schema's shape {spec['shape']}"
                )
    return None


def _expected(spec: dict[str, Any]) -> str:
    if "shape" in spec:
        return f"a numpy.ndarray of dtype {spec['type']}"
    names = [k for k, v in _VALUE_TYPES.items() if spec["type"] in v and k != "ndarray"]
    return " or ".join(names)


def drop_invalid_rows(fields: dict[str, dict[str, Any]], rows: list[dict[str, Any]]) -> None:
    """Remove the rows MindSpore skips from ``rows`` (in place), one warning each."""
    bad = [(i, r) for i, row in enumerate(rows) if (r := invalid_reason(fields, row)) is not None]
    for i, _ in reversed(bad):
        rows.pop(i)
    for i, reason in bad:
        logger.warning(
            "FileWriter.write_raw_data: row %d of this call is skipped (as MindSpore skips it): %s",
            i,
            reason,
        )
