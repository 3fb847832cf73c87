"""Text corpora as token arrays, and nanoGPT-style batches of random windows."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from sporeling.core import Tensor

from .tokenizer import BPETokenizer, CharTokenizer, load_tokenizer, train_tokenizer

__all__ = ["read_text", "encode_corpus", "WindowDataset"]


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


class WindowDataset:
    """``steps`` batches per epoch of ``batch_size`` random windows of ``seq_length + 1``
    tokens (nanoGPT's ``get_batch``); a fresh draw every epoch, seeded. It has the two
    methods ``Model.fit`` asks of a dataset."""

    def __init__(
        self,
        ids: np.ndarray,
        seq_length: int,
        batch_size: int,
        steps: int,
        seed: int = 0,
        fixed: bool = False,
    ) -> None:
        if len(ids) <= seq_length + 1:
            raise ValueError(
                f"WindowDataset: {len(ids)} tokens are too few for windows of {seq_length + 1}"
            )
        self.ids, self.seq, self.batch, self.steps = ids, seq_length, batch_size, steps
        self.rng = np.random.default_rng(seed)
        self.seed = seed
        self.fixed = fixed  # the same windows every epoch (evaluation)

    def get_dataset_size(self) -> int:
        return self.steps

    def get_batch_size(self) -> int:
        return self.batch

    def batch_at(self, rng: np.random.Generator) -> np.ndarray:
        starts = rng.integers(0, len(self.ids) - self.seq - 1, self.batch)
        return np.stack([self.ids[s : s + self.seq + 1] for s in starts]).astype(np.int32)

    def create_tuple_iterator(
        self, num_epochs: int = -1, output_numpy: bool = False, **_: Any
    ) -> _Epochs:
        """Loop it once per epoch (as the core's datasets)."""
        return _Epochs(self, output_numpy)


class _Epochs:
    def __init__(self, ds: WindowDataset, output_numpy: bool) -> None:
        self.ds, self.output_numpy = ds, output_numpy

    def __iter__(self) -> Any:
        ds = self.ds
        rng = np.random.default_rng(ds.seed) if ds.fixed else ds.rng
        for _step in range(ds.steps):
            x = ds.batch_at(rng)
            yield [x if self.output_numpy else Tensor(x)]
