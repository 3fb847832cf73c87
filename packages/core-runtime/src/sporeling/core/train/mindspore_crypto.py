"""MindSpore's encrypted ``.ckpt`` files (``enc_key`` / ``dec_key``), on ``cryptography``.

MindSpore encrypts the protobuf bytes in blocks of 64 MiB; each block is written as::

    AES-GCM: magic 0x7F3A5ED8 | tag (16) | n | iv_len | iv (16) | cipher_len | cipher
    AES-CBC: magic 0x7F3A5ED9 | n | iv_len | iv (16) | cipher_len | cipher (PKCS#7)

(little-endian int32 lengths; ``n`` is the byte count from ``iv_len`` to the end of the
block; AES-GCM uses the IV's first 12 bytes and no associated data). The key (16, 24 or 32
bytes) is used as is. Every length is checked against the bytes left, and a wrong key or a
changed byte is a :class:`CheckpointError` (GCM's tag fails; CBC's padding usually does).
``cryptography`` is imported only here (the ``crypto`` extra).
"""

from __future__ import annotations

import os
from typing import Any

from .serialization import CheckpointError

__all__ = ["MODES", "is_encrypted", "decrypt", "encrypt", "check_key"]

MAGIC = {"AES-GCM": b"\xd8\x5e\x3a\x7f", "AES-CBC": b"\xd9\x5e\x3a\x7f"}
MODES = tuple(MAGIC)
BLOCK = 64 * 1024 * 1024
_TAG, _IV = 16, 16


def _backend() -> Any:
    try:
        from cryptography.hazmat.primitives import padding
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    except ImportError:
        raise ImportError(
            "encrypted checkpoints need the 'cryptography' package: pip install "
            "'sporeling-core-runtime[crypto]'"
        ) from None
    return padding, Cipher, algorithms, modes, AESGCM


def check_key(fn: str, arg: str, key: Any, mode: Any) -> None:
    """A bytes key of 16, 24 or 32 bytes and a mode of ``MODES``."""
    if not isinstance(mode, str) or mode not in MODES:
        raise ValueError(f"{fn}: argument '{arg[:3]}_mode' expected one of {MODES}, got {mode!r}")
    if not isinstance(key, (bytes, bytearray)) or len(key) not in (16, 24, 32):
        raise ValueError(
            f"{fn}: argument '{arg}' expected bytes of length 16, 24 or 32 (an AES key), got "
            f"{type(key).__name__}" + (f" of length {len(key)}" if hasattr(key, "__len__") else "")
        )


def is_encrypted(data: bytes) -> str | None:
    """The mode whose magic number starts ``data``, or None."""
    for mode, magic in MAGIC.items():
        if data[:4] == magic:
            return mode
    return None


def _int(path: str, data: memoryview, pos: int) -> int:
    if pos + 4 > len(data):
        raise CheckpointError(path, "the encrypted file is truncated", "checkpoint-truncated")
    return int.from_bytes(data[pos : pos + 4], "little")


def decrypt(path: str, data: bytes, key: bytes, mode: str) -> bytes:
    """The protobuf bytes of an encrypted ``.ckpt`` (every block checked)."""
    padding, Cipher, algorithms, modes, AESGCM = _backend()
    view = memoryview(data)
    out = []
    pos = 0
    while pos < len(view):
        if bytes(view[pos : pos + 4]) != MAGIC[mode]:
            found = is_encrypted(bytes(view[pos : pos + 4]))
            why = (
                f"it is encrypted with {found}, not {mode}" if found else "a block header is wrong"
            )
            raise CheckpointError(path, f"cannot decrypt it with dec_mode={mode!r}: {why}")
        pos += 4
        tag = b""
        if mode == "AES-GCM":
            if pos + _TAG > len(view):
                raise CheckpointError(
                    path, "the encrypted file is truncated", "checkpoint-truncated"
                )
            tag = bytes(view[pos : pos + _TAG])
            pos += _TAG
        n = _int(path, view, pos)
        pos += 4
        end = pos + n
        if n < 8 + _IV or end > len(view):
            raise CheckpointError(
                path,
                f"an encrypted block declares {n} bytes but {len(view) - pos} remain",
                "checkpoint-truncated",
            )
        iv_len = _int(path, view, pos)
        if iv_len != _IV:
            raise CheckpointError(path, f"an encrypted block has an IV of {iv_len} bytes, not 16")
        iv = bytes(view[pos + 4 : pos + 4 + _IV])
        clen = _int(path, view, pos + 4 + _IV)
        body = view[pos + 8 + _IV : end]
        if clen != len(body):
            raise CheckpointError(path, "an encrypted block's cipher length does not add up")
        try:
            if mode == "AES-GCM":
                plain = AESGCM(bytes(key)).decrypt(iv[:12], bytes(body) + tag, None)
            else:
                dec = Cipher(algorithms.AES(bytes(key)), modes.CBC(iv)).decryptor()
                padded = dec.update(bytes(body)) + dec.finalize()
                unpad = padding.PKCS7(128).unpadder()
                plain = unpad.update(padded) + unpad.finalize()
        except Exception:  # InvalidTag, bad padding, bad block size: the same answer
            raise CheckpointError(
                path, f"decryption with {mode} failed: a wrong dec_key or a corrupt file"
            ) from None
        out.append(plain)
        pos = end
    return b"".join(out)


def encrypt(data: bytes, key: bytes, mode: str) -> bytes:
    """MindSpore's encrypted form of ``data`` (random IVs)."""
    padding, Cipher, algorithms, modes, AESGCM = _backend()
    out = []
    for lo in range(0, max(len(data), 1), BLOCK):
        block = data[lo : lo + BLOCK]
        iv = os.urandom(_IV)
        if mode == "AES-GCM":
            sealed = AESGCM(bytes(key)).encrypt(iv[:12], block, None)
            cipher, tag = sealed[:-_TAG], sealed[-_TAG:]
        else:
            pad = padding.PKCS7(128).padder()
            enc = Cipher(algorithms.AES(bytes(key)), modes.CBC(iv)).encryptor()
            cipher = enc.update(pad.update(block) + pad.finalize()) + enc.finalize()
            tag = b""
        body = _IV.to_bytes(4, "little") + iv + len(cipher).to_bytes(4, "little") + cipher
        out.append(MAGIC[mode] + tag + len(body).to_bytes(4, "little") + body)
    return b"".join(out)
