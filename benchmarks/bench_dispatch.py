"""Per-op dispatch overhead: one op on tiny (4x4 float32) tensors, eager mode.

Measures what the framework spends around a kernel that costs almost nothing: argument
checks, dtype/shape rules, output wrapping and, in the ``grad`` variant (inputs with
``requires_grad``), recording the autograd node. Each timed call runs the op
``OPS_PER_CALL`` times in a plain loop, the same loop on both sides. One op or more per
family: binary arithmetic, unary math, product, full and axis reductions, basic indexing,
activation, comparison, movement (reshape, transpose), softmax; and the in-place Parameter
updates (``ops.assign``, ``ops.assign_add``, as optimizers and fake-quant observers call them)
against PyTorch's ``param.data.copy_`` / ``param.add_`` under ``no_grad``.
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
    return out + _assign_cases(ctx, a, b)


def _assign_cases(ctx: Context, a: Any, b: Any) -> list[Case]:
    """In-place updates of a 4x4 float32 Parameter by a tensor or a Python scalar."""
    ops, torch = ctx.ops, ctx.torch

    def th_loop(fn: Any, p: Any, v: Any) -> Any:
        def run() -> Any:
            with torch.no_grad():
                for _ in range(OPS_PER_CALL):
                    fn(p, v)
            return p

        return run

    pairs = {  # name -> (sporeling update, torch update, value as a NumPy array or a float)
        "assign": (ops.assign, lambda p, v: p.data.copy_(v), b),
        "assign scalar": (ops.assign, lambda p, v: p.data.fill_(v), 0.5),
        "assign_add": (ops.assign_add, lambda p, v: p.add_(v), b),
        "assign_add scalar": (ops.assign_add, lambda p, v: p.add_(v), 1.0),
    }
    out = []
    for name, (sp_op, th_op, val) in pairs.items():

        def make(sp_op: Any = sp_op, th_op: Any = th_op, val: Any = val) -> Any:
            """The two loops on one Parameter pair (new ones for the check: the update
            accumulates, so the timed pair's values depend on how often each side ran)."""
            sp_p = ctx.sp_param(a.copy(), "p")  # (a Parameter made from an array holds it)
            th_p = torch.nn.Parameter(ctx.th(a))
            sp_v = val if isinstance(val, float) else ctx.sp(val)
            th_v = val if isinstance(val, float) else ctx.th(val)
            return _loop(sp_op, sp_p, sp_v), th_loop(th_op, th_p, th_v)

        sp_run, th_run = make()
        out.append(
            Case(
                name=f"{name} (Parameter, no grad)",
                sporeling=sp_run,
                torch=th_run,
                goal=GOAL,
                per="op",
                ops_per_call=OPS_PER_CALL,
                tol=1e-6,
                check_sporeling=lambda make=make: make()[0](),
                check_torch=lambda make=make: make()[1](),
            )
        )
    return out
