"""Per-op dispatch overhead: one op on tiny (4x4 float32) tensors, eager mode.

Measures what the framework spends around a kernel that costs almost nothing: argument
checks, dtype/shape rules, output wrapping and, in the ``grad`` variant (inputs with
``requires_grad``), recording the autograd node. Each timed call runs the op
``OPS_PER_CALL`` times in a plain loop, the same loop on both sides. One op or more per
family: binary arithmetic, unary math, product, full and axis reductions, basic indexing,
activation, comparison, movement (reshape, transpose), softmax.
"""

from __future__ import annotations

from typing import Any

from common import Context
from harness import Case

NAME = "dispatch"
TITLE = "per-op dispatch overhead, 4x4 float32, eager"
GOAL = 0.7  # issue 24: at most 1/0.7 = 1.43x PyTorch eager's time per op
OPS_PER_CALL = 100


def _loop(op: Any, *args: Any) -> Any:
    def run() -> Any:
        out = None
        for _ in range(OPS_PER_CALL):
            out = op(*args)
        return out

    return run


def cases(ctx: Context) -> list[Case]:
    ops, torch = ctx.ops, ctx.torch
    rng = ctx.rng(1)
    a = rng.standard_normal((4, 4)).astype("float32")
    b = rng.standard_normal((4, 4)).astype("float32")
    pairs = {  # name -> (sporeling op, torch op); written as a user would write them
        "add": (lambda x, y: x + y, lambda x, y: x + y),
        "mul": (lambda x, y: x * y, lambda x, y: x * y),
        "exp": (lambda x, y: ops.exp(x), lambda x, y: torch.exp(x)),
        "matmul 4x4": (lambda x, y: ops.matmul(x, y), lambda x, y: torch.matmul(x, y)),
        "sum": (lambda x, y: x.sum(), lambda x, y: x.sum()),
        "getitem x[1:3, 0]": (lambda x, y: x[1:3, 0], lambda x, y: x[1:3, 0]),
        "relu": (lambda x, y: ops.relu(x), lambda x, y: torch.relu(x)),
        "x > y": (lambda x, y: x > y, lambda x, y: x > y),
        "reshape (2, 8)": (lambda x, y: x.reshape(2, 8), lambda x, y: x.reshape(2, 8)),
        "transpose": (
            lambda x, y: ops.transpose(x, (1, 0)),
            lambda x, y: x.permute(1, 0),
        ),
        "mean axis 1": (lambda x, y: x.mean(1), lambda x, y: x.mean(1)),
        "softmax": (lambda x, y: ops.softmax(x, -1), lambda x, y: torch.softmax(x, -1)),
    }
    out = []
    for grad in (False, True):
        xs, ys = ctx.sp(a, grad), ctx.sp(b, grad)
        xt, yt = ctx.th(a, grad), ctx.th(b, grad)
        for name, (sp_op, th_op) in pairs.items():
            out.append(
                Case(
                    name=f"{name} ({'recording grad' if grad else 'no grad'})",
                    sporeling=_loop(sp_op, xs, ys),
                    torch=_loop(th_op, xt, yt),
                    goal=GOAL,
                    per="op",
                    ops_per_call=OPS_PER_CALL,
                    tol=1e-6,
                )
            )
    return out
