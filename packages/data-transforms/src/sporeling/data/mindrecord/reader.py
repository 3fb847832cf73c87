"""Read MindRecord shard files through their ``.db`` index: random access to any row.

Opening a shard checks its header (length, JSON, pages within the file) and loads the
index's page ids and offsets into arrays, each checked against the header's pages; a row
is then two ``pread`` calls (its raw record and its blob), each checked against its length
prefix. Every problem is a :class:`MindRecordError` naming the file.
"""

from __future__ import annotations

import json
import os
import sqlite3
from typing import Any

import numpy as np

from ._format import MindRecordError, Schema

__all__ = ["ShardFile", "open_shards"]

_MAX_HEADER = 1 << 27


class ShardFile:
    """One ``.mindrecord`` file and its ``.db`` index, checked, ready for random reads."""

    def __init__(self, path: str) -> None:
        self.path = os.path.abspath(path)
        if not os.path.isfile(self.path):
            raise MindRecordError(f"MindRecord file '{self.path}' does not exist")
        self.size = os.path.getsize(self.path)
        self.header = self._read_header()
        try:
            self.schema = Schema(self.header["schema"][0]["schema"], where=self.path)
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise MindRecordError(f"{self.path}: the header's schema is invalid: {exc}") from None
        self._read_index()

    def _bad(self, why: str) -> MindRecordError:
        return MindRecordError(f"{self.path}: not a valid MindRecord file: {why}")

    def _read_header(self) -> dict[str, Any]:
        with open(self.path, "rb") as f:
            head = f.read(8)
            if len(head) < 8:
                raise self._bad(f"it is {self.size} bytes long, too short for a header")
            n = int.from_bytes(head, "little")
            if not 0 < n <= min(_MAX_HEADER, self.size - 8):
                raise self._bad(f"its header length is {n} (file size {self.size})")
            text = f.read(n)
        try:
            header = json.loads(text.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise self._bad(f"the header is not UTF-8 JSON ({exc})") from None
        if isinstance(header, dict) and header.get("page") is None:
            header["page"] = []  # MindSpore writes "page": null into a file without rows
        need = {"header_size": int, "page_size": int, "page": list, "schema": list}
        for key, kind in need.items():
            if not isinstance(header, dict) or not isinstance(header.get(key), kind):
                raise self._bad(f"the header lacks '{key}' ({kind.__name__})")
        hs, ps = header["header_size"], header["page_size"]
        if not (8 + n <= hs <= _MAX_HEADER and 0 < ps <= 1 << 31):
            raise self._bad(f"header_size {hs} / page_size {ps} are out of range")
        self.header_size, self.page_size = hs, ps
        self.pages: dict[int, tuple[str, int, int, int]] = {}  # id -> type, used, start, end
        for page in header["page"]:
            try:
                pid, used = int(page["page_id"]), int(page["page_size"])
                kind = str(page["page_type"])
                start, end = int(page["start_row_id"]), int(page["end_row_id"])
            except (KeyError, TypeError, ValueError):
                raise self._bad(f"a page entry is malformed: {page!r:.120}") from None
            if not (pid >= 0 and 0 <= used <= ps):
                raise self._bad(f"page {pid} has size {used} (page_size {ps})")
            if used and hs + pid * ps + used > self.size:  # an empty page takes no bytes
                raise self._bad(
                    f"page {pid} ends at byte {hs + pid * ps + used}, past the end of the "
                    f"{self.size}-byte file (truncated?)"
                )
            self.pages[pid] = (kind, used, start, end)
        return header

    def _read_index(self) -> None:
        db = self.path + ".db"
        if not os.path.isfile(db):
            raise MindRecordError(
                f"{self.path}: its index file '{db}' is missing (MindRecord files are read "
                "through their .db index)"
            )
        try:
            conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            try:
                rows = conn.execute(
                    "SELECT ROW_ID, PAGE_ID_RAW, PAGE_OFFSET_RAW, PAGE_OFFSET_RAW_END, "
                    "PAGE_ID_BLOB, PAGE_OFFSET_BLOB, PAGE_OFFSET_BLOB_END FROM INDEXES "
                    "ORDER BY ROW_ID"
                ).fetchall()
            finally:
                conn.close()
        except sqlite3.Error as exc:
            raise MindRecordError(f"{db}: not a readable MindRecord index: {exc}") from None
        table = np.array(rows, dtype=np.int64).reshape(-1, 7)
        if not np.array_equal(table[:, 0], np.arange(len(table))):
            raise MindRecordError(f"{db}: the index's ROW_IDs are not 0..{len(table) - 1}")
        blob_rows = sum(e - s for k, _, s, e in self.pages.values() if k == "BLOB_DATA")
        if blob_rows != len(table):
            raise MindRecordError(
                f"{db}: the index lists {len(table)} rows but the header's pages hold {blob_rows}"
            )
        self.raw_at = self._positions(db, table[:, 1], table[:, 2], table[:, 3], "RAW_DATA")
        self.blob_at = self._positions(db, table[:, 4], table[:, 5], table[:, 6], "BLOB_DATA")
        # per row (raw position, raw length, blob position, blob length) as Python ints
        self._where = np.concatenate([self.raw_at, self.blob_at], axis=1).astype(np.int64).tolist()

    def _positions(
        self, db: str, pid: np.ndarray, begin: np.ndarray, end: np.ndarray, kind: str
    ) -> np.ndarray:
        for p in np.unique(pid):
            if int(p) not in self.pages or self.pages[int(p)][0] != kind:
                raise MindRecordError(f"{db}: the index names page {int(p)}, not a {kind} page")
        used = np.array([self.pages[int(p)][1] for p in pid], np.int64).reshape(-1)
        if len(pid) and not ((begin >= 0) & (begin + 8 <= end) & (end <= used)).all():
            raise MindRecordError(f"{db}: a {kind} offset lies outside its page")
        base = self.header_size + pid * self.page_size
        return np.stack([base + begin, end - begin], axis=1) if len(pid) else np.zeros((0, 2))

    def __len__(self) -> int:
        return len(self.raw_at)

    def _fd(self) -> int:
        """A descriptor kept open for ``pread`` (thread-safe; reopened after a fork)."""
        fd = getattr(self, "_fd_cache", None)
        if fd is None or fd[0] != os.getpid():
            self._fd_cache = fd = (os.getpid(), os.open(self.path, os.O_RDONLY))
        return fd[1]

    def __del__(self) -> None:
        fd = getattr(self, "_fd_cache", None)
        if fd is not None and fd[0] == os.getpid():
            os.close(fd[1])

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_fd_cache", None)
        return state

    def _record(self, fd: int, pos: int, n: int, what: str, row: int) -> memoryview:
        data = os.pread(fd, n, pos)
        if len(data) != n:
            raise MindRecordError(f"{self.path}: row {row}'s {what} record is cut short")
        if int.from_bytes(data[:8], "little") != n - 8:
            raise MindRecordError(
                f"{self.path}: row {row}'s {what} record length does not match the index "
                "(a damaged page)"
            )
        return memoryview(data)[8:]  # no copy of the (image-sized) blob

    def records(self, row: int) -> tuple[memoryview, memoryview]:
        """Row ``row``'s raw record (MessagePack) and blob, length prefixes checked."""
        fd = self._fd()
        raw_pos, raw_n, blob_pos, blob_n = self._where[row]
        raw = self._record(fd, raw_pos, raw_n, "raw", row)
        return raw, self._record(fd, blob_pos, blob_n, "blob", row)

    def read(self, row: int, columns: list[str]) -> dict[str, Any]:
        raw, blob = self.records(row)
        return self.schema.decode(raw, blob, columns, self.path, row)

    def read_values(self, row: int, columns: list[str]) -> list[Any]:
        """``read`` as a list in ``columns`` order."""
        raw, blob = self.records(row)
        return self.schema.decode_values(raw, blob, columns, self.path, row)


def open_shards(dataset_files: Any, where: str) -> list[ShardFile]:
    """A str opens every shard its header lists; a list opens exactly those files."""
    if isinstance(dataset_files, (str, os.PathLike)):
        first = ShardFile(os.fspath(dataset_files))
        names = first.header.get("shard_addresses") or [os.path.basename(first.path)]
        folder = os.path.dirname(first.path)
        paths = [os.path.join(folder, os.path.basename(str(n))) for n in names]
        shards = [first if p == first.path else ShardFile(p) for p in paths]
    elif isinstance(dataset_files, (list, tuple)) and dataset_files:
        if not all(isinstance(p, (str, os.PathLike)) for p in dataset_files):
            raise TypeError(
                f"{where}: argument 'dataset_files' expected paths, got {dataset_files!r}"
            )
        shards = [ShardFile(os.fspath(p)) for p in dataset_files]
    else:
        raise TypeError(
            f"{where}: argument 'dataset_files' expected a file path or a non-empty list of "
            f"them, got {dataset_files!r}"
        )
    fields = shards[0].schema.fields
    for shard in shards[1:]:
        if shard.schema.fields != fields:
            raise MindRecordError(
                f"{where}: '{shard.path}' has another schema than '{shards[0].path}'"
            )
    return shards
