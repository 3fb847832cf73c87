"""The sporeling.data input pipelines on a tiny generated MNIST folder (gzip'd idx files)."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from sporeling.transformer.pipelines import (
    MNIST_MEAN,
    MNIST_STD,
    GeneratedRows,
    TokenWindows,
    mnist_datasets,
    sampled_batches,
    tiled_batches,
)
from sporeling.transformer.tasks import EOS, reverse_digits_row


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


def epochs(data, n):
    it = data.create_tuple_iterator(num_epochs=n, output_numpy=True)
    return [[r[0] for r in it] for _ in range(n)]


def test_window_batches_random_fixed_and_sharded():
    ids = np.arange(100, dtype=np.int32) * 3
    src = TokenWindows(ids, 8)
    assert len(src) == 92  # every start nanoGPT's randint(len - block) can draw
    np.testing.assert_array_equal(src[91][0], ids[91:100])
    train = sampled_batches(src, ["input_ids"], 4, 5, seed=7)
    assert train.get_dataset_size() == 5
    e1, e2 = epochs(train, 2)
    assert e1[0].shape == (4, 9) and e1[0].dtype == np.int32
    for batch in e1:  # whole windows of consecutive tokens
        np.testing.assert_array_equal(np.diff(batch, axis=1), 3)
    assert not np.array_equal(np.stack(e1), np.stack(e2))  # fresh draws every epoch
    np.testing.assert_array_equal(
        np.stack(epochs(sampled_batches(src, ["input_ids"], 4, 5, 7), 1)[0]), np.stack(e1)
    )
    v1, v2 = epochs(sampled_batches(src, ["input_ids"], 4, 3, seed=1, fixed=True), 2)
    np.testing.assert_array_equal(np.stack(v1), np.stack(v2))  # validation: the same windows
    starts = np.random.default_rng(1).integers(0, 92, 12)
    np.testing.assert_array_equal(np.concatenate(v1)[:, 0], ids[starts])
    # data parallel: each shard keeps its half of every batch one process draws, over two
    # epochs, so the shards put together are the single-process batches in the same order
    one = np.stack([b for e in epochs(sampled_batches(src, ["input_ids"], 4, 5, 3), 2) for b in e])
    halves = [
        np.stack(
            [
                b
                for e in epochs(sampled_batches(src, ["input_ids"], 4, 5, 3, False, 2, r), 2)
                for b in e
            ]
        )
        for r in (0, 1)
    ]
    assert halves[0].shape == (10, 2, 9)
    np.testing.assert_array_equal(np.concatenate(halves, axis=1), one)
    with pytest.raises(ValueError, match="batch_size 4 must split into num_shards 3"):
        sampled_batches(src, ["input_ids"], 4, 5, 3, False, 3, 0)
    with pytest.raises(ValueError, match="too few for windows of 9"):
        TokenWindows(ids[:8], 8)


def test_tiled_windows_cover_the_split_once():
    ids = np.arange(100, dtype=np.int32)
    tiles = TokenWindows(ids, 8, stride=8)
    assert len(tiles) == 12  # starts 0, 8, ..., 88: the last window ends at token 96
    np.testing.assert_array_equal(tiles[11][0], ids[88:97])
    batches = [b[0] for b in tiled_batches(ids, 8, 5).create_tuple_iterator(output_numpy=True)]
    assert [len(b) for b in batches] == [5, 5, 2]  # the last batch keeps the remainder
    rows = np.concatenate(batches)
    np.testing.assert_array_equal(rows[:, 0], np.arange(0, 96, 8))
    # every token after the first is a target exactly once
    np.testing.assert_array_equal(rows[:, 1:].reshape(-1), ids[1:97])
    assert len(TokenWindows(ids[:10], 8, stride=8)) == 1
    with pytest.raises(ValueError, match="'stride' expected an int >= 1, got 0"):
        TokenWindows(ids, 8, stride=0)


def test_generated_digit_rows():
    rows = GeneratedRows(lambda rng: reverse_digits_row(rng, 6), seed=5)
    src, mask, tgt = rows[123]
    again = rows[123]
    assert all(np.array_equal(a, b) for a, b in zip((src, mask, tgt), again))
    k = int(mask.sum())
    np.testing.assert_array_equal(tgt[:k], src[:k][::-1])
    assert tgt[k] == EOS and 3 <= k <= 6
    data = sampled_batches(rows, ["source", "source_mask", "target"], 8, 2, seed=0)
    it = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    batch = next(iter(it))
    assert [b.shape for b in batch] == [(8, 6), (8, 6), (8, 7)]
    assert [b.dtype for b in batch] == [np.int32, np.float32, np.int32]
