"""Error types of sporeling.rl: each names the argument, the value and what was expected."""

from __future__ import annotations


class ConfigError(ValueError):
    """An ``algorithm_config`` that cannot build an algorithm (missing key, wrong type)."""


class EnvironmentError_(ValueError):  # noqa: N801  (``EnvironmentError`` is an OSError alias)
    """An environment used against its contract (wrong action shape, stepping a finished game)."""


def type_name(value: object) -> str:
    return type(value).__name__
