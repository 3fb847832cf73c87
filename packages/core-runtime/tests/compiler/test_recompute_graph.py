"""``Cell.recompute()`` under ``jit`` / GRAPH_MODE: the compiled backward recomputes a marked
cell's values (``compiler/passes/remat.py``). Losses and gradients equal the graph without
recompute bit for bit (dropout masks are kept, not drawn again) and the eager ones; the
compiled step's peak memory goes down."""

import gc
import tracemalloc

import numpy as np
import pytest

from sporeling.core import (
    GRAPH_MODE,
    PYNATIVE_MODE,
    Tensor,
    grad,
    jit,
    nn,
    ops,
    set_context,
    set_seed,
    value_and_grad,
)


class MLP(nn.Cell):
    def __init__(self, width=16, hidden=32, norm="layer"):
        super().__init__()
        self.fc1 = nn.Dense(width, hidden, activation="gelu")
        self.fc2 = nn.Dense(hidden, width)
        self.norm = nn.LayerNorm((width,)) if norm == "layer" else nn.BatchNorm1d(width)

    def construct(self, x):
        return self.norm(x + self.fc2(self.fc1(x)))


class Attn(nn.Cell):
    """Attention with dropout on the probabilities and the projection, an inner MLP cell, a
    non-Tensor argument and a ``(out, (k, v))`` output."""

    def __init__(self, width=16, p=0.3):
        super().__init__()
        self.width = width
        self.qkv = nn.Dense(width, 3 * width)
        self.proj = nn.Dense(width, width)
        self.drop = nn.Dropout(p=p)
        self.mlp = MLP(width)

    def construct(self, x, scale, mask):
        h = self.qkv(x)
        w = self.width
        q, k, v = h[..., :w], h[..., w : 2 * w], h[..., 2 * w :]
        a = self.drop(ops.softmax(ops.matmul(q, k.swapaxes(-1, -2)) * scale + mask, axis=-1))
        h = x + self.drop(self.proj(ops.matmul(a, v)))
        return self.mlp(h), (k, v)


class Stack(nn.Cell):
    def __init__(self, blocks):
        super().__init__()
        self.blocks = nn.CellList(blocks)

    def construct(self, x, scale, mask):
        for b in self.blocks:
            x, _ = b(x, scale, mask)
        return x


def _x(shape, seed=0):
    return Tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


MASK = Tensor(np.triu(np.full((5, 5), -1e4, np.float32), 1))


def _stack(p=0.3):
    set_seed(3)
    net = Stack([Attn(p=p) for _ in range(3)])
    net.set_train(True)
    return net


def _run(net, compiled=True, seed=7):
    """Loss, input gradient and weight gradients of one step (dropout drawn from ``seed``)."""
    w = _x((2, 5, 16), 5)
    fn = value_and_grad(lambda x: (net(x, 0.25, MASK) * w).sum(), 0, net.trainable_params())
    fn = jit(fn) if compiled else fn
    set_seed(seed)
    loss, (gx, gw) = fn(_x((2, 5, 16)))
    return [loss.asnumpy(), gx.asnumpy(), *[g.asnumpy() for g in gw]], fn


def _graph(fn):
    return next(iter(fn._cache.values())).graph


def _copied(fn):
    (note,) = [n for n in _graph(fn).notes if n.startswith("remat")]
    return int(note.split()[-1])


def _equal(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)


def _close(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fusion", [False, True])
def test_dropout_stack_bit_equal_and_recomputed(fusion):
    set_context(enable_graph_kernel=fusion)
    plain, f0 = _run(_stack())
    net = _stack()
    for b in net.blocks:
        b.recompute()
    again, f1 = _run(net)
    _equal(plain, again)
    assert _copied(f1) > 20 and not any(n.startswith("remat") for n in _graph(f0).notes)
    # the dropout masks are kept, never drawn again in the backward
    draws = [sum(e.prim.kind == "random" for e in _graph(f).eqns) for f in (f0, f1)]
    assert draws[0] == draws[1] == 6
    # another seed gives other masks: the equality above is not luck
    assert not np.allclose(_run(net, seed=8)[0][0], plain[0])


def test_graph_equals_eager_with_and_without_recompute():
    eager, _ = _run(_stack(), compiled=False)
    net = _stack()
    net.recompute()  # nested: the stack and every cell inside
    _close(_run(net, compiled=False)[0], eager)
    _close(_run(net)[0], eager)


def test_only_an_inner_cell_recomputed():
    plain, _ = _run(_stack())
    net = _stack()
    net.blocks[1].mlp.recompute()
    again, fn = _run(net)
    _equal(plain, again)
    assert _copied(fn) > 0


class TiedHead(nn.Cell):
    """Reads another cell's Parameter (a tied embedding table) and a tensor attribute that
    needs gradients, neither of them its own Parameter."""

    def __init__(self, emb, offset):
        super().__init__()
        self.emb = [emb]  # a list: not registered as a child cell
        self.offset = offset
        self.fc = nn.Dense(8, 8, activation="tanh")

    def construct(self, h):
        h = self.fc(h) + self.offset
        return ops.matmul(h, self.emb[0].embedding_table.swapaxes(0, 1))


def test_tied_embedding_weight_read_across_cells():
    def run(recompute):
        set_seed(2)
        emb = nn.Embedding(10, 8)
        offset = _x((8,), 3)
        offset.requires_grad = True
        head = TiedHead(emb, offset)
        if recompute:
            head.recompute()
        ids = Tensor(np.array([[1, 4, 7], [2, 2, 9]], np.int32))
        w = _x((2, 3, 10), 6)
        weights = [emb.embedding_table, *head.trainable_params(), offset]
        fn = value_and_grad(lambda x: (head(emb(ids) + x) * w).sum(), 0, weights)
        out = []
        for f in (jit(fn), fn):
            loss, (gx, gw) = f(_x((2, 3, 8), 7))
            out.append([loss.asnumpy(), gx.asnumpy(), *[g.asnumpy() for g in gw]])
        return out

    (graph0, eager0), (graph1, eager1) = run(False), run(True)
    _equal(graph0, graph1)
    _close(graph1, eager1)
    _close(graph1, eager0)
    assert np.abs(graph1[2]).sum() > 0  # the table's gradient reached it from both reads


@pytest.fixture
def graph_mode():
    set_context(mode=GRAPH_MODE)
    yield
    set_context(mode=PYNATIVE_MODE)


def _train(recompute, norm, steps=3):
    """Parameters (and BatchNorm statistics) after a few GRAPH_MODE TrainOneStepCell steps."""
    set_seed(11)
    net = nn.SequentialCell([MLP(norm=norm), MLP(norm=norm), nn.Dense(16, 3)])
    if recompute:
        net[0].recompute()
        net[1].recompute()
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    step = nn.TrainOneStepCell(nn.WithLossCell(net, loss), nn.Adam(net.trainable_params(), 1e-2))
    step.set_train(True)
    label = Tensor((np.arange(8) % 3).astype(np.int32))
    losses = [float(step(_x((8, 16), i), label).asnumpy()) for i in range(steps)]
    return losses, [p.asnumpy().copy() for p in net.get_parameters()]


@pytest.mark.parametrize("norm", ["layer", "batch"])
def test_train_one_step_in_graph_mode_equal(graph_mode, norm):
    """Batch norm updates its moving statistics (effects) inside the recomputed cells: they
    run once per step, as without recompute."""
    l0, p0 = _train(False, norm)
    l1, p1 = _train(True, norm)
    assert l0 == l1
    _equal(p0, p1)
    if norm == "batch":
        # the Dense bias before a batch norm has a zero gradient up to rounding, which Adam
        # scales to full steps: graph and eager differ there with or without recompute
        return
    set_context(mode=PYNATIVE_MODE)
    l2, p2 = _train(True, norm)
    np.testing.assert_allclose(l2, l0, rtol=1e-5)
    _close(p2, p0)


def test_no_copies_without_a_backward():
    net = _stack(p=0.0)
    ref = jit(lambda x: net(x, 0.25, MASK))
    y0 = ref(_x((2, 5, 16))).asnumpy()
    net.recompute()
    fn = jit(lambda x: net(x, 0.25, MASK))
    np.testing.assert_array_equal(fn(_x((2, 5, 16))).asnumpy(), y0)
    assert _copied(fn) == 0


def test_second_order_keeps_values_and_stays_correct():
    """Gradients recorded for a second order are not a plain backward sweep: nothing is
    copied there, and the result is the one without recompute."""

    def run(recompute):
        set_seed(4)
        net = MLP()
        if recompute:
            net.recompute()
        inner = grad(lambda x: net(x).sum(), 0)
        return jit(grad(lambda x: (inner(x) ** 2).sum(), 0))(_x((4, 16))).asnumpy()

    np.testing.assert_allclose(run(True), run(False), rtol=1e-5, atol=1e-6)


def _peak(recompute, depth=12):
    """tracemalloc's peak over one compiled forward+backward of ``depth`` MLP blocks (64 ->
    256 -> 64, batch 256), the memory plan's arena allocated inside it."""
    set_seed(0)
    net = nn.SequentialCell([MLP(64, 256) for _ in range(depth)])
    if recompute:
        for b in net:
            b.recompute()
    fn = jit(grad(lambda x: net(x).sum(), None, net.trainable_params()))
    x = _x((256, 64))
    fn(x)  # compiles: kernel caches are not the step's memory
    fn._cache[next(iter(fn._cache))].exe._arenas.clear()
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        grads = fn(x)
        peak = tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()
    return peak, [g.asnumpy() for g in grads]


def test_compiled_peak_memory_goes_down():
    """Measured (fusion on): 9.0 MB -> 4.0 MB (0.45x; 0.52x without fusion): each block's
    activations live through its own backward only; its input stays."""
    peak0, g0 = _peak(False)
    peak1, g1 = _peak(True)
    _equal(g0, g1)
    assert peak1 < 0.6 * peak0, (peak1, peak0)
