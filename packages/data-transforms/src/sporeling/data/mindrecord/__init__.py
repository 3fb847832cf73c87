"""``sporeling.data.mindrecord``: MindSpore's MindRecord format (``mindspore.mindrecord``).

:class:`FileWriter` writes MindRecord files and their ``.db`` indexes that MindSpore reads;
:class:`FileReader` and :class:`sporeling.data.MindDataset` read files written by either.
The converters build MindRecord files from CIFAR-10/100 binaries, image folders, CSV files,
MNIST idx files and TFRecord files (without TensorFlow).
"""

from __future__ import annotations

from typing import Any

from ._format import MindRecordError
from .converters import Cifar10ToMR, Cifar100ToMR, CsvToMR, ImageNetToMR, MnistToMR
from .exceptions import (
    MindRecordException,
    MRMDefineIndexError,
    MRMGetMetaError,
    MRMInvalidSchemaError,
    ParamTypeError,
    ParamValueError,
)
from .page import MindPage
from .reader import open_shards
from .tfrecord_to_mr import FixedLenFeature, TFRecordToMR
from .writer import FileWriter

__all__ = [
    "FileWriter",
    "FileReader",
    "MindPage",
    "MindRecordError",
    "MindRecordException",
    "ParamValueError",
    "ParamTypeError",
    "MRMInvalidSchemaError",
    "MRMDefineIndexError",
    "MRMGetMetaError",
    "Cifar10ToMR",
    "Cifar100ToMR",
    "ImageNetToMR",
    "CsvToMR",
    "MnistToMR",
    "TFRecordToMR",
    "FixedLenFeature",
    "SUCCESS",
    "FAILED",
]

SUCCESS = 0
FAILED = 1


class FileReader:
    """Iterate the rows of MindRecord files as dicts (``get_next()``), in file order.

    ``file_name`` is one file (all its shards are read) or a list of files; ``columns``
    picks fields. ``num_consumer`` and ``operator`` are accepted for compatibility.
    """

    def __init__(
        self,
        file_name: Any,
        num_consumer: int = 4,
        columns: list[str] | None = None,
        operator: Any = None,
    ) -> None:
        self._shards = open_shards(file_name, "FileReader")
        names = self._shards[0].schema.names
        if columns is not None:
            unknown = [c for c in columns if c not in names]
            if unknown:
                raise ValueError(f"FileReader: columns {unknown} are not fields ({names})")
        self._columns = list(columns) if columns is not None else list(names)

    def get_next(self):  # noqa: ANN201 - a generator of dicts, as MindSpore's
        """Yield every row as a dict of NumPy values."""
        for shard in self._shards:
            for row in range(len(shard)):
                yield shard.read(row, self._columns)

    def len(self) -> int:
        return sum(len(s) for s in self._shards)

    def close(self) -> None:
        """Nothing to release (files are opened per read)."""
