"""SLB on a CIFAR-10 ResNet: W4 / W2 / W1 against the float network trained with the same
budget; weight-file sizes of the bit-packed exports. One command:

    python examples/slb_resnet_cifar10.py --data ../../shared/data/cifar-10/cifar-10-batches-bin

Scaled to a 2-core machine: ResNet-8 by default (--model resnet20 for the full one),
--train samples of batch 1, validation on --val samples of batch 4.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile

from sporeling.core import save_checkpoint, set_seed
from sporeling.goldenstick import QuantDtype, SlbQuantAwareTraining, TemperatureScheduler
from sporeling.goldenstick.datasets import load_cifar10
from sporeling.goldenstick.models import build_model
from sporeling.goldenstick.workflow import evaluate, train


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True)
    p.add_argument("--model", default="resnet8")
    p.add_argument("--train", type=int, default=10000)
    p.add_argument("--val", type=int, default=2000)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--bits", type=int, nargs="+", default=[4, 2, 1])
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    xt, yt = load_cifar10(args.data, (1,), args.train)
    xv, yv = load_cifar10(args.data, (4,), args.val)
    out = tempfile.mkdtemp()
    set_seed(args.seed)
    fp = build_model(args.model)
    train(fp, xt, yt, args.epochs, 64, 0.05, seed=args.seed)
    fp_file = os.path.join(out, "fp32.safetensors")
    save_checkpoint(fp, fp_file)
    result = {"fp32_accuracy": evaluate(fp, xv, yv), "fp32_conv_bytes": 0, "runs": {}}
    result["fp32_conv_bytes"] = sum(
        p.asnumpy().nbytes for n, p in fp.parameters_and_names() if "conv" in n or "down.0" in n
    )
    dtypes = {4: QuantDtype.INT4, 2: QuantDtype.INT2, 1: QuantDtype.INT1}
    for bits in args.bits:
        set_seed(args.seed)
        net = build_model(args.model)
        algo = SlbQuantAwareTraining({"quant_dtype": dtypes[bits]})
        qnet = algo.apply(net)
        # the 1.8 schedule over `rounds` short epochs (a fifth of the data each), so that a
        # 2-epoch budget still has a warm-up, a rising temperature and a frozen end
        rounds = 5 * args.epochs
        sched = TemperatureScheduler(None, epoch_size=rounds)
        quantizers = [
            c for _, c in qnet.cells_and_names() if c.cls_name == "SlbFakeQuantizerPerLayer"
        ]
        for r in range(1, rounds + 1):
            t, end = sched.schedule(r)
            for q in quantizers:
                if t is not None:
                    q.set_temperature(t)
                if end:
                    q.set_temperature_end_flag()
            part = slice((r - 1) % 5 * len(xt) // 5, ((r - 1) % 5 + 1) * len(xt) // 5)
            train(qnet, xt[part], yt[part], 1, 64, 0.05, seed=args.seed + r)
        packed = algo.convert(qnet)
        path = os.path.join(out, f"w{bits}.safetensors")
        save_checkpoint(packed, path)
        conv_bytes = sum(
            p.asnumpy().nbytes for n, p in packed.parameters_and_names() if "packed" in n
        )
        result["runs"][f"W{bits}"] = {
            "accuracy": evaluate(packed, xv, yv),
            "packed_conv_bytes": conv_bytes,
            "conv_weight_ratio": round(result["fp32_conv_bytes"] / conv_bytes, 1),
        }
    result.update({"model": args.model, "train_samples": len(xt), "epochs": args.epochs})
    print(json.dumps(result))


if __name__ == "__main__":
    main()
