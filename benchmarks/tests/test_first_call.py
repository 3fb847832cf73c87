"""first_call.CompileLog: compiles and disk-cache loads recorded per kernel and cfunc, nested
compiles counted once, with the kernel whose compile asked for them (a fresh process per run:
the log patches Numba's dispatcher)."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent

KERNELS = """
import numba

@numba.njit(cache=True)
def inner(a):
    s = 0.0
    for v in a:
        s += v * v
    return s

@numba.njit(cache=True)
def outer(a):
    return inner(a) + 1.0

def job(x):
    return x * 2.0

def build_job():
    return numba.cfunc("float64(float64)", cache=True)(job)
"""

RUN = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    sys.path[:0] = [{bench!r}, {mods!r}]
    from first_call import CompileLog
    log = CompileLog()
    log.install()
    import kernels_under_test as k
    assert k.outer(np.arange(4.0)) == 15.0
    assert k.build_job().ctypes(3.0) == 6.0
    print(json.dumps(log.take()))
    """
)


def _run(tmp_path: Path) -> list[dict]:
    code = RUN.format(bench=str(BENCH), mods=str(tmp_path))
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_cold_then_warm(tmp_path: Path) -> None:
    (tmp_path / "kernels_under_test.py").write_text(KERNELS)
    cold = {e["kernel"].rsplit(".", 1)[-1]: e for e in _run(tmp_path)}
    assert set(cold) == {"inner", "outer", "job"}
    assert all(e["compiled"] for e in cold.values())
    assert all(e["secs"] > 0 and e["cpu"] > 0 for e in cold.values())  # exclusive times
    assert "float64" in cold["outer"]["sig"]
    assert cold["inner"]["parent"].endswith(".outer") and cold["outer"]["parent"] is None
    assert cold["job"].get("cfunc") and not cold["outer"].get("cfunc")
    warm = _run(tmp_path)
    # the cached outer links inner's code: only outer and the cfunc are loaded, nothing
    # compiles
    assert [e["kernel"].rsplit(".", 1)[-1] for e in warm] == ["outer", "job"]
    assert not any(e["compiled"] for e in warm)
