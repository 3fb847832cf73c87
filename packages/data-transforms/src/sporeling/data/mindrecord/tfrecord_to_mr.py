"""``TFRecordToMR``: a TFRecord file of ``tf.train.Example`` records into MindRecord.

MindSpore's converter parses the records with TensorFlow; this one reads them with
Sporeling's TFRecord reader (framing and CRCs checked, Examples decoded by hand), so
TensorFlow is not needed. ``feature_dict`` maps feature names to ``FixedLenFeature(shape,
dtype)``: this module's (dtype ``"string"``, ``"int64"``, ``"float32"`` or a NumPy type) or
TensorFlow's ``tf.io.FixedLenFeature`` objects when TensorFlow is installed. The schema,
field names and values are MindSpore's:

- shape ``[]``: a scalar field (``string``; ``bytes`` for a name in ``bytes_fields``;
  ``int64``; ``float32``), written as ``str`` (UTF-8), ``bytes``, ``int`` or ``float``;
- shape ``[n]``: an ``int64``/``float32`` array field of shape ``[n]``;
- names with punctuation or spaces get ``_`` in their place (``"a b"`` -> ``"a_b"``);
- TensorFlow's ``parse_single_example`` rules: a listed feature must be in every record
  (or have a ``default_value``), be of the declared kind and hold exactly ``prod(shape)``
  values; otherwise ``ValueError`` naming the record and feature.
"""

from __future__ import annotations

import math
import os
import string
from typing import Any, NamedTuple

import numpy as np

from .writer import FileWriter

__all__ = ["FixedLenFeature", "TFRecordToMR"]

SUCCESS = 0
_BATCH = 256  # rows per write_raw_data call, as MindSpore

# a FixedLenFeature dtype's name -> MindRecord type (MindSpore's _cast_type)
_MR_TYPES = {
    "string": "string",
    "int8": "int32",
    "int16": "int32",
    "int32": "int32",
    "int64": "int64",
    "uint8": "int32",
    "uint16": "int32",
    "uint32": "int64",
    "uint64": "int64",
    "float16": "float32",
    "float32": "float32",
    "float64": "float64",
    "double": "float64",
    "bool": "int32",
}
# what tf.train.Example stores for each: parse_single_example takes string, int64, float32
_EXAMPLE_KINDS = {"string": "bytes", "int64": "int64", "float32": "float"}
_SPECIAL = set(string.punctuation + " ") - {"_"}


class FixedLenFeature(NamedTuple):
    """A fixed-length feature of ``tf.train.Example`` (``tf.io.FixedLenFeature``'s fields)."""

    shape: list[int]
    dtype: Any
    default_value: Any = None


def _cast_name(key: str) -> str:
    return "".join("_" if c in _SPECIAL else c for c in key)


def _dtype_name(dtype: Any) -> str:
    """'string', 'int64', 'float32', ... from a string, a NumPy type or a tf.DType."""
    if isinstance(dtype, str):
        return dtype
    if dtype in (str, bytes, np.str_, np.bytes_):
        return "string"
    name = getattr(dtype, "name", None)  # tf.DType
    if isinstance(name, str):
        return name
    try:
        return np.dtype(dtype).name
    except TypeError:
        return repr(dtype)


class TFRecordToMR:
    """Convert ``source`` (one TFRecord file) into the MindRecord file ``destination``.

    ``TFRecordToMR(source, destination, feature_dict, bytes_fields=None).transform()``, as
    ``mindspore.mindrecord.TFRecordToMR``; ``compression_type`` ('' / 'GZIP' / 'ZLIB') is an
    addition for compressed files. ``destination`` must not exist (MindSpore's FileWriter
    without ``overwrite``).
    """

    def __init__(
        self,
        source: str,
        destination: str,
        feature_dict: dict[str, Any],
        bytes_fields: list[str] | None = None,
        compression_type: str = "",
    ) -> None:
        where = "TFRecordToMR"
        if not isinstance(source, str) or not source:
            raise ValueError(f"{where}: Parameter source must be string, got {source!r}")
        if not isinstance(destination, str) or not destination:
            raise ValueError(f"{where}: Parameter destination must be string, got {destination!r}")
        if not isinstance(feature_dict, dict) or not feature_dict:
            raise ValueError(
                f"{where}: Parameter feature_dict is None or not dict (expected a non-empty dict "
                f"of FixedLenFeature), got {feature_dict!r:.80}"
            )
        self.source, self.destination = source, destination
        self.compression_type = compression_type
        self.feature_dict = dict(feature_dict)
        self._features: dict[str, tuple[list[int], str, Any]] = {}
        for key, feature in self.feature_dict.items():
            shape = getattr(feature, "shape", None)
            if not hasattr(feature, "dtype") or shape is None:
                raise ValueError(
                    f"{where}: Parameter feature_dict only supports FixedLenFeature, got "
                    f"{key!r}: {feature!r}"
                )
            shape = [int(d) if isinstance(d, (int, np.integer)) else d for d in list(shape)]
            dtype = _dtype_name(feature.dtype)
            if dtype not in _MR_TYPES:
                raise ValueError(
                    f"{where}: Type {dtype} of feature_dict[{key!r}] is not supported in "
                    f"MindRecord (expected one of {sorted(_MR_TYPES)})"
                )
            self._features[key] = (shape, dtype, getattr(feature, "default_value", None))
        fields = bytes_fields or []
        if bytes_fields is not None and not isinstance(bytes_fields, list):
            raise ValueError(
                f"{where}: Parameter bytes_fields: {bytes_fields!r} must be list(str)."
            )
        for item in fields:
            if not isinstance(item, str):
                raise ValueError(f"{where}: Parameter bytes_fields's item: {item!r} is not str.")
            if item not in self.feature_dict:
                raise ValueError(
                    f"{where}: Parameter bytes_fields's item: {item} is not in feature_dict: "
                    f"{sorted(self.feature_dict)}."
                )
            if self._features[item][1] != "string":
                raise ValueError(
                    f"{where}: Parameter bytes_field: {item} should be tf.string in "
                    f"feature_dict, got {self._features[item][1]}."
                )
        self.bytes_fields_list = [_cast_name(f) for f in fields]
        self.mindrecord_schema = self._schema(where)

    def _schema(self, where: str) -> dict[str, dict[str, Any]]:
        schema: dict[str, dict[str, Any]] = {}
        for key, (shape, dtype, _) in self._features.items():
            name = _cast_name(key)
            if not shape:
                kind = "bytes" if name in self.bytes_fields_list else _MR_TYPES[dtype]
                schema[name] = {"type": kind}
                continue
            if len(shape) != 1:
                raise ValueError(
                    f"{where}: Parameter len(feature_dict[{key!r}].shape) should be 1, got "
                    f"shape {shape}"
                )
            if not isinstance(shape[0], int):
                raise ValueError(
                    f"{where}: Invalid parameter feature_dict, value and type mismatch, please "
                    f'check item of feature_dict["{key}"] (shape {shape}).'
                )
            if shape[0] < 1:
                raise ValueError(
                    f"{where}: Parameter feature_dict[{key!r}].shape[0] should > 0, got {shape}"
                )
            if dtype == "string":
                raise ValueError(
                    f"{where}: Parameter feature_dict[{key!r}].dtype is tf.string which "
                    f"shape[0] is not None. It is not supported."
                )
            schema[name] = {"type": _MR_TYPES[dtype], "shape": [shape[0]]}
        return schema

    def _row(self, example: dict[str, tuple[str, Any]], where: str) -> dict[str, Any]:
        """One MindRecord row from a parsed Example, by parse_single_example's rules."""
        row: dict[str, Any] = {}
        for key, (shape, dtype, default) in self._features.items():
            name = _cast_name(key)
            count = math.prod(shape)
            if key in example:
                kind, values = example[key]
                want = _EXAMPLE_KINDS.get(dtype)
                if kind != want:
                    raise ValueError(
                        f"{where}, feature {key!r}: TFRecord feature_dict parameter error: the "
                        f"record holds a {kind} list, feature_dict declares {dtype}"
                    )
                if len(values) != count:
                    raise ValueError(
                        f"{where}, feature {key!r}: TFRecord feature_dict parameter error: "
                        f"{len(values)} value(s) for shape {shape} ({count} expected)"
                    )
            elif default is not None:
                values = np.broadcast_to(np.asarray(default), shape or ()).reshape(-1).tolist()
                if dtype == "string":
                    values = [v if isinstance(v, bytes) else str(v).encode() for v in values]
            else:
                raise ValueError(
                    f"{where}: TFRecord feature_dict parameter error: feature {key!r} is not "
                    "in the record and has no default_value"
                )
            if shape:
                np_type = {"int32": np.int32, "int64": np.int64, "float32": np.float32}
                row[name] = np.asarray(values, np_type.get(_MR_TYPES[dtype], np.float64))
            elif dtype == "string":
                value = bytes(values[0])
                row[name] = value if name in self.bytes_fields_list else value.decode("utf-8")
            elif _MR_TYPES[dtype].startswith("int"):
                row[name] = int(values[0])
            else:
                row[name] = float(values[0])
        return row

    def transform(self) -> int:
        """Write ``destination``; returns SUCCESS (0)."""
        from ..datasets.tfrecord import TFRecordDataset

        if not os.path.isfile(self.source):
            raise ValueError(f"TFRecordToMR: source file {self.source!r} does not exist")
        reader = TFRecordDataset(self.source, shuffle=False, compression_type=self.compression_type)
        writer = FileWriter(self.destination)
        writer.add_schema(self.mindrecord_schema, "TFRecord to MindRecord")
        rows: list[dict[str, Any]] = []
        for i in range(reader.get_dataset_size()):
            rows.append(self._row(reader._example(i), f"{self.source}, record {i}"))
            if len(rows) == _BATCH:
                writer.write_raw_data(rows)
                rows = []
        if rows:
            writer.write_raw_data(rows)
        writer.commit()
        return SUCCESS

    def run(self) -> int:
        """MindSpore's name for ``transform``."""
        return self.transform()
