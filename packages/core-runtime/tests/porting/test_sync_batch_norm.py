"""nn.SyncBatchNorm in one process: plain batch norm (NumPy float64 reference, gradient
check), argument errors. The cross-rank case is tests/distributed/test_sync_batch_norm.py."""

import numpy as np
import pytest

from sporeling.core import Tensor, nn
from sporeling_testing.gradcheck import check_grad

RNG = np.random.default_rng(0)


def _ref(x, g, b, eps=1e-5):
    axes = (0,) if x.ndim == 2 else (0, 2, 3)
    mu, var = x.mean(axes, keepdims=True), x.var(axes, keepdims=True)
    shape = (1, -1) if x.ndim == 2 else (1, -1, 1, 1)
    return (x - mu) / np.sqrt(var + eps) * g.reshape(shape) + b.reshape(shape), mu, var


@pytest.mark.parametrize("shape", [(4, 3, 2, 2), (5, 3)])
def test_one_process_is_batch_norm(shape):
    x = RNG.standard_normal(shape) * 3 + 1
    bn = nn.SyncBatchNorm(3, momentum=0.8).set_train()
    assert bn.group is None
    g, b = RNG.standard_normal(3), RNG.standard_normal(3)
    bn.gamma.set_data(Tensor(g))
    bn.beta.set_data(Tensor(b))
    ref, mu, var = _ref(x, g, b)
    np.testing.assert_allclose(bn(Tensor(x)).asnumpy(), ref, rtol=1e-10, atol=1e-10)
    m = x.size // 3
    np.testing.assert_allclose(bn.moving_mean.asnumpy(), 0.2 * mu.ravel(), rtol=1e-6)  # float32
    np.testing.assert_allclose(
        bn.moving_variance.asnumpy(), 0.8 + 0.2 * var.ravel() * m / (m - 1), rtol=1e-6
    )
    check_grad(lambda t: bn(t), [x[:3]])
    bn.set_train(False)  # evaluation: moving statistics
    mm, mv = bn.moving_mean.asnumpy(), bn.moving_variance.asnumpy()
    s = (1, -1) if x.ndim == 2 else (1, -1, 1, 1)
    ev = (x - mm.reshape(s)) / np.sqrt(mv.reshape(s) + 1e-5) * g.reshape(s) + b.reshape(s)
    np.testing.assert_allclose(bn(Tensor(x)).asnumpy(), ev, rtol=1e-6, atol=1e-6)


def test_errors_name_the_argument():
    with pytest.raises(ValueError, match="process_groups"):
        nn.SyncBatchNorm(3, process_groups=[[0, 1], [1]])
    with pytest.raises(ValueError, match="process_groups"):
        nn.SyncBatchNorm(3, process_groups="world")
    with pytest.raises(ValueError, match="num_features"):
        nn.SyncBatchNorm(0)
    with pytest.raises(ValueError, match="N, C or N, C, H, W"):
        nn.SyncBatchNorm(3)(Tensor(RNG.standard_normal((2, 3, 4))))
