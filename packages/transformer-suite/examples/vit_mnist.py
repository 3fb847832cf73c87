"""ViT on MNIST with the suite's ``vit_mnist`` run config: the same code and recipe as
``sporeling-transformer train vit_mnist`` (patch 4, 4 layers, hidden 64, 4 heads, MLP 128,
batches of 64 through the ``sporeling.data`` pipeline, 8 epochs, AdamW 1e-3 with 200 warm-up
steps and cosine to 1e-4), then the saved checkpoint's test accuracy (``eval``).

Usage: python examples/vit_mnist.py [MNIST_DIR] [section.key=value ...]
MNIST_DIR holds train-images-idx3-ubyte.gz and train-labels-idx1-ubyte.gz (and t10k-* when
present; without them the last 10,000 training images are held out as the test set).
Overrides as on the CLI, e.g. ``train.epochs=1 data.limit=12800 output_dir=out-vit-quick``.
"""

from __future__ import annotations

import sys

from sporeling.transformer.cli import main as cli


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    data = args.pop(0) if args and "=" not in args[0] else "../shared/data/mnist"
    out = "out-vit-mnist"
    for a in args:
        if a.startswith("output_dir="):
            out = a.split("=", 1)[1]
    rc = cli(["train", "vit_mnist", f"data.path={data}", f"output_dir={out}", *args])
    return rc or cli(["eval", out])


if __name__ == "__main__":
    sys.exit(main())
