"""BatchNorm / LayerNorm / GroupNorm: references, running statistics, train vs eval."""

import numpy as np
import pytest
from _layer_refs import check_layer_grad

from sporeling.core import Tensor, nn


def _bn_ref(x, gamma, beta, eps):
    axes = (0,) + tuple(range(2, x.ndim))
    bs = (1, -1) + (1,) * (x.ndim - 2)
    m, v = x.mean(axes), x.var(axes)
    return (x - m.reshape(bs)) / np.sqrt(v.reshape(bs) + eps) * gamma.reshape(bs) + beta.reshape(bs)


@pytest.mark.parametrize(
    "cls,shape",
    [
        (nn.BatchNorm1d, (6, 3)),
        (nn.BatchNorm1d, (4, 3, 5)),
        (nn.BatchNorm2d, (4, 3, 2, 5)),
        (nn.BatchNorm3d, (2, 3, 2, 2, 3)),
    ],
)
def test_batchnorm_train_eval_and_moving_stats(cls, shape):
    rng = np.random.default_rng(0)
    bn = cls(3, momentum=0.8)
    bn.gamma.set_data(Tensor(rng.uniform(0.5, 2, 3)))
    bn.beta.set_data(Tensor(rng.standard_normal(3)))
    x = rng.standard_normal(shape) * 2 + 1
    bn.set_train()
    y = bn(Tensor(x)).asnumpy()
    np.testing.assert_allclose(
        y, _bn_ref(x, bn.gamma.asnumpy(), bn.beta.asnumpy(), 1e-5), atol=1e-6
    )
    axes = (0,) + tuple(range(2, x.ndim))
    cnt = x.size // 3
    # MindSpore momentum: moving = momentum * moving + (1 - momentum) * batch
    np.testing.assert_allclose(bn.moving_mean.asnumpy(), 0.2 * x.mean(axes), rtol=1e-5)
    np.testing.assert_allclose(
        bn.moving_variance.asnumpy(), 0.8 + 0.2 * x.var(axes) * cnt / (cnt - 1), rtol=1e-5
    )
    bn.set_train(False)
    mm, mv = bn.moving_mean.asnumpy().copy(), bn.moving_variance.asnumpy().copy()
    y = bn(Tensor(x)).asnumpy()
    bs = (1, -1) + (1,) * (x.ndim - 2)
    ref = (x - mm.reshape(bs)) / np.sqrt(mv.reshape(bs) + 1e-5) * bn.gamma.asnumpy().reshape(bs)
    np.testing.assert_allclose(y, ref + bn.beta.asnumpy().reshape(bs), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(bn.moving_mean.asnumpy(), mm)  # eval leaves stats alone


def test_batchnorm_use_batch_statistics():
    x = np.random.default_rng(0).standard_normal((4, 2, 3, 3))
    bn = nn.BatchNorm2d(2, use_batch_statistics=True)  # eval mode, still batch stats
    y = bn(Tensor(x)).asnumpy()
    np.testing.assert_allclose(y, _bn_ref(x, np.ones(2), np.zeros(2), 1e-5), atol=1e-5)
    assert not np.allclose(bn.moving_mean.asnumpy(), 0)
    bn = nn.BatchNorm2d(2, use_batch_statistics=False).set_train()
    np.testing.assert_allclose(bn(Tensor(x)).asnumpy(), x / np.sqrt(1 + 1e-5), rtol=1e-6)
    np.testing.assert_array_equal(bn.moving_mean.asnumpy(), 0)


def test_batchnorm_names_defaults_and_grads():
    bn = nn.BatchNorm2d(3)
    assert [n for n, _ in bn.parameters_and_names()] == [
        "moving_mean",
        "moving_variance",
        "gamma",
        "beta",
    ]
    assert [p.name for p in bn.trainable_params()] == ["gamma", "beta"]
    assert (bn.eps, bn.momentum, bn.use_batch_statistics) == (1e-5, 0.9, None)
    assert not nn.BatchNorm2d(3, affine=False).trainable_params()
    bn.set_train()
    x = np.random.default_rng(0).standard_normal((3, 3, 2, 2))
    check_layer_grad(bn, x, ["gamma", "beta"], atol=1e-4)
    check_layer_grad(nn.BatchNorm2d(3).set_train(False), x, ["gamma", "beta"])


def test_batchnorm_nhwc_and_errors():
    x = np.random.default_rng(0).standard_normal((2, 3, 3, 4))
    y = nn.BatchNorm2d(4, data_format="NHWC").set_train()(Tensor(x)).asnumpy()
    ref = _bn_ref(x.transpose(0, 3, 1, 2), np.ones(4), np.zeros(4), 1e-5).transpose(0, 2, 3, 1)
    np.testing.assert_allclose(y, ref, atol=1e-6)
    with pytest.raises(ValueError, match="BatchNorm2d: argument 'momentum'"):
        nn.BatchNorm2d(2, momentum=1.5)
    with pytest.raises(ValueError, match="4 channels.*num_features=3"):
        nn.BatchNorm2d(3)(Tensor(np.zeros((2, 4, 2, 2), np.float32)))
    with pytest.raises(ValueError, match="BatchNorm1d: the input expected a 2-d or 3-d"):
        nn.BatchNorm1d(3)(Tensor(np.zeros((2, 3, 2, 2), np.float32)))


@pytest.mark.parametrize(
    "shape,norm_shape,bna,bpa",
    [((2, 3, 4), (4,), -1, -1), ((2, 3, 4), (3, 4), 1, 1), ((2, 3, 4), (4,), 1, -1)],
)
def test_layernorm(shape, norm_shape, bna, bpa):
    rng = np.random.default_rng(0)
    ln = nn.LayerNorm(norm_shape, bna, bpa)
    assert ln.epsilon == 1e-7 and ln.gamma.shape == norm_shape
    ln.gamma.set_data(Tensor(rng.uniform(0.5, 2, norm_shape)))
    ln.beta.set_data(Tensor(rng.standard_normal(norm_shape)))
    x = rng.standard_normal(shape)
    axes = tuple(range(bna % len(shape), len(shape)))
    ref = (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + 1e-7)
    ref = ref * ln.gamma.asnumpy() + ln.beta.asnumpy()
    np.testing.assert_allclose(ln(Tensor(x)).asnumpy(), ref, atol=1e-10)
    check_layer_grad(ln, rng.standard_normal((2,) + shape[1:]), ["gamma", "beta"])


def test_layernorm_errors():
    with pytest.raises(TypeError, match="LayerNorm: argument 'normalized_shape'"):
        nn.LayerNorm(4)
    with pytest.raises(ValueError, match="does not end in normalized_shape"):
        nn.LayerNorm((5,))(Tensor(np.zeros((2, 4), np.float32)))


def test_groupnorm():
    rng = np.random.default_rng(0)
    gn = nn.GroupNorm(2, 4)
    assert [n for n, _ in gn.parameters_and_names()] == ["gamma", "beta"]
    gn.gamma.set_data(Tensor(rng.uniform(0.5, 2, 4)))
    gn.beta.set_data(Tensor(rng.standard_normal(4)))
    x = rng.standard_normal((2, 4, 3, 2))
    g = x.reshape(2, 2, -1)
    ref = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5)).reshape(
        x.shape
    )
    ref = ref * gn.gamma.asnumpy().reshape(1, 4, 1, 1) + gn.beta.asnumpy().reshape(1, 4, 1, 1)
    np.testing.assert_allclose(gn(Tensor(x)).asnumpy(), ref, atol=1e-10)
    check_layer_grad(gn, rng.standard_normal((1, 4, 2, 2)), ["gamma", "beta"])
    with pytest.raises(ValueError, match="GroupNorm: argument 'num_groups'"):
        nn.GroupNorm(3, 4)
