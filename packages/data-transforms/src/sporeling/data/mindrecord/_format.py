"""MindRecord's on-disk layout: the schema, a row's raw record and blob, integer compression.

A MindRecord shard file is ``[8-byte LE header length][JSON header]`` padded to
``header_size`` bytes, then pages of ``page_size`` bytes (the last one cut to its used size).
``BLOB_DATA`` pages hold each row's blob, ``RAW_DATA`` pages its scalar fields; both as
``[8-byte LE length][payload]`` records. A ``<file>.db`` SQLite file indexes every row (its
raw and blob page and offsets) and the ``add_index`` fields. This module turns rows into
records and back; :mod:`.writer` and :mod:`.reader` handle files and pages.

A row's blob holds the schema's blob fields (``bytes`` and arrays, names sorted): a single
blob field is stored as is, several as ``[8-byte BE length][bytes]`` each. When the schema
has an int32/int64 array, MindSpore compresses every integer blob field: a 4-byte BE count,
a bitmap of 2 bits per element (its width: int8/16/32/64, most significant bits first) and
each element little-endian in that width.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ._msgpack import MsgpackError, packb, unpackb
from .exceptions import MRMInvalidSchemaError

__all__ = ["Schema", "MindRecordError", "compress_ints", "decompress_ints"]

SCALAR_TYPES = {"int32": np.int32, "int64": np.int64, "float32": np.float32, "float64": np.float64}
TYPES = (*SCALAR_TYPES, "string", "bytes")
_NAME = re.compile(r"^[0-9a-zA-Z_]+$")
_BOUNDS = [(-(1 << 7), (1 << 7) - 1), (-(1 << 15), (1 << 15) - 1), (-(1 << 31), (1 << 31) - 1)]


class MindRecordError(RuntimeError, ValueError):
    """A MindRecord file (or its ``.db`` index) that cannot be read; names the file.

    A ``RuntimeError`` as MindSpore raises for bad files, and a ``ValueError`` like
    Sporeling's other bad-input errors.
    """


class _RowError(Exception):
    """Something wrong in one row's records; ``Schema.decode`` adds the file and row."""


class Schema:
    """A validated MindRecord schema: field types and shapes, blob and raw fields."""

    def __init__(self, fields: Any, where: str = "FileWriter.add_schema") -> None:
        if not isinstance(fields, dict) or not fields:
            raise MRMInvalidSchemaError(
                f"Schema format is error. Detail: Schema content is empty or not a dict. "
                f"({where}: argument 'content' expected a non-empty dict of fields, got "
                f"{fields!r})"
            )
        self.fields: dict[str, dict[str, Any]] = {}
        for name, spec in fields.items():
            if not isinstance(name, str) or not _NAME.match(name):
                raise MRMInvalidSchemaError(
                    f"Schema format is error. Detail: Field {name!r} should be composed of "
                    f"'0-9' or 'a-z' or 'A-Z' or '_'. ({where})"
                )
            if not isinstance(spec, dict) or spec.get("type") not in TYPES:
                raise MRMInvalidSchemaError(
                    f"Schema format is error. Detail: Field '{name}' contain illegal "
                    f"attribute. ({where}: field '{name}' expected {{'type': one of "
                    f"{list(TYPES)}}}, got {spec!r})"
                )
            extra = set(spec) - {"type", "shape"}
            if extra:
                raise MRMInvalidSchemaError(
                    f"Schema format is error. Detail: Field '{name}' has unknown keys "
                    f"{sorted(extra)} ({where})"
                )
            entry: dict[str, Any] = {"type": spec["type"]}
            if "shape" in spec:
                shape = spec["shape"]
                ok = (
                    spec["type"] in SCALAR_TYPES
                    and isinstance(shape, list)
                    and shape
                    and all(type(d) is int and (d > 0 or d == -1) for d in shape)
                    and shape.count(-1) <= 1
                )
                if not ok:
                    raise MRMInvalidSchemaError(
                        f"Schema format is error. Detail: Field '{name}' contain illegal "
                        f"attribute '{spec['type']}' with shape {shape!r} ({where}: a shape is a "
                        "list of positive ints with at most one -1, for int32/int64/float32/"
                        "float64)"
                    )
                entry["shape"] = list(shape)
            self.fields[name] = entry
        self.names = sorted(self.fields)
        self.blob_fields = [
            n for n in self.names if self.fields[n]["type"] == "bytes" or "shape" in self.fields[n]
        ]
        self.raw_fields = [n for n in self.names if n not in self.blob_fields]
        self._plans: dict[tuple[str, ...], Any] = {}
        self.compress = any(
            "shape" in f and f["type"] in ("int32", "int64") for f in self.fields.values()
        )

    def header_entry(self, desc: str) -> dict[str, Any]:
        return {"blob_fields": self.blob_fields, "desc": desc, "schema": self.fields}

    # ---- writing ----------------------------------------------------------------------------

    def _scalar(self, name: str, value: Any, index: int) -> Any:
        kind = self.fields[name]["type"]
        where = f"FileWriter.write_raw_data: row {index}, field '{name}'"
        if kind == "string":
            if not isinstance(value, (str, np.str_)):
                raise ValueError(f"{where} expected a str, got {type(value).__name__}")
            return str(value)
        if isinstance(value, np.ndarray) and value.ndim == 0:
            value = value.item()
        if kind.startswith("int"):
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
                raise ValueError(f"{where} expected an int ({kind}), got {value!r:.60}")
            info = np.iinfo(SCALAR_TYPES[kind])
            if not info.min <= int(value) <= info.max:
                raise ValueError(f"{where}: {value} does not fit {kind}")
            return int(value)
        if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, (int, float, np.integer, np.floating)
        ):
            raise ValueError(f"{where} expected a float ({kind}), got {value!r:.60}")
        return float(value)

    def _blob_field(self, name: str, value: Any, index: int) -> bytes:
        spec = self.fields[name]
        where = f"FileWriter.write_raw_data: row {index}, field '{name}'"
        if spec["type"] == "bytes":
            if isinstance(value, np.ndarray):
                return value.astype(np.uint8, copy=False).tobytes()
            if not isinstance(value, (bytes, bytearray, memoryview)):
                raise ValueError(f"{where} expected bytes, got {type(value).__name__}")
            return bytes(value)
        dtype = SCALAR_TYPES[spec["type"]]
        try:
            arr = np.asarray(value)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where} expected an array: {exc}") from None
        if arr.dtype.kind not in "iuf" or (arr.dtype.kind == "f" and np.dtype(dtype).kind != "f"):
            raise ValueError(f"{where} expected a {spec['type']} array, got dtype {arr.dtype}")
        shape = spec["shape"]
        fixed = [d for d in shape if d != -1]
        fits = (
            arr.size == int(np.prod(shape))
            if -1 not in shape
            else (int(np.prod(fixed)) and arr.size % int(np.prod(fixed)) == 0)
        )
        if not fits:
            raise ValueError(f"{where}: {arr.size} elements do not fit the shape {shape}")
        if self.compress and spec["type"] in ("int32", "int64"):
            return compress_ints(np.ascontiguousarray(arr, dtype=np.int64).reshape(-1))
        return np.ascontiguousarray(arr, dtype=np.dtype(dtype).newbyteorder("<")).tobytes()

    def encode(self, row: Any, index: int) -> tuple[bytes, bytes, dict[str, Any]]:
        """A row's raw record (MessagePack), its blob, and its scalar values."""
        if not isinstance(row, dict):
            raise ValueError(
                f"FileWriter.write_raw_data: row {index} expected a dict, got {type(row).__name__}"
            )
        missing = [n for n in self.names if n not in row]
        if missing:
            raise ValueError(f"FileWriter.write_raw_data: row {index} lacks fields {missing}")
        # fields outside the schema are ignored, as MindSpore ignores them
        scalars = {n: self._scalar(n, row[n], index) for n in self.raw_fields}
        blobs = [self._blob_field(n, row[n], index) for n in self.blob_fields]
        if not blobs:
            blob = bytes(4)  # what MindSpore writes for a schema without blob fields
        elif len(blobs) == 1:
            blob = blobs[0]
        else:
            blob = b"".join(len(b).to_bytes(8, "big") + b for b in blobs)
        return packb(scalars), blob, scalars

    # ---- reading ----------------------------------------------------------------------------

    def decode(
        self, raw: Any, blob: Any, columns: list[str], path: str, row: int
    ) -> dict[str, Any]:
        """The ``columns`` of one row from its raw record and blob, as NumPy values."""
        return dict(zip(columns, self.decode_values(raw, blob, columns, path, row)))

    def decode_values(
        self, raw: Any, blob: Any, columns: list[str], path: str, row: int
    ) -> list[Any]:
        """The ``columns`` of one row, in that order (``decode`` without the dict)."""
        try:
            return self._decode(raw, blob, columns)
        except _RowError as exc:  # the file and row named only when something is wrong
            raise MindRecordError(f"{path} row {row}: {exc}") from None

    def _plan(self, columns: list[str]) -> tuple[bool, bool, list[tuple[str, dict, bool]]]:
        """What reading ``columns`` needs, worked out once per column list (it runs per row)."""
        key = tuple(columns)
        plan = self._plans.get(key)
        if plan is None:
            plan = (
                any(c in self.raw_fields for c in columns),
                any(c in self.blob_fields for c in columns),
                [(c, self.fields[c], c in self.blob_fields) for c in columns],
            )
            self._plans[key] = plan
        return plan

    def _decode(self, raw: Any, blob: Any, columns: list[str]) -> list[Any]:
        need_raw, need_blob, fields = self._plan(columns)
        scalars: dict[str, Any] = {}
        if need_raw:
            try:
                scalars = unpackb(raw)
            except MsgpackError as exc:
                raise _RowError(f"a raw record is corrupt: {exc}") from None
        blobs = self._split_blob(blob) if need_blob else {}
        out = []
        for name, spec, is_blob in fields:
            if is_blob:
                out.append(self._blob_value(name, spec, blobs[name]))
            elif name not in scalars:
                raise _RowError(f"a raw record lacks field '{name}'")
            else:
                out.append(self._scalar_value(name, spec["type"], scalars[name]))
        return out

    def _split_blob(self, blob: Any) -> dict[str, memoryview]:
        view = memoryview(blob)
        if len(self.blob_fields) == 1:
            return {self.blob_fields[0]: view}
        parts: dict[str, memoryview] = {}
        pos = 0
        for name in self.blob_fields:
            if pos + 8 > len(view):
                raise _RowError(f"a blob ends before field '{name}'")
            n = int.from_bytes(view[pos : pos + 8], "big")
            pos += 8
            if n > len(view) - pos:
                raise _RowError(
                    f"blob field '{name}' declares {n} bytes but {len(view) - pos} remain"
                )
            parts[name] = view[pos : pos + n]
            pos += n
        if pos != len(view):
            raise _RowError(f"{len(view) - pos} stray bytes follow a row's blob")
        return parts

    def _blob_value(self, name: str, spec: dict, data: memoryview) -> np.ndarray:
        kind = spec["type"]
        if kind == "bytes":
            return np.frombuffer(data, np.uint8).copy()
        dtype = np.dtype(SCALAR_TYPES[kind])
        if self.compress and kind in ("int32", "int64"):
            try:
                flat = decompress_ints(data).astype(dtype)
            except ValueError as exc:
                raise _RowError(f"field '{name}': {exc}") from None
        else:
            if len(data) % dtype.itemsize:
                raise _RowError(f"field '{name}' holds {len(data)} bytes, not whole {kind}s")
            flat = np.frombuffer(data, dtype.newbyteorder("<")).astype(dtype)
        try:
            return flat.reshape(spec["shape"])
        except ValueError:
            raise _RowError(
                f"field '{name}' holds {flat.size} values, not shape {spec['shape']}"
            ) from None

    @staticmethod
    def _scalar_value(name: str, kind: str, value: Any) -> np.ndarray:
        if kind == "string":
            if not isinstance(value, str):
                raise _RowError(f"field '{name}' is {value!r:.40}, not a str")
            return np.array(value)
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if kind.startswith("int") and isinstance(value, float):
            ok = False
        if not ok:
            raise _RowError(f"field '{name}' is {value!r:.40}, not a {kind}")
        return np.array(value, SCALAR_TYPES[kind])


def compress_ints(values: np.ndarray) -> bytes:
    """MindSpore's integer compression of an int64 vector (see the module docstring)."""
    n = values.size
    codes = np.full(n, 3, np.uint8)
    for code in (2, 1, 0):
        low, high = _BOUNDS[code]
        codes[(values >= low) & (values <= high)] = code
    padded = np.zeros(-(-n // 4) * 4, np.uint8)
    padded[:n] = codes
    bitmap = (
        (padded[0::4] << 6) | (padded[1::4] << 4) | (padded[2::4] << 2) | padded[3::4]
    ).astype(np.uint8)
    widths = (1 << codes.astype(np.int64)).astype(np.int64)
    le = values.astype("<i8").view(np.uint8).reshape(n, 8)
    data = le[np.arange(8)[None, :] < widths[:, None]]
    return n.to_bytes(4, "big") + bitmap.tobytes() + data.tobytes()


def decompress_ints(blob: memoryview | bytes) -> np.ndarray:
    """The int64 vector of a compressed integer field (checked against its length)."""
    buf = np.frombuffer(blob, np.uint8)
    if buf.size < 4:
        raise ValueError("a compressed integer field is shorter than its 4-byte count")
    n = int.from_bytes(buf[:4].tobytes(), "big")
    nbitmap = -(-n // 4)
    if 4 + nbitmap + n > buf.size:
        raise ValueError(f"a compressed integer field declares {n} values in {buf.size} bytes")
    bitmap = buf[4 : 4 + nbitmap]
    codes = np.stack([(bitmap >> s) & 3 for s in (6, 4, 2, 0)], axis=1).reshape(-1)[:n]
    widths = (1 << codes.astype(np.int64)).astype(np.int64)
    data = buf[4 + nbitmap :]
    if int(widths.sum()) != data.size:
        raise ValueError(
            f"a compressed integer field's widths sum to {int(widths.sum())} bytes, "
            f"but {data.size} follow"
        )
    starts = np.concatenate(([0], np.cumsum(widths)[:-1])).astype(np.int64)
    cols = np.arange(8)[None, :]
    mask = cols < widths[:, None]
    out = np.zeros((n, 8), np.uint8)
    out[mask] = data[(starts[:, None] + cols)[mask]]
    values = out.view("<i8").reshape(n).astype(np.int64)
    shift = (64 - 8 * widths).astype(np.int64)
    return (values << shift) >> shift
