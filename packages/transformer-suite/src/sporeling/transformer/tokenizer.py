"""Tokenizers: a character-level one (nanoGPT's Shakespeare setup) and byte-level BPE trained
on the corpus with the ``tokenizers`` library (the ``bpe`` extra, imported lazily).

Both save to and load from one JSON file; ``load_tokenizer`` picks the kind from it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["CharTokenizer", "BPETokenizer", "load_tokenizer", "train_tokenizer"]


class CharTokenizer:
    """One id per distinct character of the training text, in sorted order."""

    kind = "char"

    def __init__(self, chars: Iterable[str]) -> None:
        self.chars = sorted(set(chars))
        self.stoi = {c: i for i, c in enumerate(self.chars)}

    @classmethod
    def train(cls, text: str) -> CharTokenizer:
        return cls(text)

    @property
    def vocab_size(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> list[int]:
        try:
            return [self.stoi[c] for c in text]
        except KeyError as e:
            raise ValueError(
                f"CharTokenizer: character {e.args[0]!r} is not in the vocabulary "
                f"({self.vocab_size} characters of the training text)"
            ) from None

    def decode(self, ids: Iterable[int]) -> str:
        return "".join(self.chars[i] for i in ids)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps({"kind": "char", "chars": "".join(self.chars)}))


class BPETokenizer:
    """Byte-level BPE (GPT-2's scheme) from the ``tokenizers`` library."""

    kind = "bpe"

    def __init__(self, tok: Any) -> None:
        self.tok = tok

    @staticmethod
    def _lib() -> Any:
        try:
            import tokenizers
        except ImportError:
            raise ImportError(
                "BPETokenizer needs the 'tokenizers' library: "
                "pip install 'sporeling-transformer-suite[bpe]'"
            ) from None
        return tokenizers

    @classmethod
    def train(cls, text: str, vocab_size: int = 1000) -> BPETokenizer:
        lib = cls._lib()
        tok = lib.Tokenizer(lib.models.BPE())
        tok.pre_tokenizer = lib.pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = lib.decoders.ByteLevel()
        trainer = lib.trainers.BpeTrainer(
            vocab_size=vocab_size,
            initial_alphabet=lib.pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        )
        tok.train_from_iterator(text.splitlines(keepends=True), trainer)
        return cls(tok)

    @property
    def vocab_size(self) -> int:
        return int(self.tok.get_vocab_size())

    def encode(self, text: str) -> list[int]:
        return list(self.tok.encode(text).ids)

    def decode(self, ids: Iterable[int]) -> str:
        return str(self.tok.decode(list(ids)))

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps({"kind": "bpe", "tokenizer": self.tok.to_str()}))


def train_tokenizer(kind: str, text: str, vocab_size: int = 1000) -> CharTokenizer | BPETokenizer:
    if kind == "char":
        return CharTokenizer.train(text)
    if kind == "bpe":
        return BPETokenizer.train(text, vocab_size)
    raise ValueError(f"tokenizer: 'kind' must be 'char' or 'bpe', got {kind!r}")


def load_tokenizer(path: str | Path) -> CharTokenizer | BPETokenizer:
    data = json.loads(Path(path).read_text())
    if data.get("kind") == "char":
        return CharTokenizer(data["chars"])
    if data.get("kind") == "bpe":
        return BPETokenizer(BPETokenizer._lib().Tokenizer.from_str(data["tokenizer"]))
    raise ValueError(f"{path}: not a Sporeling tokenizer file (kind {data.get('kind')!r})")
