"""The custom-op bad-input sweep (hardening issue #20) in a subprocess with a memory cap,
so a crash of a compiled kernel fails this test instead of the whole run."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

SWEEP = Path(__file__).with_name("_bad_input_sweep.py")
CAP = 6 << 30


def _cap() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP))


def test_custom_ops_refuse_bad_inputs_by_name_or_match_the_interpreted_kernel():
    env = {**os.environ, "NUMBA_NUM_THREADS": "2"}
    proc = subprocess.run(
        [sys.executable, str(SWEEP)],
        capture_output=True,
        text=True,
        timeout=900,
        preexec_fn=_cap,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, f"the sweep crashed ({proc.returncode}):\n{proc.stderr[-4000:]}"
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["calls"] > 120
    assert not report["failures"], "\n".join(report["failures"])
