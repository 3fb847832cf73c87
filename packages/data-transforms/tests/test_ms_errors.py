"""MindSpore's exception classes for bad arguments, and the rows FileWriter skips.

The cases (ms_error_cases.py) come from MindSpore's dataset and MindRecord tests; the class
MindSpore 2.10 raises for each, and the rows its FileWriter writes out of skip_rows(), were
recorded by ``make_ms_fixtures.py errors`` (data/ms_errors.json).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest
from ms_error_cases import CASES, SKIP_SCHEMA, skip_rows

import sporeling.data as ds
from sporeling.data import mindrecord as mr

DATA = Path(__file__).parent / "data"
MS = json.loads((DATA / "ms_errors.json").read_text())


def test_every_case_was_recorded():
    assert sorted(MS["cases"]) == sorted(CASES)
    assert all(v["class"] for v in MS["cases"].values())  # MindSpore raised in every case


@pytest.mark.parametrize("name", sorted(CASES))
def test_same_exception_class_as_mindspore(name, tmp_path):
    fn, words = CASES[name]
    want = MS["cases"][name]["class"]
    with pytest.raises(Exception) as info:  # noqa: PT011 - the class is checked below
        fn(ds, mr, str(tmp_path), str(DATA))
    classes = [c.__name__ for c in type(info.value).__mro__]
    assert want in classes, f"{name}: MindSpore raises {want}, Sporeling {classes}: {info.value}"
    message = str(info.value)
    for word in words:  # MindSpore's wording where its tests match it, and what was given
        assert word in message, f"{name}: {word!r} not in {message!r}"


def test_filewriter_skips_the_rows_mindspore_skips(tmp_path, caplog):
    path = str(tmp_path / "skip.mindrecord")
    writer = mr.FileWriter(path, overwrite=True)
    writer.add_schema(SKIP_SCHEMA, "skip")
    rows = skip_rows()
    with caplog.at_level(logging.WARNING, logger="sporeling.data.mindrecord"):
        writer.write_raw_data(rows)
    writer.commit()
    read = list(ds.MindDataset(path, shuffle=False).create_dict_iterator(output_numpy=True))
    assert [int(r["id"]) for r in read] == MS["skip_rows"]["written_ids"]
    # as MindSpore, the skipped rows are removed from the caller's list, one warning each
    assert [int(r["id"]) for r in rows] == MS["skip_rows"]["rows_left_in_list"]
    skipped = len(skip_rows()) - len(rows)
    warnings = [r.getMessage() for r in caplog.records if "is skipped" in r.getMessage()]
    assert len(warnings) == skipped == 15
    assert any("row 1 " in w and "no field 'id'" in w for w in warnings)
    assert any("row 8 " in w and "dtype int32" in w for w in warnings)
    np.testing.assert_array_equal(read[2]["v"], [1.0, 2.0, 3.0])  # row 11, any length
    np.testing.assert_array_equal(read[5]["a"], [1, 2])  # row 18, reshaped


def test_filewriter_all_rows_skipped(tmp_path):
    path = str(tmp_path / "none.mindrecord")
    writer = mr.FileWriter(path, overwrite=True)
    writer.add_schema({"id": {"type": "int32"}}, "d")
    with pytest.raises(RuntimeError, match="There is no valid data"):  # as MindSpore
        writer.write_raw_data([{"id": "a"}, {"x": 1}])
    writer.commit()  # a file without rows, which both readers read
    assert ds.MindDataset(path).get_dataset_size() == 0


def test_mindspore_file_without_rows(tmp_path):
    """MindSpore writes ``"page": null`` into a file without rows; it reads as 0 rows."""
    path = str(tmp_path / "empty.mindrecord")
    writer = mr.FileWriter(path, overwrite=True)
    writer.add_schema({"id": {"type": "int32"}}, "d")
    writer.commit()
    with open(path, "rb") as f:
        blob = bytearray(f.read())
    n = int.from_bytes(blob[:8], "little")
    header = json.loads(blob[8 : 8 + n])
    header["page"] = None
    text = json.dumps(header).encode()
    blob[: 8 + n] = len(text).to_bytes(8, "little") + text + b" " * (n - len(text))
    with open(path, "wb") as f:
        f.write(blob)
    assert ds.MindDataset(path).get_dataset_size() == 0


def test_values_mindspore_lets_through_are_still_checked(tmp_path):
    writer = mr.FileWriter(str(tmp_path / "big.mindrecord"), overwrite=True)
    writer.add_schema({"id": {"type": "int32"}}, "d")
    with pytest.raises(ValueError, match=r"row 0, field 'id': 4294967296 does not fit int32"):
        writer.write_raw_data([{"id": 2**32}])
