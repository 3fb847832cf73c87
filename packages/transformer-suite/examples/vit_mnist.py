"""ViT (patch 4, 6 layers) on MNIST through Model.fit, reporting test accuracy.

Usage: python examples/vit_mnist.py [MNIST_DIR] [--epochs N] [--limit N]
MNIST_DIR holds train-images-idx3-ubyte.gz and train-labels-idx1-ubyte.gz (and t10k-* when
present; without them the last 10,000 training images are held out as the test set).
"""

from __future__ import annotations

import argparse
import time

from sporeling.core import GRAPH_MODE, Model, nn, set_context, set_seed
from sporeling.core.train import Accuracy, LossMonitor
from sporeling.transformer.models.vit import ViT, ViTConfig
from sporeling.transformer.pipelines import mnist_datasets


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("mnist", nargs="?", default="../shared/data/mnist")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--limit", type=int, default=0, help="use only this many training images")
    ap.add_argument("--batch", type=int, default=128)
    args = ap.parse_args()
    # sporeling.data: MnistDataset on the .gz files, shuffled, normalised, batched
    train, test = mnist_datasets(args.mnist, args.batch, limit=args.limit)
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
    per_epoch = train.get_dataset_size()
    lr = nn.cosine_decay_lr(1e-4, 1e-3, args.epochs * per_epoch, per_epoch, args.epochs)
    opt = nn.AdamW(net.trainable_params(), learning_rate=lr, weight_decay=0.05)
    model = Model(
        net,
        nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
        opt,
        metrics={"accuracy": Accuracy()},
    )
    set_context(mode=GRAPH_MODE)
    t0 = time.perf_counter()
    model.fit(args.epochs, train, test, callbacks=[LossMonitor(50)])
    acc = model.eval(test)["accuracy"]
    print(f"test accuracy {acc:.4f} after {args.epochs} epochs, {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
