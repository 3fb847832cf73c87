"""Data for the T5 runs: the generated digit-reversal task (MNIST for ViT: ``pipelines``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from sporeling.core import Tensor

__all__ = ["PAD", "EOS", "DIGIT0", "reverse_digits", "ReverseDigits"]

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
