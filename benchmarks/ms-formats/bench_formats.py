"""MindRecord read throughput and BertTokenizer throughput: Sporeling against MindSpore.

Not a test and not a nox session: run by hand, each framework in its own environment::

    python bench_formats.py write /tmp/bench.mindrecord          # Sporeling's FileWriter
    python bench_formats.py sporeling /tmp/bench.mindrecord      # Sporeling readers
    /tmp/msvenv/bin/python bench_formats.py mindspore /tmp/bench.mindrecord

The file has 20,000 rows of a 3 KB ``bytes`` image, an int32 label and a float32 array of
16 values. Reading is one epoch of ``MindDataset(shuffle=False)`` through the dict iterator
with ``num_parallel_workers`` 1 and 2 (rows/s, best of 3; and rows per CPU-second of the
whole process, every thread counted, best of 3). The tokenizer case runs
``BertTokenizer(lower_case=True)`` eagerly over the 300 committed Tiny Shakespeare lines
ten times (lines/s, best of 3), and Sporeling's ``BertTokenizer.tokenize_batch`` on the same
3,000 lines.
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

ROWS = 20_000
HERE = os.path.dirname(os.path.abspath(__file__))
TEXT = os.path.join(HERE, "..", "..", "packages", "data-transforms", "tests", "data")


def write(path: str) -> None:
    from sporeling.data.mindrecord import FileWriter

    rng = np.random.default_rng(0)
    writer = FileWriter(path, overwrite=True)
    writer.add_schema(
        {
            "image": {"type": "bytes"},
            "label": {"type": "int32"},
            "feature": {"type": "float32", "shape": [16]},
        }
    )
    for lo in range(0, ROWS, 1000):
        writer.write_raw_data(
            [
                {
                    "image": rng.integers(0, 256, 3000, dtype=np.uint8).tobytes(),
                    "label": i % 10,
                    "feature": rng.standard_normal(16).astype(np.float32),
                }
                for i in range(lo, lo + 1000)
            ]
        )
    writer.commit()


def _best(fn, repeat: int = 3, clock: str = "wall") -> float:
    now = time.perf_counter if clock == "wall" else time.process_time
    times = []
    for _ in range(repeat):
        start = now()
        fn()
        times.append(now() - start)
    return min(times)


def _vocab_lines(text_mod):
    with open(os.path.join(TEXT, "tiny_shakespeare.txt"), encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f]
    with open(os.path.join(TEXT, "ms_text.json"), encoding="utf-8") as f:
        pieces = json.load(f)["wordpiece_vocab"]
    return text_mod.Vocab.from_list(pieces), lines


def bench(framework: str, path: str) -> dict:
    if framework == "sporeling":
        import sporeling.data as ds
        from sporeling.data import text
    else:
        import mindspore.dataset as ds
        import mindspore.dataset.text as text
    out = {"framework": framework}
    for workers in (1, 2):

        def read(workers=workers):
            data = ds.MindDataset(path, shuffle=False, num_parallel_workers=workers)
            n = sum(1 for _ in data.create_dict_iterator(output_numpy=True, num_epochs=1))
            assert n == ROWS, n

        out[f"mindrecord_rows_per_s_{workers}w"] = round(ROWS / _best(read))
        # CPU time of the whole process (every thread): less at the mercy of the other
        # processes of a shared machine than the wall clock
        out[f"mindrecord_rows_per_cpu_s_{workers}w"] = round(ROWS / _best(read, clock="cpu"))
    vocab, lines = _vocab_lines(text)
    bert = text.BertTokenizer(vocab, lower_case=True)

    def tokenize():
        for _ in range(10):
            for line in lines:
                bert(line)

    out["bert_lines_per_s"] = round(10 * len(lines) / _best(tokenize))
    if framework == "sporeling":  # the batch path (tokenizers) has no MindSpore counterpart
        out["bert_batch_lines_per_s"] = round(
            10 * len(lines) / _best(lambda: bert.tokenize_batch(lines * 10))
        )
    return out


if __name__ == "__main__":
    what, file = sys.argv[1], sys.argv[2]
    if what == "write":
        write(file)
    else:
        print(json.dumps(bench(what, file)))
