"""ResNet-20 (CIFAR-style) training step, batch 64, 3x32x32, SGD with momentum.

He et al.'s CIFAR ResNet-20: a 3x3 conv to 16 channels with BatchNorm and ReLU, three
stages of three basic blocks (16, 32, 64 channels; stride 2 at the first block of stages 2
and 3, with a 1x1 conv + BatchNorm projection shortcut there), global average pooling and
a dense layer to 10 classes; 0.27 M parameters. BatchNorm in training mode (batch
statistics). Same weights and batch on both sides (see ``train_step.py``). Goal (issue 24):
at least 0.8x PyTorch's speed.
"""

from __future__ import annotations

from typing import Any

from common import Context
from harness import Case
from train_step import missing as _missing
from train_step import training_case

NAME = "resnet20"
TITLE = "ResNet-20 training step (batch 64, 3x32x32, BatchNorm), Momentum SGD"
GOAL = 0.8
BATCH, LR = 64, 0.01
NEEDS = ("Conv2d", "BatchNorm2d", "Dense", "ReLU", "Momentum", "TrainOneStepCell")


def missing(ctx: Context) -> str | None:
    return _missing(ctx, NEEDS)


def cases(ctx: Context) -> list[Case]:
    core, torch = ctx.core, ctx.torch
    nn, ops, tnn = core.nn, core.ops, torch.nn

    def sp_conv(cin: int, cout: int, k: int, stride: int) -> Any:
        pad = {"pad_mode": "pad", "padding": 1} if k == 3 else {"pad_mode": "valid"}
        return nn.Conv2d(cin, cout, k, stride=stride, **pad)

    class SpBlock(nn.Cell):
        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            self.conv1 = sp_conv(cin, cout, 3, stride)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = sp_conv(cout, cout, 3, 1)
            self.bn2 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU()
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.SequentialCell([sp_conv(cin, cout, 1, stride), nn.BatchNorm2d(cout)])

        def construct(self, x: Any) -> Any:
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return self.relu(out + (x if self.down is None else self.down(x)))

    class SpResNet20(nn.Cell):
        def __init__(self) -> None:
            super().__init__()
            self.conv = sp_conv(3, 16, 3, 1)
            self.bn = nn.BatchNorm2d(16)
            self.relu = nn.ReLU()
            blocks, cin = [], 16
            for cout, stride in ((16, 1), (32, 2), (64, 2)):
                for i in range(3):
                    blocks.append(SpBlock(cin, cout, stride if i == 0 else 1))
                    cin = cout
            self.layers = nn.SequentialCell(blocks)
            self.fc = nn.Dense(64, 10)

        def construct(self, x: Any) -> Any:
            x = self.layers(self.relu(self.bn(self.conv(x))))
            return self.fc(ops.mean(x, (2, 3)))

    def th_conv(cin: int, cout: int, k: int, stride: int) -> Any:
        return tnn.Conv2d(cin, cout, k, stride=stride, padding=k // 2, bias=False)

    class ThBlock(tnn.Module):
        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            self.conv1 = th_conv(cin, cout, 3, stride)
            self.bn1 = tnn.BatchNorm2d(cout)
            self.conv2 = th_conv(cout, cout, 3, 1)
            self.bn2 = tnn.BatchNorm2d(cout)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = tnn.Sequential(th_conv(cin, cout, 1, stride), tnn.BatchNorm2d(cout))

        def forward(self, x: Any) -> Any:
            out = torch.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return torch.relu(out + (x if self.down is None else self.down(x)))

    class ThResNet20(tnn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = th_conv(3, 16, 3, 1)
            self.bn = tnn.BatchNorm2d(16)
            blocks, cin = [], 16
            for cout, stride in ((16, 1), (32, 2), (64, 2)):
                for i in range(3):
                    blocks.append(ThBlock(cin, cout, stride if i == 0 else 1))
                    cin = cout
            self.layers = tnn.Sequential(*blocks)
            self.fc = tnn.Linear(64, 10)

        def forward(self, x: Any) -> Any:
            x = self.layers(torch.relu(self.bn(self.conv(x))))
            return self.fc(x.mean((2, 3)))

    rng = ctx.rng(13)
    x = rng.standard_normal((BATCH, 3, 32, 32), dtype="float32")
    y = rng.integers(0, 10, BATCH)
    # BatchNorm over a batch of 64 sums in a different order on each side: looser tolerance.
    return [
        training_case(ctx, "train step", SpResNet20, ThResNet20, x, y, lr=LR, goal=GOAL, tol=1e-3)
    ]
