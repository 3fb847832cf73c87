"""Matmul forward + backward throughput: ``sum(a @ b)`` and its gradients for a and b.

One iteration is three n x n float32 matmuls (forward, and one per gradient) plus an
n x n reduction; both sides get their gradients from the functional API
(``value_and_grad`` / ``torch.autograd.grad``), with no accumulation into ``.grad``.
"""

from __future__ import annotations

from typing import Any

from common import Context
from harness import Case

NAME = "matmul"
TITLE = "matmul forward + backward, float32"
GOAL = 0.9


def cases(ctx: Context) -> list[Case]:
    ops, torch = ctx.ops, ctx.torch
    vg = ctx.core.value_and_grad(lambda a, b: ops.reduce_sum(ops.matmul(a, b)), (0, 1))
    out = []
    sizes = (512,) if ctx.quick else (512, 1024)
    for n in sizes:
        rng = ctx.rng(n)
        a = (rng.standard_normal((n, n)) / n**0.5).astype("float32")
        b = (rng.standard_normal((n, n)) / n**0.5).astype("float32")
        sa, sb = ctx.sp(a), ctx.sp(b)
        ta, tb = ctx.th(a, True), ctx.th(b, True)

        def sp_step(sa: Any = sa, sb: Any = sb) -> Any:
            return vg(sa, sb)

        def th_step(ta: Any = ta, tb: Any = tb) -> Any:
            loss = torch.matmul(ta, tb).sum()
            return (loss, torch.autograd.grad(loss, (ta, tb)))

        out.append(Case(f"{n}x{n} fwd+bwd", sp_step, th_step, goal=GOAL, tol=1e-4))
    # Forward alone, for reference: shows whether a gap is in the kernel or in autograd.
    n = sizes[-1]
    rng = ctx.rng(7)
    a = rng.standard_normal((n, n)).astype("float32")
    b = rng.standard_normal((n, n)).astype("float32")
    sa, sb, ta, tb = ctx.sp(a), ctx.sp(b), ctx.th(a), ctx.th(b)
    out.append(
        Case(
            f"{n}x{n} forward only",
            lambda: ops.matmul(sa, sb),
            lambda: torch.matmul(ta, tb),
            tol=1e-4,
            note="reference, no goal",
        )
    )
    return out
