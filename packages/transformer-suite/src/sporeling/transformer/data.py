"""Text corpora as token arrays (batches of their windows: ``pipelines``)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from .tokenizer import BPETokenizer, CharTokenizer, load_tokenizer, train_tokenizer

__all__ = ["read_text", "encode_corpus"]


def read_text(path: str) -> str:
    """A UTF-8 text file; ``builtin:NAME`` is a sample shipped with the package."""
    if path.startswith("builtin:"):
        return (resources.files("sporeling.transformer") / "data" / path[8:]).read_text("utf-8")
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"data.path: {path!r} does not exist (cwd {Path.cwd()})")
    return p.read_text("utf-8")


def encode_corpus(
    data_cfg: dict[str, Any], tokenizer_path: Path | None = None
) -> tuple[CharTokenizer | BPETokenizer, np.ndarray, np.ndarray]:
    """Tokenizer (loaded from ``tokenizer_path`` if it exists, else trained on the text),
    and the train/validation token arrays (the last ``val_fraction`` is validation)."""
    text = read_text(str(data_cfg["path"]))
    if tokenizer_path is not None and tokenizer_path.exists():
        tok = load_tokenizer(tokenizer_path)
    else:
        tok = train_tokenizer(
            data_cfg.get("tokenizer", "char"), text, int(data_cfg.get("bpe_vocab_size", 1000))
        )
    ids = np.asarray(tok.encode(text), dtype=np.int32)
    n = int(len(ids) * (1.0 - float(data_cfg.get("val_fraction", 0.1))))
    return tok, ids[:n], ids[n:]
