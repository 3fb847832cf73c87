"""Readers of the standard dataset files the examples and the CLI use (NumPy only):
MNIST idx (``.gz``) and the CIFAR-10 binary batches (``.bin`` or ``.bin.xz``), plus a
seeded synthetic set for tests. Returns float32 NCHW images and int32 labels."""

from __future__ import annotations

import gzip
import lzma
import os

import numpy as np

__all__ = ["load_mnist", "load_cifar10", "synthetic", "load_data"]


def _idx(path: str) -> np.ndarray:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as fh:
        data = fh.read()
    magic = int.from_bytes(data[:4], "big")
    ndim = magic & 0xFF
    dims = [int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load_mnist(directory: str, limit: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``train-images-idx3-ubyte(.gz)``/labels, padded to 32x32 and normalised as
    MindSpore's LeNet sample does."""

    def find(stem: str) -> str:
        for name in (stem + ".gz", stem):
            if os.path.exists(os.path.join(directory, name)):
                return os.path.join(directory, name)
        raise FileNotFoundError(f"load_mnist: no {stem}(.gz) in {directory}")

    images = _idx(find("train-images-idx3-ubyte"))[:limit]
    labels = _idx(find("train-labels-idx1-ubyte"))[:limit]
    x = np.pad(images.astype(np.float32) / 255.0, ((0, 0), (2, 2), (2, 2)))
    x = ((x - 0.1307) / 0.3081)[:, None]
    return x.astype(np.float32), labels.astype(np.int32)


_CIFAR_MEAN = np.array([0.4914, 0.4822, 0.4465], np.float32)[:, None, None]
_CIFAR_STD = np.array([0.2470, 0.2435, 0.2616], np.float32)[:, None, None]


def load_cifar10(directory: str, batches: tuple[int, ...] = (1,), limit: int | None = None):
    """Records of ``data_batch_N.bin`` (or ``.bin.xz``): label byte + 3072 pixel bytes."""
    xs, ys = [], []
    for b in batches:
        path = os.path.join(directory, f"data_batch_{b}.bin")
        if os.path.exists(path):
            with open(path, "rb") as fh:
                raw = fh.read()
        elif os.path.exists(path + ".xz"):
            with lzma.open(path + ".xz") as fh:
                raw = fh.read()
        else:
            raise FileNotFoundError(f"load_cifar10: no {path}(.xz)")
        rec = np.frombuffer(raw, np.uint8).reshape(-1, 3073)
        ys.append(rec[:, 0].astype(np.int32))
        xs.append(rec[:, 1:].reshape(-1, 3, 32, 32))
    x = np.concatenate(xs)[:limit].astype(np.float32) / 255.0
    return ((x - _CIFAR_MEAN) / _CIFAR_STD).astype(np.float32), np.concatenate(ys)[:limit]


def synthetic(shape: tuple[int, ...], count: int, classes: int = 10, seed: int = 0):
    """Random images whose class is readable from them (a learnable toy set for tests)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, count).astype(np.int32)
    protos = rng.standard_normal((classes, *shape)).astype(np.float32)
    x = protos[y] + 0.5 * rng.standard_normal((count, *shape)).astype(np.float32)
    return x.astype(np.float32), y


def load_data(spec: str, shape: tuple[int, ...], limit: int | None = None):
    """``mnist:DIR``, ``cifar10:DIR[:batches]`` or ``synthetic:COUNT``."""
    kind, _, rest = spec.partition(":")
    if kind == "mnist":
        return load_mnist(rest, limit)
    if kind == "cifar10":
        path, _, batches = rest.partition("@")
        chosen = tuple(int(b) for b in batches.split(",")) if batches else (1,)
        return load_cifar10(path, chosen, limit)
    if kind == "synthetic":
        return synthetic(shape, int(rest or 256))
    raise ValueError(
        f"load_data: argument 'spec' expected 'mnist:DIR', 'cifar10:DIR[@1,2]' or "
        f"'synthetic:COUNT', got {spec!r}"
    )
