"""TFRecordToMR without TensorFlow: the committed TFRecord fixture (6 tf.train.Example
records, read by MindSpore 2.10 in ms_tfrecord.json) converted to MindRecord and read back,
compared value by value with MindSpore's reading of the TFRecord file; parse_single_example's
rules and MindSpore's argument errors. MindSpore itself reads a file converted here:
``make_ms_fixtures.py tfrecord-to-mr`` (result in data/ms_tfrecord_to_mr.json)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

import sporeling.data as ds
from sporeling.data.mindrecord import FixedLenFeature, TFRecordToMR

DATA = Path(__file__).parent / "data"
MS = json.loads((DATA / "ms_tfrecord.json").read_text())["plain"]["rows"]
FEATURES = {
    "image": FixedLenFeature([], "string"),
    "name": FixedLenFeature([], "string"),
    "label": FixedLenFeature([], np.int64),
    "floats": FixedLenFeature([3], "float32"),
}


def _encoder():
    spec = importlib.util.spec_from_file_location("fixtures", DATA / "make_ms_fixtures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _read(path):
    return list(ds.MindDataset(str(path), shuffle=False).create_dict_iterator(output_numpy=True))


def test_fixture_converted_equals_mindspores_reading(tmp_path):
    out = tmp_path / "tf.mindrecord"
    converter = TFRecordToMR(str(DATA / "ms_example.tfrecord"), str(out), FEATURES, ["image"])
    assert converter.mindrecord_schema == {
        "image": {"type": "bytes"},
        "name": {"type": "string"},
        "label": {"type": "int64"},
        "floats": {"type": "float32", "shape": [3]},
    }
    assert converter.transform() == 0
    rows = _read(out)
    assert len(rows) == len(MS) == 6
    for row, want in zip(rows, MS):
        assert row["image"].tobytes() == bytes(want["image"]["values"])
        assert str(row["name"]) == bytes(want["name"]["values"]).decode()
        assert row["label"].dtype == np.int64 and int(row["label"]) == want["label"]["values"][0]
        np.testing.assert_array_equal(row["floats"], np.array(want["floats"]["values"], "f4"))


def test_names_defaults_and_gzip(tmp_path):
    enc = _encoder()
    records = [
        enc.tf_record(enc.tf_example({"a b": ("int64", [7]), "x.y": ("float", [0.5, 1.5])})),
        enc.tf_record(enc.tf_example({"x.y": ("float", [2.5, 3.5])})),  # "a b" missing
    ]
    src = tmp_path / "n.tfrecord"
    src.write_bytes(b"".join(records))
    features = {"a b": FixedLenFeature([], "int64", default_value=-1), "x.y": ([2], "float32")}
    features["x.y"] = FixedLenFeature(*features["x.y"])
    TFRecordToMR(str(src), str(tmp_path / "n.mindrecord"), features).transform()
    rows = _read(tmp_path / "n.mindrecord")
    assert [int(r["a_b"]) for r in rows] == [7, -1]  # punctuation/space -> "_", defaults
    np.testing.assert_array_equal(rows[1]["x_y"], [2.5, 3.5])
    import gzip

    (tmp_path / "n.tfrecord.gz").write_bytes(gzip.compress(src.read_bytes()))
    TFRecordToMR(
        str(tmp_path / "n.tfrecord.gz"),
        str(tmp_path / "g.mindrecord"),
        features,
        compression_type="GZIP",
    ).transform()
    assert [int(r["a_b"]) for r in _read(tmp_path / "g.mindrecord")] == [7, -1]


@pytest.mark.parametrize(
    ("features", "match"),
    [
        ({"ids": FixedLenFeature([2], "int64")}, r"record 0, feature 'ids'.*1 value\(s\)"),
        ({"label": FixedLenFeature([], "float32")}, "holds a int64 list, feature_dict declares"),
        ({"nope": FixedLenFeature([], "int64")}, "'nope' is not in the record"),
    ],
)
def test_records_that_do_not_fit(tmp_path, features, match):
    conv = TFRecordToMR(str(DATA / "ms_example.tfrecord"), str(tmp_path / "x.mr"), features)
    with pytest.raises(ValueError, match=match):
        conv.transform()


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((1, "d", FEATURES), "Parameter source must be string"),
        (("s", "d", None), "Parameter feature_dict is None or not dict"),
        (("s", "d", {"a": 3}), "only supports FixedLenFeature"),
        (("s", "d", {"a": FixedLenFeature([], "complex64")}), "Type complex64"),
        (("s", "d", {"a": FixedLenFeature([2, 2], "int64")}), r"len\(feature_dict\['a'\].shape\)"),
        (("s", "d", {"a": FixedLenFeature([0], "int64")}), "shape\\[0\\] should > 0"),
        (("s", "d", {"a": FixedLenFeature([2], "string")}), "tf.string which shape"),
        (("s", "d", FEATURES, "image"), "must be list"),
        (("s", "d", FEATURES, ["nope"]), "nope is not in feature_dict"),
        (("s", "d", FEATURES, ["label"]), "should be tf.string"),
    ],
)
def test_argument_errors(args, match):
    with pytest.raises(ValueError, match=match):  # MindSpore raises ValueError for all
        TFRecordToMR(*args)


def test_destination_exists(tmp_path):
    out = tmp_path / "o.mindrecord"
    out.write_bytes(b"")
    conv = TFRecordToMR(str(DATA / "ms_example.tfrecord"), str(out), FEATURES)
    with pytest.raises(RuntimeError, match="already exist"):
        conv.transform()


def test_mindspore_read_a_file_converted_here():
    report = json.loads((DATA / "ms_tfrecord_to_mr.json").read_text())
    assert report["rows_read_by_mindspore"] == report["tfrecord_rows"] == 6
    assert report["columns"] == ["floats", "image", "label", "name"]
    assert report["mismatches"] == []
