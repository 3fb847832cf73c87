"""Quiet-machine detection and disturbed marking, on a scripted machine (no timing)."""

from __future__ import annotations

import os

import pytest
from fake_machine import FakeMachine
from quiet import (
    TICK_SLACK_S,
    TICKS_PER_S,
    LoadMeter,
    QuietPolicy,
    foreign_cores,
    is_disturbed,
    machine_busy_s,
    process_cpu_s,
    run_quiet_block,
    wait_quiet,
)


def test_machine_busy_counts_user_nice_system_irq_softirq_only():
    # user nice system idle iowait irq softirq steal guest guest_nice
    line = "cpu  100 20 30 5000 70 4 6 900 50 0"
    assert machine_busy_s(line) == pytest.approx((100 + 20 + 30 + 4 + 6) / TICKS_PER_S)
    assert machine_busy_s("intr 1 2 3") is None


def test_process_cpu_reads_this_process_and_zero_for_a_missing_one():
    assert process_cpu_s(os.getpid()) >= 0.0
    assert process_cpu_s(2**22 + 12345) == 0.0  # above pid_max's default: never a process


def test_foreign_load_excludes_own_and_neighbour():
    m = FakeMachine(foreign=lambda t: 0.5, neighbour=1.0)
    meter = m.meter(exclude=[123])
    a = meter.sample()
    m.block(2.0)()
    b = meter.sample()
    assert LoadMeter.foreign_s(a, b) == pytest.approx(1.0)  # 0.5 cores x 2 s
    assert foreign_cores(LoadMeter.foreign_s(a, b), 2.0) == pytest.approx(0.5)
    no_exclude = m.meter()
    a = no_exclude.sample()
    m.block(2.0)()
    b = no_exclude.sample()
    assert LoadMeter.foreign_s(a, b) == pytest.approx(3.0)  # the neighbour counts now


def test_unknown_load_is_never_called_disturbed():
    meter = LoadMeter(machine_reader=lambda: None)
    assert not meter.available()
    a, b = meter.sample(), meter.sample()
    assert LoadMeter.foreign_s(a, b) is None
    assert not is_disturbed(None, 1.0, 0.3)
    assert foreign_cores(None, 1.0) is None


@pytest.mark.parametrize(
    ("foreign_s", "wall_s", "disturbed"),
    [
        (0.0, 1.0, False),
        (0.3, 1.0, False),  # exactly at the threshold
        (0.3 + TICK_SLACK_S, 1.0, False),  # within the tick counter's rounding
        (0.3 + TICK_SLACK_S + 0.01, 1.0, True),
        (0.5, 1.0, True),
        (1.8, 1.0, True),
    ],
)
def test_disturbed_threshold(foreign_s, wall_s, disturbed):
    assert is_disturbed(foreign_s, wall_s, 0.3) is disturbed


def test_wait_quiet_waits_until_the_load_stops():
    m = FakeMachine(foreign=lambda t: 1.0 if t < 2.0 else 0.0)
    quiet, waited = wait_quiet(m.meter(), QuietPolicy(wait_s=30, window_s=0.25), m.sleep)
    assert quiet
    assert waited == pytest.approx(2.25)  # the first whole window after t = 2


def test_wait_quiet_gives_up_after_wait_s():
    m = FakeMachine(foreign=lambda t: 1.0)
    quiet, waited = wait_quiet(m.meter(), QuietPolicy(wait_s=1.0, window_s=0.25), m.sleep)
    assert not quiet
    assert waited == pytest.approx(1.0)


def test_wait_quiet_with_no_wait_checks_one_window():
    m = FakeMachine(foreign=lambda t: 1.0)
    quiet, waited = wait_quiet(m.meter(), QuietPolicy(wait_s=0.0, window_s=0.1), m.sleep)
    assert (quiet, waited) == (False, pytest.approx(0.1))


def test_a_disturbed_block_is_redone_and_kept_when_quiet():
    # busy during the first block only: the wait before it sees quiet, the block does not
    m = FakeMachine(foreign=lambda t: 0.0)
    calls = []

    def block():
        calls.append(m.t)
        m.foreign = (lambda t: 0.9) if len(calls) == 1 else (lambda t: 0.0)
        out = m.block(0.5)()
        m.foreign = lambda t: 0.0
        return out

    run = run_quiet_block(block, m.meter(), QuietPolicy(window_s=0.1, retries=3), m.sleep)
    assert run.tries == 2
    assert not run.disturbed
    assert run.foreign_cores == pytest.approx(0.0)


def test_a_block_that_never_gets_quiet_is_kept_marked_disturbed():
    m = FakeMachine(foreign=lambda t: 1.0)
    policy = QuietPolicy(wait_s=0.5, window_s=0.25, retries=2)
    run = run_quiet_block(m.block(0.5), m.meter(), policy, m.sleep)
    assert run.tries == 3  # the first try and two redos, then it gives up
    assert run.disturbed
    assert run.foreign_cores == pytest.approx(1.0)
    assert run.waited_s == pytest.approx(3 * 0.5)


def test_busy_ok_policy_times_at_once_and_marks():
    m = FakeMachine(foreign=lambda t: 1.0)
    policy = QuietPolicy(wait_s=0.0, window_s=0.05, retries=0)
    run = run_quiet_block(m.block(0.5), m.meter(), policy, m.sleep)
    assert (run.tries, run.disturbed) == (1, True)


def test_busy_neighbour_is_excluded_so_its_run_is_quiet():
    m = FakeMachine(foreign=lambda t: 0.0, neighbour=1.0)
    run = run_quiet_block(m.block(0.5), m.meter(exclude=[99]), QuietPolicy(), m.sleep)
    assert (run.tries, run.disturbed) == (1, False)


def test_the_run_wide_budget_stops_waiting_and_redoing():
    m = FakeMachine(foreign=lambda t: 1.0)
    policy = QuietPolicy(wait_s=10.0, window_s=0.25, retries=5, budget_s=12.0)
    first = run_quiet_block(m.block(0.5), m.meter(), policy, m.sleep)
    # waits 10 s, redoes after waiting the 1.75 s left, then once more without waiting
    assert first.disturbed and first.tries == 3
    assert first.waited_s == pytest.approx(10.0 + 1.75 + 0.25)
    assert policy.budget_left() == 0.0
    second = run_quiet_block(m.block(0.5), m.meter(), policy, m.sleep)
    assert (second.tries, second.disturbed) == (1, True)
    assert second.waited_s == pytest.approx(0.25)  # one window: the cooldown


def test_each_excluded_pid_adds_its_tick_rounding_to_the_slack():
    assert LoadMeter().slack_s() == pytest.approx(TICK_SLACK_S)
    assert LoadMeter(exclude=[1, 2]).slack_s() == pytest.approx(3 * TICK_SLACK_S)
    # 2.5 ticks of foreign time in a 10 ms block: disturbed alone, within a neighbour's slack
    assert is_disturbed(2.5 / TICKS_PER_S, 0.01, 0.3, LoadMeter().slack_s())
    assert not is_disturbed(2.5 / TICKS_PER_S, 0.01, 0.3, LoadMeter(exclude=[7]).slack_s())
