"""``sporeling-rec preprocess``."""

from __future__ import annotations

import argparse

from .preprocess import preprocess


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("inputs", nargs="+", help="raw Criteo text files (40 tab-separated fields)")
    p.add_argument("--out", required=True, help="output folder (records + manifest.json)")
    p.add_argument("--min-freq", type=int, default=2, help="rarer categorical values -> OOV")
    p.add_argument("--line-per-sample", type=int, default=1000, help="rows per record")
    p.add_argument("--test-ratio", type=float, default=0.1, help="share of lines in test")
    p.add_argument("--seed", type=int, default=2022, help="seed of the train/test split")
    p.add_argument("--chunk-lines", type=int, default=100_000, help="lines per parallel job")
    p.add_argument("--workers", type=int, default=1, help="processes")


def run(a: argparse.Namespace) -> int:
    report = preprocess(
        a.inputs,
        a.out,
        min_freq=a.min_freq,
        line_per_sample=a.line_per_sample,
        test_ratio=a.test_ratio,
        seed=a.seed,
        chunk_lines=a.chunk_lines,
        workers=a.workers,
    )
    print(report.summary())
    return 0
