"""ResNet-20 (CIFAR-10 layout: 3 stages of 3 basic blocks, 16/32/64 channels) trained with
Model, metrics and callbacks, MindSpore 1.8 style. Only the imports (and the in-memory
dataset: ArrayDataset here, mindspore.dataset there) differ from the MindSpore script.
Data: random 32x32 RGB images whose class is the brightest of ten fixed masks.
Run: ``python resnet20_model.py --epochs 1 --samples 64``.
"""

import argparse

import numpy as np

import sporeling.core.nn as nn
from sporeling.core import Model
from sporeling.core.ops import operations as P
from sporeling.core.train.callback import LossMonitor, TimeMonitor
from sporeling.core.train.dataset import ArrayDataset


def conv3x3(in_channel, out_channel, stride=1):
    return nn.Conv2d(in_channel, out_channel, 3, stride=stride, pad_mode="same",
                     weight_init="he_normal")  # fmt: skip


class BasicBlock(nn.Cell):
    def __init__(self, in_channel, out_channel, stride=1):
        super().__init__()
        self.conv1 = conv3x3(in_channel, out_channel, stride)
        self.bn1 = nn.BatchNorm2d(out_channel)
        self.conv2 = conv3x3(out_channel, out_channel)
        self.bn2 = nn.BatchNorm2d(out_channel)
        self.relu = nn.ReLU()
        self.down_sample = stride != 1 or in_channel != out_channel
        if self.down_sample:
            self.down_sample_layer = nn.SequentialCell(
                [nn.Conv2d(in_channel, out_channel, 1, stride=stride), nn.BatchNorm2d(out_channel)]
            )
        self.add = P.Add()

    def construct(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.down_sample:
            identity = self.down_sample_layer(identity)
        return self.relu(self.add(out, identity))


class ResNet20(nn.Cell):
    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = conv3x3(3, 16)
        self.bn1 = nn.BatchNorm2d(16)
        self.relu = nn.ReLU()
        layers = []
        in_c = 16
        for out_c, stride in ((16, 1), (32, 2), (64, 2)):
            for i in range(3):
                layers.append(BasicBlock(in_c, out_c, stride if i == 0 else 1))
                in_c = out_c
        self.layers = nn.SequentialCell(layers)
        self.mean = P.ReduceMean(keep_dims=False)
        self.fc = nn.Dense(64, num_classes)

    def construct(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.layers(x)
        x = self.mean(x, (2, 3))
        return self.fc(x)


def make_data(n, rng):
    masks = rng.uniform(0, 1, (10, 3, 32, 32)).astype(np.float32)
    x = rng.uniform(0, 1, (n, 3, 32, 32)).astype(np.float32)
    y = np.argmax(np.einsum("nchw,kchw->nk", x, masks), axis=1).astype(np.int32)
    return x, y


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--samples", type=int, default=64)
    parser.add_argument("--batch", type=int, default=16)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    x, y = make_data(args.samples, rng)
    net = ResNet20()
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.05, momentum=0.9,
                      weight_decay=1e-4)  # fmt: skip
    model = Model(net, loss_fn=loss, optimizer=opt, metrics={"acc", "loss"})
    train_ds = ArrayDataset(x, y, batch_size=args.batch, shuffle=True)
    model.train(args.epochs, train_ds, callbacks=[LossMonitor(), TimeMonitor()],
                dataset_sink_mode=False)  # fmt: skip
    result = model.eval(ArrayDataset(x, y, batch_size=args.batch), dataset_sink_mode=False)
    print(f"resnet20: {result}")
    return result


if __name__ == "__main__":
    main()
