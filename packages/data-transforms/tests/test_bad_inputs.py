"""The data-transforms bad-input sweep (hardening issue #20) in a subprocess with a memory
cap, so a crash of a Numba kernel fails this test instead of the whole run."""

from __future__ import annotations

from pathlib import Path

from sporeling_testing.sweep import run_capped_sweep

SWEEP = Path(__file__).with_name("_bad_input_sweep.py")


def test_vision_transforms_refuse_bad_inputs_by_name():
    report = run_capped_sweep(SWEEP)
    assert report["calls"] > 300
    assert not report["failures"], "\n".join(report["failures"])
