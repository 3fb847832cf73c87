"""Checkpoints: ``save_checkpoint``, ``load_checkpoint``, ``load_param_into_net`` (MindSpore 1.8).

Files are in the `safetensors <https://github.com/huggingface/safetensors>`_ format: an 8-byte
little-endian header length, a JSON header (tensor names, dtypes, shapes, byte offsets and a
``__metadata__`` table of strings), then the raw little-endian tensor bytes. Nothing in the
file is code, and nothing is ever unpickled: a pickle (an old PyTorch ``.pt``, a pickled
object renamed ``.ckpt``) is refused by a format check before anything else is read.

Sporeling's metadata (every value a JSON text):

``format`` / ``format_version``
    ``"sporeling.checkpoint"`` / ``1``; a file from a newer format version is refused.
``sporeling_version``
    the version that wrote the file.
``epoch`` / ``step``
    where training was (``null`` when unknown): ``ModelCheckpoint`` writes its current epoch
    and global step; ``save_checkpoint`` takes them from ``append_dict["epoch_num"]`` /
    ``append_dict["step_num"]`` when given (MindSpore's ``append_info`` keys).
``append``
    the number/string/bool entries of ``append_dict``; Tensor entries are stored as tensors
    and listed in ``append_tensors``.
``rng_state``
    :func:`sporeling.core.random_state.get_rng_state` at save time, so a resumed run can
    restore it (:func:`load_checkpoint_metadata`).
``requires_grad``
    the names of the saved parameters that did *not* require gradients.
``tensor_sha256`` / ``header_sha256``
    the SHA-256 of every tensor's bytes, and of the metadata plus each tensor's dtype and
    shape, so that a corrupt file is detected on load.

Writes are atomic: the file is written to a temporary file in the same directory, flushed
and ``fsync``-ed, moved onto the target with ``os.replace``, and the directory is
``fsync``-ed, so a crash leaves either the old file or the new one, never a torn one.

Differences from MindSpore 1.8: the default format (safetensors; MindSpore's protobuf
``.ckpt`` files are read too, by :mod:`.mindspore_ckpt`, and written with ``format="ckpt"``),
``load_param_into_net`` returns MindSpore 2.x's ``(param_not_load, ckpt_not_load)``,
encryption (``enc_key``/``dec_key``, AES-GCM/AES-CBC, :mod:`.mindspore_crypto`) applies to
``.ckpt`` files only, and ``integrated_save`` has no effect (there is no model parallelism).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from .. import dtype as _dt
from .._version import __version__
from ..errors import check_bool as _check_bool
from ..nn.cell import Cell
from ..random_state import get_rng_state
from ..tensor import Parameter, Tensor

__all__ = [
    "save_checkpoint",
    "load_checkpoint",
    "load_param_into_net",
    "load_checkpoint_metadata",
    "CheckpointError",
    "ParameterMismatchError",
]

logger = logging.getLogger("sporeling.core.train")

FORMAT_NAME = "sporeling.checkpoint"
FORMAT_VERSION = 1
#: Name MindSpore gives its asynchronous writer thread; ModelCheckpoint waits for it.
ASYNC_THREAD_NAME = "asyn_save_ckpt"
_MAX_HEADER = 100 * 1024 * 1024  # the safetensors reference implementation's limit

_META_KEYS = (
    "format",
    "format_version",
    "sporeling_version",
    "epoch",
    "step",
    "append",
    "append_tensors",
    "rng_state",
    "requires_grad",
    "tensor_sha256",
    "header_sha256",
)

# safetensors dtype codes <-> NumPy dtypes.
_CODE_OF: dict[np.dtype, str] = {
    np.dtype(np.float64): "F64",
    np.dtype(np.float32): "F32",
    np.dtype(np.float16): "F16",
    np.dtype(np.int64): "I64",
    np.dtype(np.int32): "I32",
    np.dtype(np.int16): "I16",
    np.dtype(np.int8): "I8",
    np.dtype(np.uint64): "U64",
    np.dtype(np.uint32): "U32",
    np.dtype(np.uint16): "U16",
    np.dtype(np.uint8): "U8",
    np.dtype(np.bool_): "BOOL",
    np.dtype(np.complex64): "C64",  # safetensors has no complex128 code
}
if _dt.bfloat16 is not None:  # pragma: no cover - needs ml_dtypes
    _CODE_OF[np.dtype(_dt.bfloat16.np)] = "BF16"
_DTYPE_OF: dict[str, np.dtype] = {code: dt for dt, code in _CODE_OF.items()}


class CheckpointError(ValueError):
    """A checkpoint file that cannot be read: missing, truncated, corrupt or not ours.

    ``path`` is the file, ``reason`` what is wrong, and ``code`` a stable kebab-case name
    (``checkpoint-not-found``, ``checkpoint-truncated``, ``checkpoint-corrupt``,
    ``checkpoint-not-safetensors``, ``checkpoint-pickle-refused``,
    ``checkpoint-newer-format``, ``checkpoint-encrypted``).
    """

    def __init__(self, path: str, reason: str, code: str = "checkpoint-corrupt") -> None:
        self.path = path
        self.reason = reason
        self.code = code
        super().__init__(f"checkpoint '{path}': {reason} [{code}]")


class ParameterMismatchError(RuntimeError, ValueError):
    """``load_param_into_net``: a checkpoint value does not fit the network's parameter.

    A ``RuntimeError`` as in MindSpore, and a ``ValueError`` as Sporeling's argument errors.
    """


# ---- saving ---------------------------------------------------------------------------------


def _check_file_name(fn: str, value: Any) -> str:
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(
            f"{fn}: argument 'ckpt_file_name' expected a str path, got {type(value).__name__}"
        )
    name = os.fspath(value)
    if not isinstance(name, str) or not name:
        raise ValueError(f"{fn}: argument 'ckpt_file_name' expected a non-empty path, got {name!r}")
    return name


def _reject_encryption(fn: str, arg: str, key: Any, mode: Any) -> None:
    if not isinstance(mode, str):
        raise TypeError(f"{fn}: argument '{arg[:3]}_mode' expected a str, got {mode!r}")
    if key is not None:
        raise ValueError(
            f"{fn}: argument '{arg}' is not supported for safetensors checkpoints; MindSpore's "
            "AES-GCM/AES-CBC encryption applies to format='ckpt' files. Pass None and protect "
            "the file with file-system permissions or an encrypted volume instead"
        )


def _host_array(fn: str, name: str, value: Any) -> np.ndarray:
    if not isinstance(value, Tensor):
        raise TypeError(
            f"{fn}: the data of '{name}' expected a Parameter or Tensor, got {type(value).__name__}"
        )
    arr = value.asnumpy()
    if not arr.flags.c_contiguous:  # (np.ascontiguousarray would make 0-d arrays 1-d)
        arr = arr.copy(order="C")
    if arr.dtype not in _CODE_OF:
        hint = ""
        if arr.dtype == np.complex128:  # safetensors defines C64 only
            hint = (
                " (safetensors has complex64 only: cast it, or save its real and imaginary parts)"
            )
        raise TypeError(
            f"{fn}: '{name}' has dtype {arr.dtype}, which checkpoints cannot store{hint}"
        )
    return arr


def _collect(fn: str, save_obj: Any) -> tuple[OrderedDict[str, np.ndarray], list[str], dict]:
    """Name -> host array for what ``save_obj`` holds, the frozen names, and string extras."""
    arrays: OrderedDict[str, np.ndarray] = OrderedDict()
    frozen: list[str] = []
    strings: dict[str, str] = {}

    def add(name: Any, value: Any, owner: str) -> None:
        if not isinstance(name, str) or not name:
            raise TypeError(f"{fn}: parameter names must be non-empty str, got {name!r}")
        if name in arrays:
            raise ValueError(
                f"{fn}: two different parameters of {owner} are both named '{name}'; "
                "a checkpoint needs unique names (give them names, or use auto_prefix=True)"
            )
        arrays[name] = _host_array(fn, name, value)
        if isinstance(value, Parameter) and not value.requires_grad:
            frozen.append(name)

    if isinstance(save_obj, Cell):
        for _, param in save_obj.parameters_and_names():
            add(param.name, param, f"the {type(save_obj).__name__}")
    elif isinstance(save_obj, Mapping):
        for name, value in save_obj.items():
            if isinstance(value, str):
                strings[name] = value
            else:
                add(name, value, "the dict")
    elif isinstance(save_obj, (list, tuple)):
        for item in save_obj:
            if isinstance(item, Parameter):
                add(item.name, item, "the list")
            elif isinstance(item, Mapping) and set(item) >= {"name", "data"}:
                add(item["name"], item["data"], "the list")
            else:
                raise TypeError(
                    f"{fn}: argument 'save_obj' as a list expected Parameters or dicts "
                    f'{{"name": str, "data": Tensor}}, got an element {item!r:.80}'
                )
    else:
        raise TypeError(
            f"{fn}: argument 'save_obj' expected a Cell, a list or a dict, "
            f"got {type(save_obj).__name__}"
        )
    return arrays, frozen, strings


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def _header_digest(metadata: Mapping[str, str], tensors: Mapping[str, tuple[str, list]]) -> str:
    body = {
        "metadata": {k: v for k, v in metadata.items() if k != "header_sha256"},
        "tensors": {name: [code, list(shape)] for name, (code, shape) in tensors.items()},
    }
    return hashlib.sha256(_canonical(body).encode()).hexdigest()


def _tensor_digest(data: np.ndarray | bytes | bytearray) -> str:
    if isinstance(data, np.ndarray):  # contiguous, so its bytes are the file's bytes
        return hashlib.sha256(data.reshape(-1).view(np.uint8).data).hexdigest()
    return hashlib.sha256(data).hexdigest()


def _json_number(fn: str, key: str, value: Any) -> Any:
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        if not math.isfinite(value):
            return {"float": repr(value)}  # JSON has no inf/nan
        return value
    if isinstance(value, str):
        return value
    raise TypeError(
        f"{fn}: append_dict['{key}'] expected an int, float, bool, str, Parameter or Tensor, "
        f"got {type(value).__name__}"
    )


def _build(
    fn: str,
    save_obj: Any,
    append_dict: Any,
    epoch: int | None,
    step: int | None,
) -> tuple[OrderedDict[str, np.ndarray], dict[str, str]]:
    arrays, frozen, strings = _collect(fn, save_obj)
    append: dict[str, Any] = dict(strings)
    append_tensors: list[str] = []
    if append_dict is not None:
        if not isinstance(append_dict, Mapping):
            raise TypeError(
                f"{fn}: argument 'append_dict' expected a dict, got {type(append_dict).__name__}"
            )
        for key, value in append_dict.items():
            if not isinstance(key, str) or not key:
                raise TypeError(f"{fn}: append_dict keys must be non-empty str, got {key!r}")
            if key in arrays:
                raise ValueError(
                    f"{fn}: append_dict key '{key}' is also the name of a saved parameter"
                )
            if isinstance(value, Tensor):
                arrays[key] = _host_array(fn, key, value)
                append_tensors.append(key)
            else:
                append[key] = _json_number(fn, key, value)
        if epoch is None and type(append.get("epoch_num")) is int:
            epoch = append["epoch_num"]
        if step is None and type(append.get("step_num")) is int:
            step = append["step_num"]
    metadata = {
        "format": json.dumps(FORMAT_NAME),
        "format_version": json.dumps(FORMAT_VERSION),
        "sporeling_version": json.dumps(__version__),
        "epoch": json.dumps(epoch),
        "step": json.dumps(step),
        "append": _canonical(append),
        "append_tensors": json.dumps(append_tensors),
        "rng_state": _canonical(get_rng_state()),
        "requires_grad": json.dumps({"frozen": frozen}),
        # A list of [name, digest] pairs in save order (safetensors sorts its table).
        "tensor_sha256": _canonical([[n, _tensor_digest(a)] for n, a in arrays.items()]),
    }
    table = {n: (_CODE_OF[a.dtype], list(a.shape)) for n, a in arrays.items()}
    metadata["header_sha256"] = json.dumps(_header_digest(metadata, table))
    return arrays, metadata


def _write_payload(path: str, arrays: Mapping[str, np.ndarray], metadata: dict[str, str]) -> None:
    """Serialise into ``path`` (a fresh temporary file) with safetensors."""
    from safetensors.numpy import save_file

    save_file(dict(arrays), path, metadata=metadata)


def _fsync_dir(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory handles
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - some file systems refuse fsync on directories
        pass
    finally:
        os.close(fd)


def _remove_stale_temps(directory: str, base: str) -> None:
    """Delete the temporary files of earlier saves to ``base`` that were killed midway
    (their process is gone): without this each killed save leaves a full-size file behind.
    Names carry the writer's pid; a name without one is removed once an hour old."""
    prefix = f".{base}."
    try:
        names = [n for n in os.listdir(directory) if n.startswith(prefix) and n.endswith(".tmp")]
    except OSError:
        return
    for name in names:
        pid_text = name[len(prefix) :].split(".", 1)[0]
        full = os.path.join(directory, name)
        if pid_text.isdigit():
            pid = int(pid_text)
            if pid == os.getpid():
                continue  # a save of this process (another thread) may be writing it
            try:
                os.kill(pid, 0)
                continue  # its writer still runs
            except ProcessLookupError:
                pass
            except OSError:  # e.g. another user's live process
                continue
        else:
            with contextlib.suppress(OSError):
                if time.time() - os.stat(full).st_mtime < 3600:
                    continue
        with contextlib.suppress(OSError):
            os.unlink(full)


def _atomic_write(
    path: str, arrays: Mapping[str, np.ndarray], metadata: dict[str, str], write: Any = None
) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    base = os.path.basename(path)
    _remove_stale_temps(directory, base)
    fd, tmp = tempfile.mkstemp(prefix=f".{base}.{os.getpid()}.", suffix=".tmp", dir=directory)
    os.close(fd)
    try:
        (write or _write_payload)(tmp, arrays, metadata)
        with open(tmp, "rb+") as f:
            f.flush()
            os.fsync(f.fileno())
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)  # mkstemp makes 0600; give the usual file mode
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(directory)


def _save(
    fn: str,
    save_obj: Any,
    ckpt_file_name: Any,
    integrated_save: Any,
    async_save: Any,
    append_dict: Any,
    enc_key: Any,
    enc_mode: Any,
    epoch: int | None = None,
    step: int | None = None,
    fmt: Any = "safetensors",
    crc_check: Any = False,
) -> str:
    name = _check_file_name(fn, ckpt_file_name)
    crc = _check_bool(fn, "crc_check", crc_check)
    encryption = None
    if enc_key is not None and fmt == "ckpt":  # MindSpore's AES-GCM/CBC .ckpt encryption
        from .mindspore_crypto import check_key

        check_key(fn, "enc_key", enc_key, enc_mode)
        if crc:
            raise ValueError(f"{fn}: 'enc_key' and 'crc_check' cannot be used together")
        encryption = (bytes(enc_key), enc_mode)
    else:
        _reject_encryption(fn, "enc_key", enc_key, enc_mode)
    write = _payload_writer(fn, fmt, crc, encryption)
    _check_bool(fn, "integrated_save", integrated_save)
    asynchronous = _check_bool(fn, "async_save", async_save)
    if not name.endswith((".ckpt", ".safetensors")):
        name += ".ckpt"  # MindSpore appends the suffix too
    name = os.path.abspath(name)
    arrays, metadata = _build(fn, save_obj, append_dict, epoch, step)
    if not os.path.isdir(os.path.dirname(name)):
        raise FileNotFoundError(f"{fn}: the directory of '{name}' does not exist")
    if asynchronous:
        # The arrays may be the live buffers of parameters the next step updates in place.
        snapshot = OrderedDict((k, v.copy()) for k, v in arrays.items())
        thread = threading.Thread(
            target=_atomic_write, args=(name, snapshot, metadata, write), name=ASYNC_THREAD_NAME
        )
        thread.start()
    else:
        _atomic_write(name, arrays, metadata, write)
    return name


def _payload_writer(fn: str, fmt: Any, crc_check: bool, encryption: Any = None) -> Any:
    """The function that writes the file's bytes for ``format`` (safetensors or MindSpore's)."""
    if fmt == "safetensors":
        if crc_check:
            raise ValueError(
                f"{fn}: argument 'crc_check' applies to format='ckpt'; safetensors checkpoints "
                "always carry SHA-256 digests"
            )
        return _write_payload
    if fmt == "ckpt":
        from .mindspore_ckpt import write_mindspore_ckpt

        return lambda path, arrays, metadata: write_mindspore_ckpt(
            path, arrays, metadata, crc_check, encryption
        )
    raise ValueError(f"{fn}: argument 'format' expected 'safetensors' or 'ckpt', got {fmt!r}")


def save_checkpoint(
    save_obj: Any,
    ckpt_file_name: str,
    integrated_save: bool = True,
    async_save: bool = False,
    append_dict: dict[str, Any] | None = None,
    enc_key: bytes | None = None,
    enc_mode: str = "AES-GCM",
    crc_check: bool = False,
    format: str = "safetensors",
) -> None:
    """Save a network's parameters (or a list of them) to a safetensors checkpoint file.

    ``save_obj`` is a Cell (every parameter in its tree under ``param.name`` — for a
    ``TrainOneStepCell`` that includes the optimizer's state and step), a list of Parameters
    or of ``{"name": str, "data": Tensor}`` dicts, or a dict as :func:`load_checkpoint`
    returns. ``append_dict`` adds int/float/bool/str values (kept in the metadata) and
    Tensors (kept as tensors). ``".ckpt"`` is appended to a name without ``.ckpt`` or
    ``.safetensors``, as MindSpore does. The write is atomic; ``async_save=True`` writes a
    snapshot on a background thread. The global RNG state is saved with the parameters.

    ``format="ckpt"`` writes MindSpore's protobuf ``.ckpt`` instead (MindSpore 1.8 and 2.x
    load it; ``crc_check=True`` adds 2.x's CRC trailer, which 1.8 cannot read); it keeps
    the tensors and ``append_dict`` entries but not Sporeling's metadata (RNG state,
    digests, which parameters are frozen).

    >>> import os, tempfile
    >>> from sporeling.core import Parameter, Tensor, load_checkpoint, save_checkpoint
    >>> path = os.path.join(tempfile.mkdtemp(), "w.ckpt")
    >>> save_checkpoint([{"name": "w", "data": Tensor([1.0, 2.0])}], path)
    >>> load_checkpoint(path)["w"].asnumpy().tolist()
    [1.0, 2.0]
    """
    _save(
        "save_checkpoint",
        save_obj,
        ckpt_file_name,
        integrated_save,
        async_save,
        append_dict,
        enc_key,
        enc_mode,
        fmt=format,
        crc_check=crc_check,
    )


# ---- reading --------------------------------------------------------------------------------


def _sniff(path: str, data: bytes) -> None:
    """Refuse files that are obviously not safetensors, before parsing anything."""
    if data[:1] == b"\x80" and data[1:2] and 2 <= data[1] <= 5 and data[-1:] == b".":
        raise CheckpointError(
            path,
            f"the file is a Python pickle (protocol {data[1]}), e.g. a PyTorch .pt/.pth file or "
            "a pickled object; Sporeling never unpickles (a pickle can run arbitrary code). "
            "Convert it to safetensors with the tool that wrote it",
            "checkpoint-pickle-refused",
        )
    if data[:4] == b"PK\x03\x04":
        raise CheckpointError(
            path,
            "the file is a zip archive (PyTorch's torch.save format, which holds a pickle); "
            "Sporeling never unpickles. Convert it to safetensors with the tool that wrote it",
            "checkpoint-pickle-refused",
        )


def _not_safetensors(path: str, data: bytes, why: str) -> CheckpointError:
    hint = ""
    if data[:1] == b"\n":
        hint = (
            " It may be a MindSpore protobuf .ckpt; export its parameters to safetensors "
            "(e.g. with MindSpore 2.x: ms.save_checkpoint(..., format='safetensors'))."
        )
    elif data[:1] in (b"c", b"(", b"]", b"}"):
        hint = " It may be a text-protocol Python pickle, which Sporeling never loads."
    return CheckpointError(
        path, f"not a safetensors checkpoint: {why}.{hint}", "checkpoint-not-safetensors"
    )


class _Checkpoint:
    """A verified file: arrays by name (file order), parsed metadata, whether it is ours."""

    def __init__(self, arrays: dict[str, np.ndarray], meta: dict[str, Any], ours: bool) -> None:
        self.arrays = arrays
        self.meta = meta
        self.ours = ours


def _is_mindspore_ckpt(data: bytes) -> bool:
    """A MindSpore protobuf checkpoint, not a safetensors file whose header length ends 0x0A."""
    n = int.from_bytes(data[:8], "little")
    return data[:1] == b"\n" and not (len(data) > 8 and 0 < n <= _MAX_HEADER and data[8:9] == b"{")


def _parse_header(path: str, data: bytes) -> tuple[int, dict[str, Any]]:
    size = len(data)
    n = int.from_bytes(data[:8], "little")
    if not (size > 8 and 0 < n <= _MAX_HEADER and data[8:9] == b"{"):
        _sniff(path, data)  # a pickle or zip gets its own message; it is never unpickled
        if size < 8:
            raise CheckpointError(
                path,
                f"the file is {size} bytes long, too short to hold a safetensors header; it is "
                "empty or truncated",
                "checkpoint-truncated",
            )
        if n == 0 or n > _MAX_HEADER:
            raise _not_safetensors(path, data, f"its first 8 bytes give a header length of {n}")
        raise _not_safetensors(path, data, "the header does not start with '{'")
    if 8 + n > size:
        raise CheckpointError(
            path,
            f"the file is truncated: its header needs {n} bytes but only {size - 8} follow",
            "checkpoint-truncated",
        )
    try:
        header = json.loads(data[8 : 8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(path, f"the header is not valid UTF-8 JSON ({exc})") from None
    except RecursionError:  # e.g. [[[[...]]]] thousands deep: no header of ours looks so
        raise CheckpointError(path, "the header is JSON nested too deeply to be one") from None
    if not isinstance(header, dict):
        raise CheckpointError(path, "the header is not a JSON object")
    return n, header


def _check_table(path: str, size: int, n: int, header: dict[str, Any]) -> dict[str, Any]:
    """Validate the tensor table (dtypes, shapes, contiguous offsets); return it."""
    table = {k: v for k, v in header.items() if k != "__metadata__"}
    spans = []
    for name, info in table.items():
        ok = (
            isinstance(info, dict)
            and isinstance(info.get("dtype"), str)
            and isinstance(info.get("shape"), list)
            and all(type(d) is int and d >= 0 for d in info["shape"])
            and isinstance(info.get("data_offsets"), list)
            and len(info["data_offsets"]) == 2
            and all(type(o) is int and o >= 0 for o in info["data_offsets"])
        )
        if not ok:
            raise CheckpointError(path, f"the header entry of tensor '{name}' is malformed")
        if info["dtype"] not in _DTYPE_OF:
            known = ", ".join(sorted(_DTYPE_OF))
            raise CheckpointError(
                path, f"tensor '{name}' has dtype {info['dtype']!r}; readable dtypes: {known}"
            )
        begin, end = info["data_offsets"]
        need = math.prod(info["shape"]) * _DTYPE_OF[info["dtype"]].itemsize
        if end - begin != need:
            raise CheckpointError(
                path,
                f"tensor '{name}' ({info['dtype']}, shape {tuple(info['shape'])}) needs {need} "
                f"bytes but its offsets span {end - begin}",
            )
        spans.append((begin, end, name))
    spans.sort()
    pos = 0
    for begin, end, name in spans:
        if begin != pos:
            raise CheckpointError(path, f"tensor '{name}' does not start where the previous ends")
        pos = end
    have = size - 8 - n
    if pos > have:
        raise CheckpointError(
            path,
            f"the file is truncated: the header declares {pos} bytes of tensor data but only "
            f"{have} follow",
            "checkpoint-truncated",
        )
    if pos < have:
        raise CheckpointError(
            path, f"{have - pos} unexpected bytes follow the tensor data (a damaged file?)"
        )
    return table


def _parse_meta(path: str, raw: Any, table: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    if raw is None:
        return {}, False
    if not isinstance(raw, dict) or not all(isinstance(v, str) for v in raw.values()):
        raise CheckpointError(path, "the header's __metadata__ is not a table of strings")
    if not any(k in raw for k in _META_KEYS):
        return {}, False  # a safetensors file written by another tool
    missing = [k for k in _META_KEYS if k not in raw]
    if missing:
        raise CheckpointError(path, f"the Sporeling metadata lacks {', '.join(missing)}")
    meta: dict[str, Any] = {}
    for key in _META_KEYS:
        try:
            meta[key] = json.loads(raw[key])
        except (json.JSONDecodeError, RecursionError):
            raise CheckpointError(path, f"the metadata entry '{key}' is not valid JSON") from None
    if meta["format"] != FORMAT_NAME:
        raise CheckpointError(path, f"the metadata names format {meta['format']!r}")
    version = meta["format_version"]
    if type(version) is not int:
        raise CheckpointError(path, f"the format version {version!r} is not an int")
    if version > FORMAT_VERSION:
        raise CheckpointError(
            path,
            f"it was written in checkpoint format version {version} by Sporeling "
            f"{meta['sporeling_version']}; this Sporeling ({__version__}) reads versions up to "
            f"{FORMAT_VERSION}: upgrade sporeling-core-runtime",
            "checkpoint-newer-format",
        )
    shapes = {name: (info["dtype"], info["shape"]) for name, info in table.items()}
    if _header_digest(raw, shapes) != meta["header_sha256"]:
        raise CheckpointError(
            path, "the header's SHA-256 does not match: the metadata or tensor table is corrupt"
        )
    pairs = meta["tensor_sha256"]
    ok = isinstance(pairs, list) and all(
        isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in pairs
    )
    digests = dict(pairs) if ok else {}
    if not ok or len(digests) != len(pairs) or set(digests) != set(table):
        raise CheckpointError(path, "the tensor digests do not name the file's tensors")
    meta["tensor_sha256"] = digests
    meta["order"] = [p[0] for p in pairs]
    return meta, True


def _read(path: str, data: bytes) -> _Checkpoint:
    if _is_mindspore_ckpt(data):
        from .mindspore_ckpt import read_mindspore_ckpt

        arrays, strings = read_mindspore_ckpt(path, data)
        return _Checkpoint(dict(arrays), {"append": strings}, False)
    n, header = _parse_header(path, data)
    table = _check_table(path, len(data), n, header)
    meta, ours = _parse_meta(path, header.get("__metadata__"), table)
    from safetensors import deserialize

    try:
        views = deserialize(data)
    except Exception as exc:  # safetensors' own checks; the table checks above come first
        raise CheckpointError(path, f"safetensors cannot read it: {exc}") from None
    arrays: dict[str, np.ndarray] = {}
    for name, view in views:
        if ours and _tensor_digest(view["data"]) != meta["tensor_sha256"][name]:
            raise CheckpointError(
                path, f"the bytes of tensor '{name}' are corrupt (SHA-256 mismatch)"
            )
        dtype = _DTYPE_OF[table[name]["dtype"]]  # validated by _check_table
        arrays[name] = np.frombuffer(view["data"], dtype=dtype).reshape(view["shape"])
    order = meta["order"] if ours else sorted(table, key=lambda k: table[k]["data_offsets"])
    return _Checkpoint({k: arrays[k] for k in order}, meta, ours)


def _open(fn: str, ckpt_file_name: Any, dec_key: Any = None, dec_mode: Any = None) -> _Checkpoint:
    path = _check_file_name(fn, ckpt_file_name)
    if not os.path.exists(path):
        raise CheckpointError(path, "the file does not exist", "checkpoint-not-found")
    if os.path.isdir(path):
        raise CheckpointError(path, "it is a directory, not a file", "checkpoint-not-found")
    with open(path, "rb") as f:
        data = f.read()
    from .mindspore_crypto import decrypt, is_encrypted

    if dec_key is not None:
        if not is_encrypted(data):
            raise CheckpointError(
                path,
                "argument 'dec_key' is not supported for this file: it is not an encrypted "
                "MindSpore checkpoint (safetensors checkpoints are never encrypted)",
            )
        data = decrypt(path, data, dec_key, dec_mode)
    elif is_encrypted(data):
        raise CheckpointError(
            path,
            f"it is a MindSpore checkpoint encrypted with {is_encrypted(data)}; pass dec_key "
            "(and dec_mode) to load_checkpoint",
            "checkpoint-encrypted",
        )
    return _read(path, data)


def load_checkpoint_metadata(ckpt_file_name: str) -> dict[str, Any]:
    """What a checkpoint says besides its tensors (the file is fully verified first).

    Returns ``{"format_version", "sporeling_version", "epoch", "step", "append",
    "rng_state", "tensors"}``; ``tensors`` maps each name to ``(shape, dtype name)``. For a
    safetensors file written by another tool only ``tensors`` is filled. Restore the RNG
    for an exact resume with ``random_state.set_rng_state(meta["rng_state"])``.
    """
    ckpt = _open("load_checkpoint_metadata", ckpt_file_name)
    meta = ckpt.meta
    append = {k: _from_json(v) for k, v in meta.get("append", {}).items()}
    return {
        "format_version": meta.get("format_version"),
        "sporeling_version": meta.get("sporeling_version"),
        "epoch": meta.get("epoch"),
        "step": meta.get("step"),
        "append": append,
        "rng_state": meta.get("rng_state"),
        "tensors": {
            k: (tuple(a.shape), _dt.from_numpy(a.dtype).name) for k, a in ckpt.arrays.items()
        },
    }


def _from_json(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"float"}:
        return float(value["float"])
    return value


def _check_prefix(fn: str, arg: str, prefix: Any) -> tuple[str, ...]:
    if prefix is None:
        return ()
    items = (prefix,) if isinstance(prefix, str) else prefix
    if not isinstance(items, (list, tuple)) or not all(isinstance(p, str) for p in items):
        raise TypeError(
            f"{fn}: argument '{arg}' expected a str or a list/tuple of str, got {prefix!r}"
        )
    if not items or any(not p for p in items):
        raise ValueError(f"{fn}: argument '{arg}' must not be empty or hold empty strings")
    return tuple(items)


def load_checkpoint(
    ckpt_file_name: str,
    net: Cell | None = None,
    strict_load: bool = False,
    filter_prefix: str | list[str] | tuple[str, ...] | None = None,
    dec_key: bytes | None = None,
    dec_mode: str = "AES-GCM",
    specify_prefix: str | list[str] | tuple[str, ...] | None = None,
) -> dict[str, Any]:
    """Read a checkpoint: ``{name: Parameter}`` (string ``append_dict`` entries stay str).

    The file is verified first (a missing, truncated, corrupt or pickle file raises
    :class:`CheckpointError`, a ``ValueError``). Names starting with ``specify_prefix`` (if
    given) and not with ``filter_prefix`` are kept; an empty result raises ``ValueError``
    as in MindSpore. With ``net``, the parameters are also loaded into it
    (:func:`load_param_into_net` with ``strict_load``). Numeric ``append_dict`` entries come
    back as 0-d Parameters, as MindSpore stores them.
    """
    fn = "load_checkpoint"
    if net is not None and not isinstance(net, Cell):
        raise TypeError(f"{fn}: argument 'net' expected a Cell or None, got {type(net).__name__}")
    strict = _check_bool(fn, "strict_load", strict_load)
    if dec_key is not None:
        from .mindspore_crypto import check_key

        check_key(fn, "dec_key", dec_key, dec_mode)
    else:
        _reject_encryption(fn, "dec_key", dec_key, dec_mode)
    keep_only = _check_prefix(fn, "specify_prefix", specify_prefix)
    drop = _check_prefix(fn, "filter_prefix", filter_prefix)

    def wanted(name: str) -> bool:
        if keep_only and not name.startswith(keep_only):
            return False
        return not (drop and name.startswith(drop))

    ckpt = _open(fn, ckpt_file_name, dec_key, dec_mode)
    frozen = set(ckpt.meta.get("requires_grad", {}).get("frozen", ()))
    out: dict[str, Any] = {}
    for name, arr in ckpt.arrays.items():
        if wanted(name):
            out[name] = Parameter(np.array(arr), name=name, requires_grad=name not in frozen)
    for key, value in ckpt.meta.get("append", {}).items():
        if wanted(key):
            value = _from_json(value)
            out[key] = value if isinstance(value, str) else Parameter(Tensor(value), name=key)
    if not out:
        raise ValueError(
            f"{fn}: the loaded parameter dict of '{ckpt_file_name}' is empty after "
            f"filter_prefix={filter_prefix!r} and specify_prefix={specify_prefix!r}; check them"
        )
    if net is not None:
        load_param_into_net(net, out, strict)
    return out


# ---- loading into a network -----------------------------------------------------------------

_FLOATS = {np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)}
_INTS = {np.dtype(np.int8), np.dtype(np.int16), np.dtype(np.int32), np.dtype(np.int64)}


def _update_param(
    param: Parameter, new: Any, strict: bool, plan: list[tuple[Parameter, np.ndarray]]
) -> None:
    """Validate ``new`` for ``param`` and add the (converted) value to ``plan``; nothing is
    assigned here, so a later mismatch leaves the network untouched."""
    fn = "load_param_into_net"
    if not isinstance(new, Tensor):
        raise ParameterMismatchError(
            f"{fn}: '{param.name}' in the checkpoint is a {type(new).__name__} (an append_dict "
            f"entry), not a tensor, so it cannot be loaded into the network's parameter"
        )
    if tuple(new.shape) != tuple(param.shape):
        raise ParameterMismatchError(
            f"{fn}: parameter '{param.name}' has shape {tuple(param.shape)} in the network but "
            f"{tuple(new.shape)} in the checkpoint; is it the checkpoint of this network (same "
            "layer sizes, number of classes...)?"
        )
    src = new.asnumpy()
    want = param.dtype.np
    if src.dtype != want:
        pair = {src.dtype, np.dtype(want)}
        if strict or not (pair <= _FLOATS or pair <= _INTS):
            raise ParameterMismatchError(
                f"{fn}: parameter '{param.name}' has dtype {param.dtype} in the network but "
                f"{_dt.from_numpy(src.dtype)} in the checkpoint"
                + ("" if strict else "; only float<->float and int<->int are converted")
            )
        logger.warning(
            "load_param_into_net: converting '%s' from %s to %s",
            param.name,
            src.dtype,
            np.dtype(want),
        )
        src = src.astype(want)
    plan.append((param, src))


def load_param_into_net(
    net: Cell, parameter_dict: dict[str, Any], strict_load: bool = False
) -> tuple[list[str], list[str]]:
    """Copy checkpoint values into ``net``'s parameters by name, in place.

    Returns MindSpore 2.x's ``(param_not_load, ckpt_not_load)``: the network's parameters
    that got no value, and the checkpoint's entries that went nowhere (MindSpore 1.8
    returned only the first list). A shape or dtype that does not fit raises
    :class:`ParameterMismatchError` naming the parameter. Without ``strict_load``, floating
    (or integer) values are converted to the parameter's dtype, and when names differ by a
    common prefix (e.g. a checkpoint of a wrapped network) the prefix is stripped, as in
    MindSpore.
    """
    fn = "load_param_into_net"
    if not isinstance(net, Cell):
        raise TypeError(f"{fn}: argument 'net' expected a Cell, got {type(net).__name__}")
    if not isinstance(parameter_dict, Mapping):
        raise TypeError(
            f"{fn}: argument 'parameter_dict' expected a dict, got {type(parameter_dict).__name__}"
        )
    for key, value in parameter_dict.items():
        if not isinstance(key, str) or not isinstance(value, (Tensor, str)):
            raise TypeError(
                f"{fn}: argument 'parameter_dict' expected str keys and Parameter (or str) "
                f"values, got {key!r}: {type(value).__name__}"
            )
    strict = _check_bool(fn, "strict_load", strict_load)
    params = [p for _, p in net.parameters_and_names()]
    used: set[str] = set()
    param_not_load: list[str] = []
    plan: list[tuple[Parameter, np.ndarray]] = []  # all validated before any is assigned
    for param in params:
        if param.name in parameter_dict:
            _update_param(param, parameter_dict[param.name], strict, plan)
            used.add(param.name)
        else:
            param_not_load.append(param.name)
    if param_not_load and not strict:
        _load_with_prefix(params, parameter_dict, param_not_load, used, plan)
    for param, src in plan:
        param.set_data(Tensor.from_numpy(src))  # set_data copies
    if param_not_load:
        logger.warning(
            "%s: %d parameters of the network were not loaded: %s",
            fn,
            len(param_not_load),
            param_not_load,
        )
    ckpt_not_load = [k for k in parameter_dict if k not in used]
    return param_not_load, ckpt_not_load


def _load_with_prefix(
    params: Iterable[Parameter],
    parameter_dict: Mapping[str, Any],
    param_not_load: list[str],
    used: set[str],
    plan: list[tuple[Parameter, np.ndarray]],
) -> None:
    """MindSpore's fallback: find a prefix P so that P + name is in the checkpoint."""
    params = list(params)
    tried: set[str] = set()
    while param_not_load:
        prefix = None
        for missing in param_not_load:
            for key in parameter_dict:
                if key.endswith(missing) and key != missing:
                    candidate = key[: -len(missing)]
                    if candidate not in tried:
                        prefix = candidate
                        break
            if prefix is not None:
                break
        if prefix is None:
            return
        tried.add(prefix)
        logger.warning("load_param_into_net: removing prefix '%s' and loading again", prefix)
        for param in params:
            key = prefix + param.name
            if param.name in param_not_load and key in parameter_dict:
                _update_param(param, parameter_dict[key], False, plan)
                param_not_load.remove(param.name)
                used.add(key)
