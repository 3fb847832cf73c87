"""TFRecordDataset: rows of TFRecord files of ``tf.train.Example`` records, without TensorFlow.

A TFRecord file is a sequence of records ``[8-byte LE length][masked CRC-32C of the
length][data][masked CRC-32C of the data]``; opening a file walks the length fields (each
checked against its CRC and the bytes left) to index every record, so rows are read at
random (shuffled, sharded, on the pipeline's workers). Each record's data CRC is checked
when it is read. A record is a ``tf.train.Example`` protobuf (features: a map from name to a
bytes, float or int64 list), decoded by the core's hand-written wire reader.

Without a schema the columns are the first record's features (sorted), bytes lists as
uint8 arrays (the values joined), floats as float32 and ints as int64, 1-D. A ``Schema``
(object or JSON file) picks columns and sets each one's type (``uint8``/``int8`` join the
bytes, ``string``/``bytes`` give one string per value, numbers are cast) and shape.
"""

from __future__ import annotations

import gzip
import os
import struct
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from sporeling.core.train import protobuf_wire as wire

from ..engine.base import check_int
from ..engine.sources import MappableSource, check_shards
from ._crc32c import masked_crc32c
from .schema import TYPES, Schema
from .text import Shuffle, _check_shuffle, _files, _TextSampler

__all__ = ["TFRecordDataset", "TFRecordError", "parse_example"]


class TFRecordError(RuntimeError, ValueError):
    """A TFRecord file or record that cannot be read; names the file (and record)."""


def _index_file(path: Path, data: np.ndarray) -> np.ndarray:
    """(start of data, length) of every record of ``data``, the framing checked."""
    out = []
    pos, size = 0, len(data)
    while pos < size:
        if size - pos < 12:
            raise TFRecordError(
                f"{path}: the file ends inside a record header at byte {pos} (truncated?)"
            )
        head = data[pos : pos + 8]
        length = int(head.view("<u8")[0])
        want = int(data[pos + 8 : pos + 12].view("<u4")[0])
        if masked_crc32c(head) != want:
            raise TFRecordError(
                f"{path}: record {len(out)} at byte {pos}: the length's CRC does not match "
                "(not a TFRecord file, or a corrupt one)"
            )
        if length > size - pos - 16:
            raise TFRecordError(
                f"{path}: record {len(out)} at byte {pos} declares {length} bytes but only "
                f"{max(size - pos - 16, 0)} remain (truncated?)"
            )
        out.append((pos + 12, length))
        pos += 16 + length
    return np.array(out, np.int64).reshape(-1, 2)


def _load_file(path: Path, compression: str) -> np.ndarray:
    if compression == "":
        if path.stat().st_size == 0:
            return np.zeros(0, np.uint8)
        return np.memmap(path, np.uint8, mode="r")
    raw = path.read_bytes()
    try:
        data = gzip.decompress(raw) if compression == "GZIP" else zlib.decompress(raw)
    except (OSError, zlib.error, EOFError) as exc:
        raise TFRecordError(f"{path}: cannot decompress it as {compression}: {exc}") from None
    return np.frombuffer(data, np.uint8)


def _values(kind: int, msg: memoryview) -> list[Any] | np.ndarray:
    if kind == 1:  # BytesList
        return [bytes(v) for n, w, v in wire.iter_fields(msg) if n == 1 and w == wire.LEN]
    floats: list[np.ndarray] = []
    ints: list[int] = []
    for n, w, v in wire.iter_fields(msg):
        if n != 1:
            continue
        if kind == 2 and w == wire.LEN:
            if len(v) % 4:  # type: ignore[arg-type]
                raise wire.WireError("a packed float list is not whole floats")
            floats.append(np.frombuffer(v, "<f4"))  # type: ignore[arg-type]
        elif kind == 2 and w == wire.FIXED32:
            floats.append(np.array(struct.unpack("<f", int(v).to_bytes(4, "little")), "<f4"))  # type: ignore[arg-type]
        elif kind == 3 and w == wire.LEN:
            ints += [wire.as_int64(x) for x in wire.unpack_varints(v)]  # type: ignore[arg-type]
        elif kind == 3 and w == wire.VARINT:
            ints.append(wire.as_int64(v))  # type: ignore[arg-type]
        else:
            raise wire.WireError(f"unexpected wire type {w} in a value list")
    if kind == 2:
        return np.concatenate(floats).astype(np.float32) if floats else np.zeros(0, np.float32)
    return np.array(ints, np.int64)


def parse_example(data: bytes | memoryview) -> dict[str, tuple[str, Any]]:
    """A ``tf.train.Example``: ``{feature name: (kind, values)}``, kind bytes/float/int64."""
    kinds = {1: "bytes", 2: "float", 3: "int64"}
    out: dict[str, tuple[str, Any]] = {}
    view = memoryview(data)
    for n, w, features in wire.iter_fields(view):
        if n != 1 or w != wire.LEN:
            continue
        for m, w2, entry in wire.iter_fields(features):  # type: ignore[arg-type]
            if m != 1 or w2 != wire.LEN:
                continue
            name, feature = None, None
            for k, w3, v in wire.iter_fields(entry):  # type: ignore[arg-type]
                if k == 1 and w3 == wire.LEN:
                    name = bytes(v).decode("utf-8")  # type: ignore[arg-type]
                elif k == 2 and w3 == wire.LEN:
                    feature = v
            if name is None:
                raise wire.WireError("a feature has no name")
            kind, values = "bytes", []
            if feature is not None:
                for k, w4, v in wire.iter_fields(feature):  # type: ignore[arg-type]
                    if k in kinds and w4 == wire.LEN:
                        kind, values = kinds[k], _values(k, v)  # type: ignore[assignment,arg-type]
            out[name] = (kind, values)
    return out


def _column(name: str, kind: str, values: Any, spec: dict[str, Any] | None) -> np.ndarray:
    type_name = spec["type"] if spec else None
    if kind == "bytes":
        if type_name in (None, "uint8", "int8"):
            arr = np.frombuffer(b"".join(values), np.uint8).copy()
            if type_name == "int8":
                arr = arr.view(np.int8)
        elif type_name == "string":
            arr = np.array([v.decode("utf-8") for v in values], dtype=str)
        elif type_name == "bytes":
            arr = np.array(values, dtype=bytes)
        else:
            raise ValueError(
                f"column '{name}' holds bytes, which the schema type {type_name} cannot take"
            )
    else:
        arr = np.asarray(values)
        if type_name is not None:
            if type_name in ("string", "bytes"):
                raise ValueError(f"column '{name}' holds {kind} values, not {type_name}")
            arr = arr.astype(TYPES[type_name])
    shape = spec.get("shape") if spec else None
    if shape:
        try:
            arr = arr.reshape(shape)
        except ValueError:
            raise ValueError(
                f"column '{name}' has {arr.size} values, which do not fit the schema shape {shape}"
            ) from None
    return arr


class TFRecordDataset(MappableSource):
    """Read TFRecord files of ``tf.train.Example`` records (reading only; no TensorFlow).

    ``schema`` is a :class:`Schema`, a schema JSON file or None; ``columns_list`` picks
    columns. ``shuffle`` is a bool or ``Shuffle.GLOBAL``/``FILES``/``INFILE``. With
    ``num_shards``/``shard_id`` the files are divided among the shards, or with
    ``shard_equal_rows=True`` the rows (every ``num_shards``-th). ``compression_type`` is
    '' / None, ``'GZIP'`` or ``'ZLIB'`` (a compressed file is decompressed in memory).
    ``num_samples`` defaults to the schema's ``numRows``.
    """

    def __init__(
        self,
        dataset_files: str | list[str],
        schema: Schema | str | None = None,
        columns_list: list[str] | None = None,
        num_samples: int | None = None,
        num_parallel_workers: int | None = None,
        shuffle: bool | Shuffle = Shuffle.GLOBAL,
        num_shards: int | None = None,
        shard_id: int | None = None,
        shard_equal_rows: bool = False,
        cache: Any = None,
        compression_type: str | None = None,
    ) -> None:
        where = "TFRecordDataset"
        if cache is not None:
            raise ValueError(f"{where}: argument 'cache' is not supported (pass None)")
        compression = (compression_type or "").upper()
        if compression not in ("", "GZIP", "ZLIB"):
            raise ValueError(
                f"{where}: argument 'compression_type' expected '', 'GZIP' or 'ZLIB', got "
                f"{compression_type!r}"
            )
        if isinstance(schema, (str, os.PathLike)):
            schema = Schema(os.fspath(schema))
        if schema is not None and not isinstance(schema, Schema):
            raise TypeError(
                f"{where}: argument 'schema' expected a Schema or a path, got {schema!r}"
            )
        if not isinstance(shard_equal_rows, bool):
            raise TypeError(f"{where}: argument 'shard_equal_rows' expected a bool")
        mode = _check_shuffle(where, shuffle)
        shards = check_shards(where, num_shards, shard_id)
        files = _files(where, dataset_files)
        if shards[0] is not None and not shard_equal_rows:
            if len(files) < shards[0]:
                raise ValueError(
                    f"{where}: {len(files)} files cannot be divided among num_shards={shards[0]} "
                    "shards; pass shard_equal_rows=True to shard by rows"
                )
            files = files[shards[1] :: shards[0]]
            shards = (None, None)
        self._files = files
        self._data: list[np.ndarray] = []
        index, bounds = [], [0]
        for k, path in enumerate(files):
            data = _load_file(path, compression)
            self._data.append(data)
            spans = _index_file(path, data)
            index.append(np.column_stack([np.full(len(spans), k, np.int64), spans]))
            bounds.append(bounds[-1] + len(spans))
        self._index = np.concatenate(index) if index else np.zeros((0, 3), np.int64)
        self._specs = {c["name"]: c for c in schema.columns} if schema is not None else {}
        if columns_list is not None:
            if not isinstance(columns_list, list) or not all(
                isinstance(c, str) for c in columns_list
            ):
                raise TypeError(f"{where}: argument 'columns_list' expected a list of str")
            columns = list(columns_list)
        elif schema is not None and schema.columns:
            columns = schema.names()
        elif len(self._index):
            columns = sorted(self._example(0))
        else:
            raise ValueError(f"{where}: the files hold no records and no schema names the columns")
        self._columns = columns
        if num_samples is None and schema is not None:
            num_samples = schema.num_rows
        num_samples = check_int(where, "num_samples", num_samples, 0, none=True)
        super().__init__(None, num_parallel_workers, False, None, None, None)
        self.sampler = _TextSampler(mode, np.asarray(bounds, np.int64), shards, num_samples)

    def _record(self, index: int) -> memoryview:
        k, start, length = (int(v) for v in self._index[index])
        data = self._data[k]
        payload = data[start : start + length]
        want = int(data[start + length : start + length + 4].view("<u4")[0])
        if masked_crc32c(payload) != want:
            raise TFRecordError(
                f"{self._files[k]}: record {index - self._first(k)}: the data's CRC does not "
                "match (a corrupt record)"
            )
        return memoryview(np.ascontiguousarray(payload)).cast("B")

    def _first(self, k: int) -> int:
        return int(np.searchsorted(self._index[:, 0], k, side="left"))

    def _example(self, index: int) -> dict[str, tuple[str, Any]]:
        try:
            return parse_example(self._record(index))
        except wire.WireError as exc:
            k = int(self._index[index, 0])
            raise TFRecordError(
                f"{self._files[k]}: record {index - self._first(k)} is not a "
                f"tf.train.Example: {exc}"
            ) from None

    def get_col_names(self) -> list[str]:
        return list(self._columns)

    def _indices(self, run: Any, epoch: int) -> np.ndarray:
        seed = run.base_seed
        if not run.seeded and self.sampler.num_shards is not None:  # type: ignore[attr-defined]
            seed = 0  # every shard must draw the same permutation, even without set_seed
        return self.sampler.get_indices(self._num_rows(), (seed, epoch, run.node_id(self)))

    def _num_rows(self) -> int:
        return len(self._index)

    def _origin(self, index: int) -> Any:
        return str(self._files[int(self._index[index, 0])])

    def _load(self, index: int) -> tuple[Any, ...]:
        example = self._example(index)
        row = []
        for name in self._columns:
            if name not in example:
                raise TFRecordError(
                    f"{self._origin(index)}: record {index} has no feature '{name}' "
                    f"(it has {sorted(example)})"
                )
            kind, values = example[name]
            try:
                row.append(_column(name, kind, values, self._specs.get(name)))
            except ValueError as exc:
                raise TFRecordError(f"{self._origin(index)}: record {index}: {exc}") from None
        return tuple(row)
