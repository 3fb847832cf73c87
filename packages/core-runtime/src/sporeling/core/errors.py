"""Error helpers: every user-facing error names the op, the argument, what was given
and what was expected, so nobody has to read a traceback from inside a kernel."""

from __future__ import annotations

from typing import Any

__all__ = ["op_error", "check_axis", "check_int", "check_bool", "describe", "as_op"]


def describe(value: Any) -> str:
    """A short description of a value for error messages (shape and dtype for tensors)."""
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if shape is not None and dtype is not None and not isinstance(value, type):
        return f"a tensor of shape {tuple(shape)} and dtype {dtype}"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def op_error(
    op: str, arg: str, got: Any, expected: str, exc: type[Exception] = ValueError
) -> Exception:
    """Build ``exc("op: argument 'arg' expected ..., got ...")`` for the caller to raise."""
    return exc(f"{op}: argument '{arg}' expected {expected}, got {describe(got)}")


def check_int(
    op: str, arg: str, value: Any, minimum: int | None = None, maximum: int | None = None
) -> int:
    """Validate an integer argument (Python or NumPy int; bools rejected), optionally within
    ``[minimum, maximum]``, and return it as ``int``. The one integer validator of the core
    (layers, callbacks, ``Model``, the parallel context use it too)."""
    if (
        type(value) is int
        and (minimum is None or value >= minimum)
        and (maximum is None or value <= maximum)
    ):
        return value  # the common case, before the import and isinstance checks (hot path)
    import numpy as np

    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise op_error(op, arg, value, "an int", TypeError)
    too_low = minimum is not None and value < minimum
    if too_low or (maximum is not None and value > maximum):
        if maximum is None:
            expected = f"an int >= {minimum}"
        elif minimum is None:
            expected = f"an int <= {maximum}"
        else:
            expected = f"an int in [{minimum}, {maximum}]"
        raise op_error(op, arg, value, expected)
    return int(value)


def check_bool(op: str, arg: str, value: Any) -> bool:
    """Validate a bool argument (Python or NumPy bool; ints rejected) and return it as
    ``bool``. The one bool validator of the core."""
    if type(value) is bool:
        return value
    import numpy as np

    if not isinstance(value, np.bool_):
        raise op_error(op, arg, value, "a bool", TypeError)
    return bool(value)


def check_axis(op: str, axis: Any, ndim: int, arg: str = "axis") -> int:
    """Normalize one axis into ``[0, ndim)`` or raise naming the op and the valid range."""
    if type(axis) is int and -ndim <= axis < ndim:
        return axis % ndim  # the common case (hot path)
    axis = check_int(op, arg, axis)
    bound = max(ndim, 1)
    if not -bound <= axis < bound:
        raise op_error(op, arg, axis, f"an axis in [{-bound}, {bound - 1}] for a {ndim}-d input")
    return axis % bound


def as_op(exc: Exception, op: str) -> Exception:
    """``exc`` (a TypeError/ValueError of an op used inside ``op``) renamed to ``op``, so the
    user reads the op they called, not an internal one (``select: ...`` -> ``where: ...``)."""
    text = str(exc)
    head, sep, rest = text.partition(": ")
    if sep and " " not in head:
        text = f"{op}: {rest}"
    elif not text.startswith(f"{op}:"):
        text = f"{op}: {text}"
    return type(exc)(text)
