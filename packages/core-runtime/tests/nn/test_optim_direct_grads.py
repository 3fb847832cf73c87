"""SGD, Momentum, AdamWeightDecay and AdamW read each dense gradient where it lies
(``Optimizer._direct_grads``): the same parameters and states, bit for bit, as the gathered
path (``bank.grad``), and the gathered path where a gradient cannot be read in place."""

from __future__ import annotations

import numpy as np
import pytest

from sporeling.core import Parameter, Tensor, nn


def _pair(shapes, dtype, cls=nn.Momentum, **kwargs):
    rng = np.random.default_rng(0)
    inits = [rng.standard_normal(s).astype(dtype) for s in shapes]
    made = []
    for direct in (True, False):
        ps = [Parameter(Tensor(a.copy()), name=f"p{i}") for i, a in enumerate(inits)]
        opt = cls(ps, **kwargs)
        if not direct:
            opt._update_direct = None  # the gathered path, as before
        made.append((ps, opt))
    return made


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "kwargs",
    [
        {"learning_rate": 0.1, "momentum": 0.9},
        {"learning_rate": 0.05, "momentum": 0.8, "use_nesterov": True, "weight_decay": 0.01},
        {"learning_rate": 0.1, "momentum": 0.9, "loss_scale": 4.0},
        {"cls": nn.AdamWeightDecay, "learning_rate": 0.01, "weight_decay": 0.1},
        {"cls": nn.AdamW, "learning_rate": 0.01, "weight_decay": 0.05},
        {"cls": nn.SGD, "learning_rate": 0.1, "momentum": 0.9, "dampening": 0.1},
        {
            "cls": nn.SGD,
            "learning_rate": 0.1,
            "momentum": 0.9,
            "nesterov": True,
            "weight_decay": 0.01,
        },  # fmt: skip
        {"cls": nn.SGD, "learning_rate": 0.1},
    ],
)
def test_direct_gradients_match_the_gathered_path_bitwise(dtype, kwargs):
    # one parameter above the threaded-block threshold (1 << 18 elements), small ones around
    shapes = [(300, 1000), (1000,), (7, 3), (5,)]
    (pd, od), (pg, og) = _pair(shapes, dtype, **kwargs)
    rng = np.random.default_rng(1)
    calls = []
    od._update_direct = (lambda f: lambda *a: calls.append(1) or f(*a))(od._update_direct)
    for _ in range(3):
        grads = [rng.standard_normal(s).astype(dtype) for s in shapes]
        od(tuple(Tensor(g) for g in grads))
        og(tuple(Tensor(g.copy()) for g in grads))
    assert calls  # the direct path ran
    for a, b in zip(pd, pg):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    for name in od._banks[0].states:
        np.testing.assert_array_equal(od._banks[0].state(name), og._banks[0].state(name))


def test_direct_gradients_against_the_formula_and_fallbacks():
    (pd, od), _ = _pair([(4, 3), (3,)], np.float32, learning_rate=0.1, momentum=0.9)
    w0 = [p.asnumpy().copy() for p in pd]
    g = [np.full((4, 3), 0.5, np.float32), np.arange(3, dtype=np.float32)]
    od((Tensor(g[0]), Tensor(g[1])))
    for p, w, gi in zip(pd, w0, g):  # first step: v = g, w -= lr v
        np.testing.assert_allclose(p.asnumpy(), w - np.float32(0.1) * gi, rtol=1e-6)
    bank = od._banks[0]
    t = Tensor(np.ones((3, 4), np.float32)).T  # a transposed view: not read in place
    assert od._direct_grads(bank, (t, Tensor(g[1]))) is None
    assert od._direct_grads(bank, (Tensor(g[0].astype(np.float64)), Tensor(g[1]))) is None
    assert od._direct_grads(bank, (Tensor(g[0]), Tensor(g[1]))) is not None
    before = pd[0].asnumpy().copy()
    od((t, Tensor(g[1])))  # the gathered path takes it: v = 0.9 v + g
    np.testing.assert_allclose(
        pd[0].asnumpy(), before - np.float32(0.1) * (np.float32(0.9) * g[0] + 1), rtol=1e-6
    )


def test_row_sparse_gradients_are_gathered():
    from sporeling.core.nn.layers.embedding import RowTensor

    (pd, od), (pg, og) = _pair([(6, 2)], np.float32, learning_rate=0.1, momentum=0.9)
    vals = np.arange(4, dtype=np.float32).reshape(2, 2)
    g = RowTensor(Tensor(np.array([4, 1], np.int32)), Tensor(vals), (6, 2))
    assert od._direct_grads(od._banks[0], (g,)) is None
    od((g,))
    dense = np.zeros((6, 2), np.float32)
    dense[[4, 1]] = vals
    og((Tensor(dense),))
    np.testing.assert_array_equal(pd[0].asnumpy(), pg[0].asnumpy())


@pytest.mark.parametrize(
    "kwargs",
    [
        {"learning_rate": 0.1, "momentum": 0.9},
        {"cls": nn.AdamW, "learning_rate": 0.01, "weight_decay": 0.05},
    ],
)
def test_slots_past_the_split_size_go_through_on_blocks_with_the_same_result(monkeypatch, kwargs):
    """``_run_slots`` calls a slot's kernel itself below ``on_blocks``' split size and hands
    bigger slots to ``on_blocks``; with the split size lowered, the (300, 1000) slot takes
    ``on_blocks`` (threaded blocks where there are threads): the same bits either way."""
    from sporeling.core.kernels.cpu import optim as K

    blocks = []
    real = K.on_blocks
    monkeypatch.setattr(K, "UPDATE_SPLIT_FACTOR", 1)
    monkeypatch.setattr(
        "sporeling.core.nn.optim.optimizer.on_blocks",
        lambda off, run: blocks.append(int(off[-1])) or real(off, run),
    )
    test_direct_gradients_match_the_gathered_path_bitwise(np.float32, dict(kwargs))
    assert 300_000 in blocks and 5 not in blocks
