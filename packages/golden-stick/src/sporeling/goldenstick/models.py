"""The networks of the examples and the CLI: LeNet-5 (MNIST) and ResNet-20 (CIFAR-10)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sporeling.core import nn, ops

__all__ = ["LeNet5", "ResNet20", "MODELS", "build_model"]


class LeNet5(nn.Cell):
    """MindSpore's LeNet-5 (inputs (N, 1, 32, 32))."""

    def __init__(self, num_class: int = 10, num_channel: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(num_channel, 6, 5, pad_mode="valid", weight_init="he_uniform")
        self.conv2 = nn.Conv2d(6, 16, 5, pad_mode="valid", weight_init="he_uniform")
        self.relu = nn.ReLU()
        self.max_pool2d = nn.MaxPool2d(kernel_size=2, stride=2)
        self.flatten = nn.Flatten()
        self.fc1 = nn.Dense(16 * 5 * 5, 120, weight_init="he_uniform")
        self.fc2 = nn.Dense(120, 84, weight_init="he_uniform")
        self.fc3 = nn.Dense(84, num_class, weight_init="he_uniform")

    def construct(self, x):
        x = self.max_pool2d(self.relu(self.conv1(x)))
        x = self.max_pool2d(self.relu(self.conv2(x)))
        x = self.flatten(x)
        x = self.relu(self.fc1(x))
        x = self.relu(self.fc2(x))
        return self.fc3(x)


def _conv(cin: int, cout: int, k: int, stride: int) -> nn.Conv2d:
    pad = {"pad_mode": "pad", "padding": 1} if k == 3 else {"pad_mode": "valid"}
    return nn.Conv2d(cin, cout, k, stride=stride, weight_init="he_uniform", **pad)


class BasicBlock(nn.Cell):
    """Two 3x3 convs with BN; identity shortcut, or 1x1 conv + BN when the shape changes."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = _conv(cin, cout, 3, stride)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = _conv(cout, cout, 3, 1)
        self.bn2 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU()
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.SequentialCell([_conv(cin, cout, 1, stride), nn.BatchNorm2d(cout)])

    def construct(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + (x if self.down is None else self.down(x)))


class ResNet20(nn.Cell):
    """ResNet-20 for CIFAR-10 (He et al. 2016): 3 stages of 3 basic blocks (16/32/64
    channels times ``width``); ``blocks`` < 3 gives the smaller ResNet-8/14."""

    def __init__(self, num_classes: int = 10, width: int = 1, blocks: int = 3) -> None:
        super().__init__()
        w = 16 * width
        self.conv = _conv(3, w, 3, 1)
        self.bn = nn.BatchNorm2d(w)
        self.relu = nn.ReLU()
        layers, cin = [], w
        for cout, stride in ((w, 1), (2 * w, 2), (4 * w, 2)):
            for i in range(blocks):
                layers.append(BasicBlock(cin, cout, stride if i == 0 else 1))
                cin = cout
        self.layers = nn.SequentialCell(layers)
        self.fc = nn.Dense(4 * w, num_classes, weight_init="he_uniform")

    def construct(self, x):
        x = self.layers(self.relu(self.bn(self.conv(x))))
        return self.fc(ops.mean(x, (2, 3)))


MODELS: dict[str, tuple[Callable[[], nn.Cell], tuple[int, ...], str]] = {
    "lenet5": (LeNet5, (1, 32, 32), "mnist"),
    "resnet20": (ResNet20, (3, 32, 32), "cifar10"),
    "resnet8": (lambda: ResNet20(blocks=1), (3, 32, 32), "cifar10"),
}


def build_model(name: str, **kwargs: Any) -> nn.Cell:
    """A model of :data:`MODELS` by name."""
    if name not in MODELS:
        raise ValueError(
            f"build_model: argument 'name' expected one of {sorted(MODELS)}, got {name!r}"
        )
    return MODELS[name][0](**kwargs)
