"""Write a tiny MNIST folder (the published ``.gz`` idx files) for the distributed scripts'
CLI runs: ``train_vit`` reads its data from files, as it would MNIST's own."""

import gzip
from pathlib import Path

import numpy as np


def write_mnist_gz(folder: Path, images: np.ndarray, labels: np.ndarray) -> None:
    """``images`` (n, 28, 28) uint8 and ``labels`` (n,) uint8 as MNIST's training files."""
    folder.mkdir(parents=True, exist_ok=True)
    n = len(images)
    with gzip.open(folder / "train-images-idx3-ubyte.gz", "wb") as f:
        dims = b"".join(d.to_bytes(4, "big") for d in images.shape)
        f.write(bytes([0, 0, 8, 3]) + dims + images.astype(np.uint8).tobytes())
    with gzip.open(folder / "train-labels-idx1-ubyte.gz", "wb") as f:
        f.write(bytes([0, 0, 8, 1]) + n.to_bytes(4, "big") + labels.astype(np.uint8).tobytes())


def write_bright_dark_mnist(folder: Path, rng: np.random.Generator, n: int = 40) -> None:
    """``n`` images whose class is their brightness (bright 1, dark 0): learnable in a few
    steps, so the test accuracies the scripts compare are not all zero."""
    labels = rng.integers(0, 2, n).astype(np.uint8)
    images = (rng.integers(0, 128, (n, 28, 28)) + 127 * labels[:, None, None]).astype(np.uint8)
    write_mnist_gz(folder, images, labels)
