"""Error types of sporeling.rl: each names the argument, the value and what was expected."""

from __future__ import annotations


class ConfigError(ValueError):
    """An ``algorithm_config`` that cannot build an algorithm (missing key, wrong type)."""


def type_name(value: object) -> str:
    return type(value).__name__
