"""An LSTM sequence classifier (embedding -> LSTM -> last step -> Dense) trained with Model,
MindSpore 1.8 style. Only the imports (and the in-memory dataset) differ from the MindSpore
script. Data: token sequences labelled by whether token 1 occurs more often than token 2.
Run: ``python lstm_classifier.py --epochs 3``.
"""

import argparse

import numpy as np

import sporeling.core.nn as nn
from sporeling.core import Model
from sporeling.core.ops import operations as P
from sporeling.core.train.callback import LossMonitor
from sporeling.core.train.dataset import ArrayDataset


class SentimentNet(nn.Cell):
    def __init__(self, vocab_size, embed_size, num_hiddens, num_classes):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.encoder = nn.LSTM(input_size=embed_size, hidden_size=num_hiddens, num_layers=1,
                               has_bias=True, batch_first=True, bidirectional=False)  # fmt: skip
        self.decoder = nn.Dense(num_hiddens, num_classes)
        self.gather_last = P.StridedSlice(shrink_axis_mask=2)

    def construct(self, inputs):
        embeddings = self.embedding(inputs)
        output, _ = self.encoder(embeddings)
        n, t, h = output.shape
        last = self.gather_last(output, (0, t - 1, 0), (n, t, h), (1, 1, 1))
        return self.decoder(last)


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--samples", type=int, default=128)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    x = rng.integers(0, 6, (args.samples, 12)).astype(np.int32)
    y = ((x == 1).sum(1) > (x == 2).sum(1)).astype(np.int32)
    net = SentimentNet(vocab_size=6, embed_size=8, num_hiddens=16, num_classes=2)
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Adam(net.trainable_params(), learning_rate=0.01)
    model = Model(net, loss, opt, metrics={"acc"})
    model.train(args.epochs, ArrayDataset(x, y, batch_size=16, shuffle=True),
                callbacks=[LossMonitor(per_print_times=8)], dataset_sink_mode=False)  # fmt: skip
    result = model.eval(ArrayDataset(x, y, batch_size=32), dataset_sink_mode=False)
    print(f"lstm: {result}")
    return result


if __name__ == "__main__":
    main()
