"""SLB on a CIFAR-10 ResNet: W4 / W2 / W1 against the float network trained with the same
budget; weight-file sizes of the bit-packed exports. One command:

    python examples/slb_resnet_cifar10.py --data ../../shared/data/cifar-10/cifar-10-batches-bin

Scaled to a 2-core machine: ResNet-8 by default (--model resnet20 for the full one),
--train samples of batch 1, validation on --val samples of batch 4. ``--bits 0`` trains
only the float network, ``--no-fp`` skips it (so the networks can run as separate
processes).

The recipe is Golden Stick's sample (Momentum 0.9, the 1.8 temperature formula
``T = t_factor ** (now - start)`` between ``t_start_time`` and ``t_end_time``, then the end
flag) compressed into a few epochs:

- the temperature rises every step, not every epoch: ``TemperatureScheduler.schedule`` is
  called with the step number over ``epoch_size`` = all steps of the run, and ``t_factor``
  is chosen so that ``T`` ends where the sample's 100 epochs end it, ``1.2 ** 40`` (about
  1470, large enough for the softmax to be nearly one-hot when the end flag freezes the
  arg-max). Raised per epoch, a 6-epoch run would get two jumps of 2.4x or 6.2x.
- ``t_start_time=0.0, t_end_time=0.9`` instead of the sample's 0.2 / 0.6: after the end flag
  the convolutions are frozen (the arg-max has no gradient), so 0.6 leaves 40% of a short
  run to BN and the classifier alone (ResNet-8 W4 proxy, 4,000 images x 2 epochs, 1,000
  validation images: 0.31 with 0.2 / 0.6, 0.37 with 0.0 / 0.9; the float network 0.39).
- the logits learn at a tenth of the float network's rate (``--logit-lr``): the softmax
  weights start near zero (near-uniform softmax of small logits) and the BN after every
  conv cancels their scale, so their effective step is far larger than a float weight's
  (the same proxy with everything at 0.05: 0.33; logits at 0.005: 0.37).
- W1's logits learn 10x faster than W4's and W2's (0.05, ``LOGIT_LR``): at the near-uniform
  start a weight's step per unit of logit learning rate, relative to the squared size of the
  weights BN cancels (``sum_i (dw/dl_i)**2 / w**2``), is about 4,600 for W4, 1,160 for W2 and
  580 for W1 (values ``+-1`` with two logits give a larger weight, ``tanh(T (l1 - l0) / 2)``),
  so at one rate W1's binary weights move 8x more slowly: at 0.005 only 4.5% of the signs
  flipped from the random start in the 4,000 x 2 proxy. At 0.05: 12-13% flipped, W1 0.333 ->
  0.369 (seed 1) and 0.380 -> 0.388 (seed 2). W2 stays at 0.005, the rate its results were
  measured with.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from typing import Any

import numpy as np

from sporeling.core import Model, nn, save_checkpoint, set_seed
from sporeling.core.train import ArrayDataset, Callback
from sporeling.goldenstick import QuantDtype, SlbQuantAwareTraining, TemperatureScheduler
from sporeling.goldenstick.datasets import load_cifar10
from sporeling.goldenstick.models import build_model
from sporeling.goldenstick.quantization import Conv2dSlbQuant
from sporeling.goldenstick.workflow import evaluate, train

# where the sample's schedule (100 epochs, 0.2 / 0.6, factor 1.2) leaves the temperature
SAMPLE_FINAL_T = 1.2 ** (int(100 * 0.6) - int(100 * 0.2))
# the logits' learning rate by weight bits (see the module docstring for W1's)
LOGIT_LR = {4: 0.005, 2: 0.005, 1: 0.05}


class StepTemperature(Callback):
    """The 1.8 ``TemperatureScheduler`` formula applied at every step (a step counts as one
    of its epochs), with ``t_factor`` chosen to reach ``t_final`` at ``t_end_time``."""

    def __init__(self, steps: int, t_start_time: float, t_end_time: float, t_final: float):
        super().__init__()
        rises = max(int(steps * t_end_time) - int(steps * t_start_time), 1)
        factor = t_final ** (1.0 / rises)
        self.sched = TemperatureScheduler(
            None,
            epoch_size=steps,
            t_start_time=t_start_time,
            t_end_time=t_end_time,
            t_factor=factor,
        )
        self.ended = False

    def on_train_step_begin(self, run_context: Any) -> None:
        params = run_context.original_args()
        t, end = self.sched.schedule(params.cur_step_num)
        for _, cell in params.train_network.cells_and_names():
            if cell.cls_name == "SlbFakeQuantizerPerLayer":
                if t is not None:
                    cell.set_temperature(t)
                if end and not self.ended:
                    cell.set_temperature_end_flag()
        self.ended = self.ended or end


def train_slb(qnet: nn.Cell, x, y, args: argparse.Namespace, logit_lr: float) -> None:
    """Momentum SGD, the SLB logits in their own group at ``logit_lr``."""
    logits = [c.weight for _, c in qnet.cells_and_names() if isinstance(c, Conv2dSlbQuant)]
    ids = {id(p) for p in logits}
    rest = [p for p in qnet.trainable_params() if id(p) not in ids]
    groups = [{"params": logits, "lr": logit_lr}, {"params": rest}]
    opt = nn.Momentum(groups, learning_rate=args.lr, momentum=0.9)
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    data = ArrayDataset(x, y, batch_size=64, shuffle=True, seed=args.seed)
    steps = args.epochs * data.get_dataset_size()
    temp = StepTemperature(steps, args.t_start, args.t_end, SAMPLE_FINAL_T)
    Model(qnet, loss, opt).train(args.epochs, data, callbacks=[temp], dataset_sink_mode=False)


def conv_bytes(net: nn.Cell) -> int:
    """Bytes of the float network's conv weights (the layers SLB packs)."""
    return sum(
        p.asnumpy().nbytes for n, p in net.parameters_and_names() if "conv" in n or "down.0" in n
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True)
    p.add_argument("--model", default="resnet8")
    p.add_argument("--train", type=int, default=10000)
    p.add_argument("--val", type=int, default=2000)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--bits", type=int, nargs="+", default=[4, 2, 1], choices=(0, 1, 2, 4))
    p.add_argument("--fp", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--logit-lr", type=float, default=None, help="default: LOGIT_LR by bits")
    p.add_argument("--t-start", type=float, default=0.0)
    p.add_argument("--t-end", type=float, default=0.9)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    xt, yt = load_cifar10(args.data, (1,), args.train)
    xv, yv = load_cifar10(args.data, (4,), args.val)
    out = tempfile.mkdtemp()
    fp_bytes = conv_bytes(build_model(args.model))
    result: dict[str, Any] = {"fp32_conv_bytes": fp_bytes, "runs": {}}
    if args.fp:
        set_seed(args.seed)
        fp = build_model(args.model)
        train(fp, xt, yt, args.epochs, 64, args.lr, seed=args.seed)
        save_checkpoint(fp, os.path.join(out, "fp32.safetensors"))
        result["fp32_accuracy"] = evaluate(fp, xv, yv)
    dtypes = {4: QuantDtype.INT4, 2: QuantDtype.INT2, 1: QuantDtype.INT1}
    for bits in (b for b in args.bits if b):
        set_seed(args.seed)
        algo = SlbQuantAwareTraining({"quant_dtype": dtypes[bits]})
        qnet = algo.apply(build_model(args.model))
        logit_lr = LOGIT_LR[bits] if args.logit_lr is None else args.logit_lr
        train_slb(qnet, xt, yt, args, logit_lr)
        packed = algo.convert(qnet)
        path = os.path.join(out, f"w{bits}.safetensors")
        save_checkpoint(packed, path)
        packed_bytes = sum(
            p.asnumpy().nbytes for n, p in packed.parameters_and_names() if "packed" in n
        )
        result["runs"][f"W{bits}"] = {
            "accuracy": evaluate(packed, xv, yv),
            "packed_conv_bytes": packed_bytes,
            "conv_weight_ratio": round(fp_bytes / packed_bytes, 1),
            "logit_lr": logit_lr,
        }
    result.update({"model": args.model, "train_samples": len(xt), "epochs": args.epochs})
    result["recipe"] = {k: getattr(args, k) for k in ("lr", "t_start", "t_end")}
    result["seed"] = args.seed
    result["val_samples"] = int(np.size(yv))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
