"""Pieces the CTR models share: the embedding factory and the deep tower."""

from __future__ import annotations

from typing import Any

from sporeling.core import nn
from sporeling.core.initializer import Normal


def check_positive_int(cls: str, name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{cls}: argument '{name}' expected an int >= 1, got {value!r}")
    return value


def embedding(
    name: str,
    vocab_size: int,
    dim: int,
    sparse: bool,
    vocab_cache_size: int,
    sigma: float,
    **cache: Any,
) -> nn.Cell:
    """``EmbeddingLookup(vocab_size, dim)`` as MindSpore's Wide&Deep builds it: host lookup with
    row-sparse gradients when ``sparse``, a dense ``DEVICE`` lookup otherwise; with
    ``vocab_cache_size > 0`` the cached lookup of :mod:`sporeling.recommender.cache` (a disk
    level goes to the subfolder ``name`` of ``path``)."""
    if vocab_cache_size:
        import os

        from ..cache import CachedEmbeddingLookup

        if cache.get("path") is not None:
            cache = {**cache, "path": os.path.join(cache["path"], name)}
        return CachedEmbeddingLookup(
            vocab_size, dim, vocab_cache_size=vocab_cache_size, param_init=Normal(sigma), **cache
        )
    target = "CPU" if sparse else "DEVICE"
    return nn.EmbeddingLookup(
        vocab_size, dim, param_init=Normal(sigma), target=target, sparse=sparse
    )


class DeepTower(nn.Cell):
    """``dense_layer_1 .. dense_layer_n``: ReLU layers of ``dims`` and a 1-unit output
    (weights and biases N(0, sigma^2), as the model zoo's ``init_method('normal')``)."""

    def __init__(self, in_dim: int, dims: tuple[int, ...], sigma: float, out_dim: int = 1) -> None:
        super().__init__()
        sizes = [in_dim, *dims]
        self.n_layers = len(dims) + 1
        for i in range(len(dims)):
            layer = nn.Dense(
                sizes[i], sizes[i + 1], Normal(sigma), Normal(sigma), activation="relu"
            )
            setattr(self, f"dense_layer_{i + 1}", layer)
        last = nn.Dense(sizes[-1], out_dim, Normal(sigma), Normal(sigma))
        setattr(self, f"dense_layer_{self.n_layers}", last)

    def construct(self, x: Any) -> Any:
        for i in range(1, self.n_layers + 1):
            x = getattr(self, f"dense_layer_{i}")(x)
        return x
