"""Data for the T5 and ViT runs: the generated digit-reversal task and MNIST's idx files."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import numpy as np

from sporeling.core import Tensor

__all__ = ["PAD", "EOS", "DIGIT0", "reverse_digits", "ReverseDigits", "read_idx", "load_mnist"]

PAD, EOS, DIGIT0 = 0, 1, 2  # digits 0-9 are tokens 2..11


def reverse_digits(
    rng: np.random.Generator, n: int, length: int, min_length: int = 3
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``n`` random digit strings of ``min_length..length`` digits: (sources, source mask,
    targets = the reversed digits then EOS), padded with PAD."""
    lens = rng.integers(min_length, length + 1, n)
    src = np.zeros((n, length), np.int32)
    tgt = np.zeros((n, length + 1), np.int32)
    for i, k in enumerate(lens):
        digits = rng.integers(0, 10, k) + DIGIT0
        src[i, :k] = digits
        tgt[i, :k] = digits[::-1]
        tgt[i, k] = EOS
    return src, (src != PAD).astype(np.float32), tgt


class ReverseDigits:
    """``steps`` fresh batches per epoch (``fixed``: the same batches every epoch), the two
    methods ``Model.fit`` asks of a dataset."""

    def __init__(
        self, length: int, batch_size: int, steps: int, seed: int, fixed: bool = False
    ) -> None:
        self.length, self.batch, self.steps, self.seed, self.fixed = (
            length,
            batch_size,
            steps,
            seed,
            fixed,
        )
        self.rng = np.random.default_rng(seed)

    def get_dataset_size(self) -> int:
        return self.steps

    def get_batch_size(self) -> int:
        return self.batch

    def create_tuple_iterator(
        self, num_epochs: int = -1, output_numpy: bool = False, **_: Any
    ) -> Any:
        return _Epochs(self, output_numpy)


class _Epochs:
    def __init__(self, ds: ReverseDigits, output_numpy: bool) -> None:
        self.ds, self.output_numpy = ds, output_numpy

    def __iter__(self) -> Any:
        ds = self.ds
        rng = np.random.default_rng(ds.seed) if ds.fixed else ds.rng
        for _ in range(ds.steps):
            arrays = reverse_digits(rng, ds.batch, ds.length)
            yield [a if self.output_numpy else Tensor(a) for a in arrays]


def read_idx(path: str | Path) -> np.ndarray:
    """An idx file (gzipped or not): big-endian header, then uint8 data."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    shape = [int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(shape)


def load_mnist(folder: str | Path, holdout: int = 10000) -> tuple[np.ndarray, ...]:
    """(train images, train labels, test images, test labels), images (N, 1, 28, 28)
    normalised; without ``t10k-*`` files the last ``holdout`` training images are the test set."""
    root = Path(folder)
    if not (root / "train-images-idx3-ubyte.gz").exists():
        raise FileNotFoundError(
            f"data.path: {root} has no train-images-idx3-ubyte.gz (an MNIST folder)"
        )

    def images(name: str) -> np.ndarray:
        return ((read_idx(root / name).astype(np.float32)[:, None] / 255.0) - 0.1307) / 0.3081

    x, y = (
        images("train-images-idx3-ubyte.gz"),
        read_idx(root / "train-labels-idx1-ubyte.gz").astype(np.int32),
    )
    if (root / "t10k-images-idx3-ubyte.gz").exists():
        xt = images("t10k-images-idx3-ubyte.gz")
        yt = read_idx(root / "t10k-labels-idx1-ubyte.gz").astype(np.int32)
        return x, y, xt, yt
    return x[:-holdout], y[:-holdout], x[-holdout:], y[-holdout:]
