"""SCOP: KfConv2d mixing, scores, channel groups from the graph, masks, physical pruning
across residual connections, and the export reloaded without golden stick."""

import importlib.util
import os
import subprocess
import sys

import gs_nets
import numpy as np
import pytest

from sporeling.core import Tensor, nn, ops, value_and_grad
from sporeling.goldenstick import PrunerFtCompressAlgo, PrunerKfCompressAlgo
from sporeling.goldenstick.export import export_network
from sporeling.goldenstick.pruner import (
    KfConv2d,
    KnockoffNetwork,
    MaskedConv2dbn,
    MaskedNorm,
    count_params,
    find_channel_groups,
    prune_channels,
)
from sporeling.goldenstick.pruner.scop import keep_indices, rounded_kept

RNG = np.random.default_rng(0)


def _kf_cells(net):
    return [c for _, c in net.cells_and_names() if isinstance(c, KfConv2d)]


def test_kfconv2d_mixing_formula():
    conv = nn.Conv2d(2, 3, 3)
    bn = nn.BatchNorm2d(3, use_batch_statistics=False, eps=1e-12)
    kf = KfConv2d(conv, bn)
    k = RNG.uniform(0, 1, (1, 3, 1, 1)).astype("f4")
    kf.kfscale.set_data(Tensor(k))
    x = RNG.standard_normal((4, 2, 5, 5)).astype("f4")
    kf.set_train(True)
    out = kf(Tensor(x)).asnumpy()
    y = conv(Tensor(x)).asnumpy().astype(np.float64)
    real, knock = y[:2], y[2:]
    ref = np.concatenate([k * real + (1 - k) * knock, knock])
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
    kf.set_train(False)
    np.testing.assert_allclose(kf(Tensor(x)).asnumpy(), y, rtol=1e-5, atol=1e-6)
    assert kf.kfscale.asnumpy().shape == (1, 3, 1, 1)
    gamma = np.array([1.0, -2.0, 0.5], np.float32)
    bn.gamma.set_data(Tensor(gamma))
    np.testing.assert_allclose(kf.score(), np.abs(gamma) * (2 * k.reshape(-1) - 1), rtol=1e-6)


def test_kfconv2d_default_kfscale_and_gradient():
    kf = KfConv2d(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2))
    np.testing.assert_array_equal(kf.kfscale.asnumpy(), np.full((1, 2, 1, 1), 0.5))
    kf.set_train(True)
    x = Tensor(RNG.standard_normal((4, 1, 5, 5)).astype("f4"))
    _, g = value_and_grad(lambda t: ops.reduce_sum(kf(t) ** 3), None, [kf.kfscale])(x)
    assert np.abs(g[0].asnumpy()).sum() > 0


def test_channel_groups_follow_residual_adds():
    groups = find_channel_groups(gs_nets.TinyResNet())
    sizes = sorted((g.channels, len(g.producers), len(g.conv_consumers)) for g in groups)
    # stage 1: stem + two conv2 (identity adds) feed 2 conv1 + 1 projection + next conv1
    assert (8, 3, 4) in sizes
    # stage 2: projection + two conv2, consumed by the Dense after the global mean
    stage2 = [g for g in groups if g.channels == 16 and len(g.producers) == 3]
    assert len(stage2) == 1 and stage2[0].dense_consumers[0][1] == 1
    lenet = find_channel_groups(gs_nets.LeNet5())
    flat = [g for g in lenet if g.dense_consumers]
    assert flat[0].channels == 16 and flat[0].dense_consumers[0][1] == 25
    assert all(g.prunable for g in lenet)


def test_prune_any_conv_net_lenet_matches_zeroed_channels():
    net = gs_nets.LeNet5()
    x = Tensor(RNG.standard_normal((2, 1, 32, 32)).astype("f4"))
    keep1, keep2 = np.array([0, 2, 3, 5]), np.arange(0, 16, 2)
    small = prune_channels(net, {id(net.conv1): keep1, id(net.conv2): keep2})
    assert small.conv1.out_channels == 4 and small.conv2.in_channels == 4
    assert small.fc1.in_channels == 8 * 25
    # reference: the original with the removed channels' filters zeroed
    for conv, keep in ((net.conv1, keep1), (net.conv2, keep2)):
        w = conv.weight.asnumpy().copy()
        w[np.setdiff1d(np.arange(w.shape[0]), keep)] = 0
        conv.weight.set_data(Tensor(w))
    np.testing.assert_allclose(small(x).asnumpy(), net(x).asnumpy(), rtol=1e-5, atol=1e-5)
    assert count_params(small) < count_params(net)


class _DepthwiseNet(nn.Cell):
    """conv -> depthwise conv -> pointwise conv (MobileNet's block), then a classifier."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, weight_init="he_uniform")
        self.dw = nn.Conv2d(8, 8, 3, group=8, weight_init="he_uniform")
        self.pw = nn.Conv2d(8, 6, 1, weight_init="he_uniform")
        self.relu = nn.ReLU()
        self.fc = nn.Dense(6, 4)

    def construct(self, x):
        x = self.relu(self.dw(self.relu(self.conv(x))))
        return self.fc(ops.mean(self.relu(self.pw(x)), (2, 3)))


def test_depthwise_conv_is_pruned_with_its_input_channels():
    net = _DepthwiseNet()
    groups = [g for g in find_channel_groups(net) if g.prunable]
    assert len(groups) == 2 and groups[0].depthwise == [net.dw]
    x = Tensor(RNG.standard_normal((2, 3, 8, 8)).astype("f4"))
    keep = np.array([1, 2, 5, 7])
    small = prune_channels(net, {id(net.conv): keep})
    assert small.dw.in_channels == small.dw.out_channels == small.dw.group == 4
    assert small.pw.in_channels == 4 and small.dw.weight.shape == (4, 1, 3, 3)
    w = net.conv.weight.asnumpy().copy()  # reference: the removed filters zeroed
    w[np.setdiff1d(np.arange(8), keep)] = 0
    net.conv.weight.set_data(Tensor(w))
    np.testing.assert_allclose(small(x).asnumpy(), net(x).asnumpy(), rtol=1e-5, atol=1e-5)


def _trained_kf(net):
    algo = PrunerKfCompressAlgo({})
    kf = algo.apply(net)
    assert isinstance(kf, KnockoffNetwork) and len(_kf_cells(kf)) == 10
    x = Tensor(RNG.standard_normal((4, 3, 8, 8)).astype("f4"))
    kf.set_train(True)
    assert kf(x).shape == (4, 10)  # the real half
    for cell in _kf_cells(kf):
        cell.kfscale.set_data(Tensor(RNG.uniform(0, 1, cell.kfscale.shape).astype("f4")))
    return kf, x


def test_scop_residual_pruning_keeps_outputs_of_kept_channels(tmp_path):
    net = gs_nets.TinyResNet()
    gs_nets.randomize_bn(net)
    kf, x = _trained_kf(net)
    ft = PrunerFtCompressAlgo({"prune_rate": 0.5})
    masked = ft.apply(kf)
    masks = [c for _, c in masked.cells_and_names() if isinstance(c, MaskedConv2dbn)]
    assert len(masks) == 10
    masked.set_train(False)
    ref = masked(x).asnumpy()
    small = ft.convert(masked)
    small.set_train(False)
    np.testing.assert_allclose(small(x).asnumpy(), ref, rtol=1e-5, atol=1e-5)
    assert count_params(small) < 0.45 * count_params(net)
    # the residual group is pruned alike on both sides of every add
    blocks = list(small.layers.cells())
    assert blocks[0].conv2.out_channels == small.conv.out_channels == 4
    assert blocks[2].down.cells()[0].out_channels == blocks[2].conv2.out_channels == 8
    # exported and reloaded in a fresh process without golden stick
    paths = export_network(small, str(tmp_path), "pruned")
    np.save(tmp_path / "x.npy", x.asnumpy())
    np.save(tmp_path / "ref.npy", ref)
    code = f"""
import importlib.util, sys
import numpy as np
sys.modules["sporeling.goldenstick"] = None  # prove the export does not need golden stick
spec = importlib.util.spec_from_file_location("pruned", {paths["description"]!r})
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
from sporeling.core import Tensor
net = mod.load()
out = net(Tensor(np.load({str(tmp_path / "x.npy")!r}))).asnumpy()
print(float(np.abs(out - np.load({str(tmp_path / "ref.npy")!r})).max()))
"""
    env = dict(os.environ)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert float(done.stdout.strip()) < 1e-5


def test_prune_residual_false_prunes_only_inside_the_blocks():
    net = gs_nets.TinyResNet()
    gs_nets.randomize_bn(net)
    kf, x = _trained_kf(net)
    ft = PrunerFtCompressAlgo({"prune_rate": 0.5, "prune_residual": False})
    masked = ft.apply(kf)
    masked.set_train(False)
    ref = masked(x).asnumpy()
    small = ft.convert(masked)
    small.set_train(False)
    np.testing.assert_allclose(small(x).asnumpy(), ref, rtol=1e-5, atol=1e-5)
    blocks = list(small.layers.cells())
    # the residual width stays; each block's inner channels are halved
    assert small.conv.out_channels == 8 and small.fc.in_channels == 16
    assert [b.conv2.out_channels for b in blocks] == [8, 8, 16, 16]
    assert [b.conv1.out_channels for b in blocks] == [4, 4, 8, 8]
    assert [b.conv2.in_channels for b in blocks] == [4, 4, 8, 8]
    assert blocks[2].down.cells()[0].out_channels == 16
    # against the residual groups pruned as well: fewer channels go
    everything = PrunerFtCompressAlgo({"prune_rate": 0.5})
    everything.apply(kf)
    assert count_params(everything.convert(masked)) < count_params(small) < count_params(net)


def test_rounded_kept_counts():
    """MindSpore's count by default; with round_to, (1 - rate) * C to the nearest multiple
    (half up), at least round_to, at most C."""
    assert [rounded_kept(c, 0.45, 1) for c in (16, 32, 64, 2)] == [9, 18, 36, 2]
    assert rounded_kept(1, 0.9, 1) == 1  # at least one channel stays
    assert [rounded_kept(c, 0.45, 8) for c in (16, 32, 64)] == [8, 16, 32]
    assert rounded_kept(64, 0.3, 8) == 48  # 44.8 -> 48
    assert rounded_kept(16, 0.25, 8) == 16  # 12: half up -> 16, all of them
    assert rounded_kept(16, 0.9, 8) == 8  # 1.6 -> at least 8
    assert rounded_kept(4, 0.45, 8) == 4  # fewer than round_to: whole


def test_round_to_keeps_residual_groups_consistent():
    """Kept counts rounded per channel group: every conv of the pruned TinyResNet has a
    multiple of 4 channels, both sides of each residual add alike, and the pruned network
    equals the masked one; without round_to the counts are MindSpore's."""
    net = gs_nets.TinyResNet()
    gs_nets.randomize_bn(net)
    kf, x = _trained_kf(net)
    ft = PrunerFtCompressAlgo({"prune_rate": 0.45, "round_to": 4})
    assert ft.round_to == 4 and PrunerFtCompressAlgo({}).round_to == 1
    masked = ft.apply(kf)
    masked.set_train(False)
    ref = masked(x).asnumpy()
    small = ft.convert(masked)
    small.set_train(False)
    np.testing.assert_allclose(small(x).asnumpy(), ref, rtol=1e-5, atol=1e-5)
    blocks = list(small.layers.cells())
    assert small.conv.out_channels == 4 and small.fc.in_channels == 8  # 4.4, 8.8 -> 4, 8
    assert [b.conv1.out_channels for b in blocks] == [4, 4, 8, 8]
    assert [b.conv2.out_channels for b in blocks] == [4, 4, 8, 8]
    assert blocks[2].down.cells()[0].out_channels == 8
    plain = PrunerFtCompressAlgo({"prune_rate": 0.45})
    plain.apply(kf)
    unrounded = plain.convert(masked)
    assert unrounded.conv.out_channels == 5  # 8 - int(3.6)
    assert [b.conv1.out_channels for b in unrounded.layers.cells()] == [5, 5, 9, 9]


@pytest.mark.parametrize("value", [0, -8, 2.0, True, "8"])
def test_round_to_must_be_a_positive_int(value):
    with pytest.raises(ValueError, match="round_to"):
        PrunerFtCompressAlgo({"round_to": value})


@pytest.mark.parametrize("flag", [1, "no", None])
def test_prune_residual_must_be_a_bool(flag):
    with pytest.raises(TypeError, match="prune_residual"):
        PrunerFtCompressAlgo({"prune_residual": flag})


@pytest.mark.parametrize("rate,exc", [(1.0, ValueError), (-0.1, ValueError), ("0.5", TypeError)])
def test_prune_rate_outside_range(rate, exc):
    with pytest.raises(exc, match="prune_rate"):
        PrunerFtCompressAlgo({"prune_rate": rate})


def test_ft_needs_knockoff_cells_and_convert_needs_apply():
    ft = PrunerFtCompressAlgo({})
    assert ft.prune_rate == 0.45
    with pytest.raises(ValueError, match="KfConv2d"):
        ft.apply(gs_nets.LeNet5())
    with pytest.raises(ValueError, match="apply"):
        ft.convert(gs_nets.LeNet5())
    assert PrunerKfCompressAlgo({}).callbacks() == []


class _GroupedNet(nn.Cell):
    """conv -> grouped conv (group 4: 2 inputs and 3 outputs per group) -> conv."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, weight_init="he_uniform")
        self.g = nn.Conv2d(8, 12, 3, group=4, weight_init="he_uniform")
        self.pw = nn.Conv2d(12, 6, 1, weight_init="he_uniform")
        self.relu = nn.ReLU()
        self.fc = nn.Dense(6, 4)

    def construct(self, x):
        x = self.relu(self.g(self.relu(self.conv(x))))
        return self.fc(ops.mean(self.relu(self.pw(x)), (2, 3)))


def test_grouped_conv_is_pruned_by_blocks():
    net = _GroupedNet()
    groups = {g.producers[0].out_channels: g for g in find_channel_groups(net) if g.prunable}
    assert groups[8].blocks == 4 and groups[8].grouped_consumers == [net.g]
    assert groups[12].blocks == 4 and groups[12].producers == [net.g]
    keep_in = np.array([0, 3, 5, 6])  # one of the two channels of each group
    keep_out = np.array([0, 2, 3, 4, 7, 8, 9, 11])  # two of the three of each group
    small = prune_channels(net, {id(net.conv): keep_in, id(net.g): keep_out})
    assert (small.g.in_channels, small.g.out_channels, small.g.group) == (4, 8, 4)
    assert small.g.weight.shape == (8, 1, 3, 3) and small.pw.in_channels == 8
    x = Tensor(RNG.standard_normal((2, 3, 9, 9)).astype("f4"))
    for conv, keep in ((net.conv, keep_in), (net.g, keep_out)):  # reference: filters zeroed
        w = conv.weight.asnumpy().copy()
        w[np.setdiff1d(np.arange(w.shape[0]), keep)] = 0
        conv.weight.set_data(Tensor(w))
    np.testing.assert_allclose(small(x).asnumpy(), net(x).asnumpy(), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="same number in each"):
        prune_channels(net, {id(net.conv): np.array([0, 1, 2, 4])})


def test_keep_indices_prunes_each_block_alike():
    net = _GroupedNet()
    (group,) = [g for g in find_channel_groups(net) if g.prunable and g.channels == 12]
    scores = {id(net.g): RNG.uniform(0, 1, 12)}
    keep = keep_indices(group, scores, 0.45)  # int(0.45 * 3) = 1 of every 3 goes
    assert np.bincount(keep // 3, minlength=4).tolist() == [2, 2, 2, 2]
    for b in range(4):  # the lowest score of each block is the one dropped
        block = scores[id(net.g)][3 * b : 3 * b + 3]
        assert 3 * b + int(np.argmin(block)) not in keep


class _CatNet(nn.Cell):
    """Two convs concatenated along channels (both call forms), a BN on the concat, a
    conv reading it; the parts are pruned as their own groups."""

    def __init__(self, primitive: bool) -> None:
        super().__init__()
        self.a = nn.Conv2d(3, 4, 3, weight_init="he_uniform")
        self.b = nn.Conv2d(3, 6, 3, weight_init="he_uniform")
        self.bn = nn.BatchNorm2d(10)
        self.c = nn.Conv2d(10, 5, 3, weight_init="he_uniform")
        self.relu = nn.ReLU()
        self.fc = nn.Dense(5, 3)
        self.cat = ops.Concat(axis=1) if primitive else None

    def construct(self, x):
        a = self.relu(self.a(x))
        b = self.relu(self.b(x))
        y = self.cat((a, b)) if self.cat is not None else ops.concat((a, b), 1)
        y = self.relu(self.bn(y))
        return self.fc(ops.mean(self.relu(self.c(y)), (2, 3)))


@pytest.mark.parametrize("primitive", [False, True])
def test_concat_parts_are_pruned_and_readers_sliced(primitive, tmp_path):
    net = _CatNet(primitive)
    gs_nets.randomize_bn(net)
    net.set_train(False)
    groups = [g for g in find_channel_groups(net) if g.prunable]
    assert sorted(g.channels for g in groups) == [4, 5, 6]
    keep_a, keep_b = np.array([0, 2, 3]), np.array([1, 4, 5])
    small = prune_channels(net, {id(net.a): keep_a, id(net.b): keep_b})
    small.set_train(False)
    assert small.bn.num_features == 6 and small.c.in_channels == 6
    x = Tensor(RNG.standard_normal((2, 3, 9, 9)).astype("f4"))
    # reference: the original with the removed channels ignored by their only reader
    w = net.c.weight.asnumpy().copy()
    gone = np.setdiff1d(np.arange(10), np.concatenate([keep_a, keep_b + 4]))
    w[:, gone] = 0
    net.c.weight.set_data(Tensor(w))
    np.testing.assert_allclose(small(x).asnumpy(), net(x).asnumpy(), rtol=1e-5, atol=1e-5)
    # the export (an ops.Concat attribute rebuilt from its attrs) reloads to the same outputs
    paths = export_network(small, str(tmp_path), "cat")
    spec = importlib.util.spec_from_file_location("cat_export", paths["description"])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    loaded = module.load()
    loaded.set_train(False)
    np.testing.assert_array_equal(loaded(x).asnumpy(), small(x).asnumpy())


class _ScopGroupedCatNet(nn.Cell):
    """Conv+BN pairs only (what SCOP scores): a grouped conv and a concat."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Conv2d(3, 8, 3, weight_init="he_uniform")
        self.bn_a = nn.BatchNorm2d(8)
        self.g = nn.Conv2d(8, 8, 3, group=2, weight_init="he_uniform")
        self.bn_g = nn.BatchNorm2d(8)
        self.b = nn.Conv2d(3, 6, 3, weight_init="he_uniform")
        self.bn_b = nn.BatchNorm2d(6)
        self.c = nn.Conv2d(14, 4, 1, weight_init="he_uniform")
        self.bn_c = nn.BatchNorm2d(4)
        self.relu = nn.ReLU()
        self.fc = nn.Dense(4, 3)

    def construct(self, x):
        a = self.relu(self.bn_a(self.a(x)))
        g = self.relu(self.bn_g(self.g(a)))
        b = self.relu(self.bn_b(self.b(x)))
        y = self.relu(self.bn_c(self.c(ops.concat((g, b), 1))))
        return self.fc(ops.mean(y, (2, 3)))


def test_scop_prunes_grouped_convs_and_concats():
    net = _ScopGroupedCatNet()
    gs_nets.randomize_bn(net)
    kf = PrunerKfCompressAlgo({}).apply(net)
    for cell in _kf_cells(kf):
        cell.kfscale.set_data(Tensor(RNG.uniform(0, 1, cell.kfscale.shape).astype("f4")))
    ft = PrunerFtCompressAlgo({"prune_rate": 0.5})
    masked = ft.apply(kf)
    masked.set_train(False)
    x = Tensor(RNG.standard_normal((2, 3, 9, 9)).astype("f4"))
    ref = masked(x).asnumpy()
    small = ft.convert(masked)
    small.set_train(False)
    np.testing.assert_allclose(small(x).asnumpy(), ref, rtol=1e-5, atol=1e-5)
    convs = {n: c for n, c in small.cells_and_names() if isinstance(c, nn.Conv2d)}
    assert (convs["a"].out_channels, convs["g"].in_channels, convs["g"].group) == (4, 4, 2)
    assert convs["g"].out_channels == 4 and convs["b"].out_channels == 3
    assert convs["c"].in_channels == 7 and convs["c"].out_channels == 2


def _scop_masked_and_pruned(net, x, rate=0.5):
    """SCOP on ``net`` with random knockoff scales: the masked network's eval output, the
    physically pruned network and the algorithm."""
    gs_nets.randomize_bn(net)
    kf = PrunerKfCompressAlgo({}).apply(net)
    for cell in _kf_cells(kf):
        cell.kfscale.set_data(Tensor(RNG.uniform(0, 1, cell.kfscale.shape).astype("f4")))
    ft = PrunerFtCompressAlgo({"prune_rate": rate})
    masked = ft.apply(kf)
    masked.set_train(False)
    ref = masked(x).asnumpy()
    small = ft.convert(masked)
    small.set_train(False)
    return masked, ref, small, ft


def _reloaded_in_fresh_process(tmp_path, cases):
    """Export each ``(name, net, x, ref)``, reload them all in one fresh process without
    golden stick, and return the largest difference to ``ref`` per case."""
    lines = [
        "import importlib.util, sys",
        "import numpy as np",
        'sys.modules["sporeling.goldenstick"] = None  # the export must not need golden stick',
        "from sporeling.core import Tensor",
        "diffs = []",
    ]
    for name, net, x, ref in cases:
        paths = export_network(net, str(tmp_path), name)
        np.save(tmp_path / f"{name}_x.npy", x.asnumpy())
        np.save(tmp_path / f"{name}_ref.npy", ref)
        lines += [
            f"spec = importlib.util.spec_from_file_location({name!r}, {paths['description']!r})",
            "mod = importlib.util.module_from_spec(spec)",
            "spec.loader.exec_module(mod)",
            "net = mod.load()",
            "net.set_train(False)",
            f"out = net(Tensor(np.load({str(tmp_path / (name + '_x.npy'))!r}))).asnumpy()",
            f"diffs.append(float(np.abs(out - np.load({str(tmp_path / (name + '_ref.npy'))!r}))"
            ".max()))",
        ]
    lines.append("print(diffs)")
    done = subprocess.run(
        [sys.executable, "-c", "\n".join(lines)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return eval(done.stdout.strip().splitlines()[-1])


class _ScopCatHeadNet(nn.Cell):
    """Two Conv+BN parts concatenated, read by a Dense after a Flatten or a spatial mean."""

    def __init__(self, head: str) -> None:
        super().__init__()
        self.a = nn.Conv2d(3, 4, 3, weight_init="he_uniform")
        self.bn_a = nn.BatchNorm2d(4)
        self.b = nn.Conv2d(3, 6, 3, weight_init="he_uniform")
        self.bn_b = nn.BatchNorm2d(6)
        self.relu = nn.ReLU()
        self.flatten = nn.Flatten()
        self.head = head
        self.fc = nn.Dense(10 * 36 if head == "flatten" else 10, 3)

    def construct(self, x):
        y = ops.concat((self.relu(self.bn_a(self.a(x))), self.relu(self.bn_b(self.b(x)))), 1)
        if self.head == "flatten":
            return self.fc(self.flatten(y))
        return self.fc(ops.mean(y, (2, 3)))


class _ScopCatAddNet(nn.Cell):
    """An add of two concats (parts that line up), a BN on the sum (no conv before it), a
    depthwise conv and a grouped conv (group 2: one part per conv group) reading it."""

    def __init__(self) -> None:
        super().__init__()
        for name in "abcd":  # attributes, not a CellList: prune_channels rebuilds them
            setattr(self, name, nn.Conv2d(3, 4, 3, weight_init="he_uniform"))
            setattr(self, f"bn_{name}", nn.BatchNorm2d(4))
        self.bn = nn.BatchNorm2d(8)
        self.dw = nn.Conv2d(8, 8, 3, group=8, weight_init="he_uniform")
        self.bn_dw = nn.BatchNorm2d(8)
        self.g = nn.Conv2d(8, 6, 3, group=2, weight_init="he_uniform")
        self.bn_g = nn.BatchNorm2d(6)
        self.relu = nn.ReLU()
        self.fc = nn.Dense(6, 3)

    def construct(self, x):
        a = self.relu(self.bn_a(self.a(x)))
        b = self.relu(self.bn_b(self.b(x)))
        c = self.relu(self.bn_c(self.c(x)))
        d = self.relu(self.bn_d(self.d(x)))
        y = ops.concat((a, b), 1) + ops.concat((c, d), 1)
        y = self.relu(self.bn_dw(self.dw(self.relu(self.bn(y)))))
        return self.fc(ops.mean(self.relu(self.bn_g(self.g(y))), (2, 3)))


def test_scop_prunes_concats_read_by_dense_adds_depthwise_and_grouped_convs(tmp_path):
    x = Tensor(RNG.standard_normal((2, 3, 6, 6)).astype("f4"))
    cases = []
    for head, cols in (("flatten", 5 * 36), ("mean", 5)):
        net = _ScopCatHeadNet(head)
        groups = [g for g in find_channel_groups(net) if g.prunable]
        assert sorted(g.channels for g in groups) == [4, 6]
        _, ref, small, _ = _scop_masked_and_pruned(net, x)
        assert small.fc.in_channels == cols  # 2 + 3 channels kept, h*w columns each
        np.testing.assert_allclose(small(x).asnumpy(), ref, rtol=1e-5, atol=1e-5)
        cases.append((f"cat_{head}", small, x, ref))
    net = _ScopCatAddNet()
    groups = [g for g in find_channel_groups(net) if g.prunable]
    parts = sorted((g for g in groups if g.channels == 4), key=lambda g: id(g.producers[0]))
    assert len(parts) == 2 and all(len(g.producers) == 2 for g in parts)  # a+c, b+d
    masked, ref, small, _ = _scop_masked_and_pruned(net, x)
    assert any(isinstance(c, MaskedNorm) for _, c in masked.cells_and_names())  # bn after add
    convs = {n: c for n, c in small.cells_and_names() if isinstance(c, nn.Conv2d)}
    assert all(convs[name].out_channels == 2 for name in "abcd")
    assert (convs["dw"].in_channels, convs["dw"].out_channels, convs["dw"].group) == (4, 4, 4)
    assert (convs["g"].in_channels, convs["g"].group, convs["g"].weight.shape[1]) == (4, 2, 2)
    assert convs["g"].out_channels == 4 and small.fc.in_channels == 4 and small.bn.num_features == 4
    # masked == pruned, also where a BN follows the concat (the masks follow it)
    np.testing.assert_allclose(small(x).asnumpy(), ref, rtol=1e-5, atol=1e-5)
    cases.append(("cat_add", small, x, ref))
    assert max(_reloaded_in_fresh_process(tmp_path, cases)) < 1e-5


def test_masked_equals_pruned_with_a_bn_after_a_concat():
    x = Tensor(RNG.standard_normal((2, 3, 9, 9)).astype("f4"))

    class _BnAfterCat(_CatNet):
        def __init__(self) -> None:
            super().__init__(False)
            self.bn_a = nn.BatchNorm2d(4)
            self.bn_b = nn.BatchNorm2d(6)

        def construct(self, x):
            y = ops.concat((self.bn_a(self.a(x)), self.bn_b(self.b(x))), 1)
            y = self.relu(self.bn(y))
            return self.fc(ops.mean(self.relu(self.c(y)), (2, 3)))

    net = _BnAfterCat()
    masked, ref, small, _ = _scop_masked_and_pruned(net, x)
    norms = [c for _, c in masked.cells_and_names() if isinstance(c, MaskedNorm)]
    assert len(norms) == 1 and norms[0].mask.asnumpy().sum() == 5  # 2 of 4 + 3 of 6 kept
    assert small.bn.num_features == 5
    np.testing.assert_allclose(small(x).asnumpy(), ref, rtol=1e-5, atol=1e-5)


class _UnalignedNet(nn.Cell):
    """Concats that cannot be pruned soundly, one per ``mode``."""

    def __init__(self, mode: str) -> None:
        super().__init__()
        sizes = {"add": (4, 6, 6, 4), "single": (4, 4, 8, 0), "straddle": (3, 5, 0, 0)}[mode]
        self.mode = mode
        self.convs = nn.CellList([nn.Conv2d(3, max(c, 1), 3) for c in sizes])
        self.g = nn.Conv2d(8, 4, 3, group=2)
        self.relu = nn.ReLU()
        self.fc = nn.Dense(10, 3)

    def construct(self, x):
        a = self.relu(self.convs[0](x))
        b = self.relu(self.convs[1](x))
        if self.mode == "add":
            c = self.relu(self.convs[2](x))
            d = self.relu(self.convs[3](x))
            y = ops.concat((a, b), 1) + ops.concat((c, d), 1)
        elif self.mode == "single":
            y = ops.concat((a, b), 1) + self.relu(self.convs[2](x))
        else:
            y = self.g(ops.concat((a, b), 1))
        return self.fc(ops.mean(y, (2, 3)))


@pytest.mark.parametrize(
    "mode,why",
    [
        ("add", "an add of concats whose parts do not line up ([4, 6] and [6, 4])"),
        ("single", "an add of a concat and a single group (its parts would split the group)"),
        ("straddle", "a grouped conv (group=2, 4 inputs each) whose groups straddle"),
    ],
)
def test_concats_that_cannot_be_pruned_are_frozen_with_the_reason(mode, why):
    groups = find_channel_groups(_UnalignedNet(mode))
    frozen = [g for g in groups if g.frozen and g.producers and g.channels < 10]
    assert len(frozen) >= 2
    assert all(any(r.startswith(why) for r in g.reasons) for g in frozen)


class _HalfScoredCatNet(nn.Cell):
    """A grouped conv reading a concat of a Conv+BN part and a conv without BN (no score)."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Conv2d(3, 4, 3, weight_init="he_uniform")
        self.bn_a = nn.BatchNorm2d(4)
        self.b = nn.Conv2d(3, 4, 3, weight_init="he_uniform")
        self.g = nn.Conv2d(8, 4, 3, group=2, weight_init="he_uniform")
        self.bn_g = nn.BatchNorm2d(4)
        self.relu = nn.ReLU()
        self.fc = nn.Dense(4, 3)

    def construct(self, x):
        y = ops.concat((self.relu(self.bn_a(self.a(x))), self.relu(self.b(x))), 1)
        return self.fc(ops.mean(self.relu(self.bn_g(self.g(y))), (2, 3)))


def test_grouped_conv_on_a_concat_keeps_parts_whole_when_their_counts_differ():
    net = _HalfScoredCatNet()
    x = Tensor(RNG.standard_normal((2, 3, 6, 6)).astype("f4"))
    _, ref, small, ft = _scop_masked_and_pruned(net, x)
    # part b has no score, so part a cannot lose channels without unbalancing g's groups
    assert id(net.a) not in ft._keep and id(net.g) in ft._keep
    convs = {n: c for n, c in small.cells_and_names() if isinstance(c, nn.Conv2d)}
    assert convs["a"].out_channels == 4 and convs["g"].out_channels == 2
    np.testing.assert_allclose(small(x).asnumpy(), ref, rtol=1e-5, atol=1e-5)


class _ShiftNet(nn.Cell):
    """A conv whose channels go through an op that maps 0 to something else."""

    def __init__(self, mode: str) -> None:
        super().__init__()
        self.mode = mode
        self.a = nn.Conv2d(3, 4, 3)
        self.sig = nn.Sigmoid()
        self.dw = nn.Conv2d(4, 4, 3, group=4, has_bias=True)
        self.c = nn.Conv2d(4, 2, 3)

    def construct(self, x):
        y = self.a(x)
        if self.mode == "sigmoid":
            y = self.sig(y)
        elif self.mode == "constant":
            y = y + 1.0
        elif self.mode == "scaled":
            y = y * 2.0
        else:
            y = self.dw(y)
        return ops.mean(self.c(y), (2, 3))


@pytest.mark.parametrize(
    "mode,why",
    [
        ("sigmoid", "a Sigmoid on them"),
        ("constant", "a constant added to them"),
        ("bias", "a depthwise conv with a bias on them"),
        ("scaled", None),
    ],
)
def test_ops_that_shift_a_removed_channels_zeros_freeze_it(mode, why):
    net = _ShiftNet(mode)
    (g,) = [g for g in find_channel_groups(net) if net.a in g.producers]
    if why is None:  # zeros stay zeros
        assert g.prunable
    else:
        assert g.frozen and g.reasons == [
            f"{why} (a removed channel's 0 would become a value the next layer reads)"
        ]
