"""Autograd overhead on a training step: a 20-layer MLP, width 256, batch 64.

Each layer is ``h @ W + b`` followed by ReLU (none after the last); the loss is the mean
squared error against a fixed target. Sporeling: ``value_and_grad`` over the Parameters
and a hand-written SGD update under ``no_grad``. PyTorch: the same forward,
``loss.backward()``, and the same SGD update under ``torch.no_grad()`` (``.grad`` reset to
None). ReLU is ``ops.relu`` when it exists, otherwise ``ops.maximum(h, 0)``.
"""

from __future__ import annotations

from typing import Any

from common import Context
from harness import Case

NAME = "mlp"
TITLE = "20-layer MLP training step (width 256, batch 64), value_and_grad + SGD"
GOAL = None  # reported only; no goal was set for this one
LAYERS, WIDTH, BATCH, LR = 20, 256, 64, 1e-3


def cases(ctx: Context) -> list[Case]:
    ops, torch, core = ctx.ops, ctx.torch, ctx.core
    rng = ctx.rng(5)
    ws = [
        (rng.standard_normal((WIDTH, WIDTH)) * (2.0 / WIDTH) ** 0.5).astype("float32")
        for _ in range(LAYERS)
    ]
    bs = [(rng.standard_normal(WIDTH) * 0.01).astype("float32") for _ in range(LAYERS)]
    x = rng.standard_normal((BATCH, WIDTH)).astype("float32")
    y = rng.standard_normal((BATCH, WIDTH)).astype("float32")
    inv_n = 1.0 / (BATCH * WIDTH)

    if hasattr(ops, "relu"):
        relu, which = ops.relu, "ops.relu"
    else:
        zero = ctx.sp(x[:1, :1] * 0)

        def relu(h: Any) -> Any:
            return ops.maximum(h, zero)

        which = "maximum(h, 0)"

    # ---- Sporeling --------------------------------------------------------------------
    def sp_model(params: list[Any]) -> tuple[Any, Any]:
        sx, sy = ctx.sp(x), ctx.sp(y)

        def loss_fn(h: Any, target: Any) -> Any:
            for i in range(LAYERS):
                h = ops.matmul(h, params[2 * i]) + params[2 * i + 1]
                if i < LAYERS - 1:
                    h = relu(h)
            d = h - target
            return ops.reduce_sum(d * d) * inv_n

        vg = core.value_and_grad(loss_fn, grad_position=None, weights=params)

        def step() -> Any:
            loss, grads = vg(sx, sy)
            with core.no_grad():
                for p, g in zip(params, grads):
                    p.assign_value(p - LR * g)
            return loss

        def loss_and_grads() -> Any:
            return vg(sx, sy)

        return step, loss_and_grads

    # ---- PyTorch ----------------------------------------------------------------------
    def th_model(params: list[Any]) -> tuple[Any, Any]:
        tx, ty = ctx.th(x), ctx.th(y)

        def forward() -> Any:
            h = tx
            for i in range(LAYERS):
                h = torch.matmul(h, params[2 * i]) + params[2 * i + 1]
                if i < LAYERS - 1:
                    h = torch.relu(h)
            d = h - ty
            return (d * d).sum() * inv_n

        def step() -> Any:
            loss = forward()
            loss.backward()
            with torch.no_grad():
                for p in params:
                    p -= LR * p.grad
                    p.grad = None
            return loss

        def loss_and_grads() -> Any:
            loss = forward()
            return loss, torch.autograd.grad(loss, params)

        return step, loss_and_grads

    def sp_params() -> list[Any]:
        return [ctx.sp_param(a, f"p{k}") for k, pair in enumerate(zip(ws, bs)) for a in pair]

    def th_params() -> list[Any]:
        return [ctx.th(a, True) for pair in zip(ws, bs) for a in pair]

    sp_step, _ = sp_model(sp_params())
    th_step, _ = th_model(th_params())
    _, sp_check = sp_model(sp_params())
    _, th_check = th_model(th_params())
    return [
        Case(
            f"train step, relu={which}",
            sp_step,
            th_step,
            goal=GOAL,
            tol=1e-4,
            check_sporeling=sp_check,
            check_torch=th_check,
        )
    ]
