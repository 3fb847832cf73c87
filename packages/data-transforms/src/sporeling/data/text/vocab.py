"""Vocab and Lookup: words <-> ids, built from a dataset, a list, a file or a dict."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable
from typing import Any

import numpy as np

from ..transforms._base import TensorOperation
from ..transforms.transforms import _to_np_dtype

__all__ = ["Vocab", "Lookup"]


def _check_specials(where: str, special_tokens: Any, special_first: Any) -> list[str]:
    if special_tokens is None:
        special_tokens = []
    if not isinstance(special_tokens, (list, tuple)) or not all(
        isinstance(t, str) for t in special_tokens
    ):
        raise TypeError(f"{where}: argument 'special_tokens' expected a list of str")
    if len(set(special_tokens)) != len(special_tokens):
        raise ValueError(f"{where}: special_tokens {special_tokens} has duplicates")
    if not isinstance(special_first, bool):
        raise TypeError(f"{where}: argument 'special_first' expected a bool, got {special_first!r}")
    return list(special_tokens)


class Vocab:
    """A word -> id table (MindSpore's ``text.Vocab``); build it with a ``from_*`` method."""

    def __init__(self, word_to_id: dict[str, int] | None = None) -> None:
        self._ids: dict[str, int] = dict(word_to_id or {})
        self._words: dict[int, str] = {i: w for w, i in self._ids.items()}

    @classmethod
    def _build(cls, words: list[str], special_tokens: list[str], special_first: bool) -> Vocab:
        words = [w for w in words if w not in special_tokens]
        order = special_tokens + words if special_first else words + special_tokens
        return cls({w: i for i, w in enumerate(order)})

    @classmethod
    def from_list(
        cls,
        word_list: list[str],
        special_tokens: list[str] | None = None,
        special_first: bool = True,
    ) -> Vocab:
        """Ids in list order; ``special_tokens`` before (``special_first``) or after."""
        where = "Vocab.from_list"
        if not isinstance(word_list, (list, tuple)) or not all(
            isinstance(w, str) for w in word_list
        ):
            raise TypeError(f"{where}: argument 'word_list' expected a list of str")
        dup = [w for w, c in Counter(word_list).items() if c > 1]
        if dup:
            raise ValueError(f"{where}: word_list contains duplicate word: {dup[0]}.")
        specials = _check_specials(where, special_tokens, special_first)
        clash = [w for w in word_list if w in specials]
        if clash:
            raise ValueError(f"{where}: {clash[0]!r} is both a word and a special token")
        return cls._build(list(word_list), specials, special_first)

    @classmethod
    def from_dict(cls, word_dict: dict[str, int]) -> Vocab:
        """Exactly this word -> id mapping (ids must be non-negative ints)."""
        if not isinstance(word_dict, dict) or not all(
            isinstance(k, str) and type(v) is int and v >= 0 for k, v in word_dict.items()
        ):
            raise TypeError("Vocab.from_dict: argument 'word_dict' expected {str: int >= 0}")
        return cls(word_dict)

    @classmethod
    def from_file(
        cls,
        file_path: str,
        delimiter: str = "",
        vocab_size: int | None = None,
        special_tokens: list[str] | None = None,
        special_first: bool = True,
    ) -> Vocab:
        """One word per line (the text before ``delimiter``, if given); first ``vocab_size``."""
        where = "Vocab.from_file"
        if not isinstance(file_path, (str, os.PathLike)) or not os.path.isfile(file_path):
            raise ValueError(f"{where}: argument 'file_path' {file_path!r} is not a file")
        if vocab_size is not None and (type(vocab_size) is not int or vocab_size <= 0):
            raise ValueError(
                f"{where}: argument 'vocab_size' expected an int > 0, got {vocab_size!r}"
            )
        specials = _check_specials(where, special_tokens, special_first)
        words: list[str] = []
        seen: set[str] = set()
        with open(file_path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                word = line.rstrip("\r\n")
                if delimiter:
                    word = word.split(delimiter, 1)[0]
                if not word:
                    continue
                if word in seen:
                    raise ValueError(f"{where}: {file_path} line {lineno}: duplicate word {word!r}")
                seen.add(word)
                words.append(word)
                if vocab_size is not None and len(words) == vocab_size:
                    break
        return cls._build(words, specials, special_first)

    @classmethod
    def from_dataset(
        cls,
        dataset: Any,
        columns: list[str] | str | None = None,
        freq_range: tuple[int | None, int | None] | None = None,
        top_k: int | None = None,
        special_tokens: list[str] | None = None,
        special_first: bool = True,
    ) -> Vocab:
        """Count the words of ``columns`` (all columns by default) over one pass of ``dataset``.

        Words with a count in ``freq_range`` (inclusive; None ends are open) are kept, the
        ``top_k`` most frequent of them; ids go by count (descending), then by the word's
        code points, as MindSpore orders them.
        """
        where = "Vocab.from_dataset"
        specials = _check_specials(where, special_tokens, special_first)
        low, high = (None, None) if freq_range is None else freq_range
        for end in (low, high):
            if end is not None and (type(end) is not int or end < 0):
                raise ValueError(
                    f"{where}: argument 'freq_range' expected ints >= 0, got {freq_range!r}"
                )
        if top_k is not None and (type(top_k) is not int or top_k <= 0):
            raise ValueError(f"{where}: argument 'top_k' expected an int > 0, got {top_k!r}")
        names = dataset.get_col_names()
        if columns is None:
            wanted = names
        else:
            wanted = [columns] if isinstance(columns, str) else list(columns)
            unknown = [c for c in wanted if c not in names]
            if unknown:
                raise ValueError(f"{where}: columns {unknown} are not in the dataset ({names})")
        counts: Counter[str] = Counter()
        for row in dataset.create_dict_iterator(output_numpy=True, num_epochs=1):
            for col in wanted:
                counts.update(_words(row[col]))
        kept = [
            w
            for w, c in counts.items()
            if (low is None or c >= low) and (high is None or c <= high)
        ]
        kept.sort(key=lambda w: (-counts[w], w))
        if top_k is not None:
            kept = kept[:top_k]
        return cls._build(kept, specials, special_first)

    def vocab(self) -> dict[str, int]:
        """The word -> id table."""
        return dict(self._ids)

    def tokens_to_ids(self, tokens: str | Iterable[str]) -> int | list[int]:
        """Ids of ``tokens`` (-1 for a word not in the table)."""
        if isinstance(tokens, str):
            return self._ids.get(tokens, -1)
        return [self._ids.get(str(t), -1) for t in tokens]

    def ids_to_tokens(self, ids: int | Iterable[int]) -> str | list[str]:
        """Words of ``ids`` ('' for an id not in the table)."""
        if isinstance(ids, (int, np.integer)):
            return self._words.get(int(ids), "")
        return [self._words.get(int(i), "") for i in ids]

    def __len__(self) -> int:
        return len(self._ids)


def _words(value: Any) -> list[str]:
    arr = np.asarray(value)
    if arr.dtype.kind == "S":
        return [w.decode("utf-8") for w in arr.reshape(-1)]
    if arr.dtype.kind != "U":
        raise TypeError(f"Vocab.from_dataset: a column holds {arr.dtype} values, not strings")
    return [str(w) for w in arr.reshape(-1)]


class Lookup(TensorOperation):
    """Words -> ids with ``vocab``; a word not in it gets ``unknown_token``'s id (or an error)."""

    def __init__(
        self, vocab: Vocab, unknown_token: str | None = None, data_type: Any = np.int32
    ) -> None:
        if not isinstance(vocab, Vocab):
            raise TypeError(
                f"Lookup: argument 'vocab' expected a text.Vocab, got {type(vocab).__name__}"
            )
        self.vocab = vocab
        self.unknown_id = None
        if unknown_token is not None:
            if unknown_token not in vocab._ids:
                raise ValueError(f"Lookup: unknown_token {unknown_token!r} is not in the vocab")
            self.unknown_id = vocab._ids[unknown_token]
        self.data_type = _to_np_dtype("Lookup", data_type)
        if self.data_type.kind not in "iu":
            raise TypeError(f"Lookup: data_type must be an integer type, got {self.data_type}")

    def _execute_numpy(self, x: Any) -> np.ndarray:
        arr = np.asarray(x)
        flat = _words(arr)
        table = self.vocab._ids
        ids = []
        for word in flat:
            found = table.get(word, self.unknown_id)
            if found is None:
                raise RuntimeError(
                    f"Lookup: token {word!r} is not in the vocab and no unknown_token is given"
                )
            ids.append(found)
        return np.array(ids, dtype=self.data_type).reshape(arr.shape)
