"""Cell.flatten_weights: parameters of one dtype become views into one contiguous buffer,
values unchanged, and training gives exactly what it gives without flattening."""

import numpy as np
import pytest

from sporeling.core import Tensor, nn, set_seed


def _net():
    set_seed(3)
    return nn.SequentialCell([nn.Dense(4, 5), nn.ReLU(), nn.BatchNorm1d(5), nn.Dense(5, 2)])


def _train(net, steps=4):
    rng = np.random.default_rng(0)
    loss_net = nn.WithLossCell(net, nn.MSELoss())
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.1, momentum=0.9)
    step = nn.TrainOneStepCell(loss_net, opt).set_train()
    losses = []
    for _ in range(steps):
        x, y = rng.standard_normal((8, 4)), rng.standard_normal((8, 2))
        losses.append(float(step(Tensor(x, dtype="float32"), Tensor(y, dtype="float32"))))
    return losses, opt


def test_views_into_one_buffer_values_unchanged():
    net = _net()
    before = {p.name: p.asnumpy().copy() for p in net.get_parameters()}
    net.flatten_weights()
    params = net.trainable_params()
    (flat,) = net._flat_weights
    assert flat.ndim == 1 and flat.size == sum(p.size for p in params)
    offset = 0
    for p in params:
        assert np.shares_memory(p._data, flat)
        np.testing.assert_array_equal(flat[offset : offset + p.size], before[p.name].ravel())
        offset += p.size
    for p in net.get_parameters():
        np.testing.assert_array_equal(p.asnumpy(), before[p.name])
    # untrainable parameters (moving statistics) are left where they were
    assert not any(np.shares_memory(p._data, flat) for p in net.untrainable_params())


def test_training_matches_unflattened_and_uses_the_buffer():
    plain_losses, _ = _train(plain := _net())
    flat_net = _net()
    flat_net.flatten_weights()
    (flat,) = flat_net._flat_weights
    losses, opt = _train(flat_net)
    np.testing.assert_allclose(losses, plain_losses, rtol=1e-6)
    for a, b in zip(plain.get_parameters(), flat_net.get_parameters()):
        np.testing.assert_allclose(b.asnumpy(), a.asnumpy(), rtol=1e-6, atol=1e-7)
    assert losses[-1] < losses[0]
    assert opt._banks[0].flat is flat  # the optimizer adopted the cell's buffer, no copy
    assert all(np.shares_memory(p._data, flat) for p in flat_net.trainable_params())


def test_fusion_size_chunks_and_mixed_dtypes():
    net = _net()
    net[0].weight.set_data(Tensor(net[0].weight.asnumpy().astype(np.float64)))
    net.flatten_weights(fusion_size=40)  # 10 float32 values per chunk at most
    sizes = [b.nbytes for b in net._flat_weights]
    assert {str(b.dtype) for b in net._flat_weights} == {"float32", "float64"}
    big = [p for p in net.trainable_params() if p._data.nbytes > 40]
    assert all(s <= 40 for s in sizes if s not in {p._data.nbytes for p in big})
    assert sum(b.size for b in net._flat_weights) == sum(p.size for p in net.trainable_params())


@pytest.mark.parametrize("bad", [-1, 1.5, "0", True])
def test_bad_fusion_size(bad):
    with pytest.raises(ValueError, match="fusion_size"):
        _net().flatten_weights(fusion_size=bad)
