"""Fashion-MNIST/KMNIST/EMNIST/QMNIST, VOC, COCO and Manifest sources against MindSpore 2.10
reading the same small folders (tests/data/sources, ms_sources.json from
make_ms_fixtures.py sources), plus bad annotations."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import sporeling.data as ds

DATA = Path(__file__).parent / "data"
SRC = DATA / "sources"
MS = json.loads((DATA / "ms_sources.json").read_text())


def _check(dataset, want):
    assert dataset.get_col_names() == want["columns"]
    rows = list(dataset.create_dict_iterator(output_numpy=True, num_epochs=1))
    assert len(rows) == len(want["rows"])
    for row, expected in zip(rows, want["rows"]):
        for key, spec in expected.items():
            got = row[key]
            assert str(got.dtype) == spec["dtype"], (key, got.dtype)
            assert list(got.shape) == spec["shape"], (key, got.shape)
            np.testing.assert_array_equal(got, np.array(spec["values"], spec["dtype"]), key)


def test_mnist_family():
    _check(
        ds.FashionMnistDataset(str(SRC / "fashion"), "train", shuffle=False), MS["fashion_train"]
    )
    # usage='all': MindSpore reads t10k-* before train-* (sorted file names); so do we
    _check(ds.FashionMnistDataset(str(SRC / "fashion"), shuffle=False), MS["fashion_all"])
    _check(ds.MnistDataset(str(SRC / "fashion"), "all", shuffle=False), MS["fashion_all"])
    _check(ds.KMnistDataset(str(SRC / "fashion"), "train", shuffle=False), MS["fashion_train"])
    _check(
        ds.EMnistDataset(str(SRC / "emnist"), "letters", "test", shuffle=False), MS["emnist_test"]
    )
    _check(ds.QMnistDataset(str(SRC / "qmnist"), "train", shuffle=False), MS["qmnist_train"])
    nocompat = ds.QMnistDataset(str(SRC / "qmnist"), "test", compat=False, shuffle=False)
    _check(nocompat, MS["qmnist_nocompat"])
    with pytest.raises(ValueError, match="argument 'name'"):
        ds.EMnistDataset(str(SRC / "emnist"), "nope")
    with pytest.raises(ValueError, match="xnist-images"):
        ds.QMnistDataset(str(SRC / "qmnist"), "nist")


def test_voc():
    voc = str(SRC / "voc")
    _check(ds.VOCDataset(voc, "Detection", "train", shuffle=False), MS["voc_detection"])
    indexed = ds.VOCDataset(
        voc, "Detection", "train", {"cat": 5, "dog": 6, "person": 7}, shuffle=False
    )
    _check(indexed, MS["voc_detection_indexed"])
    assert indexed.get_class_indexing() == {"cat": 5, "dog": 6, "person": 7}
    _check(ds.VOCDataset(voc, "Segmentation", "train", shuffle=False), MS["voc_segmentation"])
    decoded = next(
        ds.VOCDataset(voc, "Segmentation", decode=True, shuffle=False).create_tuple_iterator(
            output_numpy=True, num_epochs=1
        )
    )
    assert decoded[0].shape == (6, 5, 3)
    with pytest.raises(ValueError, match="classes \\['person'\\] are not in class_indexing"):
        ds.VOCDataset(voc, "Detection", class_indexing={"cat": 0, "dog": 1})


def test_voc_bad_annotation(tmp_path):
    import shutil

    shutil.copytree(SRC / "voc", tmp_path / "voc")
    (tmp_path / "voc" / "Annotations" / "img1.xml").write_text("<annotation><object>")
    with pytest.raises(ValueError, match="img1.xml"):
        ds.VOCDataset(str(tmp_path / "voc"), "Detection")
    (tmp_path / "voc" / "Annotations" / "img1.xml").write_text(
        "<annotation><object><name>a</name><bndbox><xmin>0</xmin><ymin>1</ymin><xmax>2</xmax>"
        "<ymax>3</ymax></bndbox></object></annotation>"
    )
    with pytest.raises(ValueError, match="invalid bndbox"):
        ds.VOCDataset(str(tmp_path / "voc"), "Detection")


def test_coco():
    coco, ann = str(SRC / "coco"), str(SRC / "coco" / "annotations.json")
    for task in ("Detection", "Stuff", "Keypoint"):
        _check(ds.CocoDataset(coco, ann, task, shuffle=False), MS[f"coco_{task.lower()}"])
    panoptic = ds.CocoDataset(coco, str(SRC / "coco" / "panoptic.json"), "Panoptic", shuffle=False)
    _check(panoptic, MS["coco_panoptic"])
    with pytest.raises(ValueError, match="argument 'task'"):
        ds.CocoDataset(coco, ann, "Caption")
    with pytest.raises(ValueError, match="cannot read COCO annotations"):
        ds.CocoDataset(coco, str(SRC / "voc" / "ImageSets" / "Main" / "train.txt"))


def test_manifest(tmp_path):
    # the manifest names absolute paths where the fixture script wrote it: rewrite them
    lines = (SRC / "manifest" / "manifest.json").read_text().splitlines()
    fixed = []
    for line in lines:
        item = json.loads(line)
        item["source"] = str(SRC / "manifest" / Path(item["source"]).name)
        fixed.append(json.dumps(item))
    path = tmp_path / "manifest.json"
    path.write_text("\n".join(fixed) + "\n")
    train = ds.ManifestDataset(str(path), shuffle=False)
    _check(train, MS["manifest_train"])
    assert train.get_class_indexing() == MS["manifest_class_indexing"]
    _check(ds.ManifestDataset(str(path), "eval", shuffle=False), MS["manifest_eval"])
    path.write_text("{not json\n")
    with pytest.raises(ValueError, match="line 1 is not a manifest entry"):
        ds.ManifestDataset(str(path))
