"""Argument checks in MindSpore 1.8's wording: each error names the class, the argument,
the value received and what was expected."""

from __future__ import annotations

from typing import Any

from sporeling.core import dtype as mstype

FLOAT_TYPES = (mstype.float16, mstype.float32, mstype.float64, mstype.bfloat16)


def positive_int(cls: str, name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(
            f"For '{cls}', the argument '{name}' must be a positive int, but got {value!r}."
        )
    return value


def non_negative_int(cls: str, name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(
            f"For '{cls}', the argument '{name}' must be a non-negative int, but got {value!r}."
        )
    return value


def boolean(cls: str, name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"For '{cls}', the argument '{name}' must be a bool, but got {value!r}.")
    return value


def rate(cls: str, name: str, value: Any) -> float:
    """Dropout rates are in [0, 1) as in 1.8's ``Validator.check_float_range(..., INC_LEFT)``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
        raise ValueError(
            f"For '{cls}', the argument '{name}' must be in range [0, 1.0), but got {value!r}."
        )
    return float(value)


def float_type(cls: str, name: str, value: Any) -> Any:
    if value not in FLOAT_TYPES:
        raise TypeError(
            f"For '{cls}', the argument '{name}' must be one of {[str(t) for t in FLOAT_TYPES]}, "
            f"but got {value!r}."
        )
    return value


def multiple(cls: str, name: str, value: int, of_name: str, of: int) -> None:
    if value % of != 0:
        raise ValueError(
            f"For '{cls}', the class variable '{name}' must be a multiple of '{of_name}', but got "
            f"the {name} is {value} and the {of_name} is {of}."
        )


def one_of(cls: str, name: str, value: Any, allowed: tuple[Any, ...]) -> Any:
    if value not in allowed:
        raise ValueError(
            f"For '{cls}', the argument '{name}' must be one of {allowed}, but got {value!r}."
        )
    return value
