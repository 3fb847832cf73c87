"""LeNet-5 training step on 32x32 single-channel input, batch 64, SGD with momentum.

The model zoo's LeNet5 (conv 1->6 5x5 valid, ReLU, max-pool 2, conv 6->16 5x5 valid, ReLU,
max-pool 2, flatten, dense 400-120-84-10 with ReLUs; convolutions without bias, as
MindSpore's ``nn.Conv2d`` defaults). Same weights and batch on both sides (see
``train_step.py``). Goal (issue 24): at least PyTorch's speed.
"""

from __future__ import annotations

from typing import Any

from common import Context
from harness import Case
from train_step import missing as _missing
from train_step import training_case

NAME = "lenet"
TITLE = "LeNet-5 training step (batch 64, 1x32x32), Momentum SGD"
GOAL = 1.0
BATCH, LR = 64, 0.01
NEEDS = ("Conv2d", "Dense", "MaxPool2d", "Flatten", "ReLU", "Momentum", "TrainOneStepCell")


def missing(ctx: Context) -> str | None:
    return _missing(ctx, NEEDS)


def cases(ctx: Context) -> list[Case]:
    nn, tnn = ctx.core.nn, ctx.torch.nn

    class SpLeNet5(nn.Cell):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(1, 6, 5, pad_mode="valid")
            self.conv2 = nn.Conv2d(6, 16, 5, pad_mode="valid")
            self.relu = nn.ReLU()
            self.pool = nn.MaxPool2d(kernel_size=2, stride=2)
            self.flatten = nn.Flatten()
            self.fc1 = nn.Dense(400, 120)
            self.fc2 = nn.Dense(120, 84)
            self.fc3 = nn.Dense(84, 10)

        def construct(self, x: Any) -> Any:
            x = self.pool(self.relu(self.conv1(x)))
            x = self.pool(self.relu(self.conv2(x)))
            x = self.flatten(x)
            x = self.relu(self.fc1(x))
            x = self.relu(self.fc2(x))
            return self.fc3(x)

    def make_th() -> Any:
        return tnn.Sequential(
            tnn.Conv2d(1, 6, 5, bias=False),
            tnn.ReLU(),
            tnn.MaxPool2d(2, 2),
            tnn.Conv2d(6, 16, 5, bias=False),
            tnn.ReLU(),
            tnn.MaxPool2d(2, 2),
            tnn.Flatten(),
            tnn.Linear(400, 120),
            tnn.ReLU(),
            tnn.Linear(120, 84),
            tnn.ReLU(),
            tnn.Linear(84, 10),
        )

    rng = ctx.rng(12)
    x = rng.standard_normal((BATCH, 1, 32, 32), dtype="float32")
    y = rng.integers(0, 10, BATCH)
    return [training_case(ctx, "train step", SpLeNet5, make_th, x, y, lr=LR, goal=GOAL, tol=1e-4)]
