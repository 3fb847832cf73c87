"""``QuantDtype``: INT1..INT8 and UINT1..UINT8 (Golden Stick's enum)."""

from __future__ import annotations

from enum import Enum

__all__ = ["QuantDtype"]


class QuantDtype(Enum):
    """A quantized integer type; ``num_bits`` and ``signed`` describe it."""

    INT1 = "INT1"
    INT2 = "INT2"
    INT3 = "INT3"
    INT4 = "INT4"
    INT5 = "INT5"
    INT6 = "INT6"
    INT7 = "INT7"
    INT8 = "INT8"
    UINT1 = "UINT1"
    UINT2 = "UINT2"
    UINT3 = "UINT3"
    UINT4 = "UINT4"
    UINT5 = "UINT5"
    UINT6 = "UINT6"
    UINT7 = "UINT7"
    UINT8 = "UINT8"

    @property
    def num_bits(self) -> int:
        return int(self.value.lstrip("UINT"))

    @property
    def signed(self) -> bool:
        return not self.value.startswith("U")

    def __str__(self) -> str:
        return self.value
