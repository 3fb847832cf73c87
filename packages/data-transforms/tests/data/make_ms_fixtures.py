"""Make the MindRecord (and text) test fixtures with real MindSpore; read Sporeling's back.

Run with a Python that has MindSpore (never a Sporeling dependency)::

    uv venv -p 3.11 /tmp/msvenv && VIRTUAL_ENV=/tmp/msvenv uv pip install mindspore
    /tmp/msvenv/bin/python make_ms_fixtures.py mindrecord \\
        --sporeling-python .nox/tests-package-data-transforms/bin/python

``mindrecord`` writes, next to itself, ``ms_mixed.mindrecord{0,1}`` (+ ``.db``): two shards
of 6 rows with image (PNG bytes), int, float, array and string columns, written by
MindSpore's FileWriter, and ``ms_mixed.json``: every row as MindSpore's MindDataset reads
it. With ``--sporeling-python`` it also has Sporeling's FileWriter write files (2 shards,
several pages, compressed int arrays) and reads them here with MindDataset, comparing every
value; the result is printed and kept in ``ms_mindrecord_readback.json``.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def _png(seed: int) -> bytes:
    from PIL import Image

    rng = np.random.default_rng(seed)
    out = io.BytesIO()
    Image.fromarray(rng.integers(0, 256, (6, 5, 3), dtype=np.uint8)).save(out, format="PNG")
    return out.getvalue()


def _plain(value):
    if value.dtype.kind == "S":  # MindSpore 2.x returns a bytes field as a 1-element S array
        return {"bytes_hex": value.reshape(-1)[0].hex() if value.size else ""}
    if value.dtype.kind == "U":
        return {"str": str(value)}
    return {"dtype": str(value.dtype), "shape": list(value.shape), "values": value.tolist()}


def make_mindrecord():
    import mindspore.dataset as ds
    from mindspore.mindrecord import FileWriter

    for name in os.listdir(HERE):
        if name.startswith("ms_mixed.mindrecord"):
            os.unlink(os.path.join(HERE, name))
    path = os.path.join(HERE, "ms_mixed.mindrecord")
    writer = FileWriter(path, shard_num=2, overwrite=True)
    writer.set_header_size(1 << 14)
    writer.set_page_size(1 << 15)
    writer.add_schema(
        {
            "image": {"type": "bytes"},
            "label": {"type": "int32"},
            "score": {"type": "float64"},
            "weight": {"type": "float32"},
            "big": {"type": "int64"},
            "embedding": {"type": "float32", "shape": [4]},
            "ids": {"type": "int64", "shape": [-1]},
            "name": {"type": "string"},
        },
        "mixed columns",
    )
    writer.add_index(["label", "name"])
    rows = []
    for i in range(6):
        rows.append(
            {
                "image": _png(i),
                "label": i - 2,
                "score": i / 3,
                "weight": 0.25 * i,
                "big": 2**40 + i,
                "embedding": np.linspace(-1, 1, 4, dtype=np.float32) * i,
                "ids": np.array([i, -i * 1000, 2**33 + i][: 1 + i % 3], np.int64),
                "name": f"row-{i}-ü",
            }
        )
    writer.write_raw_data(rows)
    writer.commit()
    data = ds.MindDataset(path + "0", shuffle=False)
    got = [
        {k: _plain(v) for k, v in r.items()}
        for r in data.create_dict_iterator(output_numpy=True, num_epochs=1)
    ]
    import mindspore

    with open(os.path.join(HERE, "ms_mixed.json"), "w") as f:
        json.dump({"mindspore_version": mindspore.__version__, "rows": got}, f, indent=1)
    for name in os.listdir(HERE):
        if name.startswith("ms_mixed.mindrecord"):
            os.chmod(os.path.join(HERE, name), 0o644)
    print(f"wrote ms_mixed.mindrecord0/1 (+ .db) and ms_mixed.json ({len(got)} rows)")


_SPORELING_WRITER = r"""
import sys, numpy as np
from sporeling.data.mindrecord import FileWriter
w = FileWriter(sys.argv[1] + "/sp.mindrecord", shard_num=2, overwrite=True)
w.set_header_size(1 << 14)
w.set_page_size(1 << 15)
w.add_schema({"img": {"type": "bytes"}, "label": {"type": "int64"}, "f": {"type": "float32"},
              "d": {"type": "float64"}, "v": {"type": "int32", "shape": [-1]},
              "m": {"type": "float64", "shape": [2, 3]}, "s": {"type": "string"}})
w.add_index(["label", "s"])
for part in range(2):
    w.write_raw_data([{"img": bytes([i % 251]) * (3000 * (i % 7)), "label": 10 * part + i - 5,
                       "f": i / 4, "d": i / 7,
                       "v": np.array([i, -300, 70000, -2**31][: 1 + i % 4], np.int32),
                       "m": np.arange(6.0).reshape(2, 3) * i, "s": "x" * i}
                      for i in range(23)])
w.commit()
"""


def _expected_sporeling_rows():
    rows = []
    for part in range(2):
        for i in range(23):
            rows.append(
                {
                    "img": bytes([i % 251]) * (3000 * (i % 7)),
                    "label": 10 * part + i - 5,
                    "f": np.float32(i / 4),
                    "d": i / 7,
                    "v": np.array([i, -300, 70000, -(2**31)][: 1 + i % 4], np.int32),
                    "m": np.arange(6.0).reshape(2, 3) * i,
                    "s": "x" * i,
                }
            )
    return rows


def read_sporeling_mindrecord(python):
    import mindspore
    import mindspore.dataset as ds

    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([python, "-c", _SPORELING_WRITER, tmp], check=True)
        data = ds.MindDataset(os.path.join(tmp, "sp.mindrecord0"), shuffle=False)
        got = list(data.create_dict_iterator(output_numpy=True, num_epochs=1))
    # FileWriter splits each write_raw_data call over the shards in contiguous blocks;
    # MindDataset reads shard 0 then shard 1.
    want = _expected_sporeling_rows()
    order = [i for part in range(2) for i in range(23 * part, 23 * part + 12)]
    order += [i for part in range(2) for i in range(23 * part + 12, 23 * part + 23)]
    want = [want[i] for i in order]
    bad = []
    for n, (g, w) in enumerate(zip(got, want)):
        for key, value in w.items():
            have = g[key]
            if key == "img":
                ok = (have.reshape(-1)[0] if have.size else b"") == value
            elif key == "s":
                ok = str(have) == value
            else:
                ok = (
                    np.array_equal(have, np.asarray(value))
                    and have.dtype == np.asarray(value).dtype
                )
            if not ok:
                bad.append(f"row {n} field {key}: {have!r:.60} != {value!r:.60}")
    report = {
        "mindspore_version": mindspore.__version__,
        "rows_read_by_mindspore": len(got),
        "rows_written_by_sporeling": len(want),
        "mismatches": bad,
    }
    print(json.dumps(report, indent=1))
    with open(os.path.join(HERE, "ms_mindrecord_readback.json"), "w") as f:
        json.dump(report, f, indent=1)


def _tok(out):
    if isinstance(out, (tuple, list)):
        return [np.asarray(o).tolist() for o in out]
    return np.asarray(out).tolist()


def make_text():
    """Outputs of MindSpore's text transforms on tiny_shakespeare.txt -> ms_text.json.

    tiny_shakespeare.txt: the first 300 non-empty lines of Tiny Shakespeare
    (karpathy/char-rnn, public domain).
    """
    import mindspore
    import mindspore.dataset as ds
    import mindspore.dataset.text as text
    from mindspore import dtype as mstype

    src = os.path.join(HERE, "tiny_shakespeare.txt")
    with open(src, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f]
    out = {"mindspore_version": mindspore.__version__}
    out["whitespace"] = [_tok(text.WhitespaceTokenizer(True)(x)) for x in lines]
    out["unicode_char"] = [_tok(text.UnicodeCharTokenizer(True)(x)) for x in lines[:40]]
    regex = text.RegexTokenizer(r"\s+|[,.!?;:]", r"[,.!?;:]", with_offsets=True)
    out["regex"] = [_tok(regex(x)) for x in lines]
    basic = text.BasicTokenizer(lower_case=True, with_offsets=True)
    out["basic_lower"] = [_tok(basic(x)) for x in lines]
    basic_ws = text.BasicTokenizer(lower_case=False, keep_whitespace=True)
    out["basic_keep_ws"] = [_tok(basic_ws(x)) for x in lines[:60]]

    data = ds.TextFileDataset(src, shuffle=False)
    data = data.map(text.WhitespaceTokenizer(), input_columns=["text"])
    vocab = text.Vocab.from_dataset(
        data, columns=["text"], top_k=150, special_tokens=["<pad>", "<unk>"], special_first=True
    )
    out["vocab_top150"] = vocab.vocab()
    data = ds.TextFileDataset(src, shuffle=False)
    data = data.map(text.WhitespaceTokenizer(), input_columns=["text"])
    vocab_freq = text.Vocab.from_dataset(
        data, freq_range=(3, 10), special_tokens=["<unk>"], special_first=False
    )
    out["vocab_freq_3_10"] = vocab_freq.vocab()
    lookup = text.Lookup(vocab, unknown_token="<unk>")
    white = text.WhitespaceTokenizer()
    out["lookup"] = [_tok(lookup(white(x))) for x in lines]

    # A WordPiece vocabulary: the 250 most frequent lower-case words, every character and
    # '##' + every character, plus BERT's special tokens.
    counts = {}
    for line in lines:
        for w in basic(line)[0]:
            counts[str(w)] = counts.get(str(w), 0) + 1
    words = sorted(counts, key=lambda w: (-counts[w], w))[:250]
    chars = sorted({c for line in lines for c in line.lower() if not c.isspace()})
    pieces = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]
    pieces += [c for c in chars if c not in pieces] + ["##" + c for c in chars]
    pieces += [p for p in ("##ing", "##ed", "##er") if p not in pieces]
    out["wordpiece_vocab"] = pieces
    wp_vocab = text.Vocab.from_list(pieces)
    bert = text.BertTokenizer(wp_vocab, lower_case=True, with_offsets=True)
    out["bert_lower"] = [_tok(bert(x)) for x in lines]
    bert_cased = text.BertTokenizer(wp_vocab, lower_case=False, unknown_token="[UNK]")
    out["bert_cased"] = [_tok(bert_cased(x)) for x in lines[:80]]
    wordpiece = text.WordpieceTokenizer(wp_vocab, max_bytes_per_token=6, with_offsets=True)
    out["wordpiece_max6"] = [_tok(wordpiece(basic(x)[0])) for x in lines[:80]]

    toks = [white(x) for x in lines[:50]]
    out["ngram_2"] = [_tok(text.Ngram(2, ("<s>", 1), ("</s>", 1), "_")(t)) for t in toks]
    out["ngram_3_plain"] = [_tok(text.Ngram(3)(t)) if len(t) >= 3 else None for t in toks]
    out["ngram_14"] = [_tok(text.Ngram([1, 4], ("_", 2), ("_", 2))(t)) for t in toks[:10]]
    out["sliding_window_3"] = [_tok(text.SlidingWindow(3)(np.asarray(lookup(t)))) for t in toks]
    out["truncate_4"] = [_tok(text.Truncate(4)(t)) for t in toks]
    pair = text.TruncateSequencePair(7)
    out["truncate_pair_7"] = [_tok(pair(toks[i], toks[i + 1])) for i in range(20)]
    numbers = ["12", "-7", "0", "2147483647", "3"]
    out["to_number_int32"] = _tok(text.ToNumber(mstype.int32)(np.array(numbers)))
    out["to_number_float32"] = _tok(text.ToNumber(mstype.float32)(np.array(["1.5", "-2e3"])))
    with open(os.path.join(HERE, "ms_text.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, separators=(",", ":"))
    print(f"wrote ms_text.json ({len(lines)} lines)")


# ---- TFRecord: an encoder written from the TFRecord / tf.train.Example specs --------------


def _crc32c(data: bytes) -> int:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    c = 0xFFFFFFFF
    for b in data:
        c = table[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def _masked(c: int) -> int:
    return ((((c >> 15) | (c << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def _varint(v: int) -> bytes:
    v = v + (1 << 64) if v < 0 else v
    out = bytearray()
    while True:
        b, v = v & 0x7F, v >> 7
        out.append(b | 0x80 if v else b)
        if not v:
            return bytes(out)


def _ld(num: int, payload: bytes) -> bytes:
    return _varint(num << 3 | 2) + _varint(len(payload)) + payload


def _feature(kind: str, vals: list) -> bytes:
    import struct

    if kind == "bytes":
        return _ld(1, b"".join(_ld(1, v) for v in vals))
    if kind == "float":
        return _ld(2, _ld(1, struct.pack(f"<{len(vals)}f", *vals)))
    return _ld(3, _ld(1, b"".join(_varint(v) for v in vals)))


def tf_example(features: dict) -> bytes:
    entries = b"".join(
        _ld(1, _ld(1, k.encode()) + _ld(2, _feature(*v))) for k, v in features.items()
    )
    return _ld(1, entries)


def tf_record(data: bytes) -> bytes:
    import struct

    n = struct.pack("<Q", len(data))
    return (
        n
        + struct.pack("<I", _masked(_crc32c(n)))
        + data
        + struct.pack("<I", _masked(_crc32c(data)))
    )


def make_tfrecord():
    """ms_example.tfrecord (+ .gz): 6 Examples; ms_tfrecord.json: MindSpore's reading."""
    import gzip

    import mindspore
    import mindspore.dataset as ds

    assert _crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value
    records = []
    for i in range(6):
        features = {
            "image": ("bytes", [_png(100 + i)]),
            "label": ("int64", [i - 2]),
            "floats": ("float", [i / 2, -1.0, 3.25]),
            "ids": ("int64", [2**40 + i, -i][: 1 + i % 2]),
            "name": ("bytes", [f"row-{i}".encode()]),
        }
        records.append(tf_record(tf_example(features)))
    path = os.path.join(HERE, "ms_example.tfrecord")
    with open(path, "wb") as f:
        f.write(b"".join(records))
    with open(path + ".gz", "wb") as f:
        f.write(gzip.compress(b"".join(records), mtime=0))
    schema_path = os.path.join(HERE, "ms_example_schema.json")
    with open(schema_path, "w") as f:
        json.dump(
            {
                "datasetType": "TF",
                "numRows": 4,
                "columns": {
                    "label": {"type": "int32", "rank": 1, "shape": [1]},
                    "floats": {"type": "float64", "rank": 2, "shape": [1, 3]},
                    "name": {"type": "string", "rank": 1},
                    "image": {"type": "uint8", "rank": 1},
                },
            },
            f,
            indent=1,
        )

    def read(**kwargs):
        data = ds.TFRecordDataset(shuffle=False, **kwargs)
        rows = [
            {k: _plain(v) for k, v in r.items()}
            for r in data.create_dict_iterator(output_numpy=True, num_epochs=1)
        ]
        return {"columns": data.get_col_names(), "rows": rows}

    out = {
        "mindspore_version": mindspore.__version__,
        "plain": read(dataset_files=path),
        "schema": read(dataset_files=path, schema=schema_path),
        "columns_list": read(dataset_files=path, columns_list=["ids", "label"]),
        "gzip": read(dataset_files=path + ".gz", compression_type="GZIP"),
    }
    with open(os.path.join(HERE, "ms_tfrecord.json"), "w") as f:
        json.dump(out, f, indent=1)
    print("wrote ms_example.tfrecord(.gz), ms_example_schema.json, ms_tfrecord.json")


# ---- small dataset folders: MNIST family, VOC, COCO, Manifest ------------------------------


def _idx(path: str, arr: np.ndarray, code: int) -> None:
    with open(path, "wb") as f:
        f.write(bytes([0, 0, code, arr.ndim]))
        f.write(np.array(arr.shape, ">u4").tobytes())
        f.write(arr.astype({0x08: ">u1", 0x0C: ">i4"}[code]).tobytes())


def _write_sources(root: str) -> None:
    import shutil

    if os.path.isdir(root):
        shutil.rmtree(root)
    rng = np.random.default_rng(7)
    images = rng.integers(0, 256, (5, 28, 28), dtype=np.uint8)
    labels = np.array([3, 1, 4, 1, 5], np.uint8)
    for sub in ("fashion", "emnist", "qmnist"):
        os.makedirs(os.path.join(root, sub))
    for part, rows in (("train", slice(0, 3)), ("t10k", slice(3, 5))):
        _idx(os.path.join(root, "fashion", f"{part}-images-idx3-ubyte"), images[rows], 0x08)
        _idx(os.path.join(root, "fashion", f"{part}-labels-idx1-ubyte"), labels[rows], 0x08)
    for part, rows in (("train", slice(0, 3)), ("test", slice(3, 5))):
        base = os.path.join(root, "emnist", f"emnist-letters-{part}")
        _idx(base + "-images-idx3-ubyte", images[rows], 0x08)
        _idx(base + "-labels-idx1-ubyte", labels[rows], 0x08)
        base = os.path.join(root, "qmnist", f"qmnist-{part}")
        _idx(base + "-images-idx3-ubyte", images[rows], 0x08)
        table = np.stack([labels[rows].astype(np.int32) + k * 10 for k in range(8)], axis=1)
        _idx(base + "-labels-idx2-int", table, 0x0C)
    # VOC
    voc = os.path.join(root, "voc")
    for d in ("JPEGImages", "SegmentationClass", "Annotations", "ImageSets/Main",
              "ImageSets/Segmentation"):  # fmt: skip
        os.makedirs(os.path.join(voc, d))
    objects = {
        "img0": [("dog", 1, 2, 5, 6, 0, 1), ("cat", 1, 1, 3, 4, 1, 0)],
        "img1": [("person", 2, 2, 4, 5, 0, 0)],
    }
    for i, (name, objs) in enumerate(objects.items()):
        with open(os.path.join(voc, "JPEGImages", name + ".jpg"), "wb") as f:
            f.write(_png(200 + i))
        with open(os.path.join(voc, "SegmentationClass", name + ".png"), "wb") as f:
            f.write(_png(300 + i))
        xml = "".join(
            f"<object><name>{o[0]}</name><difficult>{o[5]}</difficult>"
            f"<truncated>{o[6]}</truncated><bndbox><xmin>{o[1]}</xmin><ymin>{o[2]}</ymin>"
            f"<xmax>{o[3]}</xmax><ymax>{o[4]}</ymax></bndbox></object>"
            for o in objs
        )
        with open(os.path.join(voc, "Annotations", name + ".xml"), "w") as f:
            f.write(f"<annotation><filename>{name}.jpg</filename>{xml}</annotation>")
    for sub in ("Main", "Segmentation"):
        with open(os.path.join(voc, "ImageSets", sub, "train.txt"), "w") as f:
            f.write("img0\nimg1\n")
    # COCO
    coco = os.path.join(root, "coco")
    os.makedirs(coco)
    for i in range(2):
        with open(os.path.join(coco, f"c{i}.jpg"), "wb") as f:
            f.write(_png(400 + i))
    doc = {
        "images": [{"id": 7, "file_name": "c0.jpg"}, {"id": 3, "file_name": "c1.jpg"}],
        "annotations": [
            {"id": 1, "image_id": 7, "bbox": [1, 2, 3, 4], "category_id": 2, "iscrowd": 0,
             "segmentation": [[1, 1, 2, 2, 3, 1]], "area": 5, "num_keypoints": 2,
             "keypoints": list(range(51))},
            {"id": 2, "image_id": 7, "bbox": [0, 0, 1, 1], "category_id": 1, "iscrowd": 0,
             "segmentation": [[0, 0, 1, 1, 1, 0, 0.5, 0.5]], "area": 1, "num_keypoints": 1,
             "keypoints": [1] * 51},
            {"id": 3, "image_id": 3, "bbox": [2, 2, 2, 2], "category_id": 2, "iscrowd": 0,
             "segmentation": [[2, 2, 3, 3, 2, 3]], "area": 4, "num_keypoints": 0,
             "keypoints": [0] * 51},
        ],
        "categories": [{"id": 1, "name": "cat"}, {"id": 2, "name": "dog"}],
    }  # fmt: skip
    with open(os.path.join(coco, "annotations.json"), "w") as f:
        json.dump(doc, f)
    panoptic = {
        "images": doc["images"],
        "annotations": [
            {"image_id": 7, "file_name": "c0.png", "segments_info": [
                {"id": 1, "category_id": 2, "iscrowd": 0, "bbox": [1, 2, 3, 4], "area": 12}]},
            {"image_id": 3, "file_name": "c1.png", "segments_info": [
                {"id": 2, "category_id": 1, "iscrowd": 1, "bbox": [0, 0, 2, 2], "area": 4},
                {"id": 3, "category_id": 2, "iscrowd": 0, "bbox": [1, 1, 1, 1], "area": 1}]},
        ],
        "categories": [{"id": 1, "name": "cat", "isthing": 1},
                       {"id": 2, "name": "dog", "isthing": 1}],
    }  # fmt: skip
    with open(os.path.join(coco, "panoptic.json"), "w") as f:
        json.dump(panoptic, f)
    # Manifest
    man = os.path.join(root, "manifest")
    os.makedirs(man)
    lines = []
    for i, (usage, names) in enumerate(
        [("train", ["dog"]), ("train", ["cat", "dog"]), ("eval", ["bird"]), ("train", ["ant"])]
    ):
        with open(os.path.join(man, f"m{i}.jpg"), "wb") as f:
            f.write(_png(500 + i))
        ann = [{"type": "modelarts/image_classification", "name": n} for n in names]
        lines.append(json.dumps({"source": os.path.join(man, f"m{i}.jpg"), "usage": usage,
                                 "annotation": ann}))  # fmt: skip
    with open(os.path.join(man, "manifest.json"), "w") as f:
        f.write("\n".join(lines) + "\n")


def make_sources():
    """sources/: tiny dataset folders; ms_sources.json: MindSpore's rows of each."""
    import mindspore
    import mindspore.dataset as ds

    root = os.path.join(HERE, "sources")
    _write_sources(root)

    def read(data):
        rows = [
            {k: _plain(v) for k, v in r.items()}
            for r in data.create_dict_iterator(output_numpy=True, num_epochs=1)
        ]
        return {"columns": data.get_col_names(), "rows": rows}

    out = {"mindspore_version": mindspore.__version__}
    sub = lambda *p: os.path.join(root, *p)  # noqa: E731
    out["fashion_train"] = read(ds.FashionMnistDataset(sub("fashion"), "train", shuffle=False))
    out["fashion_all"] = read(ds.FashionMnistDataset(sub("fashion"), shuffle=False))
    out["emnist_test"] = read(ds.EMnistDataset(sub("emnist"), "letters", "test", shuffle=False))
    out["qmnist_train"] = read(ds.QMnistDataset(sub("qmnist"), "train", shuffle=False))
    out["qmnist_nocompat"] = read(
        ds.QMnistDataset(sub("qmnist"), "test", compat=False, shuffle=False)
    )
    out["voc_detection"] = read(ds.VOCDataset(sub("voc"), "Detection", "train", shuffle=False))
    out["voc_detection_indexed"] = read(
        ds.VOCDataset(
            sub("voc"), "Detection", "train", {"cat": 5, "dog": 6, "person": 7}, shuffle=False
        )
    )
    out["voc_segmentation"] = read(
        ds.VOCDataset(sub("voc"), "Segmentation", "train", shuffle=False)
    )
    ann = sub("coco", "annotations.json")
    for task in ("Detection", "Stuff", "Keypoint"):
        out[f"coco_{task.lower()}"] = read(ds.CocoDataset(sub("coco"), ann, task, shuffle=False))
    out["coco_panoptic"] = read(
        ds.CocoDataset(sub("coco"), sub("coco", "panoptic.json"), "Panoptic", shuffle=False)
    )
    man = ds.ManifestDataset(sub("manifest", "manifest.json"), shuffle=False)
    out["manifest_train"] = read(man)
    out["manifest_class_indexing"] = man.get_class_indexing()
    out["manifest_eval"] = read(
        ds.ManifestDataset(sub("manifest", "manifest.json"), "eval", shuffle=False)
    )
    with open(os.path.join(HERE, "ms_sources.json"), "w") as f:
        json.dump(out, f)
    print("wrote sources/ and ms_sources.json")


def make_vision():
    """ms_vision.npz: an image and MindSpore's Affine and Perspective outputs of it."""
    import mindspore.dataset.vision as v

    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (9, 12, 3), dtype=np.uint8)
    start, end = [[0, 0], [11, 0], [11, 8], [0, 8]], [[1, 1], [10, 0], [11, 7], [0, 8]]
    outs = {
        "input": img,
        "affine_all": v.Affine(15.0, [0.2, -0.1], 1.1, [5.0, 3.0])(img),
        "affine_rotate": v.Affine(90.0, [0.0, 0.0], 1.0, 0.0)(img),
        "affine_translate": v.Affine(0.0, [0.25, 0.0], 1.0, 0.0)(img),
        "affine_scale": v.Affine(0.0, [0.0, 0.0], 2.0, 0.0)(img),
        "affine_shear": v.Affine(0.0, [0.0, 0.0], 1.0, [10.0, 0.0])(img),
        "perspective_nearest": v.Perspective(start, end, v.Inter.NEAREST)(img),
        "perspective_bilinear": v.Perspective(start, end)(img),
    }
    np.savez_compressed(os.path.join(HERE, "ms_vision.npz"), **outs)
    print("wrote ms_vision.npz")


_SPORELING_TFRECORD_TO_MR = r"""
import sys
import numpy as np
from sporeling.data.mindrecord import FixedLenFeature, TFRecordToMR
features = {"image": FixedLenFeature([], "string"), "name": FixedLenFeature([], "string"),
            "label": FixedLenFeature([], np.int64), "floats": FixedLenFeature([3], "float32")}
TFRecordToMR(sys.argv[1], sys.argv[2], features, ["image"]).transform()
"""


def read_sporeling_tfrecord_to_mr(python):
    """Sporeling's TFRecordToMR converts ms_example.tfrecord; MindSpore reads the MindRecord
    file and compares it with its own reading of the TFRecord file -> ms_tfrecord_to_mr.json."""
    import mindspore
    import mindspore.dataset as ds

    source = os.path.join(HERE, "ms_example.tfrecord")
    tf_rows = list(
        ds.TFRecordDataset(source, shuffle=False).create_dict_iterator(output_numpy=True)
    )
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "tf.mindrecord")
        subprocess.run([python, "-c", _SPORELING_TFRECORD_TO_MR, source, out], check=True)
        data = ds.MindDataset(out, shuffle=False)
        got = list(data.create_dict_iterator(output_numpy=True, num_epochs=1))
        columns = sorted(data.get_col_names())
    bad = []
    for n, (g, t) in enumerate(zip(got, tf_rows)):
        checks = {
            "image": g["image"].reshape(-1)[0] == t["image"].tobytes(),
            "name": str(g["name"]) == t["name"].tobytes().decode(),
            "label": g["label"].dtype == np.int64 and int(g["label"]) == int(t["label"][0]),
            "floats": g["floats"].dtype == np.float32 and np.array_equal(g["floats"], t["floats"]),
        }
        bad += [f"row {n} field {k}" for k, ok in checks.items() if not ok]
    report = {
        "mindspore_version": mindspore.__version__,
        "columns": columns,
        "rows_read_by_mindspore": len(got),
        "tfrecord_rows": len(tf_rows),
        "mismatches": bad,
    }
    print(json.dumps(report, indent=1))
    with open(os.path.join(HERE, "ms_tfrecord_to_mr.json"), "w") as f:
        json.dump(report, f, indent=1)


def make_errors():
    """The exception class MindSpore raises for each case of ../ms_error_cases.py, and the
    rows its FileWriter writes out of ``skip_rows()`` -> ms_errors.json."""
    import importlib.util

    import mindspore.dataset as ds
    import mindspore.mindrecord as mr

    spec = importlib.util.spec_from_file_location(
        "ms_error_cases", os.path.join(HERE, "..", "ms_error_cases.py")
    )
    cases = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cases)
    out = {"mindspore": ds.__name__, "cases": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (fn, _) in cases.CASES.items():
            try:
                fn(ds, mr, tmp, HERE)
                got = {"class": None}
            except Exception as exc:  # noqa: BLE001 - recording what MindSpore raises
                message = " ".join(str(exc).split())
                got = {"class": type(exc).__name__, "message": message[:400]}
            out["cases"][name] = got
            print(name, got["class"])
        path = os.path.join(tmp, "skip.mindrecord")
        writer = mr.FileWriter(path, overwrite=True)
        writer.add_schema(cases.SKIP_SCHEMA, "skip")
        rows = cases.skip_rows()
        writer.write_raw_data(rows)
        writer.commit()
        read = ds.MindDataset(path, shuffle=False).create_dict_iterator(output_numpy=True)
        out["skip_rows"] = {
            "written_ids": [int(r["id"]) for r in read],
            "rows_left_in_list": [int(r["id"]) for r in rows],
        }
    import mindspore

    out["mindspore"] = mindspore.__version__
    with open(os.path.join(HERE, "ms_errors.json"), "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
    print("skip_rows:", out["skip_rows"])


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "what",
        choices=[
            "mindrecord",
            "text",
            "tfrecord",
            "sources",
            "vision",
            "errors",
            "tfrecord-to-mr",
            "all",
        ],
    )
    parser.add_argument("--sporeling-python", help="a Python with sporeling-data-transforms")
    args = parser.parse_args()
    if args.what in ("mindrecord", "all"):
        make_mindrecord()
        if args.sporeling_python:
            read_sporeling_mindrecord(args.sporeling_python)
    if args.what in ("text", "all"):
        make_text()
    if args.what in ("tfrecord", "all"):
        make_tfrecord()
    if args.what in ("sources", "all"):
        make_sources()
    if args.what in ("vision", "all"):
        make_vision()
    if args.what in ("errors", "all"):
        make_errors()
    if args.what in ("tfrecord-to-mr", "all") and args.sporeling_python:
        read_sporeling_tfrecord_to_mr(args.sporeling_python)
