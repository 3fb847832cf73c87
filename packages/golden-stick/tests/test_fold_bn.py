"""BN folding for exports (fold_bn.py): each Conv2d -> BatchNorm2d pair becomes one conv with
a bias; the eval outputs agree with a float64 reference and with the unfolded network, the
pruned ResNet's export reloads without golden stick, and pairs that cannot fold stay."""

import os
import subprocess
import sys

import gs_nets
import numpy as np
import pytest

from sporeling.core import Tensor, nn
from sporeling.goldenstick import PrunerFtCompressAlgo, PrunerKfCompressAlgo
from sporeling.goldenstick.export import export_network
from sporeling.goldenstick.fold_bn import fold_batchnorm, folded_conv
from sporeling.goldenstick.pruner import KfConv2d, count_params


def _bn(c, seed):
    bn = nn.BatchNorm2d(c, eps=1e-3)
    rng = np.random.default_rng(seed)
    bn.gamma.set_data(Tensor(rng.uniform(0.5, 1.5, c).astype("f4")))
    bn.beta.set_data(Tensor(rng.normal(0, 0.3, c).astype("f4")))
    bn.moving_mean.set_data(Tensor(rng.normal(0, 0.3, c).astype("f4")))
    bn.moving_variance.set_data(Tensor(rng.uniform(0.2, 2.0, c).astype("f4")))
    return bn


def _ref(x, conv, bn):
    """bn(conv(x)) in eval mode, float64, written out tap by tap."""
    x = x.astype(np.float64)
    w = conv.weight.asnumpy().astype(np.float64)
    (pt, pb, pl, pr) = conv.padding if conv.pad_mode == "pad" else (0, 0, 0, 0)
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    (sh, sw), (dh, dw), g = conv.stride, conv.dilation, conv.group
    kh, kw = w.shape[2:]
    oh = (xp.shape[2] - dh * (kh - 1) - 1) // sh + 1
    ow = (xp.shape[3] - dw * (kw - 1) - 1) // sw + 1
    cg, og = w.shape[1], w.shape[0] // g
    y = np.zeros((x.shape[0], w.shape[0], oh, ow))
    for k in range(g):
        for i in range(kh):
            for j in range(kw):
                win = xp[
                    :,
                    k * cg : (k + 1) * cg,
                    i * dh : i * dh + sh * (oh - 1) + 1 : sh,
                    j * dw : j * dw + sw * (ow - 1) + 1 : sw,
                ]
                y[:, k * og : (k + 1) * og] += np.einsum(
                    "nchw,oc->nohw", win, w[k * og : (k + 1) * og, :, i, j]
                )
    if conv.has_bias:
        y += conv.bias.asnumpy()[None, :, None, None]
    f = lambda p: p.asnumpy().astype(np.float64)[None, :, None, None]  # noqa: E731
    return (y - f(bn.moving_mean)) / np.sqrt(f(bn.moving_variance) + bn.eps) * f(bn.gamma) + f(
        bn.beta
    )


@pytest.mark.parametrize(
    "cin, cout, k, kw",
    [
        (3, 5, 3, {"pad_mode": "pad", "padding": 1}),
        (4, 6, (3, 2), {"stride": (2, 1), "pad_mode": "pad", "padding": (2, 0, 1, 1)}),
        (4, 6, 3, {"group": 2, "dilation": 2, "pad_mode": "pad", "padding": 2, "has_bias": True}),
        (16, 8, 3, {"pad_mode": "pad", "padding": 1}),
        (7, 7, 1, {"pad_mode": "valid", "has_bias": True}),
    ],
)
def test_folded_conv_matches_the_float64_reference(cin, cout, k, kw):
    rng = np.random.default_rng(cin * cout)
    conv = nn.Conv2d(cin, cout, k, weight_init="he_uniform", **kw)
    if conv.has_bias:
        conv.bias.set_data(Tensor(rng.normal(0, 0.5, cout).astype("f4")))
    bn = _bn(cout, cin)
    x = rng.standard_normal((3, cin, 9, 7)).astype("f4")
    fused = folded_conv(conv, bn)
    assert fused.has_bias and fused.weight.shape == conv.weight.shape
    fused.set_train(False)
    got = fused(Tensor(x)).asnumpy()
    np.testing.assert_allclose(got, _ref(x, conv, bn), rtol=1e-4, atol=1e-4)


def test_pairs_that_cannot_fold_stay():
    conv = nn.Conv2d(3, 4, 3)
    assert folded_conv(conv, nn.BatchNorm2d(4, use_batch_statistics=True)) is None
    assert folded_conv(conv, nn.BatchNorm2d(4, data_format="NHWC")) is None

    class MyConv(nn.Conv2d):  # a subclass may compute something else: left alone
        pass

    assert folded_conv(MyConv(3, 4, 3), nn.BatchNorm2d(4)) is None

    class TwoReaders(nn.Cell):  # the conv's output also feeds the add: no fold
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 3, 3, pad_mode="pad", padding=1)
            self.bn = _bn(3, 1)

        def construct(self, x):
            y = self.conv(x)
            return self.bn(y) + y

    net = TwoReaders()
    net.set_train(False)
    folded = fold_batchnorm(net)
    assert any(isinstance(c, nn.BatchNorm2d) for _, c in folded.cells_and_names())
    x = Tensor(np.random.default_rng(0).standard_normal((2, 3, 5, 5)).astype("f4"))
    np.testing.assert_allclose(folded(x).asnumpy(), net(x).asnumpy(), rtol=1e-6, atol=1e-6)

    class Relu6Net(nn.Cell):  # Conv -> BN folds; the ReLU6 stays a layer of its own
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, pad_mode="pad", padding=1, has_bias=True)
            self.bn = _bn(4, 2)
            self.act = nn.ReLU6()
            self.conv2 = nn.Conv2d(4, 2, 1)
            self.bn2 = _bn(2, 3)
            self.relu = nn.ReLU()

        def construct(self, x):
            return self.relu(self.bn2(self.conv2(self.act(self.bn(self.conv(x))))))

    net6 = Relu6Net()
    net6.set_train(False)
    folded6 = fold_batchnorm(net6)
    kinds = [type(c).__name__ for _, c in folded6.cells_and_names()]
    assert "BatchNorm2d" not in kinds and "ReLU6" in kinds and "Conv2dBnAct" in kinds
    np.testing.assert_allclose(folded6(x).asnumpy(), net6(x).asnumpy(), rtol=1e-5, atol=1e-5)
    with pytest.raises(TypeError, match="'network'"):
        fold_batchnorm("net")
    with pytest.raises(TypeError, match="'fold_bn'"):
        export_network(net, "unused", "m", fold_bn=1)


def test_pruned_resnet_folded_export_reloads_without_golden_stick(tmp_path):
    net = gs_nets.TinyResNet()
    gs_nets.randomize_bn(net)
    rng = np.random.default_rng(2)
    kf = PrunerKfCompressAlgo({}).apply(net)
    for _, cell in kf.cells_and_names():
        if isinstance(cell, KfConv2d):
            cell.kfscale.set_data(Tensor(rng.uniform(0, 1, cell.kfscale.shape).astype("f4")))
    ft = PrunerFtCompressAlgo({"prune_rate": 0.5, "prune_residual": False, "round_to": 2})
    small = ft.convert(ft.apply(kf))
    small.set_train(False)
    x = rng.standard_normal((4, 3, 8, 8)).astype("f4")
    ref = small(Tensor(x)).asnumpy()
    folded = fold_batchnorm(small)
    assert not [c for _, c in folded.cells_and_names() if isinstance(c, nn.BatchNorm2d)]
    # BN parameters and moving statistics gone, one bias per conv added
    convs = [c for _, c in folded.cells_and_names() if isinstance(c, nn.Conv2d)]
    assert all(c.has_bias for c in convs)
    bn_params = sum(
        4 * c.num_features for _, c in small.cells_and_names() if isinstance(c, nn.BatchNorm2d)
    )
    assert count_params(folded) == count_params(small) - bn_params + sum(
        c.out_channels for c in convs
    )
    np.testing.assert_allclose(folded(Tensor(x)).asnumpy(), ref, rtol=1e-4, atol=1e-4)
    assert any(isinstance(c, nn.BatchNorm2d) for _, c in small.cells_and_names())  # unchanged
    paths = export_network(small, str(tmp_path), "pruned", fold_bn=True)
    with open(paths["description"], encoding="utf-8") as fh:
        source = fh.read()
    assert "BatchNorm2d" not in source and "has_bias=True" in source
    # each block's Conv2d -> BN -> ReLU is one Conv2dBnAct (the ReLU in the bias's pass)
    assert source.count("nn.Conv2dBnAct(") == 1 + len(list(small.layers.cells()))
    assert "activation='relu'" in source
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "ref.npy", ref)
    code = f"""
import importlib.util, sys
import numpy as np
sys.modules["sporeling.goldenstick"] = None  # the export must not need golden stick
spec = importlib.util.spec_from_file_location("pruned", {paths["description"]!r})
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
from sporeling.core import Tensor
out = mod.load()(Tensor(np.load({str(tmp_path / "x.npy")!r}))).asnumpy()
print(float(np.abs(out - np.load({str(tmp_path / "ref.npy")!r})).max()))
"""
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert float(done.stdout.strip()) < 1e-4
