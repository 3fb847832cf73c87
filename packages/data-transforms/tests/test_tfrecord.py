"""TFRecordDataset against MindSpore 2.10's reading of the same files (tests/data/ms_tfrecord.json,
made by make_ms_fixtures.py tfrecord from a TFRecord encoder written from the format specs),
with and without a schema, GZIP, shuffling and sharding, and damaged files."""

from __future__ import annotations

import gzip
import json
import struct
from pathlib import Path

import numpy as np
import pytest

import sporeling.data as ds
from sporeling.data.datasets._crc32c import crc32c, masked_crc32c
from sporeling.data.datasets.tfrecord import TFRecordError

DATA = Path(__file__).parent / "data"
MS = json.loads((DATA / "ms_tfrecord.json").read_text())
FILE = str(DATA / "ms_example.tfrecord")


def _rows(dataset):
    return list(dataset.create_dict_iterator(output_numpy=True, num_epochs=1))


def _check(dataset, want):
    assert dataset.get_col_names() == want["columns"]
    rows = _rows(dataset)
    assert len(rows) == len(want["rows"])
    for row, expected in zip(rows, want["rows"]):
        assert sorted(row) == sorted(expected)
        for key, spec in expected.items():
            got = row[key]
            if "str" in spec:
                assert str(got) == spec["str"], key
            else:
                assert str(got.dtype) == spec["dtype"] and list(got.shape) == spec["shape"], key
                np.testing.assert_array_equal(got, np.array(spec["values"], spec["dtype"]), key)


def test_crc32c_check_value():
    assert crc32c(b"123456789") == 0xE3069283
    assert masked_crc32c(b"") == ((0 >> 15 | 0 << 17) + 0xA282EAD8) & 0xFFFFFFFF


def test_reads_like_mindspore():
    _check(ds.TFRecordDataset(FILE, shuffle=False), MS["plain"])
    schema = str(DATA / "ms_example_schema.json")
    _check(ds.TFRecordDataset(FILE, schema=schema, shuffle=False), MS["schema"])
    _check(
        ds.TFRecordDataset(FILE, columns_list=["ids", "label"], shuffle=False), MS["columns_list"]
    )
    gz = ds.TFRecordDataset(FILE + ".gz", compression_type="GZIP", shuffle=False)
    _check(gz, MS["gzip"])


def test_schema_object_and_errors():
    schema = ds.Schema()
    schema.add_column("label", de_type="int32", shape=[1])
    schema.add_column("name", de_type="string")
    rows = _rows(ds.TFRecordDataset(FILE, schema=schema, shuffle=False))
    assert rows[0]["label"].dtype == np.int32 and str(rows[0]["name"][0]) == "row-0"
    bad = ds.Schema()
    bad.add_column("label", de_type="int64", shape=[2])
    with pytest.raises(ds.PipelineError, match="do not fit the schema shape"):
        _rows(ds.TFRecordDataset(FILE, schema=bad, shuffle=False))
    with pytest.raises(ds.PipelineError, match="no feature 'nope'"):
        _rows(ds.TFRecordDataset(FILE, columns_list=["nope"], shuffle=False))
    with pytest.raises(ValueError, match="compression_type"):
        ds.TFRecordDataset(FILE, compression_type="LZ4")
    with pytest.raises(ValueError, match="not one of"):
        ds.Schema().add_column("x", de_type="complex64")


def test_shuffle_and_shards(tmp_path):
    ds.config.set_seed(1)
    labels = [int(r["label"][0]) for r in _rows(ds.TFRecordDataset(FILE))]
    assert sorted(labels) == [-2, -1, 0, 1, 2, 3]
    by_rows = [
        [
            int(r["label"][0])
            for r in _rows(
                ds.TFRecordDataset(
                    FILE, shuffle=False, num_shards=2, shard_id=s, shard_equal_rows=True
                )
            )
        ]
        for s in range(2)
    ]
    assert by_rows == [[-2, 0, 2], [-1, 1, 3]]
    second = tmp_path / "b.tfrecord"
    second.write_bytes(Path(FILE).read_bytes())
    by_files = _rows(
        ds.TFRecordDataset([FILE, str(second)], shuffle=False, num_shards=2, shard_id=1)
    )
    assert len(by_files) == 6
    with pytest.raises(ValueError, match="cannot be divided"):
        ds.TFRecordDataset(FILE, num_shards=2, shard_id=0)


def test_damaged_files(tmp_path):
    data = Path(FILE).read_bytes()
    path = tmp_path / "bad.tfrecord"
    for n in (5, 20, len(data) - 3):  # cut inside a header, inside a record
        path.write_bytes(data[:n])
        with pytest.raises(TFRecordError, match="bad.tfrecord"):
            ds.TFRecordDataset(str(path))
    flipped = bytearray(data)
    flipped[3] ^= 1  # the first length
    path.write_bytes(bytes(flipped))
    with pytest.raises(TFRecordError, match="length's CRC"):
        ds.TFRecordDataset(str(path))
    flipped = bytearray(data)
    flipped[40] ^= 1  # inside the first record's data
    path.write_bytes(bytes(flipped))
    with pytest.raises(TFRecordError, match="data's CRC"):
        ds.TFRecordDataset(str(path))  # the first record names the columns
    with pytest.raises(ds.PipelineError, match="data's CRC") as info:
        _rows(ds.TFRecordDataset(str(path), columns_list=["label"], shuffle=False))
    assert "bad.tfrecord" in str(info.value)
    huge = struct.pack("<Q", 2**60)
    path.write_bytes(huge + struct.pack("<I", masked_crc32c(huge)) + b"x" * 10)
    with pytest.raises(TFRecordError, match="declares"):
        ds.TFRecordDataset(str(path))
    not_example = b"\xff\xff"
    record = struct.pack("<Q", 2)
    record += struct.pack("<I", masked_crc32c(record)) + not_example
    record += struct.pack("<I", masked_crc32c(not_example))
    path.write_bytes(record)
    with pytest.raises(TFRecordError, match="not a tf.train.Example"):
        ds.TFRecordDataset(str(path))
    (tmp_path / "bad.gz").write_bytes(b"not gzip")
    with pytest.raises(TFRecordError, match="decompress"):
        ds.TFRecordDataset(str(tmp_path / "bad.gz"), compression_type="GZIP")
    assert gzip.decompress(Path(FILE + ".gz").read_bytes()) == data
