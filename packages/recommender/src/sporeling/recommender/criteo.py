"""The raw Criteo text format: one example per line, 40 tab-separated fields.

``label  I1 .. I13  C1 .. C26``: the label is 0 or 1, each I-field an integer (may be empty),
each C-field a 32-bit hash written as hex digits (may be empty). :func:`parse_lines` turns a
block of lines into arrays and reports every malformed line (wrong field count, bad label,
bad integer, bad hex) with its line number instead of using it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

__all__ = [
    "NUM_DENSE",
    "NUM_SPARSE",
    "NUM_FIELDS",
    "FIELD_NAMES",
    "Malformed",
    "ParsedBlock",
    "parse_lines",
]

NUM_DENSE = 13
NUM_SPARSE = 26
NUM_FIELDS = NUM_DENSE + NUM_SPARSE  # field_size = 39, as in MindSpore's Wide&Deep
FIELD_NAMES = [f"I{i + 1}" for i in range(NUM_DENSE)] + [f"C{i + 1}" for i in range(NUM_SPARSE)]

_INT = re.compile(r"-?[0-9]+")
_HEX = re.compile(r"[0-9a-fA-F]{1,8}")  # a 32-bit hash: at most 8 hex digits
_MISSING = -1  # categorical: no value


@dataclass(frozen=True)
class Malformed:
    """A line that was not used: where it is and why."""

    line: int  # 1-based line number in its file
    kind: str  # "field count", "bad label", "bad integer" or "bad hex"
    reason: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.reason}"


@dataclass
class ParsedBlock:
    """The well-formed lines of a block, as arrays (one row per line)."""

    line: np.ndarray  # int64 (n,): 1-based line numbers
    label: np.ndarray  # float32 (n,)
    dense: np.ndarray  # float64 (n, 13): NaN where the field is empty
    sparse: np.ndarray  # int64 (n, 26): the hash as an integer, -1 where empty
    malformed: list[Malformed]


def _parse_one(fields: list[str]) -> tuple[float, list[float], list[int]] | tuple[str, str]:
    """The values of one line, or the reason it is malformed."""
    if len(fields) != 1 + NUM_FIELDS:
        return "field count", f"expected {1 + NUM_FIELDS} tab-separated fields, got {len(fields)}"
    lab = fields[0]
    if lab not in ("0", "1"):
        return "bad label", f"bad label {lab[:20]!r} (expected 0 or 1)"
    dense: list[float] = []
    for k in range(NUM_DENSE):
        s = fields[1 + k]
        if not s:
            dense.append(np.nan)
        elif _INT.fullmatch(s):
            dense.append(float(int(s)))
        else:
            return "bad integer", f"bad integer {s[:20]!r} in field I{k + 1}"
    sparse: list[int] = []
    for k in range(NUM_SPARSE):
        s = fields[1 + NUM_DENSE + k]
        if not s:
            sparse.append(_MISSING)
        elif _HEX.fullmatch(s):
            sparse.append(int(s, 16))
        else:
            return "bad hex", f"bad hex {s[:20]!r} in field C{k + 1} (expected up to 8 hex digits)"
    return float(lab), dense, sparse


def parse_lines(lines: list[str], first_line: int = 1) -> ParsedBlock:
    """Parse raw Criteo lines (without their line ends); line ``i`` of the list is line
    ``first_line + i`` of its file."""
    nums: list[int] = []
    labels: list[float] = []
    dense: list[list[float]] = []
    sparse: list[list[int]] = []
    bad: list[Malformed] = []
    for i, text in enumerate(lines):
        got = _parse_one(text.rstrip("\r").split("\t"))
        if len(got) == 2:
            bad.append(Malformed(first_line + i, got[0], got[1]))
            continue
        nums.append(first_line + i)
        lab, dns, sps = got  # type: ignore[misc]
        labels.append(lab)
        dense.append(dns)
        sparse.append(sps)
    n = len(nums)
    return ParsedBlock(
        line=np.asarray(nums, np.int64),
        label=np.asarray(labels, np.float32),
        dense=np.asarray(dense, np.float64).reshape(n, NUM_DENSE),
        sparse=np.asarray(sparse, np.int64).reshape(n, NUM_SPARSE),
        malformed=bad,
    )
