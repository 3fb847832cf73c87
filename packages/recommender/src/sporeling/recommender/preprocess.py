"""Criteo preprocessing (MindSpore Recommender's ``process_data.py``): raw lines to records.

Two passes over the input, each split into chunks of lines that run in parallel processes:

1. statistics of the training rows: min and max of each dense field, the count of each
   value of each categorical field (an empty field counts as a value of its own);
2. every row becomes 39 ``(feat_id, feat_val)`` pairs and a label:

   * dense field ``i`` (0..12): id ``i``, value ``(x - min_i) / (max_i - min_i)``, 0 if empty;
   * categorical field ``j``: the id of its value in that field's dictionary (values seen at
     least ``min_freq`` times), else the field's out-of-vocabulary id; value 1.

Rows go to the test split when a hash of (file, line, seed) falls under ``test_ratio``, else
to the training split; the records of each split hold ``line_per_sample`` rows each (1000, as
in MindSpore) in ``.npy`` files that are read memory-mapped (:mod:`.records`); the last
``< line_per_sample`` rows of a split are left out. Malformed lines are counted and reported
with their file and line number, never used.

Every finished chunk leaves its result in ``<out>/.work``; running the same command again
after an interruption redoes only the chunks that had not finished.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np

from .criteo import FIELD_NAMES, NUM_DENSE, NUM_FIELDS, NUM_SPARSE, parse_lines

__all__ = ["PreprocessConfig", "PreprocessReport", "Vocabulary", "preprocess", "split_is_test"]

FORMAT = "sporeling-criteo-records/1"


@dataclass(frozen=True)
class PreprocessConfig:
    """What decides the output: a second run with another config needs another folder."""

    min_freq: int = 2
    line_per_sample: int = 1000
    test_ratio: float = 0.1
    seed: int = 2022
    chunk_lines: int = 100_000

    def check(self) -> None:
        where = "preprocess"
        if isinstance(self.min_freq, bool) or not isinstance(self.min_freq, int):
            raise TypeError(f"{where}: argument 'min_freq' expected an int, got {self.min_freq!r}")
        if self.min_freq < 1:
            raise ValueError(f"{where}: argument 'min_freq' expected >= 1, got {self.min_freq}")
        if not isinstance(self.line_per_sample, int) or self.line_per_sample < 1:
            raise ValueError(
                f"{where}: argument 'line_per_sample' expected an int >= 1, got "
                f"{self.line_per_sample!r}"
            )
        if not 0.0 <= float(self.test_ratio) < 1.0:
            raise ValueError(
                f"{where}: argument 'test_ratio' expected a value in [0, 1), got {self.test_ratio}"
            )
        if not isinstance(self.chunk_lines, int) or self.chunk_lines < 1:
            raise ValueError(
                f"{where}: argument 'chunk_lines' expected an int >= 1, got {self.chunk_lines!r}"
            )


@dataclass(frozen=True)
class Chunk:
    """Lines ``[first_line, first_line + n_lines)`` of one input file (bytes start..end)."""

    index: int
    file_index: int
    path: str
    start: int
    end: int
    first_line: int
    n_lines: int


@dataclass
class PreprocessReport:
    """What a run read, wrote and rejected."""

    out_dir: str
    lines: int = 0
    malformed: int = 0
    malformed_by_reason: dict[str, int] = field(default_factory=dict)
    malformed_examples: list[str] = field(default_factory=list)  # "file:line: reason"
    train_rows: int = 0
    test_rows: int = 0
    train_records: int = 0
    test_records: int = 0
    dropped_tail_rows: int = 0
    vocab_size: int = 0
    chunks: int = 0
    chunks_reused: int = 0  # finished by an earlier, interrupted run

    def summary(self) -> str:
        lines = [
            f"{self.lines} lines: {self.train_rows} train rows, {self.test_rows} test rows, "
            f"{self.malformed} malformed (not used)",
            f"records: {self.train_records} train, {self.test_records} test "
            f"({self.dropped_tail_rows} tail rows left out); vocab_size {self.vocab_size}",
            f"chunks: {self.chunks} ({self.chunks_reused} reused from an earlier run)",
        ]
        for reason, n in sorted(self.malformed_by_reason.items()):
            lines.append(f"  malformed, {reason}: {n}")
        lines += [f"  {e}" for e in self.malformed_examples]
        return "\n".join(lines)


class Vocabulary:
    """Per-field dictionaries: ids ``0..12`` are the dense fields; categorical field ``j``
    owns ids ``[base[j], base[j] + 1 + len(values[j]))``, ``base[j]`` being its OOV id."""

    def __init__(self, values: list[np.ndarray], dense_min: np.ndarray, dense_max: np.ndarray):
        self.values = [np.asarray(v, np.int64) for v in values]
        self.dense_min = np.asarray(dense_min, np.float64)
        self.dense_max = np.asarray(dense_max, np.float64)
        sizes = np.array([1 + len(v) for v in self.values], np.int64)
        self.base = NUM_DENSE + np.concatenate([[0], np.cumsum(sizes)[:-1]])
        self.size = int(NUM_DENSE + sizes.sum())

    def encode(self, dense: np.ndarray, sparse: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(feat_ids int32 (n, 39), feat_vals float32 (n, 39))`` of parsed rows."""
        n = dense.shape[0]
        ids = np.empty((n, NUM_FIELDS), np.int64)
        vals = np.ones((n, NUM_FIELDS), np.float64)
        ids[:, :NUM_DENSE] = np.arange(NUM_DENSE)
        span = self.dense_max - self.dense_min
        span = np.where(span > 0, span, 1.0)
        scaled = (dense - self.dense_min) / span
        vals[:, :NUM_DENSE] = np.where(np.isnan(dense), 0.0, scaled)
        for j, table in enumerate(self.values):
            col = sparse[:, j]
            pos = np.searchsorted(table, col)
            hit = pos < len(table)
            hit[hit] = table[pos[hit]] == col[hit]
            ids[:, NUM_DENSE + j] = np.where(hit, self.base[j] + 1 + pos, self.base[j])
        return ids.astype(np.int32), vals.astype(np.float32)

    def save(self, folder: Path) -> None:
        offsets = np.concatenate([[0], np.cumsum([len(v) for v in self.values])])
        _atomic_npz(
            folder / "vocabulary.npz",
            values=np.concatenate(self.values) if self.values else np.zeros(0, np.int64),
            offsets=offsets.astype(np.int64),
            dense_min=self.dense_min,
            dense_max=self.dense_max,
        )

    @classmethod
    def load(cls, folder: Path) -> Vocabulary:
        with np.load(folder / "vocabulary.npz", allow_pickle=False) as z:
            off = z["offsets"]
            values = [z["values"][off[j] : off[j + 1]] for j in range(len(off) - 1)]
            return cls(values, z["dense_min"], z["dense_max"])


# ---- small helpers ------------------------------------------------------------------------


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _atomic_npz(path: Path, **arrays: np.ndarray) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        np.savez(f, **arrays)
    os.replace(tmp, path)


def split_is_test(file_index: int, lines: np.ndarray, seed: int, ratio: float) -> np.ndarray:
    """Whether each line goes to the test split: splitmix64 of (seed, file, line) < ratio,
    so the split does not depend on chunking or on the number of processes."""
    key = (file_index << 40) + (seed & 0xFFFFFFFF) * 0x9E3779B97F4A7C15 + 0x9E3779B97F4A7C15
    x = np.asarray(lines, np.uint64) + np.uint64(key & 0xFFFFFFFFFFFFFFFF)  # wraps mod 2^64
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    x = x ^ (x >> np.uint64(31))
    return (x >> np.uint64(11)).astype(np.float64) / float(1 << 53) < ratio


def index_files(paths: Sequence[str], chunk_lines: int) -> list[Chunk]:
    """Chunks of ``chunk_lines`` lines over the files, found by one fast scan for newlines."""
    chunks: list[Chunk] = []
    for fi, path in enumerate(paths):
        size = os.path.getsize(path)
        newlines: list[np.ndarray] = []
        with open(path, "rb") as f:
            pos = 0
            while block := f.read(1 << 24):
                newlines.append(pos + np.flatnonzero(np.frombuffer(block, np.uint8) == 10))
                pos += len(block)
        ends = np.concatenate(newlines) + 1 if newlines else np.zeros(0, np.int64)
        if size and (len(ends) == 0 or ends[-1] != size):
            ends = np.append(ends, size)  # a last line without a newline
        n = len(ends)
        for first in range(0, n, chunk_lines):
            last = min(first + chunk_lines, n)
            start = 0 if first == 0 else int(ends[first - 1])
            chunks.append(
                Chunk(
                    len(chunks), fi, str(path), start, int(ends[last - 1]), first + 1, last - first
                )
            )
    return chunks


def _read_chunk(chunk: Chunk) -> list[str]:
    with open(chunk.path, "rb") as f:
        f.seek(chunk.start)
        data = f.read(chunk.end - chunk.start)
    lines = data.decode("utf-8", errors="replace").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _parse(chunk: Chunk, cfg: PreprocessConfig) -> Any:
    block = parse_lines(_read_chunk(chunk), chunk.first_line)
    test = split_is_test(chunk.file_index, block.line, cfg.seed, cfg.test_ratio)
    return block, test


# ---- pass 1: statistics of one chunk ------------------------------------------------------


def _stats_chunk(chunk: Chunk, cfg: PreprocessConfig, work: str) -> None:
    block, test = _parse(chunk, cfg)
    train = ~test
    dense = block.dense[train]
    with np.errstate(all="ignore"):
        have = ~np.isnan(dense)
        dmin = np.where(have, dense, np.inf).min(axis=0) if len(dense) else np.full(13, np.inf)
        dmax = np.where(have, dense, -np.inf).max(axis=0) if len(dense) else np.full(13, -np.inf)
    arrays: dict[str, np.ndarray] = {"dense_min": dmin, "dense_max": dmax}
    for j in range(NUM_SPARSE):
        vals, counts = np.unique(block.sparse[train, j], return_counts=True)
        arrays[f"v{j}"] = vals
        arrays[f"c{j}"] = counts
    wdir = Path(work)
    _atomic_npz(wdir / f"stats-{chunk.index:05d}.npz", **arrays)
    info = {
        "n_train": int(train.sum()),
        "n_test": int(test.sum()),
        "lines": chunk.n_lines,
        "malformed": [[m.line, m.kind, m.reason] for m in block.malformed],
    }
    _atomic_write(wdir / f"stats-{chunk.index:05d}.json", json.dumps(info))


# ---- pass 2: encode and write one chunk ---------------------------------------------------


def _write_chunk(chunk: Chunk, cfg: PreprocessConfig, work: str, out: str, starts: Any) -> None:
    block, test = _parse(chunk, cfg)
    vocab = Vocabulary.load(Path(out))
    ids, vals = vocab.encode(block.dense, block.sparse)
    for split, mask in (("train", ~test), ("test", test)):
        start = int(starts[split])
        flat_ids = np.load(Path(out) / split / "feat_ids.npy", mmap_mode="r+")
        capacity = flat_ids.shape[0] * flat_ids.shape[1]
        n = int(min(mask.sum(), max(capacity - start, 0)))
        if n == 0:
            continue
        rows = slice(start, start + n)
        for name, data in (
            ("feat_ids", ids[mask][:n]),
            ("feat_vals", vals[mask][:n]),
            ("label", block.label[mask][:n, None]),
        ):
            arr = np.load(Path(out) / split / f"{name}.npy", mmap_mode="r+")
            arr.reshape(-1, arr.shape[-1])[rows] = data
            arr.flush()
            del arr
    _atomic_write(Path(work) / f"written-{chunk.index:05d}.done", "")


# ---- the driver ---------------------------------------------------------------------------


class _Runner:
    """Runs chunk jobs in this process (one worker) or in one pool of spawned processes
    that both passes share."""

    def __init__(self, workers: int, n_jobs: int) -> None:
        self.pool = None
        if workers > 1 and n_jobs > 1:
            self.pool = ProcessPoolExecutor(min(workers, n_jobs), mp_context=get_context("spawn"))

    def run(self, fn: Callable[..., None], jobs: list[tuple[Any, ...]]) -> None:
        if self.pool is None or len(jobs) <= 1:
            for job in jobs:
                fn(*job)
            return
        for fut in [self.pool.submit(fn, *job) for job in jobs]:
            fut.result()

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()


def _prepare_work(out: Path, cfg: PreprocessConfig, inputs: list[str]) -> Path:
    work = out / ".work"
    work.mkdir(parents=True, exist_ok=True)
    want = {"config": asdict(cfg), "inputs": inputs}
    cfg_file = work / "config.json"
    if cfg_file.exists():
        have = json.loads(cfg_file.read_text())
        if have != want:
            raise ValueError(
                f"preprocess: {out} holds the work of another configuration or input list "
                f"({have}); use a new output folder (or delete {out})"
            )
    else:
        _atomic_write(cfg_file, json.dumps(want, indent=1))
    return work


def _merge_stats(work: Path, chunks: list[Chunk], cfg: PreprocessConfig) -> Any:
    dmin = np.full(NUM_DENSE, np.inf)
    dmax = np.full(NUM_DENSE, -np.inf)
    parts: list[list[tuple[np.ndarray, np.ndarray]]] = [[] for _ in range(NUM_SPARSE)]
    infos = []
    for c in chunks:
        infos.append(json.loads((work / f"stats-{c.index:05d}.json").read_text()))
        with np.load(work / f"stats-{c.index:05d}.npz", allow_pickle=False) as z:
            dmin = np.minimum(dmin, z["dense_min"])
            dmax = np.maximum(dmax, z["dense_max"])
            for j in range(NUM_SPARSE):
                parts[j].append((z[f"v{j}"], z[f"c{j}"]))
    values = []
    for j in range(NUM_SPARSE):
        v = np.concatenate([p[0] for p in parts[j]]) if parts[j] else np.zeros(0, np.int64)
        c = np.concatenate([p[1] for p in parts[j]]) if parts[j] else np.zeros(0, np.int64)
        uniq, inv = np.unique(v, return_inverse=True)
        total = np.bincount(inv.reshape(-1), weights=c, minlength=len(uniq))
        values.append(uniq[total >= cfg.min_freq])
    dmin = np.where(np.isfinite(dmin), dmin, 0.0)
    dmax = np.where(np.isfinite(dmax), dmax, 0.0)
    return Vocabulary(values, dmin, dmax), infos


def _alloc(folder: Path, records: int, lps: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, dtype, width in (
        ("feat_ids", np.int32, NUM_FIELDS),
        ("feat_vals", np.float32, NUM_FIELDS),
        ("label", np.float32, 1),
    ):
        path = folder / f"{name}.npy"
        shape = (records, lps, width)
        if path.exists():
            old = np.load(path, mmap_mode="r")
            if old.shape == shape and old.dtype == dtype:
                continue
            del old
        np.lib.format.open_memmap(path, mode="w+", dtype=dtype, shape=shape).flush()


def preprocess(
    inputs: Sequence[str | os.PathLike[str]],
    out_dir: str | os.PathLike[str],
    *,
    min_freq: int = 2,
    line_per_sample: int = 1000,
    test_ratio: float = 0.1,
    seed: int = 2022,
    chunk_lines: int = 100_000,
    workers: int = 1,
    max_examples: int = 20,
) -> PreprocessReport:
    """Turn raw Criteo files into train/test records in ``out_dir`` (see the module doc).

    ``workers`` processes share each pass; ``max_examples`` malformed lines are listed in
    the report (all are counted). Returns a :class:`PreprocessReport`, also written to
    ``out_dir/manifest.json`` with the vocabulary size and the record layout.
    """
    cfg = PreprocessConfig(min_freq, line_per_sample, test_ratio, seed, chunk_lines)
    cfg.check()
    files = [str(Path(p)) for p in inputs]
    if not files:
        raise ValueError("preprocess: argument 'inputs' expected at least one file, got none")
    for p in files:
        if not Path(p).is_file():
            raise FileNotFoundError(f"preprocess: input file {p!r} does not exist")
    out = Path(out_dir)
    work = _prepare_work(out, cfg, [str(Path(p).resolve()) for p in files])
    chunks = index_files(files, chunk_lines)
    report = PreprocessReport(out_dir=str(out), chunks=len(chunks))

    runner = _Runner(workers, len(chunks))
    try:
        todo2 = _passes(runner, chunks, cfg, work, out)
    finally:
        runner.close()
    report.chunks_reused = len(chunks) - len(todo2)
    _finish(report, chunks, cfg, work, out, max_examples)
    return report


def _passes(
    runner: _Runner, chunks: list[Chunk], cfg: PreprocessConfig, work: Path, out: Path
) -> list[Chunk]:
    todo1 = [c for c in chunks if not (work / f"stats-{c.index:05d}.json").exists()]
    runner.run(_stats_chunk, [(c, cfg, str(work)) for c in todo1])
    vocab, infos = _merge_stats(work, chunks, cfg)
    vocab.save(out)

    n_train = np.array([i["n_train"] for i in infos], np.int64)
    n_test = np.array([i["n_test"] for i in infos], np.int64)
    starts = {
        "train": np.concatenate([[0], np.cumsum(n_train)[:-1]]),
        "test": np.concatenate([[0], np.cumsum(n_test)[:-1]]),
    }
    lps = cfg.line_per_sample
    records = {"train": int(n_train.sum()) // lps, "test": int(n_test.sum()) // lps}
    for split in ("train", "test"):
        _alloc(out / split, records[split], lps)
    todo2 = [c for c in chunks if not (work / f"written-{c.index:05d}.done").exists()]
    jobs = [
        (c, cfg, str(work), str(out), {s: int(starts[s][c.index]) for s in starts}) for c in todo2
    ]
    runner.run(_write_chunk, jobs)
    return todo2


def _finish(
    report: PreprocessReport,
    chunks: list[Chunk],
    cfg: PreprocessConfig,
    work: Path,
    out: Path,
    max_examples: int,
) -> None:
    vocab, infos = _merge_stats(work, chunks, cfg)
    n_train = np.array([i["n_train"] for i in infos], np.int64)
    n_test = np.array([i["n_test"] for i in infos], np.int64)
    lps = cfg.line_per_sample
    records = {"train": int(n_train.sum()) // lps, "test": int(n_test.sum()) // lps}

    by_reason: dict[str, int] = {}
    for c, info in zip(chunks, infos):
        report.lines += info["lines"]
        for line, kind, reason in info["malformed"]:
            by_reason[kind] = by_reason.get(kind, 0) + 1
            report.malformed += 1
            if len(report.malformed_examples) < max_examples:
                report.malformed_examples.append(f"{c.path}:{line}: {reason}")
    report.malformed_by_reason = by_reason
    report.train_rows, report.test_rows = int(n_train.sum()), int(n_test.sum())
    report.train_records, report.test_records = records["train"], records["test"]
    report.dropped_tail_rows = (
        report.train_rows - records["train"] * lps + report.test_rows - records["test"] * lps
    )
    report.vocab_size = vocab.size
    manifest = {
        "format": FORMAT,
        "field_names": FIELD_NAMES,
        "field_size": NUM_FIELDS,
        "line_per_sample": lps,
        "vocab_size": vocab.size,
        "field_base": [int(b) for b in vocab.base],
        "splits": {s: {"records": records[s]} for s in ("train", "test")},
        "config": asdict(cfg),
        "report": asdict(report),
    }
    _atomic_write(out / "manifest.json", json.dumps(manifest, indent=1))
