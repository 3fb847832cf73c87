"""One place knows NumPy from CuPy: ``sporeling.core._backend`` (``is_host``, ``scatter_at``).

Elsewhere in the core, code asks it instead of testing ``xp is np`` or importing ``cupyx``
itself; the few exceptions are listed with their reason. The test fails on a new one.
"""

import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "sporeling" / "core"

#: a NumPy-vs-CuPy test written in place: ``xp is np``, ``.xp is not np``, ``import cupyx``
PATTERN = re.compile(r"\bxp is (not )?np\b|^\s*(import|from) cupyx\b", re.M)

#: file -> how many such lines it may keep, and why
ALLOWED = {
    "_backend.py": (1, "the helper itself (its scatter_at imports cupyx)"),
    "ops/activation/elementwise.py": (1, "GELU's ndtr on a GPU: cupyx.scipy.special.ndtr"),
    "_eager.py": (2, "the eager dispatch hot path: NumPy 0-d results back to arrays"),
    "ops/_core.py": (1, "sum's hot path calls np.add.reduce directly (0.56 vs 0.78 us)"),
    "kernels/codegen.py": (2, "generated CUDA kernels copying host arrays (simulator, tests)"),
    "kernels/gpu/special.py": (1, "CuPy's own special-function kernels, looked up by name"),
}


def test_numpy_and_cupy_are_told_apart_in_one_place():
    found = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        n = len(PATTERN.findall(path.read_text(encoding="utf-8")))
        if n:
            found[rel] = n
    extra = {f: n for f, n in found.items() if n > ALLOWED.get(f, (0, ""))[0]}
    assert not extra, (
        f"NumPy/CuPy told apart outside _backend (use _backend.is_host / scatter_at): {extra}"
    )
    fewer = {f: n for f, (n, _) in ALLOWED.items() if found.get(f, 0) < n}
    assert not fewer, f"fewer exceptions than listed, lower their counts in ALLOWED: {fewer}"
