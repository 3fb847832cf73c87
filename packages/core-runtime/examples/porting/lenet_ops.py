"""LeNet-5 in MindSpore 1.8 model-zoo style: P.* operators, a hand-written TrainOneStepCell
(GradOperation by weights with a sensitivity, F.depend on the optimizer), GRAPH_MODE.

Only the imports differ from the MindSpore script (``mindspore`` -> ``sporeling.core``).
Data: random 32x32 images with labels from a fixed random linear rule (so the loss can fall).
Run: ``python lenet_ops.py --steps 20``.
"""

import argparse

import numpy as np

import sporeling.core.nn as nn
import sporeling.core.ops.composite as C
import sporeling.core.ops.functional as F
from sporeling.core import Tensor, context
from sporeling.core.common import dtype as mstype
from sporeling.core.common.initializer import TruncatedNormal
from sporeling.core.ops import operations as P


def weight_variable():
    return TruncatedNormal(0.02)


class LeNet5(nn.Cell):
    def __init__(self, num_class=10, num_channel=1):
        super().__init__()
        self.conv1 = nn.Conv2d(num_channel, 6, 5, pad_mode="valid", weight_init=weight_variable())
        self.conv2 = nn.Conv2d(6, 16, 5, pad_mode="valid", weight_init=weight_variable())
        self.fc1 = nn.Dense(16 * 5 * 5, 120, weight_init=weight_variable())
        self.fc2 = nn.Dense(120, 84, weight_init=weight_variable())
        self.fc3 = nn.Dense(84, num_class, weight_init=weight_variable())
        self.relu = P.ReLU()
        self.max_pool2d = P.MaxPool(kernel_size=2, strides=2)
        self.reshape = P.Reshape()
        self.shape = P.Shape()

    def construct(self, x):
        x = self.max_pool2d(self.relu(self.conv1(x)))
        x = self.max_pool2d(self.relu(self.conv2(x)))
        x = self.reshape(x, (self.shape(x)[0], -1))
        x = self.relu(self.fc1(x))
        x = self.relu(self.fc2(x))
        return self.fc3(x)


class WithLossCell(nn.Cell):
    def __init__(self, backbone, loss_fn):
        super().__init__(auto_prefix=False)
        self._backbone = backbone
        self._loss_fn = loss_fn

    def construct(self, data, label):
        return self._loss_fn(self._backbone(data), label)


class TrainOneStepCell(nn.Cell):
    def __init__(self, network, optimizer, sens=1.0):
        super().__init__(auto_prefix=False)
        self.network = network
        self.network.set_grad()
        self.weights = optimizer.parameters
        self.optimizer = optimizer
        self.grad = C.GradOperation(get_by_list=True, sens_param=True)
        self.sens = sens
        self.fill = P.Fill()
        self.dtype = P.DType()
        self.shape = P.Shape()

    def construct(self, data, label):
        loss = self.network(data, label)
        sens = self.fill(self.dtype(loss), self.shape(loss), self.sens)
        grads = self.grad(self.network, self.weights)(data, label, sens)
        return F.depend(loss, self.optimizer(grads))


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=16)
    args = parser.parse_args(argv)
    context.set_context(mode=context.GRAPH_MODE, device_target="CPU")
    rng = np.random.default_rng(0)
    rule = rng.standard_normal((32 * 32, 10)).astype(np.float32)
    net = LeNet5()
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.05, momentum=0.9)
    train_net = TrainOneStepCell(WithLossCell(net, loss), opt)
    train_net.set_train()
    losses = []
    for _ in range(args.steps):
        x = rng.standard_normal((args.batch, 1, 32, 32)).astype(np.float32)
        y = np.argmax(x.reshape(args.batch, -1) @ rule, axis=1).astype(np.int32)
        out = train_net(Tensor(x), Tensor(y, mstype.int32))
        losses.append(float(out.asnumpy()))
    context.set_context(mode=context.PYNATIVE_MODE)
    print(f"lenet: first loss {losses[0]:.4f}, last loss {losses[-1]:.4f}")
    return losses


if __name__ == "__main__":
    main()
