"""``FileWriter``: write MindRecord files (and their ``.db`` indexes) that MindSpore reads.

Blobs stream to the shard files as their pages fill; the small raw records and index rows
are kept until ``commit``, which writes the raw pages, the header and the ``.db`` index,
then moves every file into place (written under a temporary name, so a crash never leaves
a half-written file under the real name).
"""

from __future__ import annotations

import json
import logging
import math
import os
import sqlite3
from typing import Any

from ._format import Schema
from ._row_check import drop_invalid_rows
from .exceptions import MRMDefineIndexError, MRMGetMetaError, ParamTypeError, ParamValueError

__all__ = ["FileWriter"]

logger = logging.getLogger("sporeling.data.mindrecord")

DEFAULT_HEADER_SIZE = 1 << 24  # MindSpore's defaults (16 MB, 32 MB)
DEFAULT_PAGE_SIZE = 1 << 25
_SQL_TYPES = {"string": "TEXT", "int32": "INTEGER", "int64": "INTEGER"}


def _check_size(fn: str, arg: str, value: Any, low: int, high: int) -> int:
    if type(value) is not int:
        raise TypeError(f"FileWriter.{fn}: argument '{arg}' expected an int, got {value!r}")
    if not low <= value <= high:
        raise ValueError(
            f"FileWriter.{fn}: argument '{arg}' expected {low} to {high} bytes, got {value}"
        )
    return value


class _Shard:
    """One output file being written: its blob pages so far, raw records, index rows."""

    def __init__(self, path: str, page_size: int, header_size: int) -> None:
        self.path = path
        self.tmp = f"{path}.writing"
        self.file = open(self.tmp, "wb")  # noqa: SIM115 - closed by close()
        self.page_size = page_size
        self.header_size = header_size
        self.blob_pages: list[dict[str, Any]] = []  # start/end rows and used bytes
        self.page = bytearray()
        self.page_start_row = 0
        self.raw: list[bytes] = []
        self.where: list[tuple[int, int, int]] = []  # per row: blob page, begin, end
        self.index: list[list[Any]] = []
        self.rows = 0

    def _flush_page(self) -> None:
        page_id = len(self.blob_pages)
        self.file.seek(self.header_size + page_id * self.page_size)
        self.file.write(self.page)
        self.blob_pages.append(
            {"start": self.page_start_row, "end": self.rows, "size": len(self.page)}
        )
        self.page = bytearray()
        self.page_start_row = self.rows

    def add(self, raw: bytes, blob: bytes, index_values: list[Any]) -> None:
        record = len(blob).to_bytes(8, "little") + blob
        if len(record) > self.page_size:
            raise ValueError(
                f"FileWriter.write_raw_data: a row's blob takes {len(record)} bytes, more than "
                f"the page size {self.page_size}; raise it with set_page_size"
            )
        if len(self.page) + len(record) > self.page_size:
            self._flush_page()
        begin = len(self.page)
        self.page += record
        self.where.append((len(self.blob_pages), begin, len(self.page)))
        self.raw.append(len(raw).to_bytes(8, "little") + raw)
        self.index.append(index_values)
        self.rows += 1

    def finish(self) -> tuple[list[dict[str, Any]], list[tuple[Any, ...]]]:
        """Write the last blob page and the raw pages; return the header pages and db rows."""
        if self.page or not self.blob_pages:
            self._flush_page()
        pages = [
            {
                "end_row_id": p["end"],
                "page_id": i,
                "page_size": p["size"],
                "page_type": "BLOB_DATA",
                "page_type_id": i,
                "row_group_ids": [{"id": 0, "offset": 0}],
                "shard_id": 0,
                "start_row_id": p["start"],
            }
            for i, p in enumerate(self.blob_pages)
        ]
        db_rows: list[tuple[Any, ...]] = []
        raw_page = bytearray()
        groups: list[dict[str, int]] = []
        raw_type_id = 0

        def flush_raw() -> None:
            nonlocal raw_page, groups, raw_type_id
            page_id = len(pages)
            self.file.seek(self.header_size + page_id * self.page_size)
            self.file.write(raw_page)
            pages.append(
                {
                    "end_row_id": 0,
                    "page_id": page_id,
                    "page_size": len(raw_page),
                    "page_type": "RAW_DATA",
                    "page_type_id": raw_type_id,
                    "row_group_ids": groups or [{"id": 0, "offset": 0}],
                    "shard_id": 0,
                    "start_row_id": 0,
                }
            )
            raw_page, groups, raw_type_id = bytearray(), [], raw_type_id + 1

        for row, record in enumerate(self.raw):
            if len(raw_page) + len(record) > self.page_size:
                flush_raw()
            blob_page, b_begin, b_end = self.where[row]
            if not groups or groups[-1]["id"] != blob_page:
                groups.append({"id": blob_page, "offset": len(raw_page)})
            begin = len(raw_page)
            raw_page += record
            extra = [v for value in self.index[row] for v in (0, value)]
            db_rows.append(
                (
                    row,
                    len(pages),
                    begin,
                    len(raw_page),
                    blob_page,
                    blob_page,
                    b_begin,
                    b_end,
                    *extra,
                )
            )
        if raw_page or not self.raw:
            flush_raw()
        return pages, db_rows

    def close(self) -> None:
        self.file.close()


class FileWriter:
    """Write rows into MindRecord shard files, as ``mindspore.mindrecord.FileWriter``.

    ``FileWriter(file_name, shard_num=1, overwrite=False)``; then ``add_schema``,
    optionally ``add_index``, ``write_raw_data`` any number of times, and ``commit``. With
    ``shard_num > 1`` the files are ``file_name0 ... file_name{N-1}`` and each
    ``write_raw_data`` call splits its rows over them in contiguous blocks, as MindSpore
    does. Rows MindSpore's ``write_raw_data`` skips (a missing field, a value of another
    type, an array of another dtype or shape; see ``_row_check``) are skipped here too, with
    one warning each on the ``sporeling.data.mindrecord`` logger, and removed from the list
    passed in, as MindSpore does.
    """

    def __init__(self, file_name: str, shard_num: int = 1, overwrite: bool = False) -> None:
        # MindSpore's exception classes and wording (its tests match them), then ours
        if not isinstance(file_name, (str, os.PathLike)):
            raise ParamValueError(
                f"Invalid parameter value. File path: {file_name!r} is not string. (FileWriter: "
                f"argument 'file_name' expected a path, got {type(file_name).__name__})"
            )
        if not os.fspath(file_name):
            raise ParamValueError(
                "Invalid parameter value. File path is not allowed None or empty! (FileWriter: "
                "argument 'file_name' got '')"
            )
        if shard_num is None:
            raise ParamValueError(
                "Invalid parameter value. Parameter shard_num is None. (FileWriter: argument "
                "'shard_num' expected an int in [1, 1000])"
            )
        if type(shard_num) is not int:
            raise ParamValueError(
                f"Invalid parameter value. Parameter shard_num's type is not int. (FileWriter: "
                f"argument 'shard_num' expected an int in [1, 1000], got {shard_num!r})"
            )
        if not 1 <= shard_num <= 1000:
            raise ParamValueError(
                f"Invalid parameter value. Parameter shard_num's value: {shard_num} should "
                f"between 1 and 1000. (FileWriter: argument 'shard_num')"
            )
        if not isinstance(overwrite, bool):
            raise ParamValueError(
                f"Invalid parameter value. Parameter overwrite's type is not bool. (FileWriter: "
                f"argument 'overwrite' expected a bool, got {overwrite!r})"
            )
        name = os.path.abspath(os.fspath(file_name))
        if not os.path.isdir(os.path.dirname(name)):
            raise FileNotFoundError(f"FileWriter: the directory of '{name}' does not exist")
        self.paths = [name] if shard_num == 1 else [f"{name}{i}" for i in range(shard_num)]
        existing = [p for p in self.paths for q in (p, p + ".db") if os.path.exists(q)]
        if existing and not overwrite:
            raise RuntimeError(
                f"Invalid file, mindrecord files already exist. Please check file path: "
                f"{existing[0]} (FileWriter: pass overwrite=True to replace it)"
            )
        self.header_size = DEFAULT_HEADER_SIZE
        self.page_size = DEFAULT_PAGE_SIZE
        self.schema: Schema | None = None
        self.desc = ""
        self.index_fields: list[str] | None = None
        self._shards: list[_Shard] | None = None
        self._committed = False

    @classmethod
    def open_for_append(cls, file_name: str) -> FileWriter:
        """A writer that adds rows to existing MindRecord files (every shard of ``file_name``).

        The existing rows are copied into new files with the new ones, which replace the
        old files at ``commit``; the schema, index fields, header and page sizes are kept.
        """
        from ._msgpack import unpackb
        from .reader import open_shards

        shards = open_shards(file_name, "FileWriter.open_for_append")
        first = shards[0]
        writer = cls.__new__(cls)
        writer.paths = [s.path for s in shards]
        writer.header_size, writer.page_size = first.header_size, first.page_size
        writer.schema = first.schema
        entry = first.header["schema"][0]
        writer.desc = entry.get("desc", "") if isinstance(entry, dict) else ""
        fields = first.header.get("index_fields") or []
        writer.index_fields = [f["index_field"] for f in fields if isinstance(f, dict)]
        writer._committed = False
        writer._shards = [_Shard(p, writer.page_size, writer.header_size) for p in writer.paths]
        for source, target in zip(shards, writer._shards):
            for row in range(len(source)):
                raw, blob = source.records(row)
                scalars = unpackb(raw)
                target.add(raw, blob, [scalars.get(f) for f in writer.index_fields])
        return writer

    # ---- configuration ------------------------------------------------------------------

    def add_schema(self, content: dict[str, Any], desc: str | None = None) -> int:
        """Set the schema ``{field: {"type": ..., "shape": [...]}}``; returns its id (0)."""
        if self.schema is not None:
            raise RuntimeError("FileWriter.add_schema: a schema was already added (only one)")
        if desc is not None and not isinstance(desc, str):
            raise TypeError(f"FileWriter.add_schema: argument 'desc' expected a str, got {desc!r}")
        self.schema = Schema(content)
        self.desc = desc or ""
        return 0

    def add_index(self, index_fields: list[str]) -> None:
        """Index these scalar fields in the ``.db`` file (MindSpore indexes all by default)."""
        schema = self._need_schema("add_index")
        if not isinstance(index_fields, list) or not index_fields:
            raise ParamTypeError(
                f"Invalid parameter type. 'index_fields' expect list type. (FileWriter.add_index:"
                f" argument 'index_fields' expected a non-empty list of field names, got "
                f"{index_fields!r})"
            )
        for field in index_fields:
            if not isinstance(field, str):
                raise ParamTypeError(
                    f"Invalid parameter type. 'index field' expect str type. (FileWriter."
                    f"add_index: got {field!r} in {index_fields!r})"
                )
            if field in schema.blob_fields:
                raise MRMDefineIndexError(
                    f"Failed to define index field. Detail: Failed to set field {field} since "
                    f"it's not primitive type. (FileWriter.add_index: indexable fields are "
                    f"{schema.raw_fields})"
                )
            if field not in schema.raw_fields:
                raise ParamValueError(
                    f"FileWriter.add_index: {field!r} is not a scalar field of the schema "
                    f"(indexable: {schema.raw_fields})"
                )
        if len(set(index_fields)) != len(index_fields):
            raise ValueError(f"FileWriter.add_index: repeated fields in {index_fields}")
        self.index_fields = list(index_fields)

    def set_header_size(self, header_size: int) -> None:
        """Bytes reserved for the header (16 KB to 128 MB; MindSpore's default 16 MB)."""
        self._not_started("set_header_size")
        self.header_size = _check_size(
            "set_header_size", "header_size", header_size, 1 << 14, 1 << 27
        )

    def set_page_size(self, page_size: int) -> None:
        """Bytes per page (32 KB to 256 MB; MindSpore's default 32 MB): the largest row's blob."""
        self._not_started("set_page_size")
        self.page_size = _check_size("set_page_size", "page_size", page_size, 1 << 15, 1 << 28)

    def _need_schema(self, fn: str) -> Schema:
        if self.schema is None:
            raise MRMGetMetaError(
                f"Failed to get meta info. (FileWriter.{fn}: call add_schema first)"
            )
        return self.schema

    def _not_started(self, fn: str) -> None:
        if self._shards is not None or self._committed:
            raise RuntimeError(f"FileWriter.{fn}: rows were already written")

    # ---- writing --------------------------------------------------------------------------

    def write_raw_data(self, raw_data: list[dict[str, Any]], parallel_writer: bool = False) -> None:
        """Append rows (dicts of field values) to the shards."""
        schema = self._need_schema("write_raw_data")
        if self._committed:
            raise RuntimeError("FileWriter.write_raw_data: the writer was already committed")
        if not isinstance(parallel_writer, bool):
            raise TypeError(
                f"FileWriter.write_raw_data: argument 'parallel_writer' expected a bool, "
                f"got {parallel_writer!r}"
            )
        if not isinstance(raw_data, list):
            raise ParamTypeError(
                f"Invalid parameter type. 'raw_data' expect list type. (FileWriter."
                f"write_raw_data: argument 'raw_data' expected a list of dicts, got "
                f"{type(raw_data).__name__})"
            )
        for i, row in enumerate(raw_data):
            if not isinstance(row, dict):
                raise ParamTypeError(
                    f"Invalid parameter type. 'raw_data item' expect dict type. (FileWriter."
                    f"write_raw_data: item {i} of 'raw_data' is {type(row).__name__})"
                )
        drop_invalid_rows(schema.fields, raw_data)  # MindSpore skips them with a warning
        if not raw_data:
            raise RuntimeError(
                "There is no valid data which can be written by 'write_raw_data' to mindrecord "
                "file. Please check the abnormal input data indicated in the warning log above. "
                "(FileWriter.write_raw_data: every row was skipped, or the list was empty)"
            )
        if self.index_fields is None:
            self.index_fields = list(schema.raw_fields)
        encoded = [schema.encode(row, i) for i, row in enumerate(raw_data)]  # all checked first
        for i, (_, blob, _) in enumerate(encoded):
            if len(blob) + 8 > self.page_size:
                raise ValueError(
                    f"FileWriter.write_raw_data: row {i}'s blob takes {len(blob) + 8} bytes, "
                    f"more than the page size {self.page_size}; raise it with set_page_size"
                )
        if self._shards is None:
            self._shards = [_Shard(p, self.page_size, self.header_size) for p in self.paths]
        n, count = len(self._shards), len(encoded)
        bounds = [math.floor(count * k / n + 0.5) for k in range(n + 1)]
        for k, shard in enumerate(self._shards):
            for raw, blob, scalars in encoded[bounds[k] : bounds[k + 1]]:
                shard.add(raw, blob, [scalars[f] for f in self.index_fields])

    def commit(self) -> None:
        """Write the raw pages, headers and ``.db`` indexes, and move the files into place."""
        schema = self._need_schema("commit")
        if self._committed:
            raise RuntimeError("FileWriter.commit: already committed")
        if self._shards is None:
            self._shards = [_Shard(p, self.page_size, self.header_size) for p in self.paths]
        if self.index_fields is None:
            self.index_fields = list(schema.raw_fields)
        names = [os.path.basename(p) for p in self.paths]
        try:
            for k, shard in enumerate(self._shards):
                pages, db_rows = shard.finish()
                for page in pages:
                    page["shard_id"] = k
                header = {
                    "compression_size": 0,
                    "header_size": self.header_size,
                    "index_fields": [{"index_field": f, "schema_id": 0} for f in self.index_fields],
                    "page": pages,
                    "page_size": self.page_size,
                    "schema": [schema.header_entry(self.desc)],
                    "shard_addresses": names,
                    "shard_id": k,
                    "statistics": None,
                    "version": "3.0",
                }
                text = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
                if 8 + len(text) > self.header_size:
                    raise ValueError(
                        f"FileWriter.commit: the header of '{shard.path}' takes {len(text)} "
                        f"bytes, more than header_size {self.header_size}; raise set_header_size"
                    )
                shard.file.seek(0)
                shard.file.write(len(text).to_bytes(8, "little") + text)
                shard.file.flush()
                os.fsync(shard.file.fileno())
                shard.close()
                self._write_db(shard.path + ".db.writing", names[k], db_rows)
            for shard in self._shards:
                os.replace(shard.tmp, shard.path)
                os.replace(shard.path + ".db.writing", shard.path + ".db")
        except BaseException:
            for shard in self._shards:
                shard.close()
                for tmp in (shard.tmp, shard.path + ".db.writing"):
                    if os.path.exists(tmp):
                        os.unlink(tmp)
            raise
        self._committed = True

    def __del__(self) -> None:
        """An uncommitted writer leaves no files behind (nor open handles)."""
        for shard in getattr(self, "_shards", None) or ():
            shard.close()
            if not getattr(self, "_committed", True) and os.path.exists(shard.tmp):
                os.unlink(shard.tmp)

    def _write_db(self, path: str, shard_name: str, rows: list[tuple[Any, ...]]) -> None:
        schema = self.schema
        assert schema is not None and self.index_fields is not None
        if os.path.exists(path):
            os.unlink(path)
        columns = "".join(
            f",INC_{i} INT, {f}_0 {_SQL_TYPES.get(schema.fields[f]['type'], 'REAL')}"
            for i, f in enumerate(self.index_fields)
        )
        key = "".join(f",INC_{i}" for i in range(len(self.index_fields)))
        conn = sqlite3.connect(path)
        try:
            conn.execute(
                "CREATE TABLE INDEXES(  ROW_ID               INT  NOT NULL, PAGE_ID_RAW          "
                "INT  NOT NULL, PAGE_OFFSET_RAW      INT  NOT NULL, PAGE_OFFSET_RAW_END  INT  NOT "
                "NULL, ROW_GROUP_ID         INT  NOT NULL, PAGE_ID_BLOB         INT  NOT NULL, "
                "PAGE_OFFSET_BLOB     INT  NOT NULL, PAGE_OFFSET_BLOB_END INT  NOT NULL"
                f"{columns}, PRIMARY KEY(ROW_ID{key}))"
            )
            conn.execute("CREATE TABLE SHARD_NAME(NAME TEXT NOT NULL)")
            conn.execute("INSERT INTO SHARD_NAME VALUES (?)", (shard_name,))
            marks = ",".join("?" * (8 + 2 * len(self.index_fields)))
            conn.executemany(f"INSERT INTO INDEXES VALUES ({marks})", rows)
            conn.commit()
        finally:
            conn.close()
