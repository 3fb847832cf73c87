"""Data for the T5 runs: the generated digit-reversal task (MNIST for ViT: ``pipelines``)."""

from __future__ import annotations

import numpy as np

__all__ = ["PAD", "EOS", "DIGIT0", "reverse_digits", "reverse_digits_row"]

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


def reverse_digits_row(rng: np.random.Generator, length: int) -> tuple[np.ndarray, ...]:
    """One example of ``reverse_digits`` (source, source mask, target), for a row source."""
    return tuple(a[0] for a in reverse_digits(rng, 1, length))
