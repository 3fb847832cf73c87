"""String tokenizers with MindSpore's outputs: tokens, and byte offsets when asked.

Every tokenizer takes a string (a 0-d string array in a pipeline) and returns a 1-D ``str``
array of tokens, or with ``with_offsets=True`` the tuple ``(tokens, offsets_start,
offsets_limit)``, the offsets being UTF-8 byte positions (uint32) as MindSpore gives them.
``WordpieceTokenizer`` takes the 1-D array of words another tokenizer made.
"""

from __future__ import annotations

import re
import unicodedata
from enum import IntEnum
from typing import Any

import numpy as np

from ..transforms._base import TensorOperation
from .vocab import Vocab

__all__ = [
    "NormalizeForm",
    "UnicodeCharTokenizer",
    "WhitespaceTokenizer",
    "RegexTokenizer",
    "BasicTokenizer",
    "WordpieceTokenizer",
    "BertTokenizer",
    "CaseFold",
    "NormalizeUTF8",
    "RegexReplace",
]


class NormalizeForm(IntEnum):
    """Unicode normalization forms (MindSpore's ``text.NormalizeForm``)."""

    NONE = 0
    NFC = 1
    NFKC = 2
    NFD = 3
    NFKD = 4


def _text(where: str, x: Any) -> str:
    arr = np.asarray(x)
    if arr.ndim != 0:
        raise ValueError(f"{where}: expected one string (a 0-d array), got shape {arr.shape}")
    value = arr.item()
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if not isinstance(value, str):
        raise TypeError(f"{where}: expected a string, got {arr.dtype}")
    return value


def _byte_positions(s: str) -> np.ndarray:
    """UTF-8 byte offset of every character boundary of ``s`` (len(s) + 1 values)."""
    cps = np.frombuffer(s.encode("utf-32-le"), np.uint32)
    widths = 1 + (cps >= 0x80) + (cps >= 0x800) + (cps >= 0x10000)
    return np.concatenate(([0], np.cumsum(widths))).astype(np.uint32)


def _output(tokens: list[str], starts: list[int], ends: list[int], with_offsets: bool) -> Any:
    out = np.array(tokens, dtype=str) if tokens else np.array([""], dtype=str)
    if not with_offsets:
        return out
    if not tokens:
        starts, ends = [0], [0]
    return out, np.array(starts, np.uint32), np.array(ends, np.uint32)


def _spans_output(s: str, spans: list[tuple[int, int]], with_offsets: bool) -> Any:
    pos = _byte_positions(s)
    tokens = [s[a:b] for a, b in spans]
    return _output(
        tokens, [int(pos[a]) for a, _ in spans], [int(pos[b]) for _, b in spans], with_offsets
    )


def _check_flag(where: str, name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{where}: argument '{name}' expected a bool, got {value!r}")
    return value


class UnicodeCharTokenizer(TensorOperation):
    """One token per Unicode character."""

    def __init__(self, with_offsets: bool = False) -> None:
        self.with_offsets = _check_flag("UnicodeCharTokenizer", "with_offsets", with_offsets)

    def _execute_numpy(self, x: Any) -> Any:
        s = _text("UnicodeCharTokenizer", x)
        return _spans_output(s, [(i, i + 1) for i in range(len(s))], self.with_offsets)


class WhitespaceTokenizer(TensorOperation):
    """Split on runs of Unicode whitespace (dropped)."""

    def __init__(self, with_offsets: bool = False) -> None:
        self.with_offsets = _check_flag("WhitespaceTokenizer", "with_offsets", with_offsets)

    def _execute_numpy(self, x: Any) -> Any:
        s = _text("WhitespaceTokenizer", x)
        spans = [m.span() for m in re.finditer(r"\S+", s)]
        return _spans_output(s, spans, self.with_offsets)


def _split_spans(
    s: str, delim: re.Pattern[str], keep: re.Pattern[str] | None
) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    pos = 0
    for m in delim.finditer(s):
        a, b = m.span()
        if a == b:
            continue
        if a > pos:
            spans.append((pos, a))
        if keep is not None and keep.fullmatch(s, a, b):
            spans.append((a, b))
        pos = b
    if pos < len(s):
        spans.append((pos, len(s)))
    return spans


class RegexTokenizer(TensorOperation):
    """Split at matches of ``delim_pattern``; a match of ``keep_delim_pattern`` is kept as a token.

    Patterns are Python ``re`` patterns (MindSpore uses ICU's; they agree on common syntax,
    not on ``\\p{...}`` classes, which Python's ``re`` lacks).
    """

    def __init__(
        self, delim_pattern: str, keep_delim_pattern: str = "", with_offsets: bool = False
    ) -> None:
        for name, value in (
            ("delim_pattern", delim_pattern),
            ("keep_delim_pattern", keep_delim_pattern),
        ):
            if not isinstance(value, str):
                raise TypeError(f"RegexTokenizer: argument '{name}' expected a str, got {value!r}")
        try:
            self._delim = re.compile(delim_pattern)
            self._keep = re.compile(keep_delim_pattern) if keep_delim_pattern else None
        except re.error as exc:
            raise ValueError(f"RegexTokenizer: invalid pattern: {exc}") from None
        self.with_offsets = _check_flag("RegexTokenizer", "with_offsets", with_offsets)

    def _execute_numpy(self, x: Any) -> Any:
        s = _text("RegexTokenizer", x)
        return _spans_output(s, _split_spans(s, self._delim, self._keep), self.with_offsets)


def _normalize(form: Any, s: str) -> str:
    return s if form == NormalizeForm.NONE else unicodedata.normalize(NormalizeForm(form).name, s)


class CaseFold(TensorOperation):
    """Unicode full case folding (lower case and more)."""

    def _execute_numpy(self, x: Any) -> np.ndarray:
        return np.vectorize(lambda s: str(s).casefold(), otypes=[str])(np.asarray(x))


class NormalizeUTF8(TensorOperation):
    """Unicode normalization of every string (``NormalizeForm``)."""

    def __init__(self, normalize_form: NormalizeForm = NormalizeForm.NFKC) -> None:
        if not isinstance(normalize_form, NormalizeForm):
            raise TypeError(
                f"NormalizeUTF8: normalize_form expected a NormalizeForm, got {normalize_form!r}"
            )
        self.form = normalize_form

    def _execute_numpy(self, x: Any) -> np.ndarray:
        return np.vectorize(lambda s: _normalize(self.form, str(s)), otypes=[str])(np.asarray(x))


class RegexReplace(TensorOperation):
    """Replace matches of ``pattern`` with ``replace`` (every match, or only the first)."""

    def __init__(self, pattern: str, replace: str, replace_all: bool = True) -> None:
        try:
            self._pattern = re.compile(pattern)
        except (re.error, TypeError) as exc:
            raise ValueError(f"RegexReplace: invalid pattern {pattern!r}: {exc}") from None
        self.replace = replace
        self.count = 0 if _check_flag("RegexReplace", "replace_all", replace_all) else 1

    def _execute_numpy(self, x: Any) -> np.ndarray:
        def one(s: Any) -> str:
            return self._pattern.sub(self.replace, str(s), count=self.count)

        return np.vectorize(one, otypes=[str])(np.asarray(x))


_UNUSED = re.compile(r"\[CLS\]|\[SEP\]|\[UNK\]|\[PAD\]|\[MASK\]|\[unused\d+\]")
_PLAIN = re.compile(r"[\x20-\x7e\t]*")  # printable ASCII: bytes are characters


def _is_punctuation(c: str) -> bool:
    o = ord(c)
    if 33 <= o <= 47 or 58 <= o <= 64 or 91 <= o <= 96 or 123 <= o <= 126:
        return True
    return unicodedata.category(c).startswith("P")


def _is_cjk(c: str) -> bool:
    o = ord(c)
    return (
        0x4E00 <= o <= 0x9FFF
        or 0x3400 <= o <= 0x4DBF
        or 0x20000 <= o <= 0x2A6DF
        or 0x2A700 <= o <= 0x2B73F
        or 0x2B740 <= o <= 0x2B81F
        or 0x2B820 <= o <= 0x2CEAF
        or 0xF900 <= o <= 0xFAFF
        or 0x2F800 <= o <= 0x2FA1F
    )


class BasicTokenizer(TensorOperation):
    """BERT's basic tokenizer: whitespace, punctuation and CJK characters split the text.

    ``lower_case`` case-folds, decomposes (NFD) and drops combining marks; otherwise
    ``normalization_form`` is applied. Control characters become spaces. With
    ``keep_whitespace`` runs of whitespace are tokens; ``preserve_unused_token`` keeps
    ``[CLS]``, ``[SEP]``, ``[UNK]``, ``[PAD]``, ``[MASK]`` and ``[unusedN]`` whole.
    """

    def __init__(
        self,
        lower_case: bool = False,
        keep_whitespace: bool = False,
        normalization_form: NormalizeForm = NormalizeForm.NONE,
        preserve_unused_token: bool = True,
        with_offsets: bool = False,
    ) -> None:
        where = type(self).__name__
        self.lower_case = _check_flag(where, "lower_case", lower_case)
        self.keep_whitespace = _check_flag(where, "keep_whitespace", keep_whitespace)
        if not isinstance(normalization_form, NormalizeForm):
            raise TypeError(
                f"{where}: argument 'normalization_form' expected a NormalizeForm, got "
                f"{normalization_form!r}"
            )
        self.normalization_form = normalization_form
        self.preserve_unused_token = _check_flag(
            where, "preserve_unused_token", preserve_unused_token
        )
        self.with_offsets = _check_flag(where, "with_offsets", with_offsets)

    def _prepare(self, s: str) -> str:
        if self.lower_case:
            s = unicodedata.normalize("NFD", s.casefold())
            s = "".join(c for c in s if unicodedata.category(c) != "Mn")
        else:
            s = _normalize(self.normalization_form, s)
        return "".join(" " if unicodedata.category(c) in ("Cc", "Cf") else c for c in s)

    def _spans(self, s: str, keep: list[tuple[int, int]]) -> list[tuple[int, int]]:
        spans: list[tuple[int, int]] = []
        i, start, k = 0, None, 0
        n = len(s)
        while i < n:
            if k < len(keep) and keep[k][0] == i:
                if start is not None:
                    spans.append((start, i))
                    start = None
                spans.append(keep[k])
                i = keep[k][1]
                k += 1
                continue
            c = s[i]
            if c.isspace():
                if start is not None:
                    spans.append((start, i))
                    start = None
                j = i
                while j < n and s[j].isspace() and not (k < len(keep) and keep[k][0] == j):
                    j += 1
                if self.keep_whitespace:
                    spans.append((i, j))
                i = j
                continue
            if _is_punctuation(c) or _is_cjk(c):
                if start is not None:
                    spans.append((start, i))
                    start = None
                spans.append((i, i + 1))
            elif start is None:
                start = i
            i += 1
        if start is not None:
            spans.append((start, n))
        return spans

    def tokenize(self, s: str) -> tuple[str, list[tuple[int, int]]]:
        """The normalized text and the (start, end) character spans of its tokens.

        ``[CLS]``-like tokens are found in the original text (so ``lower_case`` keeps
        them), and the rest is normalized around them.
        """
        if not self.preserve_unused_token:
            s = self._prepare(s)
            return s, self._spans(s, [])
        parts: list[str] = []
        keep: list[tuple[int, int]] = []
        pos, length = 0, 0
        for m in _UNUSED.finditer(s):
            piece = self._prepare(s[pos : m.start()])
            parts += [piece, m.group()]
            length += len(piece)
            keep.append((length, length + len(m.group())))
            length += len(m.group())
            pos = m.end()
        parts.append(self._prepare(s[pos:]))
        out = "".join(parts)
        return out, self._spans(out, keep)

    def _execute_numpy(self, x: Any) -> Any:
        s, spans = self.tokenize(_text(type(self).__name__, x))
        return _spans_output(s, spans, self.with_offsets)


class WordpieceTokenizer(TensorOperation):
    """Split each word into the longest pieces in ``vocab`` (later pieces prefixed ``##``).

    A word longer than ``max_bytes_per_token`` bytes, or one that cannot be split, becomes
    ``unknown_token`` (offsets ``[0, len(unknown_token)]``), or stays whole when
    ``unknown_token`` is ''. Offsets are byte positions within each word.
    """

    def __init__(
        self,
        vocab: Vocab,
        suffix_indicator: str = "##",
        max_bytes_per_token: int = 100,
        unknown_token: str = "[UNK]",
        with_offsets: bool = False,
    ) -> None:
        where = type(self).__name__
        if not isinstance(vocab, Vocab):
            raise TypeError(
                f"{where}: argument 'vocab' expected a text.Vocab, got {type(vocab).__name__}"
            )
        if type(max_bytes_per_token) is not int or max_bytes_per_token < 0:
            raise ValueError(
                f"{where}: argument 'max_bytes_per_token' expected an int >= 0, "
                f"got {max_bytes_per_token!r}"
            )
        for name, value in (
            ("suffix_indicator", suffix_indicator),
            ("unknown_token", unknown_token),
        ):
            if not isinstance(value, str):
                raise TypeError(f"{where}: argument '{name}' expected a str, got {value!r}")
        self.vocab = vocab
        self.suffix_indicator = suffix_indicator
        self.max_bytes_per_token = max_bytes_per_token
        self.unknown_token = unknown_token
        self.with_offsets = _check_flag(where, "with_offsets", with_offsets)

    def split_word(self, word: str) -> list[tuple[str, int, int]]:
        """``(piece, byte start, byte end)`` of one word."""
        raw_len = len(word.encode("utf-8"))
        unknown = [(self.unknown_token, 0, len(self.unknown_token.encode("utf-8")))]
        if not self.unknown_token:
            unknown = [(word, 0, raw_len)]
        if raw_len > self.max_bytes_per_token:
            return unknown
        table = self.vocab._ids
        pos = _byte_positions(word)
        pieces = []
        start = 0
        while start < len(word):
            end = len(word)
            found = None
            while end > start:
                piece = word[start:end]
                if start > 0:
                    piece = self.suffix_indicator + piece
                if piece in table:
                    found = piece
                    break
                end -= 1
            if found is None:
                return unknown
            pieces.append((found, int(pos[start]), int(pos[end])))
            start = end
        return pieces

    def _execute_numpy(self, x: Any) -> Any:
        words = np.asarray(x)
        if words.ndim != 1:
            raise ValueError(
                f"WordpieceTokenizer: expected a 1-D array of words, got shape {words.shape}"
            )
        tokens, starts, ends = [], [], []
        for word in words:
            w = word.decode("utf-8") if isinstance(word, bytes) else str(word)
            for piece, a, b in self.split_word(w):
                tokens.append(piece)
                starts.append(a)
                ends.append(b)
        return _output(tokens, starts, ends, self.with_offsets)


class BertTokenizer(TensorOperation):
    """BasicTokenizer then WordpieceTokenizer, offsets in bytes of the (normalized) text."""

    def __init__(
        self,
        vocab: Vocab,
        suffix_indicator: str = "##",
        max_bytes_per_token: int = 100,
        unknown_token: str = "[UNK]",
        lower_case: bool = False,
        keep_whitespace: bool = False,
        normalization_form: NormalizeForm = NormalizeForm.NONE,
        preserve_unused_token: bool = True,
        with_offsets: bool = False,
    ) -> None:
        self.basic = BasicTokenizer(
            lower_case, keep_whitespace, normalization_form, preserve_unused_token
        )
        self.wordpiece = WordpieceTokenizer(
            vocab, suffix_indicator, max_bytes_per_token, unknown_token
        )
        self.with_offsets = _check_flag("BertTokenizer", "with_offsets", with_offsets)

    def tokenize_batch(self, lines: list[str]) -> list[Any]:
        """Tokenize many lines: what calling this op on each gives, faster.

        Lines of printable ASCII without ``[CLS]``-like tokens go through Hugging Face
        ``tokenizers`` (BERT normalizer, pre-tokenizer and WordPiece, one Rust call for all
        of them; equal to the Python path on such text: checked on 300 Tiny Shakespeare
        lines), the others through the Python path. Without ``tokenizers`` (the ``text``
        extra) every line takes the Python path.
        """
        fast = self._fast_tokenizer()
        out: list[Any] = [None] * len(lines)
        easy = []
        for i, line in enumerate(lines):
            if fast is not None and _PLAIN.fullmatch(line) and not _UNUSED.search(line):
                easy.append(i)
            else:
                out[i] = self._execute_numpy(np.array(line))
        if easy:
            for i, enc in zip(easy, fast.encode_batch([lines[i] for i in easy])):
                tokens = enc.tokens
                starts = [a for a, _ in enc.offsets]
                ends = [b for _, b in enc.offsets]
                out[i] = _output(tokens, starts, ends, self.with_offsets)
        return out

    def _fast_tokenizer(self) -> Any:
        """A ``tokenizers`` pipeline with this op's options, or None when it cannot match."""
        cached = getattr(self, "_fast", False)
        if cached is not False:
            return cached
        self._fast = None
        basic, wp = self.basic, self.wordpiece
        if basic.keep_whitespace or basic.normalization_form != NormalizeForm.NONE:
            return None
        if not wp.unknown_token or wp.unknown_token not in wp.vocab._ids:
            return None
        try:
            from tokenizers import Tokenizer, models, normalizers, pre_tokenizers
        except ImportError:
            return None
        tk = Tokenizer(
            models.WordPiece(
                dict(wp.vocab._ids),
                unk_token=wp.unknown_token,
                continuing_subword_prefix=wp.suffix_indicator,
                max_input_chars_per_word=wp.max_bytes_per_token,
            )
        )
        tk.normalizer = normalizers.BertNormalizer(
            clean_text=True,
            handle_chinese_chars=True,
            strip_accents=basic.lower_case,
            lowercase=basic.lower_case,
        )
        tk.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        self._fast = tk
        return tk

    def _execute_numpy(self, x: Any) -> Any:
        s, spans = self.basic.tokenize(_text("BertTokenizer", x))
        pos = _byte_positions(s)
        tokens, starts, ends = [], [], []
        for a, b in spans:
            base, word = int(pos[a]), s[a:b]
            pieces = self.wordpiece.split_word(word)
            if len(pieces) == 1 and pieces[0][0] == self.wordpiece.unknown_token != word:
                pieces = [(pieces[0][0], 0, int(pos[b]) - base)]  # MindSpore: the word's span
            for piece, p, q in pieces:
                tokens.append(piece)
                starts.append(base + p)
                ends.append(base + q)
        return _output(tokens, starts, ends, self.with_offsets)
