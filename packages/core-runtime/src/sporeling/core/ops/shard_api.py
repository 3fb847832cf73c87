"""``ops.shard(fn, in_strategy, out_strategy=None, ...)``: MindSpore 2.x's cell-level sharding.

Here a function or Cell is not split as a whole: operator-level strategies
(``Primitive.shard``) are what run sharded. ``ops.shard`` validates its arguments, records
the strategies on the returned callable and runs ``fn`` unchanged (every rank computes the
whole result, the same values), saying so once with a warning.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["shard"]

_WARNED = [False]


def _check_strategy(arg: str, value: Any) -> None:
    if value is None:
        return
    if not isinstance(value, tuple) or not all(
        v is None or (isinstance(v, tuple) and all(isinstance(i, int) and i > 0 for i in v))
        for v in value
    ):
        raise TypeError(
            f"shard: argument '{arg}' expected a tuple of tuples of positive ints (one per "
            f"input), got {value!r}"
        )


def shard(
    fn: Callable[..., Any],
    in_strategy: Any,
    out_strategy: Any = None,
    parameter_plan: Any = None,
    device: str = "Ascend",
    level: int = 0,
) -> Callable[..., Any]:
    """``fn`` with the strategies recorded (see the module docstring)."""
    if not callable(fn):
        raise TypeError(f"shard: argument 'fn' expected a function or Cell, got {fn!r}")
    _check_strategy("in_strategy", in_strategy)
    _check_strategy("out_strategy", out_strategy)
    if parameter_plan is not None and not isinstance(parameter_plan, dict):
        raise TypeError(f"shard: argument 'parameter_plan' expected a dict, got {parameter_plan!r}")

    @functools.wraps(fn)
    def sharded(*args: Any, **kwargs: Any) -> Any:
        if not _WARNED[0]:
            _WARNED[0] = True
            warnings.warn(
                "ops.shard: cell-level strategies are recorded but not applied here; the "
                "function runs whole on every rank (use Primitive.shard on MatMul, Gather... "
                "for operator-level sharding)",
                UserWarning,
                stacklevel=2,
            )
        return fn(*args, **kwargs)

    sharded.in_strategy = in_strategy  # type: ignore[attr-defined]
    sharded.out_strategy = out_strategy  # type: ignore[attr-defined]
    return sharded
