"""Converters into MindRecord: CIFAR-10 binaries, an ImageNet-style image folder, a CSV file.

Each writes with :class:`~.writer.FileWriter` the schema MindSpore's converter of the same
name writes, so the files read the same in either framework.
"""

from __future__ import annotations

import csv
import io
import os
from typing import Any

import numpy as np

from .writer import FileWriter

__all__ = ["Cifar10ToMR", "Cifar100ToMR", "ImageNetToMR", "CsvToMR", "MnistToMR"]

SUCCESS = 0
_CIFAR_RECORD = 1 + 32 * 32 * 3
_BATCH = 1000


def _jpeg(hwc: np.ndarray) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.fromarray(hwc).save(out, format="JPEG", quality=95)
    return out.getvalue()


def _check_destination(where: str, destination: Any) -> str:
    if not isinstance(destination, (str, os.PathLike)) or not os.fspath(destination):
        raise TypeError(f"{where}: argument 'destination' expected a path, got {destination!r}")
    return os.fspath(destination)


class Cifar10ToMR:
    """CIFAR-10's binary version (``data_batch_*.bin``, ``test_batch.bin``) into MindRecord.

    Writes ``destination`` (the 50,000 training images) and ``destination + "_test"``
    with MindSpore's schema ``{"id": int64, "label": int64, "data": bytes}`` (``data`` a
    JPEG). MindSpore's own converter reads the *Python* (pickle) version of CIFAR-10;
    Sporeling never unpickles, so it reads the binary version instead.
    """

    def __init__(self, source: str, destination: str) -> None:
        where = "Cifar10ToMR"
        if not isinstance(source, (str, os.PathLike)) or not os.path.isdir(source):
            raise ValueError(f"{where}: argument 'source' expected a directory, got {source!r}")
        self.source = os.fspath(source)
        self.destination = _check_destination(where, destination)

    def _batches(self, names: list[str]) -> list[str]:
        paths = [os.path.join(self.source, n) for n in names]
        missing = [p for p in paths if not os.path.isfile(p)]
        if missing:
            raise ValueError(f"{type(self).__name__}: binary files are missing: {missing}")
        return paths

    def _write(self, paths: list[str], destination: str, fields: list[str] | None) -> None:
        writer = FileWriter(destination, 1, overwrite=True)
        writer.add_schema(
            {"id": {"type": "int64"}, "label": {"type": "int64"}, "data": {"type": "bytes"}},
            "img2mindrecord",
        )
        if fields:
            writer.add_index(list(fields))
        next_id = 0
        for path in paths:
            raw = np.fromfile(path, np.uint8)
            if raw.size % _CIFAR_RECORD:
                raise ValueError(
                    f"Cifar10ToMR: '{path}' is {raw.size} bytes, not whole {_CIFAR_RECORD}-byte "
                    "CIFAR-10 records"
                )
            records = raw.reshape(-1, _CIFAR_RECORD)
            for lo in range(0, len(records), _BATCH):
                rows = []
                for rec in records[lo : lo + _BATCH]:
                    image = rec[1:].reshape(3, 32, 32).transpose(1, 2, 0)
                    rows.append({"id": next_id, "label": int(rec[0]), "data": _jpeg(image)})
                    next_id += 1
                writer.write_raw_data(rows)
        writer.commit()

    def transform(self, fields: list[str] | None = None) -> int:
        """Write both files; ``fields`` are index fields (``id``/``label``). Returns 0."""
        train = self._batches([f"data_batch_{i}.bin" for i in range(1, 6)])
        test = self._batches(["test_batch.bin"])
        self._write(train, self.destination, fields)
        self._write(test, self.destination + "_test", fields)
        return SUCCESS

    run = transform


class ImageNetToMR:
    """An image folder with a map file (``<folder name> <label>`` per line) into MindRecord.

    Schema ``{"label": int32, "image": bytes, "file_name": string}`` (the file's bytes, not
    decoded), as MindSpore's ImageNetToMR; ``partition_number`` shards.
    """

    def __init__(
        self, map_file: str, image_dir: str, destination: str, partition_number: int = 1
    ) -> None:
        where = "ImageNetToMR"
        if not os.path.isfile(map_file):
            raise ValueError(f"{where}: argument 'map_file' {map_file!r} is not a file")
        if not os.path.isdir(image_dir):
            raise ValueError(f"{where}: argument 'image_dir' {image_dir!r} is not a directory")
        self.map_file, self.image_dir = map_file, image_dir
        self.destination = _check_destination(where, destination)
        self.partition_number = partition_number

    def _labels(self) -> dict[str, int]:
        labels: dict[str, int] = {}
        with open(self.map_file, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                parts = line.split()
                if not parts:
                    continue
                if len(parts) != 2 or not parts[1].lstrip("-").isdigit():
                    raise ValueError(
                        f"ImageNetToMR: {self.map_file} line {lineno}: expected "
                        f"'<folder> <label>', got {line.strip()!r}"
                    )
                labels[parts[0]] = int(parts[1])
        return labels

    def transform(self) -> int:
        writer = FileWriter(self.destination, self.partition_number, overwrite=True)
        writer.add_schema(
            {
                "label": {"type": "int32"},
                "image": {"type": "bytes"},
                "file_name": {"type": "string"},
            },
            "imagenet_schema",
        )
        writer.add_index(["label", "file_name"])
        rows: list[dict[str, Any]] = []
        for folder, label in self._labels().items():
            path = os.path.join(self.image_dir, folder)
            if not os.path.isdir(path):
                continue
            for name in sorted(os.listdir(path)):
                with open(os.path.join(path, name), "rb") as f:
                    rows.append({"label": label, "image": f.read(), "file_name": name})
                if len(rows) == _BATCH:
                    writer.write_raw_data(rows)
                    rows = []
        if rows:
            writer.write_raw_data(rows)
        writer.commit()
        return SUCCESS

    run = transform


def _column_type(values: list[str]) -> str:
    def every(kind: type) -> bool:
        try:
            for v in values:
                kind(v)
        except ValueError:
            return False
        return True

    if values and every(int):
        return "int64"
    if values and every(float):
        return "float64"
    return "string"


class CsvToMR:
    """A CSV file (with a header line) into MindRecord, column types inferred.

    A column whose every value parses as an int is int64, as a float float64, otherwise
    string (MindSpore infers the same with pandas). ``columns_list`` keeps some columns.
    """

    def __init__(
        self,
        source: str,
        destination: str,
        columns_list: list[str] | None = None,
        partition_number: int = 1,
    ) -> None:
        if not os.path.isfile(source):
            raise ValueError(f"CsvToMR: argument 'source' {source!r} is not a file")
        self.source = source
        self.destination = _check_destination("CsvToMR", destination)
        self.columns_list = columns_list
        self.partition_number = partition_number

    def transform(self) -> int:
        with open(self.source, newline="", encoding="utf-8") as f:
            table = list(csv.reader(f))
        if not table:
            raise ValueError(f"CsvToMR: '{self.source}' is empty")
        header, body = table[0], table[1:]
        for lineno, row in enumerate(body, 2):
            if len(row) != len(header):
                raise ValueError(
                    f"CsvToMR: {self.source} line {lineno} has {len(row)} values, the header "
                    f"{len(header)}"
                )
        keep = self.columns_list or header
        unknown = [c for c in keep if c not in header]
        if unknown:
            raise ValueError(f"CsvToMR: columns_list names {unknown}, not in the CSV {header}")
        cols = {c: [r[header.index(c)] for r in body] for c in keep}
        types = {c: _column_type(v) for c, v in cols.items()}
        cast = {"int64": int, "float64": float, "string": str}
        writer = FileWriter(self.destination, self.partition_number, overwrite=True)
        writer.add_schema({c: {"type": t} for c, t in types.items()}, "csv_schema")
        rows = [{c: cast[types[c]](cols[c][i]) for c in keep} for i in range(len(body))]
        if rows:  # a header without rows: a file without rows
            writer.write_raw_data(rows)
        writer.commit()
        return SUCCESS

    run = transform


class Cifar100ToMR(Cifar10ToMR):
    """CIFAR-100's binary version (``train.bin``, ``test.bin``) into MindRecord.

    Schema ``{"id": int64, "fine_label": int64, "coarse_label": int64, "data": bytes}``
    (``data`` a JPEG), as MindSpore's Cifar100ToMR writes; ``destination`` holds the 50,000
    training images and ``destination + "_test"`` the 10,000 test images. (MindSpore's reads
    the pickled Python version, which Sporeling never unpickles.)
    """

    def _write(self, paths: list[str], destination: str, fields: list[str] | None) -> None:
        writer = FileWriter(destination, 1, overwrite=True)
        writer.add_schema(
            {
                "id": {"type": "int64"},
                "fine_label": {"type": "int64"},
                "coarse_label": {"type": "int64"},
                "data": {"type": "bytes"},
            },
            "img2mindrecord",
        )
        if fields:
            writer.add_index(list(fields))
        size = 2 + 32 * 32 * 3
        next_id = 0
        for path in paths:
            raw = np.fromfile(path, np.uint8)
            if raw.size % size:
                raise ValueError(
                    f"Cifar100ToMR: '{path}' is {raw.size} bytes, not whole {size}-byte "
                    "CIFAR-100 records"
                )
            records = raw.reshape(-1, size)
            for lo in range(0, len(records), _BATCH):
                rows = []
                for rec in records[lo : lo + _BATCH]:
                    image = rec[2:].reshape(3, 32, 32).transpose(1, 2, 0)
                    rows.append(
                        {
                            "id": next_id,
                            "coarse_label": int(rec[0]),
                            "fine_label": int(rec[1]),
                            "data": _jpeg(image),
                        }
                    )
                    next_id += 1
                writer.write_raw_data(rows)
        writer.commit()

    def transform(self, fields: list[str] | None = None) -> int:
        """Write both files; ``fields`` are index fields. Returns 0."""
        self._write(self._batches(["train.bin"]), self.destination, fields)
        self._write(self._batches(["test.bin"]), self.destination + "_test", fields)
        return SUCCESS

    run = transform


class MnistToMR:
    """MNIST idx files (``train-images-idx3-ubyte(.gz)`` ...) into MindRecord.

    Writes ``destination + "_train.mindrecord"`` and ``destination + "_test.mindrecord"``
    with MindSpore's schema ``{"label": int64, "data": bytes}`` (``data`` a JPEG) and
    ``label`` indexed; the ``.gz`` files MindSpore reads, or the uncompressed ones.
    """

    def __init__(self, source: str, destination: str, partition_number: int = 1) -> None:
        if not isinstance(source, (str, os.PathLike)) or not os.path.isdir(source):
            raise ValueError(f"MnistToMR: argument 'source' expected a directory, got {source!r}")
        self.source = os.fspath(source)
        self.destination = _check_destination("MnistToMR", destination)
        self.partition_number = partition_number

    def _idx(self, name: str) -> np.ndarray:
        import gzip
        import tempfile
        from pathlib import Path

        from ..datasets.vision_sources import read_idx

        plain = os.path.join(self.source, name)
        if os.path.isfile(plain):
            return np.array(read_idx(Path(plain)))
        packed = plain + ".gz"
        if not os.path.isfile(packed):
            raise ValueError(f"MnistToMR: neither {plain} nor {packed} exists")
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / name
            with gzip.open(packed, "rb") as f:
                out.write_bytes(f.read())
            return np.array(read_idx(out))

    def _write(self, part: str, prefix: str) -> None:
        images = self._idx(f"{prefix}-images-idx3-ubyte")
        labels = self._idx(f"{prefix}-labels-idx1-ubyte")
        if len(images) != len(labels):
            raise ValueError(f"MnistToMR: {len(images)} {part} images but {len(labels)} labels")
        writer = FileWriter(f"{self.destination}_{part}.mindrecord", self.partition_number, True)
        writer.add_schema({"label": {"type": "int64"}, "data": {"type": "bytes"}}, "mnist_schema")
        writer.add_index(["label"])
        for lo in range(0, len(images), _BATCH):
            rows = [
                {"label": int(labels[i]), "data": _jpeg(np.ascontiguousarray(images[i]))}
                for i in range(lo, min(lo + _BATCH, len(images)))
            ]
            writer.write_raw_data(rows)
        writer.commit()

    def transform(self) -> int:
        self._write("train", "train")
        self._write("test", "t10k")
        return SUCCESS

    run = transform
