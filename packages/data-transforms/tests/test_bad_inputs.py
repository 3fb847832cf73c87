"""The data-transforms bad-input sweep (hardening issue #20) in a subprocess with a memory
cap, so a crash of a Numba kernel fails this test instead of the whole run."""

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


def test_vision_transforms_refuse_bad_inputs_by_name():
    env = {**os.environ, "NUMBA_NUM_THREADS": "1"}
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
    assert report["calls"] > 300
    assert not report["failures"], "\n".join(report["failures"])
