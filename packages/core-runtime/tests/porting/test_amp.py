"""Mixed precision: ``Cell.to_float`` computes in float16/bfloat16 with float32 master
weights; ``amp_level`` O1/O2/O3 and ``auto_mixed_precision`` as MindSpore defines them;
``Model(amp_level="O2")`` trains with a dynamic loss scale."""

import numpy as np
import pytest

from sporeling.core import Model, Tensor, bfloat16, float16, float32, grad, nn, ops, set_seed
from sporeling.core.train.amp import auto_mixed_precision, build_train_network
from sporeling.core.train.dataset import ArrayDataset

RNG = np.random.default_rng(0)
X = RNG.standard_normal((8, 4)).astype(np.float32)


def test_to_float_computes_in_float16_with_float32_master_weights():
    set_seed(1)
    dense = nn.Dense(4, 3)
    w, b = dense.weight.asnumpy(), dense.bias.asnumpy()
    dense.to_float(float16)
    out = dense(Tensor(X))
    assert out.dtype == float16
    assert dense.weight.dtype == float32 and dense.bias.dtype == float32
    ref = X.astype(np.float16) @ w.astype(np.float16).T + b.astype(np.float16)
    np.testing.assert_allclose(out.asnumpy().astype(np.float64), ref, rtol=2e-3, atol=2e-3)
    gw = grad(lambda: ops.reduce_sum(ops.cast(dense(Tensor(X)), float32)), None,
              [dense.weight])()[0]  # fmt: skip
    assert gw.dtype == float32
    np.testing.assert_allclose(gw.asnumpy(), np.tile(X.sum(0), (3, 1)), rtol=2e-3, atol=2e-2)


@pytest.mark.skipif(bfloat16 is None, reason="bfloat16 needs the bf16 extra (ml_dtypes)")
def test_to_float_bfloat16():
    dense = nn.Dense(4, 2).to_float(bfloat16)
    assert dense(Tensor(X)).dtype == bfloat16


def test_to_float_bad_type():
    with pytest.raises(TypeError, match="dst_type"):
        nn.Dense(4, 2).to_float("int32")
    with pytest.raises(TypeError, match="dst_type"):
        nn.Dense(4, 2).to_float(None)  # bfloat16 without ml_dtypes: not a silent float64


class ConvBN(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3, pad_mode="same")
        self.bn = nn.BatchNorm2d(2)
        self.relu = nn.ReLU()
        self.flat = nn.Flatten()
        self.fc = nn.Dense(2 * 4 * 4, 1)

    def construct(self, x):
        return self.fc(self.flat(self.relu(self.bn(self.conv(x)))))


def _dtypes(net, x):
    seen = {}
    for name, cell in net.cells_and_names():
        if name:
            cell.register_forward_hook(lambda c, i, o, n=name: seen.__setitem__(n, o.dtype))
    net(x)
    return seen


def test_levels_mark_the_cells_mindspore_marks():
    x = Tensor(RNG.standard_normal((2, 1, 4, 4)).astype(np.float32))
    o1 = _dtypes(auto_mixed_precision(ConvBN(), "O1"), x)
    assert o1["conv"] == float32 and o1["bn"] == float32  # O1: float16 inside, float32 out
    net1 = auto_mixed_precision(ConvBN(), "O1")
    assert net1.conv._amp_dtype == float16 and net1.fc._amp_dtype == float16
    assert net1.bn.__dict__.get("_amp_dtype") is None
    o2 = _dtypes(auto_mixed_precision(ConvBN(), "O2"), x)
    assert o2["conv"] == float16 and o2["bn"] == float32 and o2["relu"] == float16
    o3 = _dtypes(auto_mixed_precision(ConvBN(), "O3").set_train(False), x)
    assert o3["bn"] == float16 and o3["fc"] == float16
    assert _dtypes(auto_mixed_precision(ConvBN(), "auto"), x)["conv"] == float32
    with pytest.raises(ValueError, match="amp_level"):
        auto_mixed_precision(ConvBN(), "O4")


def test_build_train_network_per_level():
    def make(level):
        net = nn.Dense(4, 1)
        opt = nn.SGD(net.trainable_params(), 0.01)
        return build_train_network(net, opt, nn.MSELoss(), level)

    assert type(make("O2")).__name__ == "TrainOneStepWithLossScaleCell"
    assert type(make("O3")).__name__ == "TrainOneStepCell"
    assert type(make("O0")).__name__ == "TrainOneStepCell"


def test_model_o2_trains_with_dynamic_loss_scale():
    set_seed(3)
    w_true = RNG.standard_normal((4, 1)).astype(np.float32)
    x = RNG.standard_normal((64, 4)).astype(np.float32)
    y = x @ w_true
    net = nn.SequentialCell(nn.Dense(4, 16), nn.ReLU(), nn.Dense(16, 1))
    opt = nn.Momentum(net.trainable_params(), 0.05, 0.9)
    model = Model(net, nn.MSELoss(), opt, amp_level="O2")
    assert type(model.train_network).__name__ == "TrainOneStepWithLossScaleCell"
    before = float(nn.MSELoss()(ops.cast(net(Tensor(x)), float32), Tensor(y)).asnumpy())
    model.train(15, ArrayDataset(x, y, batch_size=16), dataset_sink_mode=False)
    after = float(nn.MSELoss()(ops.cast(net(Tensor(x)), float32), Tensor(y)).asnumpy())
    assert all(p.dtype == float32 for p in net.trainable_params())
    assert after < 0.3 * before, (before, after)
