"""The subset of MessagePack that MindRecord's raw pages use: a map of scalars, by hand.

MindRecord keeps each row's scalar (non-blob) fields as a MessagePack map written by
nlohmann::json (keys sorted). Only nil, bool, ints, floats, str and maps of those are
needed; anything else is an error, and every declared length is checked against the bytes
left before it is sliced.
"""

from __future__ import annotations

import struct
from typing import Any

__all__ = ["MsgpackError", "packb", "unpackb"]


class MsgpackError(ValueError):
    """Bytes that are not the MessagePack map of scalars MindRecord writes."""


def _pack_int(v: int) -> bytes:
    if 0 <= v < 0x80:
        return bytes([v])
    if -32 <= v < 0:
        return struct.pack("b", v)
    if v >= 0:
        for code, fmt, top in ((0xCC, ">B", 1 << 8), (0xCD, ">H", 1 << 16), (0xCE, ">I", 1 << 32)):
            if v < top:
                return bytes([code]) + struct.pack(fmt, v)
        if v < 1 << 64:
            return b"\xcf" + struct.pack(">Q", v)
    else:
        for code, fmt, low in ((0xD0, ">b", -(1 << 7)), (0xD1, ">h", -(1 << 15))):
            if v >= low:
                return bytes([code]) + struct.pack(fmt, v)
        if v >= -(1 << 31):
            return b"\xd2" + struct.pack(">i", v)
        if v >= -(1 << 63):
            return b"\xd3" + struct.pack(">q", v)
    raise MsgpackError(f"the int {v} does not fit 64 bits")


def _pack_str(s: str) -> bytes:
    raw = s.encode("utf-8")
    n = len(raw)
    if n < 32:
        head = bytes([0xA0 | n])
    elif n < 1 << 8:
        head = b"\xd9" + struct.pack(">B", n)
    elif n < 1 << 16:
        head = b"\xda" + struct.pack(">H", n)
    else:
        head = b"\xdb" + struct.pack(">I", n)
    return head + raw


def _pack(value: Any) -> bytes:
    if value is None:
        return b"\xc0"
    if value is True:
        return b"\xc3"
    if value is False:
        return b"\xc2"
    if isinstance(value, int):
        return _pack_int(value)
    if isinstance(value, float):
        return b"\xcb" + struct.pack(">d", value)
    if isinstance(value, str):
        return _pack_str(value)
    raise MsgpackError(f"cannot pack a {type(value).__name__} into a MindRecord raw page")


def packb(mapping: dict[str, Any]) -> bytes:
    """A MessagePack map of ``mapping`` (keys sorted, as nlohmann::json writes them)."""
    n = len(mapping)
    head = bytes([0x80 | n]) if n < 16 else b"\xde" + struct.pack(">H", n)
    parts = [head]
    for key in sorted(mapping):
        parts.append(_pack_str(key))
        parts.append(_pack(mapping[key]))
    return b"".join(parts)


_FIXED = {
    0xCA: ">f",
    0xCB: ">d",
    0xCC: ">B",
    0xCD: ">H",
    0xCE: ">I",
    0xCF: ">Q",
    0xD0: ">b",
    0xD1: ">h",
    0xD2: ">i",
    0xD3: ">q",
}
_STR_LEN = {0xD9: ">B", 0xDA: ">H", 0xDB: ">I"}


_FIXED_S = {code: struct.Struct(fmt) for code, fmt in _FIXED.items()}
_STR_S = {code: struct.Struct(fmt) for code, fmt in _STR_LEN.items()}
_MAP16, _MAP32 = struct.Struct(">H"), struct.Struct(">I")


def _past_end(pos: int) -> MsgpackError:
    return MsgpackError(f"a value at byte {pos} runs past the end of the record")


def _value(data: bytes, pos: int, end: int) -> tuple[Any, int]:
    """The value at ``pos`` and the position after it (one function, no per-value objects:
    this runs for every scalar of every MindRecord row read)."""
    if pos >= end:
        raise _past_end(pos)
    code = data[pos]
    pos += 1
    if code < 0x80:
        return code, pos
    if code >= 0xE0:
        return code - 0x100, pos
    if 0xA0 <= code < 0xC0:
        n = code & 0x1F
    elif code == 0xC0:
        return None, pos
    elif code == 0xC2 or code == 0xC3:
        return code == 0xC3, pos
    else:
        fixed = _FIXED_S.get(code)
        if fixed is not None:
            if fixed.size > end - pos:
                raise _past_end(pos)
            return fixed.unpack_from(data, pos)[0], pos + fixed.size
        head = _STR_S.get(code)
        if head is None:
            raise MsgpackError(f"unsupported MessagePack type 0x{code:02x} at byte {pos - 1}")
        if head.size > end - pos:
            raise _past_end(pos)
        n = head.unpack_from(data, pos)[0]
        pos += head.size
    if n > end - pos:
        raise _past_end(pos)
    try:
        return data[pos : pos + n].decode("utf-8"), pos + n
    except UnicodeDecodeError:
        raise MsgpackError(f"a string before byte {pos + n} is not UTF-8") from None


def unpackb(data: bytes) -> dict[str, Any]:
    """The map of scalars in ``data`` (which must hold exactly one map)."""
    data = bytes(data)
    end = len(data)
    if not end:
        raise _past_end(0)
    code = data[0]
    pos = 1
    if 0x80 <= code < 0x90:
        n = code & 0x0F
    elif code == 0xDE or code == 0xDF:
        head = _MAP16 if code == 0xDE else _MAP32
        if head.size > end - pos:
            raise _past_end(pos)
        n = head.unpack_from(data, pos)[0]
        pos += head.size
    else:
        raise MsgpackError(f"a raw record must be a MessagePack map, found type 0x{code:02x}")
    if n > end:  # every entry takes at least two bytes
        raise MsgpackError(f"the map declares {n} entries in {end} bytes")
    out: dict[str, Any] = {}
    for _ in range(n):
        key, pos = _value(data, pos, end)
        if not isinstance(key, str):
            raise MsgpackError(f"a map key is {key!r}, not a str")
        out[key], pos = _value(data, pos, end)
    if pos != end:
        raise MsgpackError(f"{end - pos} bytes follow the map")
    return out
