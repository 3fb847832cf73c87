"""Same-process A/B of SimQAT's training-step overhead: LeNet-5 (batch 64) trained plain,
with the previous op-composed fake quantizers (``fake_quant`` + ``nudge_tensors``, ~45 op
dispatches per quantizer, kept here as subclasses) and with the fused ``fq_ops`` ones.
CPU time (``process_time``) per step, the three alternated; the first three losses of the
two SimQAT paths are printed (they agree exactly).

    taskset -c 1 env OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 \
        .nox/tests-package-golden-stick/bin/python \
        benchmarks/golden-stick/qat_step_ab.py [--nofusion]

``--profile`` prints cProfile's top functions of the fused path instead.
"""

import importlib
import os
import sys
import time

import numpy as np

from sporeling.core import Tensor, nn, ops, set_seed
from sporeling.goldenstick import SimulatedQuantizationAwareTraining
from sporeling.goldenstick.models import LeNet5

fqm = importlib.import_module("sporeling.goldenstick.quantization.fake_quant")


class OldLayer(fqm.SimulatedFakeQuantizerPerLayer):
    def _count(self):
        steps = ops.stop_gradient(self.step_count + 1.0)
        ops.assign(self.step_count, steps)
        return steps

    def _observe(self, lo, hi, steps):
        lo, hi = ops.stop_gradient(lo), ops.stop_gradient(hi)
        return fqm._FakeQuantizer._observe(self, lo, hi, steps)

    def construct(self, x):
        bits, sym, narrow = self.num_bits, self.symmetric, self.narrow_range
        if self.training:
            steps = self._count()
            lo, hi = self._observe(
                ops.reshape(ops.reduce_min(x), (1,)), ops.reshape(ops.reduce_max(x), (1,)), steps
            )
            nmin, nmax, scale = fqm.nudge_tensors(lo, hi, bits, sym, narrow)
            return self._delayed(x, fqm.fake_quant(x, nmin, nmax, scale), steps)
        nmin, nmax, scale = fqm.nudge_tensors(self.minq, self.maxq, bits, sym, narrow)
        seen = ops.logical_or(self.minq != 0, self.maxq != 0)
        return ops.select(ops.broadcast_to(seen, x.shape), fqm.fake_quant(x, nmin, nmax, scale), x)


class OldChannel(fqm.SimulatedFakeQuantizerPerChannel):
    _count = OldLayer._count
    _observe = OldLayer._observe

    def construct(self, x):
        axis = self.channel_axis % x.ndim
        perm = (axis, *(d for d in range(x.ndim) if d != axis))
        moved = ops.reshape(ops.transpose(x, perm), (x.shape[axis], -1))
        steps = self._count() if self.training else None
        lo, hi = self._observe(ops.reduce_min(moved, 1), ops.reduce_max(moved, 1), steps)
        nmin, nmax, scale = fqm.nudge_tensors(
            lo, hi, self.num_bits, self.symmetric, self.narrow_range
        )
        shape = [1] * x.ndim
        shape[axis] = -1
        out = fqm.fake_quant(
            x, ops.reshape(nmin, shape), ops.reshape(nmax, shape), ops.reshape(scale, shape)
        )
        return self._delayed(x, out, steps)


def make_old(net):
    for _, c in net.cells_and_names():
        if type(c) is fqm.SimulatedFakeQuantizerPerLayer:
            c.__class__ = OldLayer
        elif type(c) is fqm.SimulatedFakeQuantizerPerChannel:
            c.__class__ = OldChannel
    return net


def step_of(net):
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9)
    s = nn.TrainOneStepCell(nn.WithLossCell(net, loss), opt)
    s.set_train(True)
    return s


set_seed(0)
rng = np.random.default_rng(0)
x = Tensor(rng.standard_normal((64, 1, 32, 32)).astype(np.float32))
y = Tensor(rng.integers(0, 10, 64).astype(np.int32))
fusion = "--nofusion" not in sys.argv
cfg = {"enable_fusion": fusion}
base = LeNet5()
state = {n: p.asnumpy().copy() for n, p in base.parameters_and_names()}


def lenet():
    n = LeNet5()
    for k, p in n.parameters_and_names():
        p.set_data(Tensor(state[k]))
    return n


steps = {
    "plain": step_of(lenet()),
    "old": step_of(make_old(SimulatedQuantizationAwareTraining(cfg).apply(lenet()))),
    "new": step_of(SimulatedQuantizationAwareTraining(cfg).apply(lenet())),
}
# same losses over the first steps (same maths)
l_old = [float(steps["old"](x, y).asnumpy()) for _ in range(3)]
l_new = [float(steps["new"](x, y).asnumpy()) for _ in range(3)]
print("losses old", l_old, "new", l_new)
for s in steps.values():
    for _ in range(2):
        s(x, y)
if "--profile" in sys.argv:
    import cProfile
    import pstats

    pr = cProfile.Profile()
    pr.enable()
    for _ in range(30):
        steps["new"](x, y)
    pr.disable()
    pstats.Stats(pr).sort_stats(
        sys.argv[-1] if sys.argv[-1] in ("cumtime", "tottime") else "tottime"
    ).print_stats(40)
    sys.exit()
n = int(os.environ.get("REPS", 30))
res = {k: [] for k in steps}
for _ in range(n):
    for k, s in steps.items():
        t = time.process_time()
        s(x, y)
        res[k].append(time.process_time() - t)
for k, v in res.items():
    print(f"{k:6s} min {1e3 * min(v):6.2f} ms  median {1e3 * float(np.median(v)):6.2f} ms")
for k in ("old", "new"):
    lo = min(res[k]) / min(res["plain"])
    mid = np.median(res[k]) / np.median(res["plain"])
    print(f"{k} / plain: min {lo:.2f}  median {mid:.2f}")
print("load", [round(v, 2) for v in os.getloadavg()])
