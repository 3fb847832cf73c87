"""CRC-32C (Castagnoli), the checksum of TFRecord framing, as a cached Numba kernel."""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["crc32c", "masked_crc32c"]


def _table() -> np.ndarray:
    table = np.zeros(256, np.uint32)
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table[i] = c
    return table


_TABLE = _table()


@numba.njit(cache=True, nogil=True)
def _crc(data: np.ndarray, table: np.ndarray) -> np.uint32:  # pragma: no cover - compiled
    c = np.uint32(0xFFFFFFFF)
    for b in data:
        c = table[(c ^ b) & np.uint32(0xFF)] ^ (c >> np.uint32(8))
    return c ^ np.uint32(0xFFFFFFFF)


def crc32c(data: bytes | memoryview | np.ndarray) -> int:
    """The CRC-32C of ``data``."""
    arr = data if isinstance(data, np.ndarray) else np.frombuffer(data, np.uint8)
    return int(_crc(arr, _TABLE))


def masked_crc32c(data: bytes | memoryview | np.ndarray) -> int:
    """TFRecord's masked CRC: rotated right by 15 bits plus 0xA282EAD8."""
    c = crc32c(data)
    return ((((c >> 15) | (c << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF
