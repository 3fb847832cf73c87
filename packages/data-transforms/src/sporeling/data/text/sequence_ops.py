"""Operations on token sequences: Ngram, SlidingWindow, Truncate, TruncateSequencePair, ToNumber."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..transforms._base import TensorOperation
from ..transforms.transforms import PadEnd as _PadEnd
from ..transforms.transforms import _to_np_dtype

__all__ = ["Ngram", "PadEnd", "SlidingWindow", "Truncate", "TruncateSequencePair", "ToNumber"]


def _pad(where: str, name: str, pad: Any) -> tuple[str, int]:
    ok = (
        isinstance(pad, tuple)
        and len(pad) == 2
        and isinstance(pad[0], str)
        and type(pad[1]) is int
        and pad[1] >= 0
    )
    if not ok:
        raise ValueError(f"{where}: argument '{name}' expected (str, int >= 0), got {pad!r}")
    return pad


class Ngram(TensorOperation):
    """The n-grams of a 1-D string array, joined by ``separator``, for each n in ``n``.

    ``left_pad``/``right_pad`` are ``(token, width)``; for each n the width is capped at
    ``n - 1``, as MindSpore does.
    """

    def __init__(
        self,
        n: int | list[int],
        left_pad: tuple[str, int] = ("", 0),
        right_pad: tuple[str, int] = ("", 0),
        separator: str = " ",
    ) -> None:
        ns = [n] if type(n) is int else n
        if not isinstance(ns, list) or not ns or not all(type(k) is int and k > 0 for k in ns):
            raise ValueError(
                f"Ngram: argument 'n' expected an int > 0 or a list of them, got {n!r}"
            )
        self.n = ns
        self.left_pad = _pad("Ngram", "left_pad", left_pad)
        self.right_pad = _pad("Ngram", "right_pad", right_pad)
        if not isinstance(separator, str):
            raise TypeError(f"Ngram: argument 'separator' expected a str, got {separator!r}")
        self.separator = separator

    def _execute_numpy(self, x: Any) -> np.ndarray:
        arr = np.asarray(x)
        if arr.ndim != 1 or arr.dtype.kind not in "US":
            raise ValueError(f"Ngram: expected a 1-D string array, got {arr.dtype} {arr.shape}")
        words = [w.decode() if isinstance(w, bytes) else str(w) for w in arr]
        out: list[str] = []
        for n in self.n:
            left = [self.left_pad[0]] * min(self.left_pad[1], n - 1)
            right = [self.right_pad[0]] * min(self.right_pad[1], n - 1)
            seq = left + words + right
            out += [self.separator.join(seq[i : i + n]) for i in range(len(seq) - n + 1)]
        return np.array(out if out else [""], dtype=str)


class SlidingWindow(TensorOperation):
    """Windows of ``width`` along ``axis``: shape ``(L - width + 1, width)`` for a 1-D input."""

    def __init__(self, width: int, axis: int = 0) -> None:
        if type(width) is not int or width < 1:
            raise ValueError(f"SlidingWindow: argument 'width' expected an int >= 1, got {width!r}")
        if type(axis) is not int:
            raise TypeError(f"SlidingWindow: argument 'axis' expected an int, got {axis!r}")
        self.width, self.axis = width, axis

    def _execute_numpy(self, x: Any) -> np.ndarray:
        arr = np.asarray(x)
        if arr.ndim == 0:
            raise ValueError("SlidingWindow: expected an array of at least 1 dimension")
        axis = self.axis % arr.ndim
        n = arr.shape[axis]
        if n < self.width:
            return np.zeros((0,), arr.dtype)
        moved = np.moveaxis(arr, axis, 0)
        windows = np.stack([moved[i : i + self.width] for i in range(n - self.width + 1)])
        return np.moveaxis(windows, (0, 1), (axis, axis + 1)) if axis else windows


class Truncate(TensorOperation):
    """Keep the first ``max_seq_len`` elements of the last axis (1-D or 2-D input)."""

    def __init__(self, max_seq_len: int) -> None:
        if type(max_seq_len) is not int or max_seq_len < 1:
            raise ValueError(
                f"Truncate: argument 'max_seq_len' expected an int >= 1, got {max_seq_len!r}"
            )
        self.max_seq_len = max_seq_len

    def _execute_numpy(self, x: Any) -> np.ndarray:
        arr = np.asarray(x)
        if arr.ndim not in (1, 2):
            raise ValueError(f"Truncate: expected a 1-D or 2-D array, got shape {arr.shape}")
        return arr[..., : self.max_seq_len].copy()


class TruncateSequencePair(TensorOperation):
    """Shorten two sequences to ``max_length`` together, dropping from the end of the longer."""

    def __init__(self, max_length: int) -> None:
        if type(max_length) is not int or max_length < 0:
            raise ValueError(
                "TruncateSequencePair: argument 'max_length' expected an int >= 0, "
                f"got {max_length!r}"
            )
        self.max_length = max_length

    def _execute_numpy(self, a: Any, b: Any) -> tuple[np.ndarray, np.ndarray]:
        a, b = np.asarray(a), np.asarray(b)
        la, lb = len(a), len(b)
        while la + lb > self.max_length:
            if la > lb:
                la -= 1
            else:
                lb -= 1
        return a[:la].copy(), b[:lb].copy()


class ToNumber(TensorOperation):
    """Parse strings as numbers of ``data_type``; a bad or out-of-range string is an error."""

    def __init__(self, data_type: Any) -> None:
        self.data_type = _to_np_dtype("ToNumber", data_type)
        if self.data_type.kind not in "iuf":
            raise TypeError(f"ToNumber: data_type must be numeric, got {self.data_type}")

    def _execute_numpy(self, x: Any) -> np.ndarray:
        arr = np.asarray(x)
        if arr.dtype.kind not in "US":
            raise TypeError(f"ToNumber: expected strings, got {arr.dtype}")
        out = np.empty(arr.shape, self.data_type)
        flat = out.reshape(-1)
        for i, s in enumerate(arr.reshape(-1)):
            text = s.decode() if isinstance(s, bytes) else str(s)
            try:
                if "_" in text:  # Python's digit separators; C++'s stoll/stof reject them
                    raise ValueError(text)
                value = int(text) if self.data_type.kind in "iu" else float(text)
            except ValueError:
                raise RuntimeError(f"ToNumber: {text!r} is not a valid {self.data_type}") from None
            if self.data_type.kind in "iu":
                info = np.iinfo(self.data_type)
                if not info.min <= value <= info.max:
                    raise RuntimeError(
                        f"ToNumber: {text!r} is out of the range of {self.data_type}"
                    )
            elif np.isinf(np.asarray(value, self.data_type)) and not np.isinf(value):
                raise RuntimeError(f"ToNumber: {text!r} is out of the range of {self.data_type}")
            flat[i] = value
        return out


class PadEnd(_PadEnd):
    """``transforms.PadEnd`` that widens a string array to hold a longer ``pad_value``.

    (``transforms.PadEnd`` pads a ``<U1`` array with ``'<pad>'`` cut to ``'<'``.)
    """

    def _execute_numpy(self, x: Any) -> np.ndarray:
        arr = np.asarray(x)
        if arr.dtype.kind in "US" and isinstance(self.pad_value, (str, bytes)):
            width = max(
                arr.dtype.itemsize // (4 if arr.dtype.kind == "U" else 1), len(self.pad_value)
            )
            arr = arr.astype(f"{arr.dtype.kind}{max(width, 1)}")
        return super()._execute_numpy(arr)
