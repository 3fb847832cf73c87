"""``nn.MicroBatchInterleaved``: summed copies equal the full batch (loss and gradients)."""

from __future__ import annotations

import numpy as np
import pytest

from sporeling.core import Tensor, nn, ops, set_seed


def _net():
    set_seed(3)
    return nn.WithLossCell(
        nn.SequentialCell([nn.Dense(5, 8, activation="relu"), nn.Dense(8, 3)]),
        nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="sum"),
    )


@pytest.mark.parametrize("k", [1, 2, 4])
def test_loss_and_gradients_match_full_batch(k):
    rng = np.random.default_rng(0)
    x = Tensor(rng.standard_normal((8, 5)).astype(np.float32))
    y = Tensor(rng.integers(0, 3, (8,)).astype(np.int32))
    full = _net()
    inter = nn.MicroBatchInterleaved(_net(), k)
    lf, gf = ops.value_and_grad(full, None, full.trainable_params())(x, y)
    li, gi = ops.value_and_grad(inter, None, inter.trainable_params())(x, y)
    np.testing.assert_allclose(li.asnumpy(), lf.asnumpy(), 1e-5)
    for a, b in zip(gf, gi, strict=True):
        np.testing.assert_allclose(b.asnumpy(), a.asnumpy(), 1e-5, 1e-6)


def test_tuple_outputs_are_summed_and_errors():
    class Two(nn.Cell):
        def construct(self, x):
            return x.sum(), x.max()

    out = nn.MicroBatchInterleaved(Two(), 2)(Tensor(np.arange(4.0, dtype=np.float32)))
    assert [float(o.asnumpy()) for o in out] == [6.0, 4.0]
    with pytest.raises(ValueError, match="interleave_num=3"):
        nn.MicroBatchInterleaved(Two(), 3)(Tensor(np.ones(4, np.float32)))
    with pytest.raises(TypeError):
        nn.MicroBatchInterleaved(lambda x: x)
