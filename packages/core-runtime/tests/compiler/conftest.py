"""Compiler tests plan every intermediate into the memory arena, not only large ones, so
the small graphs here exercise buffer sharing (the default keeps values under 64 KiB fresh)."""

import pytest

from sporeling.core.compiler import memory


@pytest.fixture(autouse=True)
def plan_every_value(monkeypatch):
    monkeypatch.setattr(memory, "PLANNED_MIN_BYTES", 0)
