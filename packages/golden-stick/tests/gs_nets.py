"""Small networks for golden stick's tests (LeNet-5 as in MindSpore's tutorial, a tiny
ResNet with both identity and projection shortcuts)."""

from __future__ import annotations

import numpy as np

from sporeling.core import Tensor, nn, ops


class LeNet5(nn.Cell):
    def __init__(self, num_class: int = 10) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, pad_mode="valid", weight_init="he_uniform")
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


class ConvBnNet(nn.Cell):
    """Conv+BN+ReLU, Conv+BN, Dense+ReLU chains for the fusion passes."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, weight_init="he_uniform")
        self.bn1 = nn.BatchNorm2d(8)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(8, 8, 3, stride=2, weight_init="he_uniform")
        self.bn2 = nn.BatchNorm2d(8)
        self.fc = nn.Dense(8, 5, weight_init="he_uniform")
        self.relu2 = nn.ReLU()

    def construct(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.bn2(self.conv2(x))
        return self.relu2(self.fc(ops.mean(x, (2, 3))))


def randomize_bn(net: nn.Cell, seed: int = 0) -> None:
    """Non-trivial BN statistics and affine parameters (so folding is really tested)."""
    rng = np.random.default_rng(seed)
    for _, cell in net.cells_and_names():
        if isinstance(cell, (nn.BatchNorm2d, nn.BatchNorm1d)):
            c = cell.num_features
            cell.gamma.set_data(Tensor(rng.uniform(0.5, 1.5, c).astype("f4")))
            cell.beta.set_data(Tensor(rng.normal(0, 0.1, c).astype("f4")))
            cell.moving_mean.set_data(Tensor(rng.normal(0, 0.1, c).astype("f4")))
            cell.moving_variance.set_data(Tensor(rng.uniform(0.5, 2.0, c).astype("f4")))


def conv3x3(cin: int, cout: int, stride: int) -> nn.Conv2d:
    return nn.Conv2d(cin, cout, 3, stride=stride, pad_mode="pad", padding=1)


class Block(nn.Cell):
    """ResNet basic block: identity shortcut, or a 1x1 projection when the shape changes."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = conv3x3(cin, cout, stride)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = conv3x3(cout, cout, 1)
        self.bn2 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU()
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.SequentialCell(
                [nn.Conv2d(cin, cout, 1, stride=stride, pad_mode="valid"), nn.BatchNorm2d(cout)]
            )

    def construct(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + (x if self.down is None else self.down(x)))


class TinyResNet(nn.Cell):
    """Two stages of two blocks (identity and projection shortcuts)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = conv3x3(3, 8, 1)
        self.bn = nn.BatchNorm2d(8)
        self.relu = nn.ReLU()
        blocks, cin = [], 8
        for cout, stride in ((8, 1), (16, 2)):
            for i in range(2):
                blocks.append(Block(cin, cout, stride if i == 0 else 1))
                cin = cout
        self.layers = nn.SequentialCell(blocks)
        self.fc = nn.Dense(16, 10)

    def construct(self, x):
        x = self.layers(self.relu(self.bn(self.conv(x))))
        return self.fc(ops.mean(x, (2, 3)))
