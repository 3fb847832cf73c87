"""The nn pieces added for ported scripts, each against a NumPy float64 reference and,
where differentiable, a numerical gradient check."""

import math

import numpy as np
import pytest

from sporeling.core import Tensor, nn, set_seed
from sporeling_testing.gradcheck import check_grad

RNG = np.random.default_rng(0)


def T(a):
    return Tensor(np.asarray(a))


def test_instance_norm_2d_and_1d():
    x = RNG.standard_normal((2, 3, 4, 5))
    net = nn.InstanceNorm2d(3)
    g, b = RNG.standard_normal(3), RNG.standard_normal(3)
    net.gamma.set_data(T(g))
    net.beta.set_data(T(b))
    mu = x.mean((2, 3), keepdims=True)
    var = x.var((2, 3), keepdims=True)
    ref = (x - mu) / np.sqrt(var + 1e-5) * g[:, None, None] + b[:, None, None]
    np.testing.assert_allclose(net(T(x)).asnumpy(), ref, rtol=1e-10, atol=1e-10)
    check_grad(lambda t: net(t), [x[:1, :, :3, :3]])
    x1 = RNG.standard_normal((2, 3, 6))
    ref1 = (x1 - x1.mean(2, keepdims=True)) / np.sqrt(x1.var(2, keepdims=True) + 1e-5)
    np.testing.assert_allclose(nn.InstanceNorm1d(3)(T(x1)).asnumpy(), ref1, rtol=1e-10)
    with pytest.raises(ValueError, match="num_features=3"):
        nn.InstanceNorm2d(3)(T(RNG.standard_normal((1, 2, 3, 3))))


@pytest.mark.parametrize(("mode", "np_mode"), [("CONSTANT", "constant"), ("REFLECT", "reflect"),
                                               ("SYMMETRIC", "symmetric")])  # fmt: skip
def test_pad_modes(mode, np_mode):
    x = RNG.standard_normal((2, 3, 4))
    pads = ((0, 0), (1, 2), (2, 1))
    np.testing.assert_allclose(nn.Pad(pads, mode)(T(x)).asnumpy(), np.pad(x, pads, np_mode))
    check_grad(lambda t: nn.Pad(pads, mode)(t), [x[:1]])


def test_pad_errors():
    with pytest.raises(ValueError, match="paddings"):
        nn.Pad(((0, -1),))
    with pytest.raises(ValueError, match="at most 2"):
        nn.Pad(((0, 3),), "REFLECT")(T(np.ones(3)))


def _bilinear_ref(x, oh, ow, align):
    n, c, h, w = x.shape

    def coords(o, i):
        d = np.arange(o, dtype=np.float64)
        s = d * (i - 1) / (o - 1) if align and o > 1 else d * i / o
        s = np.clip(s, 0, i - 1)
        lo = np.floor(s).astype(int)
        hi = np.minimum(lo + 1, i - 1)
        return lo, hi, s - lo

    y0, y1, fy = coords(oh, h)
    x0, x1, fx = coords(ow, w)
    top = x[:, :, y0][:, :, :, x0] * (1 - fx) + x[:, :, y0][:, :, :, x1] * fx
    bot = x[:, :, y1][:, :, :, x0] * (1 - fx) + x[:, :, y1][:, :, :, x1] * fx
    return top * (1 - fy)[:, None] + bot * fy[:, None]


@pytest.mark.parametrize("align", [False, True])
def test_resize_bilinear(align):
    x = RNG.standard_normal((1, 2, 3, 4))
    got = nn.ResizeBilinear()(T(x), size=(5, 7), align_corners=align).asnumpy()
    np.testing.assert_allclose(got, _bilinear_ref(x, 5, 7, align), rtol=1e-10, atol=1e-12)
    check_grad(lambda t: nn.ResizeBilinear()(t, (5, 6), None, align), [x])
    assert nn.ResizeBilinear()(T(x), scale_factor=2).shape == (1, 2, 6, 8)


def test_unfold_patch_order_like_mindspore():
    x = RNG.standard_normal((1, 2, 4, 4))
    net = nn.Unfold([1, 2, 2, 1], [1, 2, 2, 1], [1, 1, 1, 1])
    got = net(T(x)).asnumpy()
    ref = np.zeros((1, 2 * 2 * 2, 2, 2))
    for i in range(2):
        for j in range(2):
            patch = x[0, :, 2 * i : 2 * i + 2, 2 * j : 2 * j + 2]  # (C, kh, kw)
            ref[0, :, i, j] = patch.transpose(1, 2, 0).reshape(-1)  # (kh, kw, C) order
    np.testing.assert_allclose(got, ref)
    check_grad(lambda t: net(t), [x])
    same = nn.Unfold([1, 3, 3, 1], [1, 2, 2, 1], [1, 1, 1, 1], "same")(T(x))
    assert same.shape == (1, 18, 2, 2)


def test_conv2d_bn_act_and_dense_bn_act():
    set_seed(0)
    net = nn.Conv2dBnAct(2, 3, 3, has_bn=True, activation="relu")
    names = [n for n, _ in net.parameters_and_names()]
    assert names[0] == "conv.weight" and "batchnorm.gamma" in names
    x = RNG.standard_normal((2, 2, 5, 5)).astype(np.float32)
    ref = net.activation(net.batchnorm(net.conv(Tensor(x)))).asnumpy()
    np.testing.assert_allclose(net(Tensor(x)).asnumpy(), ref)
    d = nn.DenseBnAct(4, 3, activation="leakyrelu", alpha=0.1)
    xd = RNG.standard_normal((5, 4))
    w, b = d.dense.weight.asnumpy(), d.dense.bias.asnumpy()
    z = xd @ w.T + b
    np.testing.assert_allclose(d(T(xd)).asnumpy(), np.where(z > 0, z, 0.1 * z), rtol=1e-6)
    dt = nn.DenseBnAct(4, 3, activation="tanh")
    check_grad(lambda t: dt(t), [xd])


def test_forward_value_and_grad():
    net = nn.Dense(3, 2, weight_init="ones", bias_init="zeros")
    x = RNG.standard_normal((4, 3))
    out, gx = nn.ForwardValueAndGrad(net)(T(x))
    np.testing.assert_allclose(out.asnumpy(), x @ np.ones((3, 2)))
    np.testing.assert_allclose(gx.asnumpy(), np.full((4, 3), 2.0))
    params = net.trainable_params()
    out, (gw, gb) = nn.ForwardValueAndGrad(net, params, get_by_list=True)(T(x))
    np.testing.assert_allclose(gw.asnumpy(), np.tile(x.sum(0), (2, 1)))
    np.testing.assert_allclose(gb.asnumpy(), [4.0, 4.0])
    sens = T(np.full((4, 2), 0.5))
    _, (ins, _) = nn.ForwardValueAndGrad(net, params, True, True, True)(T(x), sens)
    np.testing.assert_allclose(ins[0].asnumpy(), np.full((4, 3), 1.0))
    with pytest.raises(ValueError, match="needs 'weights'"):
        nn.ForwardValueAndGrad(net, get_by_list=True)


def test_rrelu_tanhshrink_softmax2d_l1():
    x = RNG.standard_normal((2, 3, 4, 4))
    r = nn.RReLU(0.1, 0.3)
    np.testing.assert_allclose(r(T(x)).asnumpy(), np.where(x >= 0, x, 0.2 * x))  # eval
    r.set_train()
    y = r(T(x)).asnumpy()
    neg = x < 0
    slope = y[neg] / x[neg]
    assert np.all((slope >= 0.1) & (slope <= 0.3)) and np.array_equal(y[~neg], x[~neg])
    check_grad(lambda t: nn.RReLU()(t), [x[0, 0]])
    np.testing.assert_allclose(nn.Tanhshrink()(T(x)).asnumpy(), x - np.tanh(x))
    check_grad(lambda t: nn.Tanhshrink()(t), [x[0, 0]])
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(nn.Softmax2d()(T(x)).asnumpy(), e / e.sum(1, keepdims=True))
    check_grad(lambda t: nn.Softmax2d()(t), [x[0, :, :2, :2]])
    np.testing.assert_allclose(nn.L1Regularizer(0.5)(T(x)).asnumpy(), 0.5 * np.abs(x).sum())
    with pytest.raises(ValueError, match="scale"):
        nn.L1Regularizer(0)


def test_focal_loss():
    logits = RNG.standard_normal((4, 3, 2))
    labels = RNG.integers(0, 3, (4, 2))
    w = np.array([1.0, 2.0, 0.5])
    logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    oh = np.eye(3)[labels].transpose(0, 2, 1)
    per = -((1 - np.exp(logp)) ** 2) * logp * oh * w[None, :, None]
    ref = per.mean(1).mean()
    loss = nn.FocalLoss(T(w), 2.0)
    got = loss(T(logits), Tensor(labels.astype(np.int32)))
    np.testing.assert_allclose(got.asnumpy(), ref, rtol=1e-10)
    check_grad(lambda t: loss(t, Tensor(labels.astype(np.int32))), [logits])


def test_dice_and_multiclass_dice_losses():
    p = RNG.uniform(0, 1, (2, 3, 4))
    y = (RNG.uniform(0, 1, (2, 3, 4)) > 0.5).astype(np.float64)
    ref = 1 - 2 * (p * y).sum() / ((p * p).sum() + (y * y).sum() + 1e-5)
    np.testing.assert_allclose(nn.DiceLoss()(T(p), T(y)).asnumpy(), ref, rtol=1e-10)
    check_grad(lambda t: nn.DiceLoss()(t, T(y)), [p])
    s = np.exp(p) / np.exp(p).sum(1, keepdims=True)
    per = [1 - 2 * (s[:, i] * y[:, i]).sum() / ((s[:, i] ** 2).sum() + (y[:, i] ** 2).sum()
                                               + 1e-5) for i in range(3)]  # fmt: skip
    got = nn.MultiClassDiceLoss(weights=[1.0, 1.0, 1.0])(T(p), T(y)).asnumpy()
    np.testing.assert_allclose(got, sum(per) / 3, rtol=1e-10)
    check_grad(lambda t: nn.MultiClassDiceLoss()(t, T(y)), [p])


def test_cosine_embedding_loss():
    a, b = RNG.standard_normal((5, 4)), RNG.standard_normal((5, 4))
    y = np.array([1, -1, 1, -1, -1], np.int32)
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    ref = np.where(y == 1, 1 - cos, np.maximum(cos - 0.1, 0)).mean()
    loss = nn.CosineEmbeddingLoss(0.1)
    np.testing.assert_allclose(loss(T(a), T(b), Tensor(y)).asnumpy(), ref, rtol=1e-10)
    check_grad(lambda s, t: loss(s, t, Tensor(y)), [a, b])
    with pytest.raises(ValueError, match="do not match"):
        loss(T(a), T(b), Tensor(y[:3]))


def test_metrics():
    from sporeling.core.train import BleuScore, CosineSimilarity, Dice, Perplexity

    p = RNG.uniform(0, 1, (3, 4))
    y = (p > 0.5).astype(np.float64)
    d = Dice()
    d.update(T(p), T(y))
    d.update(T(y), T(y))
    first = 2 * (p * y).sum() / ((p * p).sum() + (y * y).sum() + 1e-5)
    second = 2 * (y * y).sum() / (2 * (y * y).sum() + 1e-5)
    assert math.isclose(d.eval(), (first + second) / 2)

    probs = np.array([[0.2, 0.5, 0.3], [0.6, 0.1, 0.3], [0.1, 0.1, 0.8]])
    labels = np.array([1, 0, 2])
    per = Perplexity()
    per.update(T(probs), T(labels))
    assert math.isclose(per.eval(), math.exp(-np.log([0.5, 0.6, 0.8]).mean()))
    per_ig = Perplexity(ignore_label=0)
    per_ig.update(T(probs), T(labels))
    assert math.isclose(per_ig.eval(), math.exp(-np.log([0.5, 0.8]).mean()))

    cand = [["the", "cat", "sat", "on", "the", "mat"]]
    refs = [[["the", "cat", "is", "on", "the", "mat"]]]
    bleu = BleuScore(n_gram=2)
    bleu.update(cand, refs)
    # unigrams: 5 of 6 match (clipped), bigrams: the-cat, on-the, the-mat = 3 of 5
    assert math.isclose(bleu.eval(), math.sqrt(5 / 6 * 3 / 5))
    assert BleuScore()(cand, [[["a", "b"]]]) == 0.0

    v = RNG.standard_normal((4, 3))
    cs = CosineSimilarity(reduction="mean")
    cs.update(T(v))
    u = v / np.linalg.norm(v, axis=1, keepdims=True)
    sim = u @ u.T
    np.fill_diagonal(sim, 0)
    np.testing.assert_allclose(cs.eval(), sim.mean(-1))
    assert set(["dice", "perplexity", "bleu_score", "cosine_similarity"]) <= set(
        __import__("sporeling.core.train.metrics", fromlist=["names"]).names()
    )
