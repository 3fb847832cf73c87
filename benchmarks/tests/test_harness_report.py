"""The harness's bookkeeping: disturbed marking through measure(), spreads, the table."""

from __future__ import annotations

import memory
import numpy as np
import pytest
from fake_machine import FakeMachine
from harness import SPREAD_WARN, Case, Result, Settings, flags, measure, spread, table
from quiet import QuietPolicy


def _case() -> Case:
    x = np.arange(6.0)
    return Case("double", lambda: x * 2, lambda: x + x, goal=1.0)


def _settings(m: FakeMachine, policy: QuietPolicy) -> Settings:
    return Settings(3, 0, 0.0, quiet=policy, meter=m.meter())


def test_measure_marks_blocks_that_stay_disturbed(monkeypatch):
    m = FakeMachine(foreign=lambda t: 1.0, sample_s=0.1)
    monkeypatch.setattr("quiet.time.sleep", m.sleep)
    res = measure("b", _case(), _settings(m, QuietPolicy(wait_s=0.0, window_s=0.01, retries=1)))
    assert res.check == "ok"
    assert res.disturbed
    assert res.disturbed_blocks == 6  # 3 repeats x 2 sides, each kept after one redo
    assert res.retried_blocks == 6
    assert "DISTURBED 6 block(s)" in flags(res)
    assert len(res.sporeling_foreign) == len(res.torch_foreign) == 3
    assert res.to_json()["disturbed"] is True


def test_measure_on_a_quiet_machine_has_no_marks(monkeypatch):
    m = FakeMachine(foreign=lambda t: 0.0, sample_s=0.1)
    monkeypatch.setattr("quiet.time.sleep", m.sleep)
    res = measure("b", _case(), _settings(m, QuietPolicy(window_s=0.01)))
    assert (res.disturbed_blocks, res.retried_blocks) == (0, 0)
    assert all(f == pytest.approx(0.0) for f in res.sporeling_foreign + res.torch_foreign)
    assert res.sporeling_first_s is not None and res.torch_first_s is not None
    assert "DISTURBED" not in flags(res)


def test_a_failed_check_skips_timing():
    x = np.ones(3)
    res = measure("b", Case("bad", lambda: x, lambda: x * 2), Settings(3, 0, 0.0))
    assert res.check.startswith("FAILED")
    assert res.sporeling_repeats_s == [] and res.ratio is None


def test_spread_and_its_warning():
    assert spread([1.0, 1.1, 1.2]) == pytest.approx(0.2)
    calm = Result("b", "c", "iter", sporeling_repeats_s=[1.0, 1.1, 1.2], torch_repeats_s=[2.0])
    assert calm.spread_warning() == ""  # 20 % is the limit, not past it
    wide = Result("b", "c", "iter", sporeling_repeats_s=[1.0, 1.0], torch_repeats_s=[1.0, 1.5])
    assert wide.spread_warning() == "spread torch 50%"
    assert 1.0 + SPREAD_WARN < 1.5
    assert "spread torch 50%" in flags(wide)


def test_table_has_spread_first_call_and_memory_columns():
    r = Result(
        "b", "c", "iter", sporeling_s=1.0, torch_s=2.0, ratio=2.0, check="ok",
        sporeling_repeats_s=[0.9, 1.0, 1.1], torch_repeats_s=[2.0, 2.0, 2.0],
        sporeling_first_s=3.0, torch_first_s=0.5, sporeling_peak_mib=100.4,
        torch_peak_mib=120.0, sporeling_step_mib=10.0, torch_step_mib=30.0,
    )  # fmt: skip
    header, row = table([r])
    cells = dict(zip(header, row))
    assert cells["sporeling median (min-max)"] == "1 s (900 ms-1.1 s)"
    assert cells["first call S / T"] == "3 s / 500 ms"
    assert cells["peak RSS MiB S / T"] == "100 / 120"
    assert cells["step MiB S / T"] == "10 / 30"
    assert cells["warnings"] == "spread sporeling 22%"  # (1.1 - 0.9) / 0.9


def test_status_text_parsing_and_peak_reset():
    text = "Name:\tpython\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\n"
    assert memory.read_status_kib("VmHWM", text) == 2048
    with pytest.raises(RuntimeError, match="VmSwap"):
        memory.read_status_kib("VmSwap", text)
    big = np.ones(32 * 2**20 // 8)  # 32 MiB touched, then freed
    del big
    memory.trim_heap()
    if not memory.reset_peak():
        pytest.skip("the kernel does not allow resetting the peak RSS here")
    # after the reset the peak is the current RSS again, not the freed 32 MiB above it
    assert memory.read_status_kib("VmHWM") - memory.read_status_kib("VmRSS") < 16 * 1024
