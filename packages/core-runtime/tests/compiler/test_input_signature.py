"""``Tensor(shape=[None, 3], dtype=...)`` placeholders as ``jit`` input signatures and
``Cell.set_inputs``: calls are checked against them, free sizes recompile without a budget
warning, and a placeholder used as a value says what it is."""

import numpy as np
import pytest

from sporeling.core import GRAPH_MODE, PYNATIVE_MODE, Tensor, nn, ops, set_context
from sporeling.core import dtype as mstype
from sporeling.core.compiler import jit


def test_placeholder_tensor_has_a_free_shape_and_no_data():
    p = Tensor(shape=[None, 3], dtype=mstype.float32)
    assert p.shape == (-1, 3) and p.dtype == mstype.float32
    assert repr(p) == "Tensor(shape=[-1, 3], dtype=Float32)"
    with pytest.raises(TypeError, match="placeholder without data"):
        p.asnumpy()
    with pytest.raises(ValueError, match="sizes >= 0, -1 or None"):
        Tensor(shape=[None, -3], dtype=mstype.float32)


def test_jit_checks_calls_against_the_signature(monkeypatch):
    monkeypatch.setenv("SPORELING_RECOMPILE_BUDGET", "1")
    sig = (Tensor(shape=[None, 3], dtype=mstype.float32),)
    f = jit(lambda x: ops.reduce_sum(x * 2, 1), input_signature=sig)
    for n in (1, 2, 5, 7):  # free sizes: no recompile-budget warning (warnings are errors)
        x = np.arange(3 * n, dtype=np.float32).reshape(n, 3)
        np.testing.assert_allclose(f(Tensor(x)).asnumpy(), (x * 2).sum(1))
    with pytest.raises(ValueError, match=r"argument 0 has size 4 on axis 1 .*expected 3"):
        f(Tensor(np.zeros((2, 4), np.float32)))
    with pytest.raises(ValueError, match="rank 1"):
        f(Tensor(np.zeros(3, np.float32)))
    with pytest.raises(ValueError, match="dtype float64, expected float32"):
        f(Tensor(np.zeros((2, 3))))
    with pytest.raises(TypeError, match="declares 1 tensors, got 2"):
        f(Tensor(np.zeros((2, 3), np.float32)), 1)


def test_without_a_signature_the_same_sizes_warn(monkeypatch):
    monkeypatch.setenv("SPORELING_RECOMPILE_BUDGET", "1")
    f = jit(lambda x: ops.reduce_sum(x * 2, 1))
    f(Tensor(np.ones((1, 3), np.float32)))
    with pytest.warns(RuntimeWarning, match="recompile budget"):
        f(Tensor(np.ones((2, 3), np.float32)))


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(3, 2)

    def construct(self, x):
        return self.dense(x)


def test_cell_set_inputs_in_graph_mode():
    net = Net()
    net.set_inputs(Tensor(shape=[None, 3], dtype=mstype.float32))
    assert net.get_inputs()[0].shape == (-1, 3)
    set_context(mode=GRAPH_MODE)
    try:
        for n in (2, 4):
            x = Tensor(np.ones((n, 3), np.float32))
            assert net(x).shape == (n, 2)
        with pytest.raises(ValueError, match="size 5 on axis 1"):
            net(Tensor(np.ones((2, 5), np.float32)))
    finally:
        set_context(mode=PYNATIVE_MODE)
    with pytest.raises(TypeError, match="input 0 expected a Tensor"):
        net.set_inputs([None, 3])


# ---- one graph for every free size (shape-polymorphic graphs, compiler/poly.py) ----------

SIG = (Tensor(shape=[None, 3], dtype=mstype.float32), Tensor(shape=[3, 4], dtype=mstype.float32))
RNG = np.random.default_rng(0)
W = Tensor(RNG.standard_normal((3, 4)).astype(np.float32))


def _batchy(x, w):
    # shapes that depend on the batch: a flattening reshape, a reshape naming x.shape[0],
    # a mean over the batch (its element count), a broadcast, a concat
    h = ops.reshape(ops.matmul(x, w), (-1,))
    h = ops.reshape(h, (x.shape[0], 4))
    h = ops.concat((h, ops.broadcast_to(ops.mean(h, 0, keep_dims=True), h.shape)), 1)
    return ops.relu(h) * 2.0, ops.mean(h, 0)


def test_one_graph_serves_every_batch_size():
    from sporeling.core.compiler import compile_stats

    f = jit(_batchy, input_signature=SIG)
    before = compile_stats()["compiles"]
    for n in (3, 5, 2, 17, 5):
        x = Tensor(RNG.standard_normal((n, 3)).astype(np.float32))
        got, want = f(x, W), _batchy(x, W)
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape
            np.testing.assert_allclose(g.asnumpy(), w.asnumpy(), rtol=1e-5, atol=1e-6)
    assert f.compile_count == 1 and compile_stats()["compiles"] - before == 1
    assert len(f._cache) == 0  # no per-size graph was compiled


def test_polymorphic_graph_gradients_match_eager():
    f = jit(_batchy, input_signature=SIG)

    def loss(fn):
        return lambda x, w: ops.reduce_sum(fn(x, w)[0]) + ops.reduce_sum(fn(x, w)[1] ** 2)

    for n in (4, 6):
        x = Tensor(RNG.standard_normal((n, 3)).astype(np.float32))
        got = ops.grad(loss(f), grad_position=(0, 1))(x, W)
        want = ops.grad(loss(_batchy), grad_position=(0, 1))(x, W)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g.asnumpy(), w.asnumpy(), rtol=1e-5, atol=1e-6)
    assert f.compile_count == 1


def test_sizes_below_two_and_mismatched_batches_compile_per_size():
    f = jit(lambda x, y: x + y, input_signature=(SIG[0], SIG[0]))
    a, b = Tensor(np.ones((4, 3), np.float32)), Tensor(np.ones((4, 3), np.float32))
    assert f(a, b).shape == (4, 3) and f.compile_count == 1  # one symbol: both batches
    one = Tensor(np.ones((1, 3), np.float32))
    assert f(one, b).shape == (4, 3)  # a size-1 axis broadcasts: its own graph
    assert f.compile_count == 2 and len(f._cache) == 1


def test_a_function_whose_traces_differ_compiles_per_size():
    def data_dependent(x):  # a Python branch on a shape: not one graph
        return x * 2 if x.shape[0] % 2 else x * 3

    f = jit(data_dependent, input_signature=(SIG[0],))
    for n in (2, 3, 4):
        x = Tensor(np.ones((n, 3), np.float32))
        np.testing.assert_allclose(f(x).asnumpy(), data_dependent(x).asnumpy())
    assert len(f._cache) == 3


def test_cell_set_inputs_compiles_once_for_all_batch_sizes():
    net = Net()
    net.set_inputs(Tensor(shape=[None, 3], dtype=mstype.float32))
    set_context(mode=GRAPH_MODE)
    from sporeling.core.compiler import compile_stats

    try:
        before = compile_stats()["compiles"]
        for n in (2, 4, 9):
            x = Tensor(RNG.standard_normal((n, 3)).astype(np.float32))
            out = net(x)
            set_context(mode=PYNATIVE_MODE)
            np.testing.assert_allclose(out.asnumpy(), net(x).asnumpy(), rtol=1e-6)
            set_context(mode=GRAPH_MODE)
        assert compile_stats()["compiles"] - before == 1
    finally:
        set_context(mode=PYNATIVE_MODE)


def test_a_whole_training_step_is_one_graph_for_every_batch_size():
    from sporeling.core import float32, int32, value_and_grad

    def make():
        w = Tensor(np.arange(6, dtype=np.float32).reshape(2, 3) / 6)
        net = nn.Dense(3, 2, weight_init=w, bias_init="zeros")
        opt = nn.SGD(net.trainable_params(), learning_rate=0.1)
        loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
        grad_fn = value_and_grad(lambda x, y: loss_fn(net(x), y), None, opt.parameters)

        def step(x, y):
            loss, grads = grad_fn(x, y)
            opt(grads)
            return loss

        return net, step

    eager_net, eager_step = make()
    net, step = make()
    sig = (Tensor(shape=[None, 3], dtype=float32), Tensor(shape=[None], dtype=int32))
    compiled = jit(step, input_signature=sig)
    for n in (4, 6, 3, 4):
        x = Tensor(RNG.random((n, 3)).astype(np.float32))
        y = Tensor(RNG.integers(0, 2, n).astype(np.int32))
        np.testing.assert_allclose(compiled(x, y).asnumpy(), eager_step(x, y).asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(net.weight.asnumpy(), eager_net.weight.asnumpy(), rtol=1e-5)
    assert compiled.compile_count == 1 and len(compiled._cache) == 0
