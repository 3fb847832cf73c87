"""An elementwise + reduction chain on 1M float32 elements, forward + backward.

``y = sum(exp(x * w + b) * s(x))`` with ``s`` the logistic sigmoid, gradients for x, w
and b. ``s`` is ``ops.sigmoid`` / ``torch.sigmoid`` when Sporeling has that op, otherwise
the composite ``1 / (1 + exp(-x))`` on both sides (the case name says which). This is
the shape of work the elementwise fuser targets: eager mode runs one kernel per op and
keeps every intermediate for backward.
"""

from __future__ import annotations

from typing import Any

from common import Context
from harness import Case

NAME = "chain"
TITLE = "elementwise + reduction chain, 1M float32, fwd+bwd"
GOAL = None  # reported only; no goal was set for this one
SIZE = 1 << 20


def cases(ctx: Context) -> list[Case]:
    ops, torch = ctx.ops, ctx.torch
    if hasattr(ops, "sigmoid"):
        sp_sig, th_sig, which = ops.sigmoid, torch.sigmoid, "sigmoid op"
    else:

        def sp_sig(x: Any) -> Any:
            return 1.0 / (1.0 + ops.exp(-x))

        def th_sig(x: Any) -> Any:
            return 1.0 / (1.0 + torch.exp(-x))

        which = "composite sigmoid"

    def sp_fn(x: Any, w: Any, b: Any) -> Any:
        return ops.reduce_sum(ops.exp(x * w + b) * sp_sig(x))

    vg = ctx.core.value_and_grad(sp_fn, (0, 1, 2))
    rng = ctx.rng(3)
    x, w, b = (rng.standard_normal(SIZE).astype("float32") * 0.5 for _ in range(3))
    sx, sw, sb = ctx.sp(x), ctx.sp(w), ctx.sp(b)
    tx, tw, tb = ctx.th(x, True), ctx.th(w, True), ctx.th(b, True)
    fx, fw, fb = ctx.th(x), ctx.th(w), ctx.th(b)  # forward only: nothing to record

    def th_step() -> Any:
        loss = (torch.exp(tx * tw + tb) * th_sig(tx)).sum()
        return (loss, torch.autograd.grad(loss, (tx, tw, tb)))

    return [
        Case(f"1M, {which}, fwd+bwd", lambda: vg(sx, sw, sb), th_step, goal=GOAL, tol=1e-4),
        Case(
            f"1M, {which}, forward only",
            lambda: sp_fn(sx, sw, sb),
            lambda: (torch.exp(fx * fw + fb) * th_sig(fx)).sum(),
            tol=1e-4,
            note="reference, no goal",
        ),
    ]
