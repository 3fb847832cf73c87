"""SimQAT on LeNet-5 / MNIST: float training, QAT fine-tuning, int8 export; one command.

    python examples/simqat_lenet_mnist.py --data ../../shared/data/mnist

Scaled to a 2-core machine: --train samples (default 20000) for --epochs float epochs and
--qat-epochs QAT epochs; the last --val (default 5000) samples of the file are held out.
Prints a JSON line with float, fake-quant and int8 accuracy, file sizes and speed.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile

from sporeling.core import save_checkpoint, set_seed
from sporeling.goldenstick import SimulatedQuantizationAwareTraining
from sporeling.goldenstick.artifacts import save_quantized
from sporeling.goldenstick.datasets import load_mnist
from sporeling.goldenstick.models import LeNet5
from sporeling.goldenstick.workflow import evaluate, measure_speed, train


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True)
    p.add_argument("--train", type=int, default=20000)
    p.add_argument("--val", type=int, default=5000)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--qat-epochs", type=int, default=1)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    set_seed(args.seed)
    x, y = load_mnist(args.data)
    xt, yt, xv, yv = x[: args.train], y[: args.train], x[-args.val :], y[-args.val :]
    net = LeNet5()
    train(net, xt, yt, args.epochs, 64, 0.01, seed=args.seed)
    fp32 = evaluate(net, xv, yv)
    algo = SimulatedQuantizationAwareTraining({"enable_fusion": True})
    qnet = algo.apply(net)
    train(qnet, xt, yt, args.qat_epochs, 64, 0.002, seed=args.seed + 1)
    fake = evaluate(qnet, xv, yv)
    out = tempfile.mkdtemp()
    float_file = os.path.join(out, "lenet_fp32.safetensors")
    save_checkpoint(net, float_file)
    int8 = algo.convert(qnet)
    int8_file = save_quantized(int8, out, "simqat", "lenet5", {"enable_fusion": True})
    print(
        json.dumps(
            {
                "fp32_accuracy": fp32,
                "qat_fake_quant_accuracy": fake,
                "int8_accuracy": evaluate(int8, xv, yv),
                "fp32_bytes": os.path.getsize(float_file),
                "int8_bytes": os.path.getsize(int8_file),
                "fp32_ms_batch64": round(measure_speed(net, xv[:64]), 2),
                "int8_ms_batch64": round(measure_speed(int8, xv[:64]), 2),
                "train_samples": len(xt),
                "val_samples": len(xv),
                "epochs": [args.epochs, args.qat_epochs],
            }
        )
    )


if __name__ == "__main__":
    main()
