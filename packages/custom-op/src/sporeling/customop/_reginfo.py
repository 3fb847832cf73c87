"""Registration info: ``CustomRegOp`` (a builder of op info dicts), ``custom_info_register``
and ``DataType`` (MindSpore's ``(dtype, format)`` pairs)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

__all__ = ["CustomRegOp", "custom_info_register", "DataType", "normalize_reg_info"]


class DataType:
    """``(dtype, format)`` pairs for :meth:`CustomRegOp.dtype_format`."""

    None_None = ("", "")
    BOOL_Default = ("bool", "DefaultFormat")
    I8_Default = ("int8", "DefaultFormat")
    I16_Default = ("int16", "DefaultFormat")
    I32_Default = ("int32", "DefaultFormat")
    I64_Default = ("int64", "DefaultFormat")
    U8_Default = ("uint8", "DefaultFormat")
    F16_Default = ("float16", "DefaultFormat")
    F32_Default = ("float32", "DefaultFormat")
    F64_Default = ("float64", "DefaultFormat")


class CustomRegOp:
    """Builds a Custom op's registration info, e.g.
    ``CustomRegOp().input(0, "x").output(0, "y").dtype_format(DataType.F32_Default,
    DataType.F32_Default).target("CPU").get_op_info()``."""

    def __init__(self, op_name: str = "Custom") -> None:
        self.op_name = op_name
        self.inputs: list[dict[str, Any]] = []
        self.outputs: list[dict[str, Any]] = []
        self.attr_: list[dict[str, Any]] = []
        self.dtype_format_: list[tuple[tuple[str, str], ...]] = []
        self.target_: str | None = None

    def input(self, index: int | None = None, name: str | None = None,
              param_type: str = "required", **kwargs: Any) -> CustomRegOp:  # fmt: skip
        self.inputs.append({"index": index, "name": name, "paramType": param_type, **kwargs})
        return self

    def output(self, index: int | None = None, name: str | None = None,
               param_type: str = "required", **kwargs: Any) -> CustomRegOp:  # fmt: skip
        self.outputs.append({"index": index, "name": name, "paramType": param_type, **kwargs})
        return self

    def attr(self, name: str | None = None, param_type: str | None = None,
             value_type: str | None = None, default_value: Any = None,
             **kwargs: Any) -> CustomRegOp:  # fmt: skip
        self.attr_.append({"name": name, "paramType": param_type, "type": value_type,
                           "defaultValue": default_value, **kwargs})  # fmt: skip
        return self

    def dtype_format(self, *args: tuple[str, str]) -> CustomRegOp:
        for a in args:
            if not (isinstance(a, tuple) and len(a) == 2):
                raise TypeError(
                    f"CustomRegOp.dtype_format: each argument expected a (dtype, format) "
                    f"pair such as DataType.F32_Default, got {a!r}"
                )
        self.dtype_format_.append(tuple(args))
        return self

    def target(self, target: str | None = None) -> CustomRegOp:
        if target not in (None, "CPU", "GPU", "Ascend"):
            raise ValueError(
                f"CustomRegOp.target: argument 'target' expected 'CPU', 'GPU' or 'Ascend', "
                f"got {target!r}"
            )
        self.target_ = target
        return self

    def get_op_info(self) -> dict[str, Any]:
        return {
            "op_name": self.op_name, "imply_type": "", "target": self.target_,
            "inputs": self.inputs, "outputs": self.outputs, "attr": self.attr_,
            "dtype_format": [list(map(list, row)) for row in self.dtype_format_],
        }  # fmt: skip


def custom_info_register(*reg_info: Any) -> Callable[[Any], Any]:
    """Bind registration info to a function (``Custom``'s ``reg_info`` argument wins)."""

    def decorator(func: Any) -> Any:
        existing = list(getattr(func, "reg_info", None) or [])
        func.reg_info = existing + list(reg_info)
        return func

    return decorator


def normalize_reg_info(reg_info: Any) -> list[dict[str, Any]]:
    """A list of info dicts from a dict, JSON string, CustomRegOp, or a list of them."""
    if reg_info is None:
        return []
    items = reg_info if isinstance(reg_info, (list, tuple)) else [reg_info]
    out = []
    for item in items:
        if isinstance(item, CustomRegOp):
            item = item.get_op_info()
        elif isinstance(item, str):
            item = json.loads(item)
        if not isinstance(item, dict):
            raise TypeError(
                f"Custom: argument 'reg_info' expected a dict, a JSON string or a list of "
                f"them, got {type(item).__name__}"
            )
        out.append(item)
    return out
