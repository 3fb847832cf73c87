"""Run a bad-input sweep script in a child process with a memory cap, so that a crash of a
compiled kernel (or a huge allocation) fails the calling test instead of the whole run.

The script prints a JSON report as its last line of output; :func:`run_capped_sweep`
returns it after checking the child ended normally.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

MEMORY_CAP = 6 << 30  # address space of the child: far below a huge allocation's demand


def _cap() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def run_capped_sweep(
    script: Path, *args: str, threads: int = 1, timeout: float = 900
) -> dict[str, Any]:
    """The JSON report of ``python script *args``, run with ``threads`` Numba/OpenMP threads
    under :data:`MEMORY_CAP`; an AssertionError with its stderr when it crashed."""
    env = {**os.environ, "NUMBA_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads)}
    proc = subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=_cap,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, f"the sweep crashed ({proc.returncode}):\n{proc.stderr[-4000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])
