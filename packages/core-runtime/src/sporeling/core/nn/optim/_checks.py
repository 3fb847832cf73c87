"""Argument checks shared by the optimizers (MindSpore's Validator, with our messages)."""

from __future__ import annotations

from typing import Any

from ...errors import describe


def as_float(cls: str, arg: str, value: Any, *, ints: bool = True) -> float:
    ok = (int, float) if ints else (float,)
    if isinstance(value, bool) or not isinstance(value, ok):
        raise TypeError(f"{cls}: argument '{arg}' expected a float, got {describe(value)}")
    return float(value)


def in_range(cls: str, arg: str, value: float, lo: float, hi: float, text: str) -> float:
    if not (lo < value < hi if text.startswith("(") else lo <= value <= hi):
        raise ValueError(f"{cls}: argument '{arg}' expected a value in {text}, got {value}")
    return value


def non_negative(cls: str, arg: str, value: float) -> float:
    if value < 0:
        raise ValueError(f"{cls}: argument '{arg}' expected a value >= 0, got {value}")
    return value


def positive(cls: str, arg: str, value: float) -> float:
    if not value > 0:
        raise ValueError(f"{cls}: argument '{arg}' expected a value > 0, got {value}")
    return value


def as_bool(cls: str, arg: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{cls}: argument '{arg}' expected a bool, got {describe(value)}")
    return value
