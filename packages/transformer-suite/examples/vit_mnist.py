"""ViT (patch 4, 6 layers) on MNIST through Model.fit, reporting test accuracy.

Usage: python examples/vit_mnist.py [MNIST_DIR] [--epochs N] [--limit N]
MNIST_DIR holds train-images-idx3-ubyte.gz and train-labels-idx1-ubyte.gz (and t10k-* when
present; without them the last 10,000 training images are held out as the test set).
"""

from __future__ import annotations

import argparse
import gzip
import time
from pathlib import Path

import numpy as np

from sporeling.core import GRAPH_MODE, Model, nn, set_context, set_seed
from sporeling.core.train import Accuracy, ArrayDataset, LossMonitor
from sporeling.transformer.models.vit import ViT, ViTConfig


def idx(path: Path) -> np.ndarray:
    with gzip.open(path) as f:
        data = f.read()
    ndim = data[3]
    shape = [int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(shape)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("mnist", nargs="?", default="../shared/data/mnist")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--limit", type=int, default=0, help="use only this many training images")
    ap.add_argument("--batch", type=int, default=128)
    args = ap.parse_args()
    root = Path(args.mnist)
    x = idx(root / "train-images-idx3-ubyte.gz").astype(np.float32)[:, None] / 255.0
    y = idx(root / "train-labels-idx1-ubyte.gz").astype(np.int32)
    if (root / "t10k-images-idx3-ubyte.gz").exists():
        xt = idx(root / "t10k-images-idx3-ubyte.gz").astype(np.float32)[:, None] / 255.0
        yt = idx(root / "t10k-labels-idx1-ubyte.gz").astype(np.int32)
    else:
        x, xt, y, yt = x[:-10000], x[-10000:], y[:-10000], y[-10000:]
    if args.limit:
        x, y = x[: args.limit], y[: args.limit]
    x, xt = (x - 0.1307) / 0.3081, (xt - 0.1307) / 0.3081
    set_seed(0)
    cfg = ViTConfig(
        image_size=28,
        patch_size=4,
        num_channels=1,
        num_classes=10,
        hidden_size=64,
        num_layers=6,
        num_heads=4,
        mlp_ratio=2,
    )
    net = ViT(cfg)
    steps = args.epochs * (len(x) // args.batch)
    lr = nn.cosine_decay_lr(1e-4, 1e-3, steps, len(x) // args.batch, args.epochs)
    opt = nn.AdamW(net.trainable_params(), learning_rate=lr, weight_decay=0.05)
    model = Model(
        net,
        nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
        opt,
        metrics={"accuracy": Accuracy()},
    )
    set_context(mode=GRAPH_MODE)
    t0 = time.perf_counter()
    model.fit(
        args.epochs,
        ArrayDataset(x, y, batch_size=args.batch, shuffle=True, drop_remainder=True, seed=0),
        ArrayDataset(xt, yt, batch_size=500),
        callbacks=[LossMonitor(50)],
    )
    acc = model.eval(ArrayDataset(xt, yt, batch_size=500))["accuracy"]
    print(f"test accuracy {acc:.4f} after {args.epochs} epochs, {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
