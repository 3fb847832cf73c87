"""conv2d forward + backward: ``sum(conv2d(x, w) * r)`` and its gradients for x and w.

``r`` is a fixed random tensor, so the incoming gradient is not all ones. No bias, stride
1, 3x3 kernels with padding 1 (MindSpore: ``pad_mode="pad", padding=1``). Skipped with a
note while ``sporeling.core.ops.conv2d`` does not exist.
"""

from __future__ import annotations

import inspect
from typing import Any

from common import Context
from harness import Case

NAME = "conv2d"
TITLE = "conv2d forward + backward, float32, NCHW, 3x3, padding 1"
GOAL = 0.8
SHAPES = [  # (batch, in channels, out channels, height = width)
    (32, 3, 32, 32),
    (32, 32, 64, 16),
]


def missing(ctx: Context) -> str | None:
    """Why this benchmark cannot run yet (None when it can)."""
    if not hasattr(ctx.ops, "conv2d"):
        return "sporeling.core.ops.conv2d does not exist yet"
    return None


def _conv(ctx: Context) -> Any:
    conv2d = ctx.ops.conv2d
    try:
        params = inspect.signature(conv2d).parameters
    except (TypeError, ValueError):
        params = {}
    if "pad_mode" in params:  # MindSpore's functional form
        return lambda x, w: conv2d(x, w, pad_mode="pad", padding=1)
    return lambda x, w: conv2d(x, w, padding=1)


def cases(ctx: Context) -> list[Case]:
    ops, torch = ctx.ops, ctx.torch
    conv = _conv(ctx)
    vg = ctx.core.value_and_grad(lambda x, w, r: ops.reduce_sum(conv(x, w) * r), (0, 1))
    out = []
    for n, cin, cout, hw in SHAPES[:1] if ctx.quick else SHAPES:
        rng = ctx.rng(cin)
        x = rng.standard_normal((n, cin, hw, hw)).astype("float32")
        w = (rng.standard_normal((cout, cin, 3, 3)) / (9 * cin) ** 0.5).astype("float32")
        r = rng.standard_normal((n, cout, hw, hw)).astype("float32")
        sx, sw, sr = ctx.sp(x), ctx.sp(w), ctx.sp(r)
        tx, tw, tr = ctx.th(x, True), ctx.th(w, True), ctx.th(r)

        def sp_step(sx: Any = sx, sw: Any = sw, sr: Any = sr) -> Any:
            return vg(sx, sw, sr)

        def th_step(tx: Any = tx, tw: Any = tw, tr: Any = tr) -> Any:
            loss = (torch.nn.functional.conv2d(tx, tw, padding=1) * tr).sum()
            return (loss, torch.autograd.grad(loss, (tx, tw)))

        name = f"N{n} {cin}->{cout} {hw}x{hw} fwd+bwd"
        out.append(Case(name, sp_step, th_step, goal=GOAL, tol=1e-4))
    return out
