"""The ResNet-20 training step pair of ``bench_resnet20`` (same weights, batch and learning
rate for Sporeling and PyTorch), for the scripts in this folder that take it apart."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def resnet20_steps(threads: int) -> tuple[Any, Any]:
    """``(sporeling_step, torch_step)`` with both libraries limited to ``threads`` threads."""
    import torch
    from quiet import limit_threads

    limit_threads(threads, torch)
    import bench_resnet20
    from common import Context
    from train_step import step_pair

    got: dict[str, Any] = {}

    def grab(ctx: Any, name: str, make_sp: Any, make_th: Any, x: Any, y: Any, **kw: Any) -> None:
        got.update(make_sp=make_sp, make_th=make_th, x=x, y=y, lr=kw["lr"])

    bench_resnet20.training_case = grab
    ctx = Context("CPU", quick=False)
    bench_resnet20.cases(ctx)
    sp, th, _, _ = step_pair(
        ctx, got["make_sp"], got["make_th"], got["x"], got["y"], got["lr"], seed=0
    )
    return sp, th
