"""Shared fixtures: a tiny Criteo-format sample written by the tests themselves."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_limits


@pytest.fixture(autouse=True, scope="session")
def one_blas_thread():
    """The tests' products are small: one BLAS thread each. OpenBLAS's threads spin-wait, and
    on a shared, overloaded machine that made the DCN-v2 test 10x slower (39 s against 4 s)."""
    with threadpool_limits(1, user_api="blas"):
        yield


# (line number, kind): malformed lines the sample plants among the good ones
PLANTED = {
    7: ("field count", "1\t2\t3"),
    13: ("bad integer", None),  # I4 = "12x"
    21: ("bad hex", None),  # C3 = "zz00ff11"
    30: ("bad label", None),  # label = "2"
    44: ("field count", ""),  # an empty line
}


def criteo_lines(n: int, seed: int = 0, pool: int = 6) -> list[str]:
    """``n`` raw Criteo lines: label, 13 ints (some empty, some negative), 26 hex hashes drawn
    from a small skewed pool per field (some empty); the PLANTED lines are malformed."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(1, n + 1):
        label = str(int(rng.random() < 0.3))
        dense = []
        for k in range(13):
            if rng.random() < 0.15:
                dense.append("")
            else:
                dense.append(str(int(rng.integers(-2, 200)) if k != 1 else int(rng.integers(0, 9))))
        cats = []
        for k in range(26):
            if rng.random() < 0.1:
                cats.append("")
            else:
                v = int(min(rng.zipf(1.6), pool + 3))
                cats.append(f"{(v * 2654435761 + k * 97) & 0xFFFFFFFF:08x}")
        fields = [label, *dense, *cats]
        if i in PLANTED:
            kind, text = PLANTED[i]
            if text is not None:
                out.append(text)
                continue
            if kind == "bad integer":
                fields[4] = "12x"
            elif kind == "bad hex":
                fields[1 + 13 + 2] = "zz00ff11"
            elif kind == "bad label":
                fields[0] = "2"
        out.append("\t".join(fields))
    return out


@pytest.fixture
def criteo_file(tmp_path):
    path = tmp_path / "sample.txt"
    path.write_text("\n".join(criteo_lines(120)) + "\n")
    return path
