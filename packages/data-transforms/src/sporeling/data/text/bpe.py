"""BPETokenizer: byte-pair encoding on Hugging Face ``tokenizers`` (the ``text`` extra).

MindSpore 1.8 has BPE only through SentencePiece; this wraps a ``tokenizers`` BPE model
(a ``tokenizer.json``, or a vocab and merges) as a dataset transform, and tokenizes lists
of lines in one Rust call (:meth:`BPETokenizer.tokenize_batch`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..transforms._base import TensorOperation

__all__ = ["BPETokenizer"]


def _tokenizers() -> Any:
    try:
        import tokenizers
    except ImportError:
        raise ImportError(
            "BPETokenizer needs the 'tokenizers' package: pip install "
            "'sporeling-data-transforms[text]'"
        ) from None
    return tokenizers


class BPETokenizer(TensorOperation):
    """Byte-pair encoding of a string into tokens (and byte offsets with ``with_offsets``).

    Give ``tokenizer_file`` (a ``tokenizer.json``) or ``vocab`` (``{token: id}`` or a
    ``vocab.json`` path) with ``merges`` (a list of pairs or a ``merges.txt`` path); the
    latter splits on whitespace and punctuation first. ``tokenizer`` accepts a built
    ``tokenizers.Tokenizer``.
    """

    def __init__(
        self,
        tokenizer_file: str | None = None,
        vocab: Any = None,
        merges: Any = None,
        unk_token: str | None = None,
        with_offsets: bool = False,
        tokenizer: Any = None,
    ) -> None:
        tk = _tokenizers()
        if tokenizer is not None:
            self.tokenizer = tokenizer
        elif tokenizer_file is not None:
            self.tokenizer = tk.Tokenizer.from_file(str(tokenizer_file))
        elif vocab is not None and merges is not None:
            if isinstance(vocab, str):
                model = tk.models.BPE.from_file(vocab, merges, unk_token=unk_token)
            else:
                model = tk.models.BPE(dict(vocab), [tuple(m) for m in merges], unk_token=unk_token)
            self.tokenizer = tk.Tokenizer(model)
            self.tokenizer.pre_tokenizer = tk.pre_tokenizers.Whitespace()
        else:
            raise ValueError(
                "BPETokenizer: give tokenizer_file, tokenizer, or both vocab and merges"
            )
        if not isinstance(with_offsets, bool):
            raise TypeError(
                f"BPETokenizer: argument 'with_offsets' expected a bool, got {with_offsets!r}"
            )
        self.with_offsets = with_offsets

    def _result(self, text: str, enc: Any) -> Any:
        tokens = np.array(enc.tokens if enc.tokens else [""], dtype=str)
        if not self.with_offsets:
            return tokens
        cps = np.frombuffer(text.encode("utf-32-le"), np.uint32)
        widths = 1 + (cps >= 0x80) + (cps >= 0x800) + (cps >= 0x10000)
        pos = np.concatenate(([0], np.cumsum(widths))).astype(np.uint32)
        spans = enc.offsets if enc.offsets else [(0, 0)]
        return tokens, pos[[a for a, _ in spans]], pos[[b for _, b in spans]]

    def _execute_numpy(self, x: Any) -> Any:
        arr = np.asarray(x)
        if arr.ndim != 0:
            raise ValueError(f"BPETokenizer: expected one string, got shape {arr.shape}")
        text = arr.item().decode() if isinstance(arr.item(), bytes) else str(arr.item())
        return self._result(text, self.tokenizer.encode(text))

    def tokenize_batch(self, lines: list[str]) -> list[Any]:
        """Tokenize many lines in one call (``encode_batch``, parallel in Rust)."""
        encodings = self.tokenizer.encode_batch(list(lines))
        return [self._result(t, e) for t, e in zip(lines, encodings)]
