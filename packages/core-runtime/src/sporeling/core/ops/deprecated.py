"""MindSpore 1.8's deprecated functional aliases, each mapped to its replacement.

They stay importable so old scripts run; new code should use the replacement named in
``DEPRECATED_ALIASES``.
"""

from __future__ import annotations

from typing import Any

#: deprecated name -> replacement name in ``sporeling.core.ops``
DEPRECATED_ALIASES = {
    "absolute": "abs",
    "tensor_add": "add",
    "neg_tensor": "neg",
    "tensor_sub": "sub",
    "tensor_mul": "mul",
    "tensor_div": "div",
    "tensor_floordiv": "floor_div",
    "floordiv": "floor_div",
    "tensor_mod": "floor_mod",
    "floormod": "floor_mod",
    "tensor_pow": "pow",
    "pows": "pow",
    "tensor_exp": "exp",
    "tensor_expm1": "expm1",
    "tensor_lt": "less",
    "tensor_le": "less_equal",
    "tensor_gt": "greater",
    "tensor_ge": "greater_equal",
    "not_equal": "ne",
    "tensor_slice": "slice",
    "tensor_range": "range",
    "pack": "stack",
    "arange": "range",
}


def _alias(old: str, new: str) -> Any:
    def alias(*args: Any, **kwargs: Any) -> Any:
        from .. import ops

        return getattr(ops, new)(*args, **kwargs)

    alias.__name__ = old
    alias.__doc__ = f"Deprecated alias of :func:`sporeling.core.ops.{new}`."
    return alias


# Names that already exist with their own implementation (e.g. ``not_equal``, ``arange``)
# are left alone by ``ops/__init__``; only missing ones are filled from here.
ALIASES = {old: _alias(old, new) for old, new in DEPRECATED_ALIASES.items()}
