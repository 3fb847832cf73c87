"""Per-row random streams: what makes random transforms deterministic with any worker count.

The pipeline applies a `map`'s operations to row ``i`` of epoch ``e`` inside
``row_random_scope((base_seed, e, node_id, i))``. While the scope is active,
:func:`current_rng` returns a ``numpy.random.Generator`` and :func:`current_random` a
``random.Random`` that depend only on that key, so the draws of a row do not depend on
which thread or process runs it, nor on how many rows ran before. Random transforms call
:func:`current_rng` (or :func:`current_random`) first and fall back to their own stream
when it returns ``None`` (eager calls outside a pipeline). The scope also installs the row's
generator with ``transforms._base.use_rng``, which every unified random op consults.

The scope is thread-local; worker processes open it around each row too.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

__all__ = ["current_random", "current_rng", "row_random_scope", "derive_seed"]

_local = threading.local()


def derive_seed(*key: int) -> int:
    """A 63-bit seed that depends only on ``key`` (via NumPy's SeedSequence)."""
    ss = np.random.SeedSequence([int(k) & 0xFFFFFFFFFFFFFFFF for k in key])
    return int(ss.generate_state(2, np.uint32).astype(np.uint64).view(np.uint64)[0] >> 1)


class _RowStreams:
    __slots__ = ("key", "_rng", "_random")

    def __init__(self, key: tuple[int, ...]) -> None:
        self.key = key
        self._rng: np.random.Generator | None = None
        self._random: random.Random | None = None

    def rng(self) -> np.random.Generator:
        if self._rng is None:
            self._rng = np.random.default_rng([int(k) & 0xFFFFFFFFFFFFFFFF for k in self.key])
        return self._rng

    def random(self) -> random.Random:
        if self._random is None:
            self._random = random.Random(derive_seed(*self.key, 0x5EED))
        return self._random


@contextmanager
def row_random_scope(key: tuple[int, ...] | None) -> Iterator[None]:
    """Make :func:`current_rng` / :func:`current_random` derive from ``key`` (None: no scope)."""
    previous = getattr(_local, "streams", None)
    streams = None if key is None else _RowStreams(tuple(key))
    _local.streams = streams
    try:
        if streams is None:
            yield
        else:
            # The unified transforms draw from the generator `use_rng` installs.
            from ..transforms._base import use_rng

            with use_rng(streams.rng()):
                yield
    finally:
        _local.streams = previous


def current_rng() -> np.random.Generator | None:
    """The ``numpy.random.Generator`` of the row being processed, or None outside a pipeline."""
    streams = getattr(_local, "streams", None)
    return None if streams is None else streams.rng()


def current_random() -> random.Random | None:
    """The ``random.Random`` of the row being processed, or None outside a pipeline."""
    streams = getattr(_local, "streams", None)
    return None if streams is None else streams.random()
