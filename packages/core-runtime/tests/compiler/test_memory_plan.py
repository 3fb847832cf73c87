"""The static memory plan: large intermediates share arena buffers by lifetime, never a graph
output or anything an output may view, and the arena is reused across calls and threads."""

import threading

import numpy as np
import pytest

from sporeling.core import Tensor, nn, ops
from sporeling.core.compiler import jit, memory


def t(*shape, seed=0):
    return Tensor(np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32))


def exe_of(jf):
    return next(iter(jf._cache.values())).exe


def chain(x, w):
    for _ in range(6):
        x = ops.tanh(ops.matmul(x, w))
    return ops.reduce_sum(x * x)


def test_values_with_disjoint_lifetimes_share_buffers():
    x, w = t(64, 64), t(64, 64, seed=1)
    jf = jit(chain)
    jf(x, w)
    plan = exe_of(jf).plan
    # 6 products (each tanh runs in place in its product's buffer), each dead once the next
    # product has read it: two buffers take turns
    assert plan.planned_values == 6
    assert len(plan.buffers) == 2


def test_repeated_calls_match_eager_and_keep_earlier_results():
    x, w = t(64, 64), t(64, 64, seed=1)
    jf = jit(lambda x, w: ops.matmul(ops.tanh(ops.matmul(x, w)), w) * 2.0)
    first = jf(x, w)
    kept = first.asnumpy().copy()
    x2 = t(64, 64, seed=5)
    second = jf(x2, w)
    np.testing.assert_array_equal(first.asnumpy(), kept)  # the arena never holds an output
    want = np.tanh(x2.asnumpy().astype(np.float64) @ w.asnumpy()) @ w.asnumpy() * 2
    np.testing.assert_allclose(second.asnumpy(), want, rtol=1e-5, atol=1e-5)


def test_values_an_output_may_view_are_not_planned():
    x, w = t(32, 32), t(32, 32, seed=1)

    def f(x, w):
        y = ops.matmul(x, w)  # the output is a reshape (a view) of y
        return ops.reshape(y, (-1,)), ops.exp(ops.matmul(y, w))

    jf = jit(f)
    a, _ = jf(x, w)
    kept = a.asnumpy().copy()
    jf(t(32, 32, seed=3), w)
    np.testing.assert_array_equal(a.asnumpy(), kept)
    exe = exe_of(jf)
    y_eqn = next(i for i, e in enumerate(exe.graph.eqns) if e.prim.name == "matmul")
    assert exe.plan.by_eqn[y_eqn] is None


def test_a_kernel_never_writes_over_its_own_inputs():
    x, w = t(48, 48), t(48, 48, seed=1)
    jf = jit(chain)
    jf(x, w)
    exe = exe_of(jf)
    buffer_of = {}
    for e, outs in zip(exe.graph.eqns, exe.plan.by_eqn):
        for v in e.inputs:
            if v.id in buffer_of and outs is not None:
                assert buffer_of[v.id] not in outs
        for v, b in zip(e.outputs, outs or ()):
            if b is not None:
                buffer_of[v.id] = b


def test_threads_running_one_graph_get_their_own_arena():
    w = t(96, 96, seed=1)
    jf = jit(chain)
    xs = [t(96, 96, seed=s) for s in range(4)]
    want = [float(chain(x, w).asnumpy()) for x in xs]
    jf(xs[0], w)
    errors = []

    def work(k):
        for _ in range(10):
            got = float(jf(xs[k], w).asnumpy())
            if not np.isclose(got, want[k], rtol=1e-4):
                errors.append((k, got, want[k]))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors


@pytest.mark.parametrize("min_bytes", [0, memory.PLANNED_MIN_BYTES])
def test_training_steps_in_the_arena_match_eager(monkeypatch, min_bytes):
    monkeypatch.setattr(memory, "PLANNED_MIN_BYTES", min_bytes)

    def make():
        from sporeling.core import set_seed

        set_seed(3)
        net = nn.SequentialCell(
            nn.Dense(40, 256), nn.GELU(), nn.LayerNorm((256,)), nn.Dense(256, 10)
        )
        loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
        opt = nn.Adam(net.trainable_params(), learning_rate=1e-2)
        step = nn.TrainOneStepCell(nn.WithLossCell(net, loss), opt)
        step.set_train()
        return step

    rng = np.random.default_rng(0)
    x = Tensor(rng.standard_normal((128, 40)).astype(np.float32))
    y = Tensor(rng.integers(0, 10, 128).astype(np.int32))
    eager, graph = make(), jit(make())
    for _ in range(4):
        le, lg = eager(x, y), graph(x, y)
        np.testing.assert_allclose(lg.asnumpy(), le.asnumpy(), rtol=2e-4)
    assert exe_of(graph).plan.planned_values > 0
