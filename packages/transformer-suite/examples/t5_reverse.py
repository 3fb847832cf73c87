"""T5 (small) on a generated seq2seq task, reversing strings of 3-8 digits, with the suite's
``t5_reverse`` run config: the same code and recipe as ``sporeling-transformer train
t5_reverse`` (2+2 layers, hidden 64, 1,500 steps of 64 generated examples through the
``sporeling.data`` pipeline, AdamW 1e-3 with 50 warm-up steps and cosine to 1e-4), then the
exact match of greedy decoding with the KV cache on 500 held-out strings (``eval``).

Usage: python examples/t5_reverse.py [section.key=value ...]
Overrides as on the CLI, e.g. ``train.max_iters=300 optimizer.lr_decay_iters=300``.
"""

from __future__ import annotations

import sys

from sporeling.transformer.cli import main as cli


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    out = "out-t5-reverse"
    for a in args:
        if a.startswith("output_dir="):
            out = a.split("=", 1)[1]
    rc = cli(["train", "t5_reverse", f"output_dir={out}", *args])
    return rc or cli(["eval", out])


if __name__ == "__main__":
    sys.exit(main())
