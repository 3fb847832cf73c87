"""Global execution settings, set with :func:`set_context` as in MindSpore."""

from __future__ import annotations

from typing import Any

from . import _backend
from . import _context_keys as _keys

__all__ = ["set_context", "get_context", "GRAPH_MODE", "PYNATIVE_MODE"]

GRAPH_MODE = 0
PYNATIVE_MODE = 1

_SETTINGS: dict[str, Any] = {
    "device_target": "CPU",
    "mode": PYNATIVE_MODE,
    "device_id": 0,
    "enable_graph_kernel": False,  # MindSpore's default: no kernel fusion unless asked for
    "seed": None,
}
_backend.default_target = lambda: _SETTINGS["device_target"]  # get_device(None) reads it


def set_context(**kwargs: Any) -> None:
    """Change global settings, e.g. ``set_context(device_target="GPU")``.

    ``device_target`` is where new tensors are created; ``mode`` is ``PYNATIVE_MODE``
    (eager, the default) or ``GRAPH_MODE`` (stored now, used by the graph compiler).
    """
    for key, value in kwargs.items():
        if key in _keys.NO_EFFECT or key in _keys.ALREADY:  # 1.8 keys with nothing to act on
            _keys.accept(key, value)
            _SETTINGS[key] = value
            continue
        if key not in _SETTINGS:
            raise ValueError(
                f"set_context: unknown setting {key!r}; known settings are {sorted(_SETTINGS)}"
            )
        if key == "device_target":
            value = _backend.get_device(value).name  # validates and, for GPU, imports CuPy
        if key == "mode" and value not in (GRAPH_MODE, PYNATIVE_MODE):
            raise ValueError(
                f"set_context: mode must be GRAPH_MODE (0) or PYNATIVE_MODE (1), got {value!r}"
            )
        _SETTINGS[key] = value


def get_context(key: str) -> Any:
    """Read one setting by name."""
    if key not in _SETTINGS and (key in _keys.NO_EFFECT or key in _keys.ALREADY):
        return {**_keys.NO_EFFECT, **_keys.ALREADY}[key]
    if key not in _SETTINGS:
        raise ValueError(
            f"get_context: unknown setting {key!r}; known settings are {sorted(_SETTINGS)}"
        )
    return _SETTINGS[key]


# MindSpore 1.8 scripts write context.set_auto_parallel_context(...) and
# context.ParallelMode: sporeling.core.parallel sets those names here when it is imported.
