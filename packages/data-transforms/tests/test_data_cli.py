"""The `sporeling-data` command on small data and specs written in tmp_path."""

from __future__ import annotations

import json
import struct
import sys

import numpy as np
import pytest
from PIL import Image

from sporeling.data import __version__
from sporeling.data._cli.grid import PAD, displayable
from sporeling.data.cli import ERROR, MISSING_EXTRA, SPEC_ERROR, SUCCESS, USAGE_ERROR, main


@pytest.fixture
def image_folder(tmp_path):
    """2 classes x 3 JPEGs of different sizes."""
    rng = np.random.default_rng(0)
    root = tmp_path / "imgs"
    for c in ("cat", "dog"):
        (root / c).mkdir(parents=True)
        for i in range(3):
            pixels = rng.integers(0, 256, (20 + 2 * i, 30 + i, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(root / c / f"{i}.jpg", quality=90)
    return root


def write_spec(tmp_path, text, name="spec.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


BATCH_SPEC = """
seed: 5
source:
  ImageFolderDataset: {dataset_dir: imgs, decode: true, shuffle: false}
pipeline:
  - batch:
      batch_size: 2
      drop_remainder: true
      input_columns: [image]
      per_batch_map: {BatchRandomResizedCrop: {size: [12, 16], interpolation: Inter.BILINEAR}}
  - map: {operations: [{BatchRandomHorizontalFlip: [0.5]}], input_columns: [image]}
bench: {batches: 4, warmup: 1}
"""


# ------------------------------------------------------------------------------ top level


def test_version_help_and_usage(capsys):
    assert main(["--version"]) == SUCCESS
    assert __version__ in capsys.readouterr().out
    assert main(["--help"]) == SUCCESS
    assert "inspect" in capsys.readouterr().out
    assert main([]) == USAGE_ERROR
    assert "COMMAND" in capsys.readouterr().err
    assert main(["frobnicate"]) == USAGE_ERROR
    assert main(["inspect"]) == USAGE_ERROR  # missing PATH_OR_SPEC
    assert "PATH_OR_SPEC" in capsys.readouterr().err


# -------------------------------------------------------------------------------- inspect


def test_inspect_image_folder(image_folder, capsys):
    assert main(["inspect", str(image_folder), "--samples", "2"]) == SUCCESS
    out = capsys.readouterr().out
    assert "ImageFolderDataset" in out
    assert "size: 6 rows" in out
    assert "image" in out and "label" in out
    assert out.count("sample ") == 2


def test_inspect_spec_json_output(image_folder, tmp_path, capsys):
    spec = write_spec(tmp_path, BATCH_SPEC)
    assert main(["inspect", str(spec), "--json", "--samples", "1"]) == SUCCESS
    data = json.loads(capsys.readouterr().out)
    assert data["size"] == 3
    cols = {c["name"]: c for c in data["columns"]}
    assert cols["image"]["shape"] == [[2, 12, 16, 3]] and cols["image"]["dtype"] == "uint8"
    assert cols["label"]["shape"] == [[2]]
    assert len(data["samples"]) == 1


def test_inspect_npy_csv_and_mnist(tmp_path, capsys):
    np.save(tmp_path / "x.npy", np.arange(12, dtype=np.float32).reshape(4, 3))
    assert main(["inspect", str(tmp_path / "x.npy")]) == SUCCESS
    out = capsys.readouterr().out
    assert "NumpySlicesDataset" in out and "size: 4 rows" in out and "float32" in out
    (tmp_path / "t.csv").write_text("a,b\n1,x\n2,y\n3,z\n")
    assert main(["inspect", str(tmp_path / "t.csv"), "--samples", "1"]) == SUCCESS
    out = capsys.readouterr().out
    assert "CSVDataset" in out and "size: 3 rows" in out
    mnist = tmp_path / "mnist"
    mnist.mkdir()
    images = np.arange(5 * 28 * 28, dtype=np.uint32).astype(np.uint8)
    header = struct.pack(">IIII", 2051, 5, 28, 28)
    (mnist / "train-images-idx3-ubyte").write_bytes(header + images.tobytes())
    labels = struct.pack(">II", 2049, 5) + bytes([3, 1, 4, 1, 5])
    (mnist / "train-labels-idx1-ubyte").write_bytes(labels)
    assert main(["inspect", str(mnist), "--json"]) == SUCCESS
    data = json.loads(capsys.readouterr().out)
    assert data["source"].startswith("MnistDataset") and data["size"] == 5
    assert {c["name"] for c in data["columns"]} == {"image", "label"}


def test_inspect_errors(tmp_path, capsys):
    assert main(["inspect", str(tmp_path / "missing")]) == ERROR
    assert "does not exist" in capsys.readouterr().err
    (tmp_path / "x.bin").write_bytes(b"\0")
    assert main(["inspect", str(tmp_path / "x.bin")]) == ERROR
    assert "cannot tell the format" in capsys.readouterr().err


# ---------------------------------------------------------------------------------- bench


def test_bench_yaml_spec(image_folder, tmp_path, capsys):
    spec = write_spec(tmp_path, BATCH_SPEC)
    assert main(["bench", str(spec)]) == SUCCESS
    out = capsys.readouterr().out
    assert "4 batches (8 rows)" in out and "rows/s" in out
    assert main(["bench", str(spec), "--batches", "5", "--warmup", "0", "--json"]) == SUCCESS
    data = json.loads(capsys.readouterr().out)
    assert data["batches"] == 5 and data["rows"] == 10 and data["rows_per_s"] > 0
    assert data["columns"]["image"] == [[2, 12, 16, 3], "uint8"]


def test_bench_json_spec_without_pyyaml(image_folder, tmp_path, capsys, monkeypatch):
    spec = {
        "source": {"ImageFolderDataset": {"dataset_dir": "imgs", "decode": True}},
        "pipeline": [
            {"map": {"operations": [{"TypeCast": ["float32"]}], "input_columns": "label"}}
        ],
    }
    path = write_spec(tmp_path, json.dumps(spec), "spec.json")
    monkeypatch.setitem(sys.modules, "yaml", None)  # PyYAML not installed
    assert main(["bench", str(path), "--batches", "3", "--json"]) == SUCCESS
    data = json.loads(capsys.readouterr().out)
    assert data["rows"] == 3 and data["columns"]["label"][1] == "float32"
    yaml_spec = write_spec(tmp_path, BATCH_SPEC)
    assert main(["bench", str(yaml_spec)]) == MISSING_EXTRA
    err = capsys.readouterr().err
    assert "PyYAML" in err and "sporeling-data-transforms[cli]" in err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("source: {NoSuchDataset: {}}", "unknown source 'NoSuchDataset'"),
        (
            "source: {ImageFolderDataset: {dataset_dir: imgs}}\n"
            "pipeline: [{map: {operations: [NoSuchOp]}}]",
            "unknown operation 'NoSuchOp'",
        ),
        (
            "source: {ImageFolderDataset: {dataset_dir: imgs}}\npipeline: [{explode: {}}]",
            "unknown step 'explode'",
        ),
        (
            "source: {ImageFolderDataset: {dataset_dir: imgs}}\n"
            "pipeline: [{batch: {batch_size: 2, per_batch_map: {BatchRandomHorizontalFlip: [2]}}}]",
            "prob must be in",
        ),
        ("[1, 2]", "must be a mapping"),
        ("source: [unclosed", "not valid YAML"),
        ("sauce: {}", "unknown key(s) ['sauce']"),
    ],
)
def test_bench_spec_errors(image_folder, tmp_path, capsys, text, message):
    spec = write_spec(tmp_path, text)
    assert main(["bench", str(spec)]) == SPEC_ERROR
    assert message in capsys.readouterr().err


def test_bench_needs_a_spec(image_folder, capsys):
    assert main(["bench", str(image_folder)]) == ERROR
    assert "expected a spec file" in capsys.readouterr().err


# ----------------------------------------------------------------------------------- grid


def test_grid_png_size(image_folder, tmp_path, capsys):
    spec = write_spec(tmp_path, BATCH_SPEC)
    out = tmp_path / "grid.png"
    assert main(["grid", str(spec), "--out", str(out), "--rows", "2", "--cols", "3"]) == SUCCESS
    assert "wrote" in capsys.readouterr().out
    with Image.open(out) as im:
        assert im.format == "PNG"
        assert im.size == (3 * 16 + 4 * PAD, 2 * 12 + 3 * PAD)


def test_grid_mixed_sizes_use_cells(image_folder, tmp_path):
    spec = write_spec(
        tmp_path, "source: {ImageFolderDataset: {dataset_dir: imgs, decode: true, shuffle: false}}"
    )
    out = tmp_path / "g.png"
    assert (
        main(["grid", str(spec), "--out", str(out), "--rows", "1", "--cols", "4", "--cell", "40"])
        == 0
    )
    with Image.open(out) as im:
        assert im.size == (4 * 40 + 5 * PAD, 40 + 2 * PAD)


def test_grid_bad_column(image_folder, tmp_path, capsys):
    spec = write_spec(tmp_path, BATCH_SPEC)
    out = tmp_path / "g.png"
    assert main(["grid", str(spec), "--out", str(out), "--column", "label"]) == ERROR
    assert "not images" in capsys.readouterr().err
    assert main(["grid", str(spec), "--out", str(out), "--column", "nope"]) == ERROR
    assert not out.exists()


def test_displayable_conversions():
    chw = np.linspace(-2, 2, 3 * 4 * 5, dtype=np.float32).reshape(3, 4, 5)  # normalized CHW
    out = displayable(chw, "image")
    assert out.shape == (4, 5, 3) and out.dtype == np.uint8
    assert out.min() == 0 and out.max() == 255
    unit = displayable(np.full((4, 5, 3), 0.5, np.float32), "image")
    assert (unit == 128).all()
    gray = displayable(np.zeros((1, 4, 5), np.uint8), "image")
    assert gray.shape == (4, 5)
