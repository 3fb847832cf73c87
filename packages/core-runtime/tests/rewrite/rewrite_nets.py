"""Networks of the core's tests and benchmarks, written out for the rewrite tests."""

from __future__ import annotations

import math

import numpy as np

from sporeling.core import Parameter, Tensor, nn, ops

HEADS, D_MODEL, SEQ, VOCAB = 2, 8, 4, 11


class MLP(nn.Cell):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Dense(6, 8)
        self.relu = nn.ReLU()
        self.fc2 = nn.Dense(8, 3)

    def construct(self, x):
        x = self.relu(self.fc1(x))
        return self.fc2(x)


class LeNet5(nn.Cell):
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

    def construct(self, x):
        x = self.pool(self.relu(self.conv1(x)))
        x = self.pool(self.relu(self.conv2(x)))
        x = self.flatten(x)
        x = self.relu(self.fc1(x))
        x = self.relu(self.fc2(x))
        return self.fc3(x)


def conv3x3(cin: int, cout: int, stride: int) -> nn.Conv2d:
    return nn.Conv2d(cin, cout, 3, stride=stride, pad_mode="pad", padding=1)


class Block(nn.Cell):
    """ResNet basic block with a residual add (bench_resnet20's SpBlock)."""

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


class ResNet(nn.Cell):
    """ResNet-20's shape with one block per stage (bench_resnet20's SpResNet20, shortened)."""

    def __init__(self, per_stage: int = 1) -> None:
        super().__init__()
        self.conv = conv3x3(3, 8, 1)
        self.bn = nn.BatchNorm2d(8)
        self.relu = nn.ReLU()
        blocks, cin = [], 8
        for cout, stride in ((8, 1), (16, 2)):
            for i in range(per_stage):
                blocks.append(Block(cin, cout, stride if i == 0 else 1))
                cin = cout
        self.layers = nn.SequentialCell(blocks)
        self.fc = nn.Dense(16, 10)

    def construct(self, x):
        x = self.layers(self.relu(self.bn(self.conv(x))))
        return self.fc(ops.mean(x, (2, 3)))


class GPTBlock(nn.Cell):
    def __init__(self) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm((D_MODEL,), epsilon=1e-5)
        self.qkv = nn.Dense(D_MODEL, 3 * D_MODEL)
        self.proj = nn.Dense(D_MODEL, D_MODEL)
        self.ln2 = nn.LayerNorm((D_MODEL,), epsilon=1e-5)
        self.fc1 = nn.Dense(D_MODEL, 4 * D_MODEL)
        self.act = nn.GELU(approximate=False)
        self.fc2 = nn.Dense(4 * D_MODEL, D_MODEL)

    def construct(self, x, mask):
        b, t, d = x.shape
        hd = d // HEADS
        qkv = ops.reshape(self.qkv(ops.reshape(self.ln1(x), (b * t, d))), (b, t, 3, HEADS, hd))
        qkv = ops.transpose(qkv, (2, 0, 3, 1, 4))
        q, k, v = qkv[0], qkv[1], qkv[2]
        att = ops.matmul(q, ops.transpose(k, (0, 1, 3, 2))) * (1.0 / math.sqrt(hd)) + mask
        y = ops.matmul(ops.softmax(att, -1), v)
        y = ops.reshape(ops.transpose(y, (0, 2, 1, 3)), (b * t, d))
        x = x + ops.reshape(self.proj(y), (b, t, d))
        h = ops.reshape(self.ln2(x), (b * t, d))
        return x + ops.reshape(self.fc2(self.act(self.fc1(h))), (b, t, d))


class GPT(nn.Cell):
    """bench_graph's GPT-style decoder, small."""

    def __init__(self, layers: int = 2) -> None:
        super().__init__()
        self.tok = nn.Embedding(VOCAB, D_MODEL)
        self.pos = Parameter(np.zeros((SEQ, D_MODEL), "float32"), name="pos")
        self.blocks = nn.CellList([GPTBlock() for _ in range(layers)])
        self.ln_f = nn.LayerNorm((D_MODEL,), epsilon=1e-5)
        self.head = nn.Dense(D_MODEL, VOCAB)
        self.mask = Tensor(np.triu(np.full((SEQ, SEQ), -1e9, "float32"), 1))

    def construct(self, idx):
        b, t = idx.shape
        x = self.tok(idx) + self.pos
        for blk in self.blocks:
            x = blk(x, self.mask)
        return self.head(ops.reshape(self.ln_f(x), (b * t, D_MODEL)))


class ControlFlow(nn.Cell):
    """if/for over Python values (resolved at create time) and over inputs (kept whole)."""

    def __init__(self, use_extra: bool = True) -> None:
        super().__init__()
        self.fcs = nn.CellList([nn.Dense(4, 4) for _ in range(3)])
        self.extra = nn.Dense(4, 4)
        self.use_extra = use_extra
        self.relu = nn.ReLU()
        self.scales = (1.0, 2.0)

    def construct(self, x, flag):
        for fc in self.fcs:
            x = self.relu(fc(x))
        if self.use_extra:
            x = self.extra(x)
        else:
            x = x * 3.0
        for i in range(2):
            x = x + self.scales[i]
        if flag > 0:
            x = x * 2.0
        else:
            x = -x
        y = x if flag > 1 else x + 1.0
        return x, y
