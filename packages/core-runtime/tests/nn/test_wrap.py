"""Training wrappers: WithLossCell, WithEvalCell, WithGradCell, TrainOneStepCell, clipping
and loss scaling, against hand-computed NumPy steps."""

import numpy as np
import pytest

from sporeling.core import Parameter, Tensor, bool_, float16, float32, nn
from sporeling_testing import check_grad


class Linear(nn.Cell):
    """``x @ w + b`` with NumPy-initialised parameters (dtype of ``w0``)."""

    def __init__(self, w0, b0):
        super().__init__()
        self.w = Parameter(Tensor(w0), name="w")
        self.b = Parameter(Tensor(b0), name="b")

    def construct(self, x):
        return x @ self.w + self.b


class RecordingSGD(nn.Cell):
    """Stand-in optimizer with nn.Optimizer's interface: ``parameters`` and
    ``optimizer(grads)`` updating the parameters in place."""

    def __init__(self, params, learning_rate=0.1):
        super().__init__()
        self.parameters = tuple(params)
        self.learning_rate = learning_rate
        self.received = []

    def construct(self, grads):
        self.received.append([g.asnumpy().copy() for g in grads])
        for p, g in zip(self.parameters, grads):
            p._data = (p.asnumpy() - self.learning_rate * g.asnumpy()).astype(p.asnumpy().dtype)
        return True


def _problem(dtype=np.float64, n=8, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 3)).astype(dtype)
    w_true = np.array([[1.5], [-2.0], [0.5]])
    y = (x @ w_true + 0.3).astype(dtype)
    w0 = (rng.standard_normal((3, 1)) * 0.1).astype(dtype)
    b0 = np.zeros(1, dtype)
    return x, y, w0, b0


def _mse_grads(x, y, w, b):
    x, y, w, b = (np.asarray(a, np.float64) for a in (x, y, w, b))
    r = x @ w + b - y
    loss = np.mean(r**2)
    gw = 2 * x.T @ r / r.size
    gb = 2 * r.sum(0) / r.size
    return loss, gw, gb


def _train_cell(dtype=np.float64, lr=0.1, sens=1.0, cls=None, **kw):
    x, y, w0, b0 = _problem(dtype)
    net = Linear(w0, b0)
    opt = RecordingSGD(net.trainable_params(), lr)
    cls = cls or nn.TrainOneStepCell
    train = cls(nn.WithLossCell(net, nn.MSELoss()), opt, sens, **kw)
    return train, net, opt, x, y, w0, b0


# ---- WithLossCell / WithEvalCell / WithGradCell -------------------------------------------


def test_with_loss_cell_forward_and_names():
    x, y, w0, b0 = _problem()
    net = Linear(w0, b0)
    wl = nn.WithLossCell(net, nn.MSELoss())
    loss, _, _ = _mse_grads(x, y, w0, b0)
    np.testing.assert_allclose(float(wl(Tensor(x), Tensor(y))), loss, rtol=1e-12)
    assert wl.backbone_network is net
    # no prefix: checkpoint names stay the backbone's, as in MindSpore
    assert list(wl.parameters_dict()) == ["w", "b"]
    with pytest.raises(TypeError, match="WithLossCell: argument 'backbone'"):
        nn.WithLossCell(lambda v: v, nn.MSELoss())


def test_with_eval_cell():
    x, y, w0, b0 = _problem(np.float16)
    net = Linear(w0, b0)
    loss, out, label = nn.WithEvalCell(net, nn.MSELoss())(Tensor(x), Tensor(y))
    assert out.dtype == float16 and loss.dtype == float16
    loss, out, label = nn.WithEvalCell(net, nn.MSELoss(), add_cast_fp32=True)(Tensor(x), Tensor(y))
    assert out.dtype == float32 and label.dtype == float32 and loss.dtype == float32
    ref = np.mean((x.astype(np.float32) @ w0.astype(np.float32) + b0 - y) ** 2)
    np.testing.assert_allclose(float(loss), ref, rtol=2e-3)
    with pytest.raises(TypeError, match="add_cast_fp32"):
        nn.WithEvalCell(net, nn.MSELoss(), add_cast_fp32=1)


def test_with_grad_cell():
    x, y, w0, b0 = _problem()
    net = Linear(w0, b0)
    _, gw, gb = _mse_grads(x, y, w0, b0)
    grads = nn.WithGradCell(net, nn.MSELoss())(Tensor(x), Tensor(y))
    np.testing.assert_allclose(grads[0].asnumpy(), gw, rtol=1e-12)
    np.testing.assert_allclose(grads[1].asnumpy(), gb, rtol=1e-12)
    grads = nn.WithGradCell(nn.WithLossCell(net, nn.MSELoss()), sens=3.0)(Tensor(x), Tensor(y))
    np.testing.assert_allclose(grads[0].asnumpy(), 3 * gw, rtol=1e-12)


def test_parameter_update():
    p = Parameter(Tensor(np.zeros(2, np.float32)), name="p")
    out = nn.ParameterUpdate(p)(Tensor([1.0, 2.0]))
    assert p.asnumpy().tolist() == [1.0, 2.0] and out.tolist() == [1.0, 2.0]


# ---- TrainOneStepCell ---------------------------------------------------------------------


def test_train_one_step_matches_hand_computed_sgd():
    train, net, opt, x, y, w0, b0 = _train_cell(lr=0.1)
    loss, gw, gb = _mse_grads(x, y, w0, b0)
    out = train(Tensor(x), Tensor(y))
    np.testing.assert_allclose(float(out), loss, rtol=1e-14)  # the loss before the update
    np.testing.assert_allclose(net.w.asnumpy(), w0 - 0.1 * gw, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(net.b.asnumpy(), b0 - 0.1 * gb, rtol=1e-14, atol=1e-15)
    assert train.weights is opt.parameters
    assert not out.requires_grad and out._node is None


def test_train_one_step_reduces_loss():
    train, net, opt, x, y, *_ = _train_cell(np.float32, lr=0.1)
    train.set_train()
    losses = [float(train(Tensor(x), Tensor(y))) for _ in range(400)]
    assert losses[-1] < 1e-4 * losses[0]
    np.testing.assert_allclose(net.w.asnumpy().ravel(), [1.5, -2.0, 0.5], atol=1e-2)
    assert all(b <= a + 1e-7 for a, b in zip(losses, losses[1:]))


def test_sens_scales_gradients():
    train, net, opt, x, y, w0, b0 = _train_cell(sens=2.5)
    _, gw, gb = _mse_grads(x, y, w0, b0)
    train(Tensor(x), Tensor(y))
    np.testing.assert_allclose(opt.received[0][0], 2.5 * gw, rtol=1e-14)
    np.testing.assert_allclose(net.b.asnumpy(), b0 - 0.1 * 2.5 * gb, rtol=1e-14)
    with pytest.raises(TypeError, match="TrainOneStepCell: argument 'sens'"):
        nn.TrainOneStepCell(net, opt, sens="2")


def test_grad_reducer_hook():
    train, net, opt, x, y, w0, b0 = _train_cell()
    seen = []
    train.grad_reducer = lambda grads: seen.append(len(grads)) or tuple(g * 0 for g in grads)
    train(Tensor(x), Tensor(y))
    assert seen == [2]
    np.testing.assert_array_equal(net.w.asnumpy(), w0)


def test_train_one_step_errors():
    x, y, w0, b0 = _problem()
    net = Linear(w0, b0)
    with pytest.raises(TypeError, match="TrainOneStepCell: argument 'optimizer'"):
        nn.TrainOneStepCell(net, object())
    with pytest.raises(TypeError, match="TrainOneStepCell: argument 'network'"):
        nn.TrainOneStepCell(lambda v: v, RecordingSGD([]))


def test_with_real_sgd():
    x, y, w0, b0 = _problem(np.float32)
    net = Linear(w0, b0)
    opt = nn.SGD(net.trainable_params(), learning_rate=0.1)
    train = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), opt)
    _, gw, gb = _mse_grads(x, y, w0, b0)
    train(Tensor(x), Tensor(y))
    np.testing.assert_allclose(net.w.asnumpy(), w0 - 0.1 * gw, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(net.b.asnumpy(), b0 - 0.1 * gb, rtol=1e-5, atol=1e-6)
    losses = [float(train(Tensor(x), Tensor(y))) for _ in range(50)]
    assert losses[-1] < losses[0]


# ---- clipping -----------------------------------------------------------------------------


def test_clip_by_norm_cell():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 4))
    out = nn.ClipByNorm()(Tensor(x), 0.5).asnumpy()
    np.testing.assert_allclose(out, x * 0.5 / np.linalg.norm(x), rtol=1e-12)
    out = nn.ClipByNorm(axis=1)(Tensor(x), Tensor(1.0)).asnumpy()
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    np.testing.assert_allclose(out, x / np.maximum(norms, 1.0), rtol=1e-12)
    small = x * 1e-3
    np.testing.assert_allclose(nn.ClipByNorm()(Tensor(small), 1.0).asnumpy(), small)
    zeros = nn.ClipByNorm()(Tensor(np.zeros(3, np.float32)), 1.0)
    assert zeros.tolist() == [0.0, 0.0, 0.0]
    assert nn.ClipByNorm()(Tensor(x.astype(np.float16)), 1.0).dtype == float16
    check_grad(lambda a: nn.ClipByNorm(axis=0)(a, 1.0), [x])
    with pytest.raises(ValueError, match="ClipByNorm: argument 'clip_norm'"):
        nn.ClipByNorm()(Tensor(x), -1.0)
    with pytest.raises(TypeError, match="ClipByNorm: argument 'axis'"):
        nn.ClipByNorm(axis=1.5)


@pytest.mark.parametrize("clip_type", ["global_norm", "norm", "value"])
def test_train_step_with_clipping(clip_type):
    clip = 0.05
    train, net, opt, x, y, w0, b0 = _train_cell(
        cls=nn.TrainOneStepWithClipCell, clip_norm=clip, clip_type=clip_type
    )
    _, gw, gb = _mse_grads(x, y, w0, b0)
    assert np.sqrt((gw**2).sum() + (gb**2).sum()) > clip  # clipping is active
    train(Tensor(x), Tensor(y))
    got_w, got_b = opt.received[0]
    if clip_type == "global_norm":
        assert np.sqrt((got_w**2).sum() + (got_b**2).sum()) <= clip * (1 + 1e-12)
        scale = clip / np.sqrt((gw**2).sum() + (gb**2).sum())
        np.testing.assert_allclose(got_w, gw * scale, rtol=1e-12)
    elif clip_type == "norm":
        for got, g in ((got_w, gw), (got_b, gb)):
            assert np.linalg.norm(got) <= clip * (1 + 1e-12)
            np.testing.assert_allclose(got, g * clip / max(np.linalg.norm(g), clip), rtol=1e-12)
    else:
        np.testing.assert_allclose(got_w, np.clip(gw, -clip, clip))
    np.testing.assert_allclose(net.w.asnumpy(), w0 - 0.1 * got_w, rtol=1e-14)
    with pytest.raises(ValueError, match="clip_type"):
        nn.TrainOneStepWithClipCell(train.network, opt, clip_type="l3")


# ---- loss scaling -------------------------------------------------------------------------


def test_fixed_scale_tensor_unscales_gradients():
    train, net, opt, x, y, w0, b0 = _train_cell(
        cls=lambda n, o, s: nn.TrainOneStepWithLossScaleCell(n, o, Tensor([1024.0]))
    )
    _, gw, gb = _mse_grads(x, y, w0, b0)
    loss, overflow, scale = train(Tensor(x), Tensor(y))
    assert overflow.dtype == bool_ and not bool(overflow)
    assert scale.tolist() == [1024.0]
    np.testing.assert_allclose(float(loss), _mse_grads(x, y, w0, b0)[0], rtol=1e-14)
    np.testing.assert_allclose(opt.received[0][0], gw, rtol=1e-12)
    np.testing.assert_allclose(net.b.asnumpy(), b0 - 0.1 * gb, rtol=1e-12)
    train.set_sense_scale(Tensor([8.0]))
    assert train.scale_sense.asnumpy().tolist() == [8.0]
    assert "scale_sense" in train.parameters_dict()


def test_overflow_skips_update_and_dynamic_scale_adjusts():
    x, y, w0, b0 = _problem(np.float32)
    net = Linear(w0, b0)
    opt = RecordingSGD(net.trainable_params(), 0.1)
    manager = nn.DynamicLossScaleUpdateCell(loss_scale_value=1024, scale_factor=2, scale_window=3)
    train = nn.TrainOneStepWithLossScaleCell(nn.WithLossCell(net, nn.MSELoss()), opt, manager)
    bad = x.copy()
    bad[0, 0] = np.inf
    w_before = net.w.asnumpy().copy()
    loss, overflow, scale = train(Tensor(bad), Tensor(y))
    assert bool(overflow) and float(scale[0] if scale.ndim else scale) == 1024.0
    np.testing.assert_array_equal(net.w.asnumpy(), w_before)  # update skipped
    assert opt.received == []
    assert float(train.scale_sense) == 512.0  # halved
    used = []
    for _ in range(4):
        _, overflow, scale = train(Tensor(x), Tensor(y))
        assert not bool(overflow)
        used.append(float(scale))
    # grows after scale_window (3) steps without overflow
    assert used == [512.0, 512.0, 512.0, 1024.0]
    assert len(opt.received) == 4
    names = train.parameters_dict()
    assert {"current_iterator_step", "last_overflow_iterator_step", "scale_sense"} <= set(names)


def test_dynamic_scale_floor_and_fixed_update_cell():
    cell = nn.DynamicLossScaleUpdateCell(2.0, 4, 10)
    scale = Parameter(Tensor(2.0), name="s")
    assert bool(cell(scale, Tensor(True)))
    assert float(scale) == 1.0  # not below 1
    fixed = nn.FixedLossScaleUpdateCell(64.0)
    assert fixed.get_loss_scale() == 64.0 and not bool(fixed(scale, Tensor(False)))
    with pytest.raises(ValueError, match="scale_factor"):
        nn.DynamicLossScaleUpdateCell(8.0, 1, 10)
    with pytest.raises(TypeError, match="scale_window"):
        nn.DynamicLossScaleUpdateCell(8.0, 2, 1.5)


def test_fixed_manager_cell_keeps_scale_on_overflow():
    x, y, w0, b0 = _problem(np.float32)
    net = Linear(w0, b0)
    opt = RecordingSGD(net.trainable_params(), 0.1)
    cell = nn.FixedLossScaleManager(256.0).get_update_cell()
    train = nn.TrainOneStepWithLossScaleCell(nn.WithLossCell(net, nn.MSELoss()), opt, cell)
    bad = x.copy()
    bad[1, 2] = np.nan
    _, overflow, _ = train(Tensor(bad), Tensor(y))
    assert bool(overflow) and float(train.scale_sense) == 256.0 and opt.received == []


def test_loss_scale_errors():
    train, net, opt, x, y, *_ = _train_cell()
    with pytest.raises(ValueError, match="scale_sense"):
        nn.TrainOneStepWithLossScaleCell(train.network, opt, Tensor([1.0, 2.0]))
    with pytest.raises(TypeError, match="scale_sense"):
        nn.TrainOneStepWithLossScaleCell(train.network, opt, 1024.0)
    ls = nn.TrainOneStepWithLossScaleCell(train.network, opt, Tensor(4.0))
    with pytest.raises(TypeError, match="sens"):
        ls.set_sense_scale(2.0)


def test_loss_scale_managers():
    m = nn.DynamicLossScaleManager(init_loss_scale=16, scale_factor=2, scale_window=2)
    assert m.get_loss_scale() == 16 and m.get_drop_overflow_update()
    seq = []
    for over in [True, False, False, False, False, True, True]:
        m.update_loss_scale(over)
        seq.append(m.get_loss_scale())
    assert seq == [8, 8, 16, 16, 32, 16, 8]
    cell = m.get_update_cell()
    assert isinstance(cell, nn.DynamicLossScaleUpdateCell) and cell.get_loss_scale() == 8
    assert nn.FixedLossScaleManager(128, drop_overflow_update=False).get_update_cell() is None
    fixed = nn.FixedLossScaleManager(128)
    assert isinstance(fixed.get_update_cell(), nn.FixedLossScaleUpdateCell)
    assert fixed.get_loss_scale() == 128.0
    with pytest.raises(ValueError, match="FixedLossScaleManager: argument 'loss_scale'"):
        nn.FixedLossScaleManager(0.5)
    with pytest.raises(ValueError, match="init_loss_scale"):
        nn.DynamicLossScaleManager(0.1)


def test_float16_network_trains_with_dynamic_loss_scale():
    x, y, w0, b0 = _problem(np.float16, n=16)
    net = Linear(w0, b0)
    assert net.w.dtype == float16
    opt = RecordingSGD(net.trainable_params(), 0.05)
    # 2**17 overflows float16 (max 65504): the first step must overflow and halve the scale
    manager = nn.DynamicLossScaleUpdateCell(2.0**17, 2, 20)
    train = nn.TrainOneStepWithLossScaleCell(nn.WithLossCell(net, nn.MSELoss()), opt, manager)
    results = [train(Tensor(x), Tensor(y)) for _ in range(120)]
    overflows = [bool(o) for _, o, _ in results]
    scales = [float(s) for _, _, s in results]
    # loss * scale overflows float16 until the scale is 2**14 (loss ~4): three skipped steps
    assert overflows[:4] == [True, True, True, False]
    assert scales[:4] == [2.0**17, 2.0**16, 2.0**15, 2.0**14]
    # later the scale grows every 20 good steps and halves again when it overflows
    for i in range(1, len(results)):
        if overflows[i - 1]:
            assert scales[i] == scales[i - 1] / 2
    assert sum(overflows) < 10 and len(opt.received) == 120 - sum(overflows)
    losses = [float(loss) for loss, _, _ in results]
    assert losses[-1] < 0.01 * losses[0]
    assert net.w.dtype == float16
    assert all(np.isfinite(g).all() for step in opt.received for g in step)
    np.testing.assert_allclose(net.w.asnumpy().ravel(), [1.5, -2.0, 0.5], atol=0.05)
