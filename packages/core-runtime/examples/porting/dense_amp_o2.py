"""A Dense regression network trained by Model with amp_level="O2" and a dynamic loss
scale, MindSpore 1.8 style. Only the imports (and the in-memory dataset: ArrayDataset here,
mindspore.dataset.NumpySlicesDataset there) differ from the MindSpore script.
Run: ``python dense_amp_o2.py --epochs 10``.
"""

import argparse

import numpy as np

import sporeling.core.nn as nn
from sporeling.core import Model, Tensor
from sporeling.core.common import dtype as mstype
from sporeling.core.train.callback import LossMonitor
from sporeling.core.train.dataset import ArrayDataset
from sporeling.core.train.loss_scale_manager import DynamicLossScaleManager


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(8, 32)
        self.bn = nn.BatchNorm1d(32)
        self.relu = nn.ReLU()
        self.fc2 = nn.Dense(32, 1)

    def construct(self, x):
        return self.fc2(self.relu(self.bn(self.fc1(x))))


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=10)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((256, 8)).astype(np.float32)
    y = (x @ rng.standard_normal((8, 1)) + 0.1).astype(np.float32)
    net = Net()
    loss = nn.MSELoss()
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.02, momentum=0.9)
    manager = DynamicLossScaleManager(init_loss_scale=2**12, scale_factor=2, scale_window=50)
    model = Model(net, loss, opt, amp_level="O2", loss_scale_manager=manager)
    ds = ArrayDataset(x, y, batch_size=32, shuffle=True)
    model.train(args.epochs, ds, callbacks=[LossMonitor(per_print_times=8)],
                dataset_sink_mode=False)  # fmt: skip
    net.set_train(False)
    pred = net(Tensor(x)).astype(mstype.float32).asnumpy()
    mse = float(np.mean((pred - y) ** 2))
    print(f"dense amp O2: mse {mse:.4f} (variance of y {float(y.var()):.4f})")
    return mse, float(y.var())


if __name__ == "__main__":
    main()
