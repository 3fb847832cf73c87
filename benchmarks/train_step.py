"""Shared by the training-step benchmarks (bench_mlp_train, bench_lenet, bench_resnet20).

One training step each side, as each framework's users write it. Sporeling: the MindSpore
way, ``nn.TrainOneStepCell(nn.WithLossCell(net, loss), optimizer)`` called on a batch.
PyTorch: ``loss = F.cross_entropy(net(x), y); opt.zero_grad(); loss.backward();
opt.step()``. The two networks start from the same weights (PyTorch's initialisation,
copied into Sporeling's Parameters in registration order, shapes checked), see the same
batch and use SGD with momentum 0.9 (MindSpore ``nn.Momentum`` and ``torch.optim.SGD``
apply the same update: ``v = 0.9 v + g; w -= lr v``).

The check before timing builds a fresh pair and runs three steps on both: the losses must
agree, and so must the first and last parameters after them, which covers the forward,
the gradients and the optimizer update.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from common import Context
from harness import Case

CHECK_STEPS = 3


def copy_weights(ctx: Context, sp_net: Any, th_net: Any) -> None:
    """Copy PyTorch's parameters into Sporeling's, in order (both nets list them alike)."""
    sp_params = list(sp_net.trainable_params())
    th_params = list(th_net.parameters())
    if len(sp_params) != len(th_params):
        raise AssertionError(f"{len(sp_params)} Sporeling parameters vs {len(th_params)} torch")
    for p, t in zip(sp_params, th_params):
        arr = t.detach().cpu().numpy()
        if tuple(p.shape) != arr.shape:
            raise AssertionError(f"{p.name}: shape {tuple(p.shape)} vs torch {arr.shape}")
        p.set_data(ctx.core.Tensor(np.array(arr, copy=True), device=ctx.device))


def step_pair(
    ctx: Context,
    make_sp: Callable[[], Any],
    make_th: Callable[[], Any],
    x: np.ndarray,
    y: np.ndarray,
    lr: float,
    seed: int,
) -> tuple[Callable[[], Any], Callable[[], Any], Any, Any]:
    """A Sporeling step and a PyTorch step on the same weights and batch, and the nets."""
    core, torch = ctx.core, ctx.torch
    torch.manual_seed(seed)
    th_net = make_th().to(ctx.torch_device)
    sp_net = make_sp()
    copy_weights(ctx, sp_net, th_net)

    loss = core.nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = core.nn.Momentum(sp_net.trainable_params(), learning_rate=lr, momentum=0.9)
    sp_step = core.nn.TrainOneStepCell(core.nn.WithLossCell(sp_net, loss), opt)
    sp_step.set_train()
    sx, sy = ctx.sp(x), ctx.sp(y.astype(np.int32))

    th_net.train()
    th_opt = torch.optim.SGD(th_net.parameters(), lr=lr, momentum=0.9)
    tx, ty = ctx.th(x), ctx.th(y.astype(np.int64))
    cross_entropy = torch.nn.functional.cross_entropy

    def sp() -> Any:
        return sp_step(sx, sy)

    def th() -> Any:
        out = cross_entropy(th_net(tx), ty)
        th_opt.zero_grad(set_to_none=True)
        out.backward()
        th_opt.step()
        return out

    return sp, th, sp_net, th_net


def training_case(
    ctx: Context,
    name: str,
    make_sp: Callable[[], Any],
    make_th: Callable[[], Any],
    x: np.ndarray,
    y: np.ndarray,
    *,
    lr: float,
    goal: float | None,
    tol: float,
    note: str = "",
) -> Case:
    sp, th, _, _ = step_pair(ctx, make_sp, make_th, x, y, lr, seed=0)
    sp_chk, th_chk, sp_net, th_net = step_pair(ctx, make_sp, make_th, x, y, lr, seed=0)

    # The losses of consecutive steps, then the first and last parameters after them (the
    # losses move little in 3 steps; the weights show a wrong or missing update at once).
    def check_sp() -> list[Any]:
        losses = [float(sp_chk().asnumpy()) for _ in range(CHECK_STEPS)]
        params = list(sp_net.trainable_params())
        return [losses, params[0].asnumpy(), params[-1].asnumpy()]

    def check_th() -> list[Any]:
        losses = [float(th_chk().item()) for _ in range(CHECK_STEPS)]
        params = list(th_net.parameters())
        return [losses, params[0], params[-1]]

    return Case(
        name,
        sp,
        th,
        goal=goal,
        tol=tol,
        check_sporeling=check_sp,
        check_torch=check_th,
        note=note or f"{CHECK_STEPS} steps' losses and updated weights compared before timing",
    )


def missing(ctx: Context, names: tuple[str, ...]) -> str | None:
    """Why the benchmark cannot run yet (a layer or wrapper not written), or None."""
    nn = ctx.core.nn
    absent = [n for n in names if not hasattr(nn, n)]
    return f"sporeling.core.nn lacks {', '.join(absent)}" if absent else None
