"""MLP 784-512-256-10 training step, batch 128, SGD with momentum (issue 3's MLP benchmark).

Sporeling: ``TrainOneStepCell(WithLossCell(net, SoftmaxCrossEntropyWithLogits), Momentum)``;
PyTorch: forward, ``cross_entropy``, ``backward()``, ``SGD(momentum=0.9).step()``. Both from
the same weights and batch (see ``train_step.py``). Goal: at least PyTorch's speed.
"""

from __future__ import annotations

from typing import Any

from common import Context
from harness import Case
from train_step import missing as _missing
from train_step import training_case

NAME = "mlp_train"
TITLE = "MLP 784-512-256-10 training step (batch 128), Momentum SGD"
GOAL = 1.0
SIZES, BATCH, LR = (784, 512, 256, 10), 128, 0.01
NEEDS = ("Dense", "ReLU", "SequentialCell", "Momentum", "TrainOneStepCell", "WithLossCell")


def missing(ctx: Context) -> str | None:
    return _missing(ctx, NEEDS)


def cases(ctx: Context) -> list[Case]:
    nn, tnn = ctx.core.nn, ctx.torch.nn
    pairs = list(zip(SIZES[:-1], SIZES[1:]))

    def make_sp() -> Any:
        layers: list[Any] = []
        for i, (a, b) in enumerate(pairs):
            layers.append(nn.Dense(a, b))
            if i < len(pairs) - 1:
                layers.append(nn.ReLU())
        return nn.SequentialCell(layers)

    def make_th() -> Any:
        layers: list[Any] = []
        for i, (a, b) in enumerate(pairs):
            layers.append(tnn.Linear(a, b))
            if i < len(pairs) - 1:
                layers.append(tnn.ReLU())
        return tnn.Sequential(*layers)

    rng = ctx.rng(11)
    x = rng.random((BATCH, SIZES[0]), dtype="float32")
    y = rng.integers(0, SIZES[-1], BATCH)
    return [training_case(ctx, "train step", make_sp, make_th, x, y, lr=LR, goal=GOAL, tol=1e-4)]
