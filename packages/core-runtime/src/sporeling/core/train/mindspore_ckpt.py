"""MindSpore's protobuf ``.ckpt`` checkpoint format, read and written without ``protobuf``.

The schema (MindSpore's ``checkpoint.proto``, proto2)::

    message Checkpoint {
      message Value {
        required string tag = 1;                   // the parameter name
        oneof value { TensorProto tensor = 2; MapTensorProto maptensor = 3; }
      }
      repeated Value value = 1;
    }
    message TensorProto {
      repeated int64 dims = 1;                     // [0] (or []) for a scalar
      required string tensor_type = 2;             // "Float32", "Int64", ..., "str"
      required bytes tensor_content = 3;           // raw little-endian bytes, C order
    }

A parameter bigger than MindSpore's slice size is written as several consecutive ``Value``
entries with the same tag whose contents are joined. A ``str`` entry (an ``append_dict``
string) holds the string as NumPy ``U`` (UTF-32-LE) bytes. MindSpore 2.x may end the file
with ``b"crc_num"`` and a 10-byte big-endian CRC-32 of everything before it; it is checked
whenever present. Encrypted files (``enc_key``) are not supported.

Reading is :mod:`.protobuf_wire`: every length is checked against the bytes left before
anything is sliced, tensors are zero-copy views of the file's bytes, and nothing in the file
is ever executed.
"""

from __future__ import annotations

import binascii
import math
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import numpy as np

from .. import dtype as _dt
from . import protobuf_wire as wire
from .serialization import CheckpointError

__all__ = [
    "looks_like_mindspore_ckpt",
    "read_mindspore_ckpt",
    "encode_mindspore_ckpt",
    "write_mindspore_ckpt",
]

#: MindSpore's tensor_type strings <-> NumPy dtypes.
NP_OF_TYPE: dict[str, np.dtype] = {
    "Int8": np.dtype(np.int8),
    "UInt8": np.dtype(np.uint8),
    "Int16": np.dtype(np.int16),
    "UInt16": np.dtype(np.uint16),
    "Int32": np.dtype(np.int32),
    "UInt32": np.dtype(np.uint32),
    "Int64": np.dtype(np.int64),
    "UInt64": np.dtype(np.uint64),
    "Float16": np.dtype(np.float16),
    "Float32": np.dtype(np.float32),
    "Float64": np.dtype(np.float64),
    "Bool": np.dtype(np.bool_),
}
if _dt.bfloat16 is not None:  # pragma: no cover - needs ml_dtypes
    NP_OF_TYPE["BFloat16"] = np.dtype(_dt.bfloat16.np)
TYPE_OF_NP: dict[np.dtype, str] = {dt: name for name, dt in NP_OF_TYPE.items()}

CRC_MARK = b"crc_num"
_CRC_TRAILER = len(CRC_MARK) + 10
_MAX_DIMS = 64
_HINT = "(a MindSpore protobuf .ckpt file)"


def looks_like_mindspore_ckpt(data: bytes | memoryview) -> bool:
    """Whether ``data`` starts like a MindSpore checkpoint (field 1, length-delimited)."""
    return bytes(data[:1]) == b"\n"


def _split_crc(path: str, data: memoryview) -> memoryview:
    """The protobuf part of the file, after checking MindSpore 2.x's CRC trailer if any."""
    if len(data) >= _CRC_TRAILER and bytes(data[-_CRC_TRAILER:-10]) == CRC_MARK:
        body = data[:-_CRC_TRAILER]
        want = int.from_bytes(data[-10:], "big")
        if binascii.crc32(body) != want:
            raise CheckpointError(
                path, f"the CRC-32 of the contents does not match the file's crc_num {_HINT}"
            )
        return body
    return data


def _tensor(path: str, tag: str, msg: memoryview) -> tuple[list[int], str, memoryview]:
    dims: list[int] = []
    ttype = content = None
    for number, kind, value in wire.iter_fields(msg):
        if number == 1 and kind == wire.VARINT:
            dims.append(wire.as_int64(value))  # type: ignore[arg-type]
        elif number == 1 and kind == wire.LEN:  # packed (proto3 writers)
            dims.extend(wire.as_int64(v) for v in wire.unpack_varints(value))  # type: ignore[arg-type]
        elif number == 2 and kind == wire.LEN:
            ttype = _text(path, f"the tensor_type of '{tag}'", value)  # type: ignore[arg-type]
        elif number == 3 and kind == wire.LEN:
            content = value
        elif number in (1, 2, 3):
            raise wire.WireError(f"field {number} of the tensor of '{tag}' has wire type {kind}")
        if len(dims) > _MAX_DIMS:
            raise CheckpointError(path, f"tensor '{tag}' declares more than {_MAX_DIMS} dims")
    if ttype is None or content is None:
        missing = "tensor_type" if ttype is None else "tensor_content"
        raise CheckpointError(path, f"the tensor of '{tag}' has no {missing} {_HINT}")
    return dims, ttype, content  # type: ignore[return-value]


def _text(path: str, what: str, raw: memoryview) -> str:
    try:
        return bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        raise CheckpointError(path, f"{what} is not UTF-8 {_HINT}") from None


def _entries(path: str, body: memoryview) -> list[tuple[str, list[int], str, memoryview]]:
    out = []
    for number, kind, value in wire.iter_fields(body):
        if number != 1:
            continue  # an unknown field of Checkpoint: skipped, as protobuf does
        if kind != wire.LEN:
            raise wire.WireError(f"Checkpoint.value has wire type {kind}, expected 2")
        tag = tensor = None
        for n, k, v in wire.iter_fields(value):  # type: ignore[arg-type]
            if n == 1 and k == wire.LEN:
                tag = _text(path, "a parameter name", v)  # type: ignore[arg-type]
            elif n == 2 and k == wire.LEN:
                tensor = v
            elif n == 3:
                raise CheckpointError(
                    path, f"entry '{tag}' is a MapParameter (maptensor), which is not supported"
                )
        if tag is None or tensor is None:
            raise CheckpointError(
                path, f"entry {len(out)} has no {'tag' if tag is None else 'tensor'} {_HINT}"
            )
        out.append((tag, *_tensor(path, tag, tensor)))  # type: ignore[arg-type]
    return out


def _array(path: str, tag: str, dims: list[int], ttype: str, chunks: list[memoryview]) -> Any:
    if ttype == "str":
        raw = b"".join(bytes(c) for c in chunks)
        if len(raw) % 4:
            raise CheckpointError(path, f"the str entry '{tag}' is not whole UTF-32 characters")
        try:
            return raw.decode("utf-32-le").rstrip("\0")
        except UnicodeDecodeError:
            raise CheckpointError(path, f"the str entry '{tag}' is not valid UTF-32") from None
    dtype = NP_OF_TYPE.get(ttype)
    if dtype is None:
        known = ", ".join(sorted(NP_OF_TYPE))
        raise CheckpointError(path, f"tensor '{tag}' has tensor_type {ttype!r}; readable: {known}")
    if any(d < 0 for d in dims):
        raise CheckpointError(path, f"tensor '{tag}' has a negative dim in {dims}")
    size = sum(len(c) for c in chunks)
    if dims in ([0], []) and size == dtype.itemsize:
        dims = []  # MindSpore writes a scalar's dims as [0] (1.8) or [] (2.x)
    need = math.prod(dims) * dtype.itemsize
    if need != size:
        raise CheckpointError(
            path,
            f"tensor '{tag}' ({ttype}, shape {tuple(dims)}) needs {need} bytes but the file "
            f"holds {size} (truncated or corrupt) {_HINT}",
        )
    buf = chunks[0] if len(chunks) == 1 else b"".join(bytes(c) for c in chunks)
    return np.frombuffer(buf, dtype=dtype).reshape(dims)


def read_mindspore_ckpt(path: str, data: bytes) -> tuple[OrderedDict[str, np.ndarray], dict]:
    """The tensors (file order) and ``str`` entries of a MindSpore ``.ckpt`` file's bytes."""
    body = _split_crc(path, memoryview(data))
    try:
        entries = _entries(path, body)
    except wire.WireError as exc:
        code = "checkpoint-truncated" if exc.truncated else "checkpoint-corrupt"
        what = "truncated" if exc.truncated else "not a well-formed"
        raise CheckpointError(
            path, f"the file is {what} MindSpore protobuf checkpoint: {exc}", code
        ) from None
    if not entries:
        raise CheckpointError(path, f"it holds no parameters {_HINT}")
    arrays: OrderedDict[str, np.ndarray] = OrderedDict()
    strings: dict[str, str] = {}
    i = 0
    while i < len(entries):
        tag, dims, ttype, _ = entries[i]
        j = i + 1  # consecutive entries with one tag are slices of one parameter
        while j < len(entries) and entries[j][0] == tag:
            if entries[j][2] != ttype:
                raise CheckpointError(path, f"the slices of '{tag}' have different tensor_types")
            j += 1
        if tag in arrays or tag in strings:
            raise CheckpointError(path, f"parameter '{tag}' appears twice {_HINT}")
        value = _array(path, tag, dims, ttype, [e[3] for e in entries[i:j]])
        if isinstance(value, str):
            strings[tag] = value
        else:
            arrays[tag] = value
        i = j
    return arrays, strings


# ---- writing --------------------------------------------------------------------------------


def _value(tag: str, dims: list[int], ttype: str, content: Any) -> list:
    tensor = [wire.key(1, wire.VARINT) + wire.varint(d) for d in dims]
    tensor += wire.length_delimited(2, ttype.encode())
    tensor += wire.length_delimited(3, content)
    tensor_size = sum(len(p) for p in tensor)
    value = wire.length_delimited(1, tag.encode())
    value.append(wire.key(2, wire.LEN) + wire.varint(tensor_size))
    value += tensor
    value_size = sum(len(p) for p in value)
    return [wire.key(1, wire.LEN) + wire.varint(value_size), *value]


def encode_mindspore_ckpt(
    arrays: Mapping[str, np.ndarray], strings: Mapping[str, str] | None = None, crc: bool = False
) -> list:
    """The parts of a ``.ckpt`` file (bytes and zero-copy views) holding ``arrays``/``strings``.

    Scalars get dims ``[0]`` as MindSpore 1.8 writes them (2.x reads both). With ``crc``,
    MindSpore 2.x's ``crc_num`` trailer is appended (MindSpore 1.8 cannot read it).
    """
    parts: list = []
    for name, arr in arrays.items():
        ttype = TYPE_OF_NP.get(arr.dtype)
        if ttype is None:
            raise TypeError(f"save_checkpoint: '{name}' has dtype {arr.dtype}, not storable")
        dims = list(arr.shape) if arr.ndim else [0]
        parts += _value(
            name, dims, ttype, np.ascontiguousarray(arr).reshape(-1).view(np.uint8).data
        )
    for name, text in (strings or {}).items():
        parts += _value(name, [0], "str", np.array(text).tobytes())
    if crc:
        value = 0
        for part in parts:
            value = binascii.crc32(part, value)
        parts.append(CRC_MARK + value.to_bytes(10, "big"))
    return parts


def write_mindspore_ckpt(
    path: str,
    arrays: Mapping[str, np.ndarray],
    metadata: Mapping[str, str],
    crc: bool,
    encryption: tuple[bytes, str] | None = None,
) -> None:
    """Write what ``save_checkpoint`` collected as a ``.ckpt`` file MindSpore loads.

    ``append_dict`` numbers become 0-d tensors (int64, float32, bool, as MindSpore's
    ``Tensor(value)`` makes them) and strings ``str`` entries; Sporeling's other metadata
    (RNG state, digests) has no place in the format and is not written. With
    ``encryption=(key, mode)`` the bytes are encrypted as MindSpore's ``enc_key`` does.
    """
    import json

    append = json.loads(metadata.get("append", "{}"))
    tensors: OrderedDict[str, np.ndarray] = OrderedDict(arrays)
    strings: dict[str, str] = {}
    for key_, value in append.items():
        if isinstance(value, str):
            strings[key_] = value
        elif isinstance(value, bool):
            tensors[key_] = np.array(value)
        elif isinstance(value, int):
            tensors[key_] = np.array(value, np.int64)
        else:
            number = float(value["float"]) if isinstance(value, dict) else value
            tensors[key_] = np.array(number, np.float32)
    parts = encode_mindspore_ckpt(tensors, strings, crc)
    if encryption is not None:  # MindSpore's AES-GCM/CBC blocks (enc_key / enc_mode)
        from .mindspore_crypto import encrypt

        parts = [encrypt(b"".join(bytes(p) for p in parts), *encryption)]
    with open(path, "wb") as f:
        for part in parts:
            f.write(part)
