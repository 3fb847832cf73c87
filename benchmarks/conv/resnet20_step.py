"""The ResNet-20 training step pair of ``bench_resnet20`` (same weights, batch and learning
rate for Sporeling and PyTorch), for the scripts in this folder that take it apart."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def resnet20_steps(threads: int) -> tuple[Any, Any]:
    """``(sporeling_step, torch_step)`` with both libraries limited to ``threads`` threads."""
    return training_steps("bench_resnet20", threads)


def training_steps(module: str, threads: int) -> tuple[Any, Any]:
    """The step pair of a benchmark module whose cases come from ``training_case``
    (``bench_resnet20``, ``bench_lenet``), both libraries limited to ``threads`` threads."""
    import importlib

    import torch
    from quiet import limit_threads

    limit_threads(threads, torch)
    from common import Context
    from train_step import step_pair

    bench = importlib.import_module(module)
    got: dict[str, Any] = {}

    def grab(ctx: Any, name: str, make_sp: Any, make_th: Any, x: Any, y: Any, **kw: Any) -> None:
        got.update(make_sp=make_sp, make_th=make_th, x=x, y=y, lr=kw["lr"])

    bench.training_case = grab
    ctx = Context("CPU", quick=False)
    bench.cases(ctx)
    sp, th, _, _ = step_pair(
        ctx, got["make_sp"], got["make_th"], got["x"], got["y"], got["lr"], seed=0
    )
    return sp, th
