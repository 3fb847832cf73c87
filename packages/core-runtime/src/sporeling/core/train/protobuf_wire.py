"""A minimal protocol-buffer wire-format reader and writer, written by hand.

Just enough of https://protobuf.dev/programming-guides/encoding/ to read and write MindSpore's
``.ckpt`` files without the ``protobuf`` package: varints, length-delimited fields and the
fixed-width types (skipped). It is a decoder of bytes, nothing more: it never builds
classes from the file, never executes anything and never allocates more than the slice of
the input it is looking at (every declared length is checked against the bytes left before
anything is sliced). Errors are :class:`WireError`, which the callers turn into their own.
"""

from __future__ import annotations

from collections.abc import Iterator

__all__ = ["WireError", "iter_fields", "varint", "key", "length_delimited"]

VARINT, FIXED64, LEN, START_GROUP, END_GROUP, FIXED32 = 0, 1, 2, 3, 4, 5
_MAX_VARINT_BYTES = 10


class WireError(ValueError):
    """Bytes that are not a well-formed protobuf message (``truncated`` if they end early)."""

    def __init__(self, reason: str, truncated: bool = False) -> None:
        self.truncated = truncated
        super().__init__(reason)


def read_varint(buf: memoryview, pos: int, end: int) -> tuple[int, int]:
    """The unsigned varint at ``pos`` and the position after it."""
    result = 0
    for i in range(_MAX_VARINT_BYTES):
        if pos + i >= end:
            raise WireError(f"a varint at byte {pos} runs past the end of its message", True)
        byte = buf[pos + i]
        result |= (byte & 0x7F) << (7 * i)
        if not byte & 0x80:
            if result >= 1 << 64:
                raise WireError(f"the varint at byte {pos} does not fit 64 bits")
            return result, pos + i + 1
    raise WireError(f"the varint at byte {pos} is longer than {_MAX_VARINT_BYTES} bytes")


def iter_fields(
    buf: memoryview, start: int = 0, end: int | None = None
) -> Iterator[tuple[int, int, int | memoryview]]:
    """Yield ``(field number, wire type, value)`` of the message in ``buf[start:end]``.

    A varint's value is an int; a length-delimited field's value is a zero-copy memoryview
    whose declared length has been checked against the bytes that remain. Fixed-width
    fields are yielded as ints. Groups (deprecated, unused by MindSpore) are refused.
    """
    end = len(buf) if end is None else end
    pos = start
    while pos < end:
        tag, pos = read_varint(buf, pos, end)
        number, wire = tag >> 3, tag & 7
        if number == 0:
            raise WireError(f"field number 0 at byte {pos} (not a protobuf message)")
        if wire == VARINT:
            value, pos = read_varint(buf, pos, end)
            yield number, wire, value
        elif wire == LEN:
            size, pos = read_varint(buf, pos, end)
            if size > end - pos:
                raise WireError(
                    f"field {number} at byte {pos} declares {size} bytes but only "
                    f"{end - pos} remain",
                    True,
                )
            yield number, wire, buf[pos : pos + size]
            pos += size
        elif wire in (FIXED64, FIXED32):
            width = 8 if wire == FIXED64 else 4
            if width > end - pos:
                raise WireError(f"a fixed-width field at byte {pos} runs past the end", True)
            yield number, wire, int.from_bytes(buf[pos : pos + width], "little")
            pos += width
        else:
            raise WireError(f"unsupported wire type {wire} (field {number}) at byte {pos}")


def unpack_varints(buf: memoryview) -> list[int]:
    """The values of a packed repeated varint field."""
    out = []
    pos = 0
    while pos < len(buf):
        value, pos = read_varint(buf, pos, len(buf))
        out.append(value)
    return out


def as_int64(value: int) -> int:
    """A varint read as a two's-complement int64 (negative numbers take 10 bytes)."""
    return value - (1 << 64) if value >= 1 << 63 else value


# ---- writing --------------------------------------------------------------------------------


def varint(value: int) -> bytes:
    """The varint encoding of ``value`` (an int64 is written as its 64-bit two's complement)."""
    if value < 0:
        value += 1 << 64
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def key(number: int, wire: int) -> bytes:
    """A field's key: its number and wire type."""
    return varint((number << 3) | wire)


def length_delimited(number: int, payload: bytes | bytearray | memoryview) -> list[bytes]:
    """The parts of a length-delimited field (kept apart so big payloads are not copied)."""
    return [key(number, LEN) + varint(len(payload)), payload]  # type: ignore[list-item]
