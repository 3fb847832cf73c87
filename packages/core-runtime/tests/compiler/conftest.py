"""Compiler tests plan every intermediate into the memory arena, not only large ones, and
split kernels over threads from 256 elements on, so the small graphs here exercise buffer
sharing and row blocks with their column partials (the defaults leave small values fresh
and small kernels on one thread)."""

import pytest

from sporeling.core.compiler import memory
from sporeling.core.kernels.cpu import _rows


@pytest.fixture(autouse=True)
def plan_every_value(monkeypatch):
    monkeypatch.setattr(memory, "PLANNED_MIN_BYTES", 0)


@pytest.fixture(autouse=True)
def blocks_from_small_inputs(monkeypatch):
    monkeypatch.setattr(_rows, "PARALLEL_MIN", 256)
