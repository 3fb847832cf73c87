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
from typing import Any

import numpy as np

__all__ = ["current_random", "current_rng", "row_random_scope", "derive_seed"]

_local = threading.local()


def derive_seed(*key: int) -> int:
    """A 63-bit seed that depends only on ``key`` (via NumPy's SeedSequence)."""
    ss = np.random.SeedSequence([int(k) & 0xFFFFFFFFFFFFFFFF for k in key])
    return int(ss.generate_state(2, np.uint32).astype(np.uint64).view(np.uint64)[0] >> 1)


_MASK = 0xFFFFFFFFFFFFFFFF


def _philox_state(key: tuple[int, ...]) -> dict[str, Any]:
    # Philox is counter-based: the seed is its key, and (epoch, node, row) go into the upper
    # words of the starting counter. Draws only advance the lowest word, so the streams of
    # different rows never overlap, and setting a state costs microseconds (a SeedSequence
    # per row cost ~50 us, more than a typical transform).
    seed = key[0] & _MASK if key else 0
    rest = [k & _MASK for k in key[1:4]] + [0] * (3 - len(key[1:4]))
    extra = key[4:]
    k1 = 0 if not extra else derive_seed(*extra)
    return {
        "bit_generator": "Philox",
        "state": {
            "counter": np.array([0, *rest], dtype=np.uint64),
            "key": np.array([seed, k1], dtype=np.uint64),
        },
        "buffer": np.zeros(4, dtype=np.uint64),
        "buffer_pos": 4,
        "has_uint32": 0,
        "uinteger": 0,
    }


class _RowStreams:
    __slots__ = ("key", "_rng", "_random")

    def __init__(self, key: tuple[int, ...], rng: np.random.Generator) -> None:
        self.key = key
        rng.bit_generator.state = _philox_state(key)
        self._rng = rng
        self._random: random.Random | None = None

    def rng(self) -> np.random.Generator:
        return self._rng

    def random(self) -> random.Random:
        if self._random is None:
            self._random = random.Random(derive_seed(*self.key, 0x5EED))
        return self._random


_use_rng: Any = None


def _installer() -> Any:
    global _use_rng
    if _use_rng is None:
        from ..transforms._base import use_rng

        _use_rng = use_rng
    return _use_rng


@contextmanager
def row_random_scope(key: tuple[int, ...] | None) -> Iterator[None]:
    """Make :func:`current_rng` / :func:`current_random` derive from ``key`` (None: no scope)."""
    if key is None:
        yield
        return
    previous = getattr(_local, "streams", None)
    # One Generator per thread, re-keyed per row; a nested scope gets its own.
    spare = getattr(_local, "spare", None)
    if spare is None or previous is not None:
        spare = np.random.Generator(np.random.Philox(0))
        if previous is None:
            _local.spare = spare
    streams = _RowStreams(tuple(key), spare)
    _local.streams = streams
    try:
        # The unified transforms draw from the generator `use_rng` installs.
        with _installer()(streams.rng()):
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
