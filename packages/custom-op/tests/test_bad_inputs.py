"""The custom-op bad-input sweep (hardening issue #20) in a subprocess with a memory cap,
so a crash of a compiled kernel fails this test instead of the whole run."""

from __future__ import annotations

from pathlib import Path

from sporeling_testing.sweep import run_capped_sweep

SWEEP = Path(__file__).with_name("_bad_input_sweep.py")


def test_custom_ops_refuse_bad_inputs_by_name_or_match_the_interpreted_kernel():
    report = run_capped_sweep(SWEEP, threads=2)
    assert report["calls"] > 120
    assert not report["failures"], "\n".join(report["failures"])
