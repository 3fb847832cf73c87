"""The global random state: ``set_seed`` and one generator per device kind.

Random ops (``ops.uniform``, dropout, initializers...) draw from :func:`generator`, so
``set_seed(n)`` makes a whole run reproducible. ``get_rng_state``/``set_rng_state`` let
checkpoints save and restore it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._backend import is_host

__all__ = ["set_seed", "get_seed", "generator", "get_rng_state", "set_rng_state"]

_SEED: list[int | None] = [None]
# keyed by device kind, and by ("op-stream", kind, seed, key) for ops.random's op streams
_GENERATORS: dict[str | tuple[Any, ...], Any] = {}


def set_seed(seed: int) -> None:
    """Seed every device's generator (MindSpore's ``set_seed``)."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"set_seed: argument 'seed' expected a non-negative int, got {seed!r}")
    _SEED[0] = int(seed)
    _GENERATORS.clear()


def get_seed() -> int | None:
    return _SEED[0]


def generator(device: Any) -> Any:
    """The generator for ``device``: ``numpy.random.Generator`` or CuPy's equivalent."""
    kind = device.kind if not device.standin else "gpu-standin"
    gen = _GENERATORS.get(kind)
    if gen is None:
        seed = _SEED[0]
        if is_host(device.xp):
            gen = np.random.default_rng(seed)
        else:  # pragma: no cover - needs a GPU
            gen = device.xp.random.default_rng(seed)
        _GENERATORS[kind] = gen
    return gen


def get_rng_state() -> dict[str, Any]:
    """A JSON-serialisable snapshot of the CPU generator (for checkpoints)."""
    from ._backend import CPU

    return {"seed": _SEED[0], "cpu": generator(CPU).bit_generator.state}


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore a snapshot taken by :func:`get_rng_state`."""
    from ._backend import CPU

    _SEED[0] = state.get("seed")
    generator(CPU).bit_generator.state = state["cpu"]


def _snapshot() -> tuple[int | None, dict[Any, Any]]:
    """The seed and every generator's state, for a replay that must draw the same numbers
    (a recomputed cell's dropout masks, ``nn/_recompute.py``)."""
    return _SEED[0], {key: gen.bit_generator.state for key, gen in _GENERATORS.items()}


class _Replay:
    """``with _Replay(snapshot):`` draws as from ``snapshot``, then puts the current state
    back (generators first made inside are dropped: made again from the seed on replay)."""

    def __init__(self, snapshot: tuple[int | None, dict[Any, Any]]) -> None:
        self.snapshot = snapshot

    def __enter__(self) -> None:
        self.saved = (_SEED[0], dict(_GENERATORS))
        self.states = {key: gen.bit_generator.state for key, gen in _GENERATORS.items()}
        seed, states = self.snapshot
        _SEED[0] = seed
        _GENERATORS.clear()
        for key, state in states.items():
            gen = self.saved[1].get(key)
            if gen is not None:
                gen.bit_generator.state = state
                _GENERATORS[key] = gen

    def __exit__(self, *exc: Any) -> None:
        _SEED[0] = self.saved[0]
        _GENERATORS.clear()
        _GENERATORS.update(self.saved[1])
        for key, state in self.states.items():
            _GENERATORS[key].bit_generator.state = state
