"""``sporeling.data.text``: MindSpore's ``dataset.text`` transforms.

Vocabularies (:class:`Vocab`, :class:`Lookup`), tokenizers with byte offsets
(Unicode character, whitespace, regex, BERT basic/WordPiece/full), sequence operations
(Ngram, SlidingWindow, Truncate, TruncateSequencePair, ToNumber, PadEnd) and a BPE tokenizer
on Hugging Face ``tokenizers`` (the ``text`` extra). Outputs equal MindSpore 2.10's on the
same text (tests/test_text.py, against outputs MindSpore produced).
"""

from .bpe import BPETokenizer
from .sequence_ops import (
    Ngram,
    PadEnd,
    SlidingWindow,
    ToNumber,
    Truncate,
    TruncateSequencePair,
)
from .tokenizer_ops import (
    BasicTokenizer,
    BertTokenizer,
    CaseFold,
    NormalizeForm,
    NormalizeUTF8,
    RegexReplace,
    RegexTokenizer,
    UnicodeCharTokenizer,
    WhitespaceTokenizer,
    WordpieceTokenizer,
)
from .vocab import Lookup, Vocab

__all__ = [
    "BPETokenizer",
    "BasicTokenizer",
    "BertTokenizer",
    "CaseFold",
    "Lookup",
    "Ngram",
    "NormalizeForm",
    "NormalizeUTF8",
    "PadEnd",
    "RegexReplace",
    "RegexTokenizer",
    "SlidingWindow",
    "ToNumber",
    "Truncate",
    "TruncateSequencePair",
    "UnicodeCharTokenizer",
    "Vocab",
    "WhitespaceTokenizer",
    "WordpieceTokenizer",
]
