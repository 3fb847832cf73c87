"""A scripted machine for the harness tests: a fake clock and CPU counters, no timing."""

from __future__ import annotations

from collections.abc import Callable

from quiet import LoadMeter


class FakeMachine:
    """Time advances only through ``sleep`` and ``block``; ``foreign(t)`` gives how many
    cores other processes use at time t, ``neighbour`` the cores an excluded pid uses."""

    def __init__(
        self, foreign: Callable[[float], float], neighbour: float = 0.0, sample_s: float = 0.0
    ) -> None:
        self.sample_s = sample_s  # time each meter reading takes (blocks timed for real)
        self.t = 0.0
        self.busy = 0.0  # whole-machine busy CPU seconds
        self.own = 0.0  # this process's CPU seconds
        self.neighbour_s = 0.0
        self.foreign = foreign
        self.neighbour = neighbour

    def _advance(self, dt: float, own_cores: float) -> None:
        load = self.foreign(self.t)
        self.t += dt
        self.own += own_cores * dt
        self.neighbour_s += self.neighbour * dt
        self.busy += (own_cores + load + self.neighbour) * dt

    def sleep(self, dt: float) -> None:
        self._advance(dt, 0.0)

    def block(self, dt: float = 0.5) -> Callable[[], float]:
        def run() -> float:
            self._advance(dt, 1.0)
            return dt

        return run

    def meter(self, exclude: list[int] | None = None) -> LoadMeter:
        return LoadMeter(
            exclude=list(exclude or []),
            machine_reader=lambda: self.busy,
            own_reader=lambda: self.own,
            pid_reader=lambda pid: self.neighbour_s,
            clock=self._clock,
        )

    def _clock(self) -> float:
        if self.sample_s:
            self._advance(self.sample_s, 1.0)
        return self.t
