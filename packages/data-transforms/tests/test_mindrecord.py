"""MindRecord: files written by real MindSpore 2.10 (tests/data, made by make_ms_fixtures.py)
read here, files written here read back (and by MindSpore, in that script:
ms_mindrecord_readback.json), sampling/sharding/padding as MindSpore, the converters, and a
bad-input sweep where every damaged file is a MindRecordError naming the file."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

import sporeling.data as ds
from sporeling.data.mindrecord import (
    Cifar10ToMR,
    Cifar100ToMR,
    CsvToMR,
    FileReader,
    FileWriter,
    ImageNetToMR,
    MindPage,
    MindRecordError,
    MnistToMR,
)

DATA = Path(__file__).parent / "data"
EXPECTED = json.loads((DATA / "ms_mixed.json").read_text())["rows"]


def _rows(dataset):
    return list(dataset.create_dict_iterator(output_numpy=True, num_epochs=1))


def _check(row, want):
    for key, spec in want.items():
        got = row[key]
        if "bytes_hex" in spec:
            assert got.dtype == np.uint8 and got.ndim == 1, key
            assert got.tobytes().hex() == spec["bytes_hex"], key
        elif "str" in spec:
            assert str(got) == spec["str"], key
        else:
            assert str(got.dtype) == spec["dtype"] and list(got.shape) == spec["shape"], key
            np.testing.assert_array_equal(got, np.array(spec["values"], spec["dtype"]), key)


def test_reads_mindspore_files_like_mindspore():
    data = ds.MindDataset(str(DATA / "ms_mixed.mindrecord0"), shuffle=False)
    assert data.get_dataset_size() == len(EXPECTED) == 6
    assert data.get_col_names() == sorted(EXPECTED[0])
    rows = _rows(data)
    for row, want in zip(rows, EXPECTED):
        _check(row, want)
    from PIL import Image  # the image column decodes

    img = Image.open(io.BytesIO(rows[0]["image"].tobytes()))
    assert img.size == (5, 6)


def test_columns_list_and_one_file_of_a_list():
    data = ds.MindDataset(
        [str(DATA / "ms_mixed.mindrecord1")], columns_list=["name", "label"], shuffle=False
    )
    assert data.get_col_names() == ["name", "label"]
    rows = _rows(data)
    assert [str(r["name"]) for r in rows] == [w["name"]["str"] for w in EXPECTED[3:]]
    with pytest.raises(ValueError, match="columns_list names \\['nope'\\]"):
        ds.MindDataset(str(DATA / "ms_mixed.mindrecord0"), columns_list=["nope"])


def test_sharding_and_padding_as_mindspore():
    # MindSpore interleaves rows over shards and wraps to even them (checked against
    # MindSpore 2.10 with an 11-row file: shard 2 of 3 got rows 2, 5, 8 and then 0).
    labels = [w["label"]["values"] for w in EXPECTED]
    path = str(DATA / "ms_mixed.mindrecord0")
    for shard in range(4):
        got = _rows(ds.MindDataset(path, shuffle=False, num_shards=4, shard_id=shard))
        want = [labels[(shard + 4 * k) % 6] for k in range(2)]
        assert [int(r["label"]) for r in got] == want
    padded = {"label": -1, "name": "pad"}
    got = [
        _rows(
            ds.MindDataset(
                path,
                columns_list=["label", "name"],
                shuffle=False,
                num_shards=4,
                shard_id=s,
                padded_sample=padded,
                num_padded=2,
            )
        )
        for s in range(4)
    ]
    assert [int(r["label"]) for r in got[3]] == [labels[3], -1]
    assert str(got[3][1]["name"]) == "pad" and got[3][1]["label"].dtype == np.int32
    with pytest.raises(RuntimeError, match="not divisible"):
        ds.MindDataset(
            path, ["label", "name"], num_shards=4, shard_id=0, padded_sample=padded, num_padded=1
        )
    with pytest.raises(RuntimeError, match="requires columns_list"):
        ds.MindDataset(path, num_shards=2, shard_id=0, padded_sample=padded, num_padded=0)


def test_shuffle_is_a_seeded_permutation_and_workers_keep_order():
    path = str(DATA / "ms_mixed.mindrecord0")
    ds.config.set_seed(5)
    a = [int(r["label"]) for r in _rows(ds.MindDataset(path, shuffle=True))]
    ds.config.set_seed(5)
    b = [int(r["label"]) for r in _rows(ds.MindDataset(path, shuffle=True))]
    assert a == b and sorted(a) == sorted(w["label"]["values"] for w in EXPECTED)
    one = _rows(ds.MindDataset(path, shuffle=False))
    two = _rows(ds.MindDataset(path, shuffle=False, num_parallel_workers=2))
    for x, y in zip(one, two):
        assert x["image"].tobytes() == y["image"].tobytes()


def test_shuffle_modes_files_and_infile():
    path = str(DATA / "ms_mixed.mindrecord0")  # two files of 3 rows
    labels = [w["label"]["values"] for w in EXPECTED]
    seen_files, seen_rows = set(), set()
    for seed in range(8):
        ds.config.set_seed(seed)
        files = [int(r["label"]) for r in _rows(ds.MindDataset(path, shuffle=ds.Shuffle.FILES))]
        assert files in (labels, labels[3:] + labels[:3])  # whole files, in some order
        seen_files.add(tuple(files))
        infile = [int(r["label"]) for r in _rows(ds.MindDataset(path, shuffle=ds.Shuffle.INFILE))]
        assert sorted(infile[:3]) == sorted(labels[:3]) and sorted(infile[3:]) == sorted(labels[3:])
        seen_rows.add(tuple(infile))
    assert len(seen_files) == 2 and len(seen_rows) == 7  # seeds 0-7: 7 distinct in-file orders


def test_mind_page_as_mindspore():
    page = MindPage(str(DATA / "ms_mixed.mindrecord0"))
    assert page.candidate_fields == ["label", "name"]
    page.category_field = "label"
    # MindSpore 2.10 on this file (by hand): names ordered as text, "-1" before "-2"
    want = [("-1", 0), ("-2", 1), ("0", 2), ("1", 3), ("2", 4), ("3", 5)]
    info = json.loads(page.read_category_info())
    assert [(c["name"], c["id"]) for c in info["categories"]] == want
    assert info["key"] == "label_0" and all(c["count"] == 1 for c in info["categories"])
    rows = page.read_at_page_by_name("-1", 0, 3)
    assert [(r["name"], r["label"]) for r in rows] == [("row-1-ü", -1)]
    assert isinstance(rows[0]["image"], bytes) and isinstance(rows[0]["ids"], np.ndarray)
    page.category_field = "name"
    assert page.read_at_page_by_id(1, 0, 2)[0]["label"] == -1
    assert page.read_at_page_by_id(1, 1, 2) == []
    assert '"name":"row-0-ü"' in page.read_category_info()
    with pytest.raises(ValueError, match="not an index field"):
        page.category_field = "image"
    with pytest.raises(ValueError, match="category_id"):
        page.read_at_page_by_id(9, 0, 1)


# ---- writing -----------------------------------------------------------------------------

SCHEMA = {
    "img": {"type": "bytes"},
    "label": {"type": "int64"},
    "f": {"type": "float32"},
    "d": {"type": "float64"},
    "v": {"type": "int32", "shape": [-1]},
    "m": {"type": "float64", "shape": [2, 3]},
    "s": {"type": "string"},
}


def _row(i):
    return {
        "img": bytes([i % 251]) * (3000 * (i % 7)),
        "label": i - 5,
        "f": i / 4,
        "d": i / 7,
        "v": np.array([i, -300, 70000, -(2**31)][: 1 + i % 4], np.int32),
        "m": np.arange(6.0).reshape(2, 3) * i,
        "s": "é" * i,
    }


def _write(path, rows, shards=1, schema=SCHEMA, index=("label", "s")):
    writer = FileWriter(str(path), shard_num=shards, overwrite=True)
    writer.set_header_size(1 << 14)
    writer.set_page_size(1 << 15)
    writer.add_schema(schema, "test")
    if index:
        writer.add_index(list(index))
    writer.write_raw_data(rows)
    writer.commit()


def test_round_trip_shards_pages_and_compression(tmp_path):
    rows = [_row(i) for i in range(40)]  # ~360 KB of blobs: many 32 KB pages
    _write(tmp_path / "x.mindrecord", rows, shards=3)
    assert sorted(os.listdir(tmp_path)) == sorted(
        f"x.mindrecord{k}{ext}" for k in range(3) for ext in ("", ".db")
    )
    got = _rows(ds.MindDataset(str(tmp_path / "x.mindrecord1"), shuffle=False))
    assert len(got) == 40
    for g, want in zip(got, rows):  # contiguous blocks per shard: file order is row order
        assert g["img"].tobytes() == want["img"]
        assert g["label"].dtype == np.int64 and int(g["label"]) == want["label"]
        assert g["f"].dtype == np.float32 and float(g["f"]) == want["f"]
        assert g["d"].dtype == np.float64 and float(g["d"]) == want["d"]
        assert g["v"].dtype == np.int32
        np.testing.assert_array_equal(g["v"], want["v"])
        np.testing.assert_array_equal(g["m"], want["m"])
        assert str(g["s"]) == want["s"]
    reader = FileReader(str(tmp_path / "x.mindrecord0"), columns=["label"])
    assert [int(r["label"]) for r in reader.get_next()] == [r["label"] for r in rows]
    with sqlite3.connect(tmp_path / "x.mindrecord0.db") as conn:
        cols = [c[1] for c in conn.execute("PRAGMA table_info(INDEXES)")]
    assert cols[8:] == ["INC_0", "label_0", "INC_1", "s_0"]


def _writable(key, value):
    """A value as read back, in a type MindSpore's FileWriter takes (it skips a row with a
    0-d array for a scalar field): bytes, str, a NumPy scalar of the field's dtype, arrays."""
    if key == "image":
        return value.tobytes()
    if key == "name":
        return str(value)
    return value[()] if value.ndim == 0 else value


def test_fixture_rows_written_here_read_the_same(tmp_path):
    rows = _rows(ds.MindDataset(str(DATA / "ms_mixed.mindrecord0"), shuffle=False))
    schema = json.loads((DATA / "ms_mixed.mindrecord0").read_bytes()[8:].split(b"\0")[0])
    fields = schema["schema"][0]["schema"]
    plain = [{k: _writable(k, v) for k, v in r.items()} for r in rows]
    _write(tmp_path / "again.mindrecord", plain, schema=fields, index=None)
    again = _rows(ds.MindDataset(str(tmp_path / "again.mindrecord"), shuffle=False))
    for row, want in zip(again, EXPECTED):
        _check(row, want)


def test_open_for_append_to_mindspore_files(tmp_path):
    import shutil

    for name in os.listdir(DATA):
        if name.startswith("ms_mixed.mindrecord"):
            shutil.copy(DATA / name, tmp_path / name)
    first = str(tmp_path / "ms_mixed.mindrecord0")
    before = _rows(ds.MindDataset(first, shuffle=False))
    writer = FileWriter.open_for_append(first)
    row = {k: _writable(k, v) for k, v in before[0].items()}
    row["label"] = np.int32(99)
    writer.write_raw_data([row, dict(row, label=np.int32(100))])
    writer.commit()
    after = _rows(ds.MindDataset(first, shuffle=False))
    assert len(after) == len(before) + 2
    # one new row per shard; each shard keeps its old rows first
    labels = [int(r["label"]) for r in after]
    old = [int(r["label"]) for r in before]
    assert labels == old[:3] + [99] + old[3:] + [100]
    assert after[3]["image"].tobytes() == before[0]["image"].tobytes()
    with sqlite3.connect(tmp_path / "ms_mixed.mindrecord1.db") as conn:
        assert conn.execute("SELECT COUNT(*) FROM INDEXES").fetchone()[0] == 4


def test_writer_errors(tmp_path):
    path = str(tmp_path / "w.mindrecord")
    with pytest.raises(ValueError, match="field 'x'"):
        FileWriter(path).add_schema({"x": {"type": "complex"}})
    with pytest.raises(ValueError, match="shape"):
        FileWriter(path).add_schema({"x": {"type": "string", "shape": [2]}})
    writer = FileWriter(path)
    writer.add_schema({"a": {"type": "int32"}, "b": {"type": "bytes"}})
    with pytest.raises(ValueError, match="Failed to set field b since it's not primitive"):
        writer.add_index(["b"])
    with pytest.raises(ValueError, match="row 0, field 'a'.*2147483648 does not fit int32"):
        writer.write_raw_data([{"a": 2**31, "b": b""}])
    # rows MindSpore skips (test_ms_errors.py): all skipped -> MindSpore's RuntimeError
    with pytest.raises(RuntimeError, match="There is no valid data"):
        writer.write_raw_data([{"a": "1", "b": b""}, {"a": 2}])
    writer.write_raw_data([{"a": 1, "b": b"x"}])
    writer.commit()
    with pytest.raises(RuntimeError, match="mindrecord files already exist"):
        FileWriter(path)
    small = FileWriter(str(tmp_path / "p.mindrecord"))
    small.set_page_size(1 << 15)
    small.add_schema({"b": {"type": "bytes"}})
    with pytest.raises(ValueError, match="more than the page size"):
        small.write_raw_data([{"b": bytes(1 << 16)}])
    with pytest.raises(ValueError, match="header_size"):
        FileWriter(str(tmp_path / "q.mindrecord")).set_header_size(100)


# ---- bad files ---------------------------------------------------------------------------


def _copy(tmp_path, data=None, db=True):
    path = tmp_path / "bad.mindrecord"
    path.write_bytes(data if data is not None else (DATA / "ms_mixed.mindrecord0").read_bytes())
    if db:
        shutil.copy(DATA / "ms_mixed.mindrecord0.db", tmp_path / "bad.mindrecord.db")
    return path


def _read_all(path):
    try:
        return _rows(ds.MindDataset([str(path)], shuffle=False))
    except MindRecordError as exc:
        assert str(path) in str(exc)
        return exc
    except ds.PipelineError as exc:  # a row that fails to decode: the cause names the file
        assert isinstance(exc.__cause__, MindRecordError) and str(path) in str(exc.__cause__)
        return exc


def test_truncations_are_errors_naming_the_file(tmp_path):
    data = (DATA / "ms_mixed.mindrecord0").read_bytes()
    for n in [0, 5, 8, 100, 1 << 14, (1 << 14) + 10, len(data) - 1]:
        got = _read_all(_copy(tmp_path, data[:n]))
        assert isinstance(got, Exception), n


def test_header_damage_and_hostile_sizes(tmp_path):
    data = (DATA / "ms_mixed.mindrecord0").read_bytes()
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + n])

    def with_header(h):
        text = json.dumps(h).encode()
        return len(text).to_bytes(8, "little") + text + data[8 + len(text) :]

    cases = {
        "huge header length": (2**62).to_bytes(8, "little") + data[8:],
        "not json": data[:8] + b"X" + data[9:],
        "huge page size": with_header({**header, "page_size": 2**60}),
        "page past the end": with_header(
            {**header, "page": [{**p, "page_size": 1 << 15} for p in header["page"]]}
        ),
        "no schema": with_header({k: v for k, v in header.items() if k != "schema"}),
        "bad type": with_header(
            {**header, "schema": [{**header["schema"][0], "schema": {"x": {"type": "blob"}}}]}
        ),
        "pickle": b"\x80\x04\x95" + bytes(40) + b".",
    }
    import tracemalloc

    for why, payload in cases.items():
        tracemalloc.start()
        try:
            got = _read_all(_copy(tmp_path, payload))
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert isinstance(got, MindRecordError), why
        assert peak < 4 * len(data) + (1 << 20), (why, peak)  # nothing sized by the header


def test_index_damage(tmp_path):
    path = _copy(tmp_path)
    os.unlink(str(path) + ".db")
    with pytest.raises(MindRecordError, match="bad.mindrecord.db' is missing"):
        ds.MindDataset([str(path)])
    Path(str(path) + ".db").write_bytes(b"not a database at all" * 100)
    assert isinstance(_read_all(path), MindRecordError)
    for sql in (
        "UPDATE INDEXES SET PAGE_OFFSET_BLOB_END = 999999 WHERE ROW_ID = 1",
        "UPDATE INDEXES SET PAGE_ID_RAW = 0 WHERE ROW_ID = 0",
        "DELETE FROM INDEXES WHERE ROW_ID = 2",
        "UPDATE INDEXES SET PAGE_OFFSET_BLOB = PAGE_OFFSET_BLOB + 1 WHERE ROW_ID = 1",
    ):
        path = _copy(tmp_path)
        with sqlite3.connect(str(path) + ".db") as conn:
            conn.execute(sql)
        assert isinstance(_read_all(path), Exception), sql


def test_bit_flips_in_pages_never_escape_as_other_errors(tmp_path):
    # Pages carry no checksum (as in MindSpore): a flip inside image bytes goes unnoticed,
    # a flip in a length or a raw record is an error naming the file, never another one.
    data = bytearray((DATA / "ms_mixed.mindrecord0").read_bytes())
    start = 1 << 14
    errors = 0
    for i in range(start, len(data), 241):
        flipped = bytearray(data)
        flipped[i] ^= 0x10
        got = _read_all(_copy(tmp_path, bytes(flipped)))
        errors += isinstance(got, Exception)
    assert errors > 0


# ---- converters --------------------------------------------------------------------------


def test_cifar10_binaries_to_mindrecord(tmp_path):
    rng = np.random.default_rng(0)
    src = tmp_path / "cifar"
    src.mkdir()
    labels = {}
    for name in [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]:
        recs = rng.integers(0, 256, (2, 3073), dtype=np.uint8)
        recs[:, 0] %= 10
        labels[name] = recs[:, 0].tolist()
        recs.tofile(src / name)
    assert Cifar10ToMR(str(src), str(tmp_path / "c.mindrecord")).transform(["label"]) == 0
    train = _rows(ds.MindDataset(str(tmp_path / "c.mindrecord"), shuffle=False))
    test = _rows(ds.MindDataset(str(tmp_path / "c.mindrecord_test"), shuffle=False))
    assert [int(r["label"]) for r in train] == sum(
        (labels[f"data_batch_{i}.bin"] for i in range(1, 6)), []
    )
    assert [int(r["id"]) for r in test] == [0, 1] and len(train) == 10
    from PIL import Image

    assert Image.open(io.BytesIO(test[0]["data"].tobytes())).size == (32, 32)
    (src / "test_batch.bin").write_bytes(b"\0" * 100)
    with pytest.raises(ValueError, match="not whole 3073-byte"):
        Cifar10ToMR(str(src), str(tmp_path / "d.mindrecord")).transform()


def test_cifar100_binaries_to_mindrecord(tmp_path):
    rng = np.random.default_rng(1)
    src = tmp_path / "cifar100"
    src.mkdir()
    for name in ("train.bin", "test.bin"):
        recs = rng.integers(0, 256, (3, 3074), dtype=np.uint8)
        recs[:, 0] %= 20
        recs[:, 1] %= 100
        recs.tofile(src / name)
    Cifar100ToMR(str(src), str(tmp_path / "c.mindrecord")).transform()
    rows = _rows(ds.MindDataset(str(tmp_path / "c.mindrecord_test"), shuffle=False))
    want = np.fromfile(src / "test.bin", np.uint8).reshape(3, 3074)
    assert [int(r["coarse_label"]) for r in rows] == want[:, 0].tolist()
    assert [int(r["fine_label"]) for r in rows] == want[:, 1].tolist()
    with pytest.raises(ValueError, match="binary files are missing"):
        Cifar100ToMR(str(tmp_path), str(tmp_path / "x.mindrecord")).transform()


def test_mnist_to_mindrecord(tmp_path):
    import gzip
    import shutil

    src = DATA / "sources" / "fashion"  # MNIST-format idx files
    for name in os.listdir(src):  # MindSpore's converter reads the .gz files
        with open(src / name, "rb") as f, gzip.open(tmp_path / f"{name}.gz", "wb") as g:
            shutil.copyfileobj(f, g)
    MnistToMR(str(tmp_path), str(tmp_path / "m")).transform()
    train = _rows(ds.MindDataset(str(tmp_path / "m_train.mindrecord"), shuffle=False))
    assert [int(r["label"]) for r in train] == [3, 1, 4]
    from PIL import Image

    assert Image.open(io.BytesIO(train[0]["data"].tobytes())).size == (28, 28)
    assert len(_rows(ds.MindDataset(str(tmp_path / "m_test.mindrecord"), shuffle=False))) == 2


def test_image_folder_and_csv_to_mindrecord(tmp_path):
    for cls in ("cat", "dog"):
        (tmp_path / "img" / cls).mkdir(parents=True)
        for k in range(2):
            (tmp_path / "img" / cls / f"{k}.bin").write_bytes(f"{cls}{k}".encode())
    (tmp_path / "map.txt").write_text("cat 0\ndog 1\n")
    ImageNetToMR(
        str(tmp_path / "map.txt"), str(tmp_path / "img"), str(tmp_path / "i.mr")
    ).transform()
    rows = _rows(ds.MindDataset(str(tmp_path / "i.mr"), shuffle=False))
    assert [(int(r["label"]), r["image"].tobytes(), str(r["file_name"])) for r in rows] == [
        (0, b"cat0", "0.bin"),
        (0, b"cat1", "1.bin"),
        (1, b"dog0", "0.bin"),
        (1, b"dog1", "1.bin"),
    ]
    with open(tmp_path / "t.csv", "w", newline="") as f:
        csv.writer(f).writerows([["id", "x", "name"], [1, 0.5, "a"], [2, 1.5, "b"]])
    CsvToMR(str(tmp_path / "t.csv"), str(tmp_path / "t.mr")).transform()
    rows = _rows(ds.MindDataset(str(tmp_path / "t.mr"), shuffle=False))
    assert rows[1]["id"].dtype == np.int64 and int(rows[1]["id"]) == 2
    assert rows[1]["x"].dtype == np.float64 and float(rows[1]["x"]) == 1.5
    assert str(rows[1]["name"]) == "b"
