"""Preprocessing: ids, scaling, OOV, malformed lines, record round trip, parallel, resume."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
from conftest import PLANTED, criteo_lines

from sporeling.recommender.preprocess import preprocess, split_is_test
from sporeling.recommender.records import CriteoRecordDataset, RecordStore


def reference(lines, min_freq, test_ratio, seed):
    """An independent, plain-Python encoding of the good lines (train and test rows)."""
    good = []
    for i, text in enumerate(lines, start=1):
        if i in PLANTED:
            continue
        f = text.split("\t")
        good.append((i, float(f[0]), f[1:14], f[14:]))
    nums = np.array([g[0] for g in good])
    test = split_is_test(0, nums, seed, test_ratio)
    train = [g for g, t in zip(good, test) if not t]
    lo = [min(int(g[2][k]) for g in train if g[2][k] != "") for k in range(13)]
    hi = [max(int(g[2][k]) for g in train if g[2][k] != "") for k in range(13)]
    base, dicts = 13, []
    for j in range(26):
        counts = Counter(g[3][j] for g in train)
        keep = sorted(
            (v for v, c in counts.items() if c >= min_freq),
            key=lambda v: -1 if v == "" else int(v, 16),
        )
        dicts.append((base, {v: base + 1 + n for n, v in enumerate(keep)}))
        base += 1 + len(keep)

    def encode(g):
        ids, vals = list(range(13)), []
        for k in range(13):
            s = g[2][k]
            span = hi[k] - lo[k] if hi[k] > lo[k] else 1
            vals.append(0.0 if s == "" else (int(s) - lo[k]) / span)
        for j in range(26):
            oov, d = dicts[j]
            ids.append(d.get(g[3][j], oov))
            vals.append(1.0)
        return ids, vals, g[1]

    rows = {
        "train": [encode(g) for g, t in zip(good, test) if not t],
        "test": [encode(g) for g, t in zip(good, test) if t],
    }
    return rows, base, dicts


@pytest.mark.parametrize("min_freq", [1, 3])
def test_ids_scaling_oov_and_round_trip(tmp_path, criteo_file, min_freq):
    lines = criteo_file.read_text().splitlines()
    out = tmp_path / "rec"
    rep = preprocess([criteo_file], out, min_freq=min_freq, line_per_sample=5, test_ratio=0.2)
    rows, vocab, dicts = reference(lines, min_freq, 0.2, 2022)
    assert rep.vocab_size == vocab
    assert rep.lines == 120 and rep.malformed == len(PLANTED)
    assert rep.train_rows == len(rows["train"]) and rep.test_rows == len(rows["test"])
    if min_freq == 3:  # some values are rarer than that: they must land on their field's OOV id
        assert any(len(d) < 7 for _, d in dicts)
    for split in ("train", "test"):
        store = RecordStore(out, split)
        n = len(store) * 5
        assert n == len(rows[split]) // 5 * 5
        ids, vals, label = store.rows(0, n)
        want_ids = np.array([r[0] for r in rows[split][:n]])
        want_vals = np.array([r[1] for r in rows[split][:n]])
        assert ids.dtype == np.int32 and vals.dtype == np.float32 and label.dtype == np.float32
        np.testing.assert_array_equal(ids, want_ids)
        np.testing.assert_allclose(vals, want_vals, rtol=1e-6, atol=1e-7)
        np.testing.assert_array_equal(label[:, 0], [r[2] for r in rows[split][:n]])
        assert ids.min() >= 0 and ids.max() < vocab


def test_malformed_lines_reported_with_line_numbers(tmp_path, criteo_file):
    rep = preprocess([criteo_file], tmp_path / "rec", line_per_sample=4)
    assert rep.malformed_by_reason == dict(Counter(k for k, _ in PLANTED.values()))
    reported = {int(e.split(":")[1]): e for e in rep.malformed_examples}
    assert sorted(reported) == sorted(PLANTED)
    assert "I4" in reported[13] and "'12x'" in reported[13]
    assert "C3" in reported[21] and "zz00ff11" in reported[21]
    assert "got 3" in reported[7] and "got 1" in reported[44]
    manifest = json.loads((tmp_path / "rec" / "manifest.json").read_text())
    assert manifest["report"]["malformed"] == len(PLANTED)


def test_parallel_chunks_equal_serial(tmp_path, criteo_file):
    a = preprocess([criteo_file], tmp_path / "a", line_per_sample=4)
    b = preprocess([criteo_file], tmp_path / "b", line_per_sample=4, chunk_lines=17, workers=2)
    assert b.chunks == 8 and a.chunks == 1
    assert a.malformed_examples == b.malformed_examples
    for split in ("train", "test"):
        for x, y in zip(RecordStore(tmp_path / "a", split).rows(0, 10**6),
                        RecordStore(tmp_path / "b", split).rows(0, 10**6)):  # fmt: skip
            np.testing.assert_array_equal(x, y)


def test_resume_redoes_only_unfinished_chunks(tmp_path, criteo_file):
    out = tmp_path / "rec"
    first = preprocess([criteo_file], out, line_per_sample=4, chunk_lines=30)
    before = RecordStore(out, "train").rows(0, 10**6)
    work = out / ".work"
    (work / "written-00002.done").unlink()  # as if killed while writing chunk 2
    (work / "stats-00003.json").unlink()
    (out / "manifest.json").unlink()
    ids = np.load(out / "train" / "feat_ids.npy", mmap_mode="r+")
    ids[...] = -7  # whatever a killed run left behind is overwritten
    ids.flush()
    del ids
    (work / "written-00000.done").unlink()
    (work / "written-00001.done").unlink()
    (work / "written-00003.done").unlink()
    again = preprocess([criteo_file], out, line_per_sample=4, chunk_lines=30)
    assert again.chunks == first.chunks == 4 and again.chunks_reused == 0
    for x, y in zip(before, RecordStore(out, "train").rows(0, 10**6)):
        np.testing.assert_array_equal(x, y)
    (work / "written-00002.done").unlink()
    third = preprocess([criteo_file], out, line_per_sample=4, chunk_lines=30)
    assert third.chunks_reused == 3
    with pytest.raises(ValueError, match="another configuration"):
        preprocess([criteo_file], out, line_per_sample=4, chunk_lines=30, min_freq=5)


def test_bad_arguments(tmp_path, criteo_file):
    with pytest.raises(ValueError, match="'min_freq' expected >= 1, got 0"):
        preprocess([criteo_file], tmp_path / "x", min_freq=0)
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        preprocess([tmp_path / "nope.txt"], tmp_path / "y")
    with pytest.raises(ValueError, match="'test_ratio'"):
        preprocess([criteo_file], tmp_path / "z", test_ratio=1.5)


def test_dataset_shuffles_and_shards(tmp_path):
    path = tmp_path / "s.txt"
    lines = [ln for i, ln in enumerate(criteo_lines(200, seed=3), 1) if i not in PLANTED]
    path.write_text("\n".join(lines) + "\n")
    preprocess([path], tmp_path / "rec", line_per_sample=5, test_ratio=0.0)
    store = RecordStore(tmp_path / "rec", "train")
    key = [tuple(store[i][0][0]) for i in range(len(store))]
    seen = []
    for shard in range(2):
        data = CriteoRecordDataset(tmp_path / "rec", "train", shuffle=True, num_shards=2,
                                   shard_id=shard)  # fmt: skip
        got = [tuple(r[0][0]) for r in data.create_tuple_iterator(num_epochs=1, output_numpy=True)]
        seen.append(got)
    # each rank reads its own half (MindSpore pads the shorter shard by wrapping around)
    assert abs(len(seen[0]) - len(seen[1])) <= 1 and len(seen[0]) >= len(key) // 2
    assert not set(seen[0]) & set(seen[1]) or len(seen[0]) + len(seen[1]) > len(key)
    assert set(seen[0]) | set(seen[1]) == set(key)
    plain = CriteoRecordDataset(tmp_path / "rec", "train", shuffle=False)
    order = [tuple(r[0][0]) for r in plain.create_tuple_iterator(num_epochs=1, output_numpy=True)]
    assert order == key
    shuffled = CriteoRecordDataset(tmp_path / "rec", "train", shuffle=True)
    order2 = [
        tuple(r[0][0]) for r in shuffled.create_tuple_iterator(num_epochs=1, output_numpy=True)
    ]
    assert sorted(order2) == sorted(key) and order2 != key
