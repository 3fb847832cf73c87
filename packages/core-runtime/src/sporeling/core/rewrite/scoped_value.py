"""``ScopedValue``: one argument or target of a rewrite node (MindSpore 1.8's ``ScopedValue``).

A value is a local variable (``NamingValue``, no scope), an attribute of the network
(``NamingValue`` with scope ``"self"``), a Python constant, or any other expression the
tree keeps as source text (``CustomObjValue``, e.g. a module-level name).
"""

from __future__ import annotations

from enum import Enum
from typing import Any

__all__ = ["ScopedValue", "ValueType"]


class ValueType(Enum):
    """What a :class:`ScopedValue` holds (MindSpore's names)."""

    Unknown = 0
    StringValue = 1
    IntValue = 2
    FloatValue = 3
    TupleValue = 4
    ListValue = 5
    DictValue = 6
    ConstantValue = 7
    NamingValue = 8
    CustomObjValue = 9


def _constant_type(value: Any) -> ValueType:
    if isinstance(value, bool) or value is None:
        return ValueType.ConstantValue
    if isinstance(value, str):
        return ValueType.StringValue
    if isinstance(value, int):
        return ValueType.IntValue
    if isinstance(value, float):
        return ValueType.FloatValue
    if isinstance(value, tuple):
        return ValueType.TupleValue
    if isinstance(value, list):
        return ValueType.ListValue
    if isinstance(value, dict):
        return ValueType.DictValue
    return ValueType.ConstantValue


class ScopedValue:
    """``(type, scope, value)``: ``ScopedValue.create_naming_value("x")`` is the variable ``x``,
    ``create_naming_value("mask", "self")`` is ``self.mask``, ``create_variable_value(3)`` the
    constant 3."""

    def __init__(self, arg_type: ValueType, scope: str = "", value: Any = None) -> None:
        if not isinstance(arg_type, ValueType):
            raise TypeError(
                f"ScopedValue: argument 'arg_type' expected a ValueType, got {arg_type!r}"
            )
        if not isinstance(scope, str):
            raise TypeError(f"ScopedValue: argument 'scope' expected a str, got {scope!r}")
        self.type = arg_type
        self.scope = scope
        self.value = value

    @classmethod
    def create_variable_value(cls, value: Any) -> ScopedValue:
        """A constant (int, float, str, bool, None, or a tuple/list/dict of them)."""
        if isinstance(value, ScopedValue):
            return value
        return cls(_constant_type(value), "", value)

    @classmethod
    def create_naming_value(cls, name: str, scope: str = "") -> ScopedValue:
        """A variable (``scope=""``) or an attribute of ``scope`` (``"self"``)."""
        if not isinstance(name, str) or not name:
            raise TypeError(
                f"ScopedValue.create_naming_value: argument 'name' expected a non-empty str, "
                f"got {name!r}"
            )
        return cls(ValueType.NamingValue, scope, name)

    @classmethod
    def create_name_values(cls, names: Any, scopes: Any = None) -> list[ScopedValue]:
        """One naming value per name (``scopes`` gives each one's scope)."""
        names = list(names)
        scopes = [""] * len(names) if scopes is None else list(scopes)
        if len(scopes) != len(names):
            raise ValueError(
                f"ScopedValue.create_name_values: {len(names)} names but {len(scopes)} scopes"
            )
        return [cls.create_naming_value(n, s) for n, s in zip(names, scopes)]

    @classmethod
    def create_custom_value(cls, source: str) -> ScopedValue:
        """An expression kept as source text (a module-level name such as ``ops.relu``)."""
        return cls(ValueType.CustomObjValue, "", source)

    @property
    def is_variable(self) -> bool:
        """True for a local variable of ``construct`` (what node data flow is made of)."""
        return self.type == ValueType.NamingValue and self.scope == ""

    def to_source(self) -> str:
        """The Python expression this value stands for in regenerated code."""
        if self.type == ValueType.NamingValue:
            return f"{self.scope}.{self.value}" if self.scope else str(self.value)
        if self.type == ValueType.CustomObjValue:
            return str(self.value)
        return repr(self.value)

    def __str__(self) -> str:
        return self.to_source()

    def __repr__(self) -> str:
        return f"ScopedValue({self.type.name}, {self.scope!r}, {self.value!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ScopedValue):
            return NotImplemented
        return (self.type, self.scope, self.value) == (other.type, other.scope, other.value)

    def __hash__(self) -> int:
        return hash((self.type, self.scope, repr(self.value)))
