"""Training, evaluation and measurement helpers shared by the CLI and the examples."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from sporeling.core import Model, Tensor, nn
from sporeling.core.train import ArrayDataset

__all__ = [
    "train",
    "evaluate",
    "recalibrate_bn",
    "count_flops",
    "measure_speed",
    "param_count",
    "file_size",
]


def train(
    net: nn.Cell,
    x: np.ndarray,
    y: np.ndarray,
    epochs: int = 1,
    batch_size: int = 64,
    lr: float = 0.01,
    callbacks: Sequence[Any] = (),
    seed: int = 0,
) -> nn.Cell:
    """Momentum SGD with softmax cross-entropy through the core's ``Model``."""
    if epochs <= 0:
        return net
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), learning_rate=lr, momentum=0.9)
    model = Model(net, loss, opt)
    data = ArrayDataset(x, y, batch_size=batch_size, shuffle=True, seed=seed)
    model.train(epochs, data, callbacks=list(callbacks), dataset_sink_mode=False)
    return net


def evaluate(net: nn.Cell, x: np.ndarray, y: np.ndarray, batch_size: int = 256) -> float:
    """Top-1 accuracy in eval mode."""
    net.set_train(False)
    correct = 0
    for i in range(0, len(x), batch_size):
        out = net(Tensor(x[i : i + batch_size])).asnumpy()
        correct += int((out.argmax(-1) == y[i : i + batch_size]).sum())
    return correct / max(len(x), 1)


def recalibrate_bn(
    net: nn.Cell, x: np.ndarray, batch_size: int = 64, num_batches: int | None = None
) -> nn.Cell:
    """Re-estimate every BatchNorm's moving statistics by forward passes in train mode.

    After masking or pruning (or knockoff training, whose batches mix in knockoff
    features) the moving statistics describe activations the network no longer
    produces. The old statistics are dropped: batch ``i`` (from 0) is weighed by
    ``1 / (i + 1)``, so afterwards ``moving_mean`` is the average of the batch means and
    ``moving_variance`` that of the unbiased batch variances of the (first
    ``num_batches``) batches of ``x`` in order. Weights, momenta and the train/eval
    mode are left as they were; no gradient is computed."""
    if batch_size <= 0:
        raise ValueError(
            f"recalibrate_bn: argument 'batch_size' expected a positive int, got {batch_size!r}"
        )
    if num_batches is not None and num_batches <= 0:
        raise ValueError(
            f"recalibrate_bn: argument 'num_batches' expected a positive int or None, "
            f"got {num_batches!r}"
        )
    norms = [
        c
        for _, c in net.cells_and_names()
        if isinstance(c, (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d))
    ]
    if not norms or len(x) == 0:
        return net
    starts = list(range(0, len(x), batch_size))[:num_batches]
    momenta = [bn.momentum for bn in norms]
    was_training = net.training
    net.set_train(True)
    try:
        for i, start in enumerate(starts):
            for bn in norms:
                # moving = momentum * moving + (1 - momentum) * batch
                bn.momentum = 1.0 - 1.0 / (i + 1)
            net(Tensor(x[start : start + batch_size]))
    finally:
        for bn, m in zip(norms, momenta, strict=True):
            bn.momentum = m
        net.set_train(was_training)
    return net


def param_count(net: nn.Cell) -> int:
    return int(sum(np.prod(p.shape) for p in net.get_parameters()))


def count_flops(net: nn.Cell, input_shape: tuple[int, ...]) -> int:
    """Multiply-accumulates of Conv2d/Dense-like layers for one sample (hooks on a run).

    Deploy layers are recognised by their weights, since a reloaded export has its own copy
    of their classes (``sporeling_gs_runtime.py``)."""

    def deploy_weight(cell: Any) -> Any:
        for attr in ("weight_int8", "packed"):
            if type(cell).__name__ in ("Int8Linear", "PackedConv2d") and hasattr(cell, attr):
                return cell.weight_int8.shape if attr == "weight_int8" else cell.shape
        return None

    total = [0]
    handles = []

    def hook(cell: Any, inputs: Any, out: Any) -> None:
        o = out.asnumpy() if isinstance(out, Tensor) else np.asarray(out)
        if isinstance(cell, nn.Conv2d):
            k = cell.in_channels // cell.group * int(np.prod(cell.kernel_size))
        elif isinstance(cell, nn.Dense):
            k = cell.in_channels
        else:
            k = int(np.prod(deploy_weight(cell)[1:]))
        total[0] += int(o.size // o.shape[0]) * k

    seen: set[int] = set()
    for _, cell in net.cells_and_names():
        if (isinstance(cell, (nn.Conv2d, nn.Dense)) or deploy_weight(cell) is not None) and id(
            cell
        ) not in seen:
            seen.add(id(cell))
            handles.append(cell.register_forward_hook(hook))
    net.set_train(False)
    net(Tensor(np.zeros((1, *input_shape), np.float32)))
    for h in handles:
        h.remove()
    return total[0]


def measure_speed(net: nn.Cell, x: np.ndarray, repeats: int = 5, clock: str = "wall") -> float:
    """Best time (ms) of one forward over ``x`` in eval mode (after one warm-up): wall time,
    or with ``clock="cpu"`` the process's CPU time (all its threads), the steadier number
    on a shared machine."""
    if clock not in ("wall", "cpu"):
        raise ValueError(f"measure_speed: argument 'clock' expected 'wall' or 'cpu', got {clock!r}")
    timer = time.perf_counter if clock == "wall" else time.process_time
    net.set_train(False)
    t = Tensor(x)
    net(t)
    best = float("inf")
    for _ in range(repeats):
        start = timer()
        net(t)
        best = min(best, timer() - start)
    return best * 1e3


def file_size(path: str) -> int:
    return os.path.getsize(path)
