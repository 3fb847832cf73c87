"""``sporeling demo``: fit a small MLP on the embedded digits data, eagerly, by hand.

It shows the core end to end: tensors, a model written with ``ops``, ``value_and_grad``
over Parameters, and an SGD step written by hand. The data (UCI optical digits, 8x8
images, see ``data/NOTICE.md``) ships inside the package, so it runs offline.
"""

from __future__ import annotations

import argparse
import gzip
import time
from collections.abc import Sequence
from importlib import resources

import numpy as np

from . import Parameter, Tensor, no_grad, ops, value_and_grad
from .random_state import set_seed


def load_digits() -> tuple[np.ndarray, np.ndarray]:
    """The embedded digits: (images as float32 in [0, 1], shape (n, 64); int64 labels)."""
    raw = resources.files("sporeling.core").joinpath("data/digits.csv.gz").read_bytes()
    table = np.loadtxt(gzip.decompress(raw).decode().splitlines(), delimiter=",", dtype=np.int64)
    return (table[:, :64] / 16.0).astype(np.float32), table[:, 64]


def init_params(sizes: Sequence[int], rng: np.random.Generator) -> list[Parameter]:
    """He-normal weights and zero biases for a stack of dense layers."""
    params = []
    for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        w = rng.standard_normal((fan_in, fan_out)).astype(np.float32) * np.sqrt(2.0 / fan_in)
        params.append(Parameter(w, name=f"dense{i}.weight"))
        params.append(Parameter(np.zeros(fan_out, np.float32), name=f"dense{i}.bias"))
    return params


def forward(params: list[Parameter], x: Tensor) -> Tensor:
    """Dense -> ReLU -> ... -> Dense (logits)."""
    for i in range(0, len(params), 2):
        x = ops.matmul(x, params[i]) + params[i + 1]
        if i + 2 < len(params):
            x = ops.relu(x)
    return x


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sporeling demo", description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.epochs < 1 or args.batch_size < 1 or args.lr <= 0:
        raise ValueError("--epochs and --batch-size must be >= 1 and --lr > 0")

    set_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    images, labels = load_digits()
    order = rng.permutation(len(labels))
    split = int(0.8 * len(labels))
    train, test = order[:split], order[split:]
    params = init_params((64, args.hidden, args.hidden, 10), rng)

    def loss_fn(x: Tensor, y: Tensor) -> Tensor:
        return ops.cross_entropy(forward(params, x), y)

    step = value_and_grad(loss_fn, grad_position=None, weights=params)
    x_test, y_test = Tensor(images[test]), labels[test]
    print(
        f"digits: {len(train)} training and {len(test)} test images, MLP 64-{args.hidden}-"
        f"{args.hidden}-10, SGD lr={args.lr}"
    )
    start = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        perm = rng.permutation(train)
        total = 0.0
        for b in range(0, len(perm), args.batch_size):
            idx = perm[b : b + args.batch_size]
            loss, grads = step(Tensor(images[idx]), Tensor(labels[idx]))
            with no_grad():  # the hand-written SGD step
                for p, g in zip(params, grads):
                    p.assign_value(p - args.lr * g)
            total += float(loss) * len(idx)
        if epoch == 1 or epoch % 5 == 0 or epoch == args.epochs:
            with no_grad():
                pred = forward(params, x_test).asnumpy().argmax(1)
            acc = float((pred == y_test).mean())
            print(f"epoch {epoch:3d}  train loss {total / len(train):.4f}  test accuracy {acc:.3f}")
    print(f"done in {time.perf_counter() - start:.1f}s; final test accuracy {acc:.3f}")
    return 0
