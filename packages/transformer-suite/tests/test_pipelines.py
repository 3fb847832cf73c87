"""The sporeling.data input pipelines on a tiny generated MNIST folder (gzip'd idx files)."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from sporeling.transformer.pipelines import MNIST_MEAN, MNIST_STD, mnist_datasets


def write_idx_gz(path, array):
    head = bytes([0, 0, 8, array.ndim]) + b"".join(n.to_bytes(4, "big") for n in array.shape)
    path.write_bytes(gzip.compress(head + array.astype(np.uint8).tobytes()))


@pytest.fixture
def mnist(tmp_path):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (30, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, 30).astype(np.uint8)
    write_idx_gz(tmp_path / "train-images-idx3-ubyte.gz", images)
    write_idx_gz(tmp_path / "train-labels-idx1-ubyte.gz", labels)
    return tmp_path, images, labels


def epoch(data):
    rows = list(data.create_tuple_iterator(num_epochs=1, output_numpy=True))
    return np.concatenate([r[0] for r in rows]), np.concatenate([r[1] for r in rows])


def reference(images):
    return ((images.astype(np.float64) / 255.0 - MNIST_MEAN) / MNIST_STD)[:, None]


def test_mnist_holdout_split_normalised_batched(mnist):
    root, images, labels = mnist
    train, test = mnist_datasets(root, 4, holdout=10, seed=1, eval_batch_size=3)
    assert train.get_dataset_size() == 5 and test.get_dataset_size() == 4  # 20 // 4, ceil(10 / 3)
    x, y = epoch(test)  # the last 10 training images, in order
    assert x.shape == (10, 1, 28, 28) and x.dtype == np.float32 and y.dtype == np.int32
    np.testing.assert_allclose(x, reference(images[20:]), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(y, labels[20:])
    # training rows: the first 20 images, shuffled, every image once per epoch with its label
    x1, y1 = epoch(train)
    order = [int(np.argmin(np.abs(reference(images[:20]) - row).sum(axis=(1, 2, 3)))) for row in x1]
    assert sorted(order) == list(range(20)) and order != list(range(20))
    np.testing.assert_allclose(x1, reference(images[order]), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(y1, labels[order])
    x2, _ = epoch(train)
    assert not np.array_equal(x1, x2)  # reshuffled the next epoch
    again, _ = mnist_datasets(root, 4, holdout=10, seed=1)
    np.testing.assert_array_equal(epoch(again)[0], x1)  # seeded


def test_mnist_t10k_limit_and_errors(mnist):
    root, images, labels = mnist
    write_idx_gz(root / "t10k-images-idx3-ubyte.gz", images[:6])
    write_idx_gz(root / "t10k-labels-idx1-ubyte.gz", labels[:6])
    train, test = mnist_datasets(root, 4, limit=8)
    assert train.get_dataset_size() == 2
    x, y = epoch(test)
    np.testing.assert_allclose(x, reference(images[:6]), rtol=1e-5, atol=1e-5)
    assert sorted(epoch(train)[1].tolist()) == sorted(labels[:8].tolist())
    with pytest.raises(FileNotFoundError, match="data.path"):
        mnist_datasets(root / "missing", 4)
    (root / "t10k-images-idx3-ubyte.gz").unlink()
    (root / "t10k-labels-idx1-ubyte.gz").unlink()
    with pytest.raises(ValueError, match="data.holdout: 30 leaves no training images"):
        mnist_datasets(root, 4, holdout=30)
