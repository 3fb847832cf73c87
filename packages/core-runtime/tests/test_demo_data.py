"""``sporeling.core.demo_data``: the embedded MNIST sample and the idx reader's checks."""

import gzip

import numpy as np
import pytest

from sporeling.core.demo_data import load_mnist, read_idx


def _idx(magic: int, arr: np.ndarray) -> bytes:
    header = magic.to_bytes(4, "big") + np.array(arr.shape, ">i4").tobytes()
    return header + arr.astype(np.uint8).tobytes()


def _write(folder, prefix, images, labels, gz=True):
    for name, magic, arr in (
        (f"{prefix}-images-idx3-ubyte", 2051, images),
        (f"{prefix}-labels-idx1-ubyte", 2049, labels),
    ):
        data = _idx(magic, arr)
        if gz:
            (folder / (name + ".gz")).write_bytes(gzip.compress(data, mtime=0))
        else:
            (folder / name).write_bytes(data)


def test_embedded_sample():
    x, y = load_mnist()
    assert x.shape == (8000, 28, 28) and x.dtype == np.uint8 and y.shape == (8000,)
    assert np.bincount(y).tolist() == [795, 906, 788, 811, 799, 702, 798, 853, 753, 795]
    assert abs(x.mean() / 255 - 0.1307) < 0.002  # MNIST's pixel mean
    xv, yv = load_mnist(kind="val")
    assert xv.shape == (1000, 28, 28) and np.bincount(yv, minlength=10).sum() == 1000
    assert not any((xv[:50, None] == x[None, :500]).all(axis=(2, 3)).any(axis=1))


def test_folder_gz_and_plain(tmp_path):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (5, 28, 28))
    labels = np.array([3, 1, 4, 1, 5])
    _write(tmp_path, "train", images, labels, gz=True)
    _write(tmp_path, "t10k", images[:2], labels[:2], gz=False)
    x, y = load_mnist(tmp_path)
    np.testing.assert_array_equal(x, images)
    np.testing.assert_array_equal(y, labels)
    xt, yt = load_mnist(str(tmp_path), kind="test")
    assert xt.shape == (2, 28, 28) and yt.tolist() == [3, 1]


def test_bad_files(tmp_path):
    images = np.zeros((3, 28, 28))
    _write(tmp_path, "train", images, np.array([0, 1, 2]))
    labels = tmp_path / "train-labels-idx1-ubyte.gz"
    labels.write_bytes(gzip.compress(_idx(2049, np.array([0, 1]))))
    with pytest.raises(ValueError, match="holds 3 images but .* holds 2 labels"):
        load_mnist(tmp_path)
    labels.write_bytes(gzip.compress(_idx(2049, np.array([0, 1, 12]))))
    with pytest.raises(ValueError, match="label 12 outside 0..9"):
        load_mnist(tmp_path)
    labels.write_bytes(gzip.compress(_idx(2051, np.zeros((3, 28, 28))))[:-3])
    with pytest.raises(ValueError, match="train-labels-idx1-ubyte.gz: corrupt gzip"):
        load_mnist(tmp_path)
    labels.write_bytes(gzip.compress(_idx(2051, np.zeros((3, 28, 28)))))
    magic = r"labels-idx1-ubyte.gz: magic number 2051 .*, expected 2049"
    with pytest.raises(ValueError, match=magic):
        load_mnist(tmp_path)
    with pytest.raises(FileNotFoundError, match="no t10k-images-idx3-ubyte"):
        load_mnist(tmp_path, kind="test")
    with pytest.raises(FileNotFoundError, match="not a directory"):
        load_mnist(tmp_path / "nope")
    with pytest.raises(ValueError, match="'kind' expected one of"):
        load_mnist(kind="training")
    with pytest.raises(ValueError, match="no 'test' split"):
        load_mnist(kind="test")


def test_read_idx_sizes():
    data = _idx(2049, np.arange(4))
    assert read_idx(data, "f", 2049).tolist() == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="f: truncated: header says shape \\(4,\\)"):
        read_idx(data[:-1], "f", 2049)
    with pytest.raises(ValueError, match="f: has trailing bytes"):
        read_idx(data + b"\0", "f", 2049)
    with pytest.raises(ValueError, match="f: truncated header"):
        read_idx(data[:6], "f", 2049)
    with pytest.raises(ValueError, match="shorter than a header"):
        read_idx(b"\0\0", "f", 2049)


def test_wrong_image_size(tmp_path):
    _write(tmp_path, "train", np.zeros((2, 32, 32)), np.array([0, 1]), gz=False)
    with pytest.raises(ValueError, match=r"images of shape \(32, 32\), expected \(28, 28\)"):
        load_mnist(tmp_path)
