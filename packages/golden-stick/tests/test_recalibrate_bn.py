"""``workflow.recalibrate_bn``: the moving statistics afterwards are the averages of the
batch statistics, computed here in NumPy float64 (a BN on the input, a 1x1 conv, a BN
on its output, so the second BN sees the first one's train-mode output)."""

import numpy as np
import pytest

from sporeling.core import Tensor, nn
from sporeling.goldenstick.workflow import recalibrate_bn

EPS = 1e-5


def _net(rng):
    w = rng.standard_normal((4, 3, 1, 1)).astype(np.float32)
    bn1 = nn.BatchNorm2d(3, eps=EPS, momentum=0.9)
    bn1.gamma.set_data(Tensor(rng.uniform(0.5, 2.0, 3).astype(np.float32)))
    bn1.beta.set_data(Tensor(rng.standard_normal(3).astype(np.float32)))
    conv = nn.Conv2d(3, 4, 1, has_bias=False, weight_init=Tensor(w))
    bn2 = nn.BatchNorm2d(4, eps=EPS, momentum=0.9)
    # stale statistics, as after knockoff training: they must not survive
    bn2.moving_mean.set_data(Tensor(np.full(4, 7.0, np.float32)))
    bn2.moving_variance.set_data(Tensor(np.full(4, 9.0, np.float32)))
    return nn.SequentialCell([bn1, conv, bn2]), bn1, bn2


def _reference(net_parts, batches):
    """Per BN: the mean over batches of the batch means and of the unbiased variances."""
    bn1, conv, _ = net_parts
    g = bn1.gamma.asnumpy().astype(np.float64).reshape(1, -1, 1, 1)
    b = bn1.beta.asnumpy().astype(np.float64).reshape(1, -1, 1, 1)
    w = conv.weight.asnumpy().astype(np.float64)[:, :, 0, 0]
    stats = {1: ([], []), 2: ([], [])}
    for x in batches:
        x = x.astype(np.float64)
        for k in (1, 2):
            stats[k][0].append(x.mean(axis=(0, 2, 3)))
            stats[k][1].append(x.var(axis=(0, 2, 3), ddof=1))
            if k == 1:
                mu = x.mean(axis=(0, 2, 3), keepdims=True)
                var = x.var(axis=(0, 2, 3), keepdims=True)
                x = np.einsum("oc,nchw->nohw", w, (x - mu) / np.sqrt(var + EPS) * g + b)
    return {k: (np.mean(m, axis=0), np.mean(v, axis=0)) for k, (m, v) in stats.items()}


@pytest.mark.parametrize("num_batches", [None, 2])
def test_moving_stats_are_the_batch_averages(num_batches):
    rng = np.random.default_rng(3)
    net, bn1, bn2 = _net(rng)
    x = (rng.standard_normal((10, 3, 5, 5)) * 2.0 + 1.5).astype(np.float32)
    net.set_train(False)
    recalibrate_bn(net, x, batch_size=4, num_batches=num_batches)
    used = [x[0:4], x[4:8], x[8:10]][:num_batches]
    ref = _reference(list(net.cells()), used)
    for k, bn in ((1, bn1), (2, bn2)):
        np.testing.assert_allclose(bn.moving_mean.asnumpy(), ref[k][0], rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(bn.moving_variance.asnumpy(), ref[k][1], rtol=1e-4, atol=1e-5)
    # momenta and the mode are restored
    assert bn1.momentum == 0.9 and bn2.momentum == 0.9
    assert not net.training


def test_one_batch_gives_its_own_statistics_and_eval_matches_train():
    """With one batch, eval mode afterwards normalises as train mode did on that batch
    (up to the unbiased/biased variance factor n / (n - 1))."""
    rng = np.random.default_rng(5)
    bn = nn.BatchNorm2d(3, eps=EPS)
    x = rng.standard_normal((8, 3, 4, 4)).astype(np.float32) * 3.0 - 1.0
    recalibrate_bn(bn, x, batch_size=8)
    n = 8 * 4 * 4
    np.testing.assert_allclose(bn.moving_mean.asnumpy(), x.mean(axis=(0, 2, 3)), rtol=1e-5)
    np.testing.assert_allclose(
        bn.moving_variance.asnumpy(),
        x.astype(np.float64).var(axis=(0, 2, 3)) * n / (n - 1),
        rtol=1e-4,
    )


@pytest.mark.parametrize(
    ("kw", "name"), [({"batch_size": 0}, "batch_size"), ({"num_batches": 0}, "num_batches")]
)
def test_bad_arguments_name_themselves(kw, name):
    with pytest.raises(ValueError, match=f"argument '{name}'"):
        recalibrate_bn(nn.BatchNorm2d(2), np.zeros((2, 2, 1, 1), np.float32), **kw)
