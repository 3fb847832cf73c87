"""Parameter-updating scatters (scatter_*, scatter_nd_*, index_add) in graph mode: each call
of a compiled function updates the Parameter in place, as eagerly (MindSpore 1.8 does so in
GRAPH_MODE too), and returns the updated Parameter. The reference is a NumPy float64
sequential scatter; graph results must equal the eager ones exactly."""

import numpy as np
import pytest

from sporeling.core import GRAPH_MODE, PYNATIVE_MODE, Parameter, Tensor, nn, ops, set_context
from sporeling.core.compiler import jit
from sporeling.core.ops import operations as P

_REF = {
    "update": lambda a, u: u,
    "add": lambda a, u: a + u,
    "sub": lambda a, u: a - u,
    "mul": lambda a, u: a * u,
    "div": lambda a, u: a / u,
    "max": np.maximum,
    "min": np.minimum,
}


def _ref_nd(x, idx, upd, op):
    """Sequential nd scatter in float64 (repeated indices apply in order)."""
    out = np.array(x, np.float64)
    m = idx.shape[-1]
    cols = idx.reshape(-1, m)
    rows = upd.reshape((cols.shape[0],) + out.shape[m:]).astype(np.float64)
    for k in range(cols.shape[0]):
        at = tuple(int(c) for c in cols[k])
        out[at] = _REF[op](out[at], rows[k])
    return out


def _param(shape, seed=0, name="p"):
    rng = np.random.default_rng(seed)
    return Parameter(Tensor(rng.uniform(1.0, 2.0, shape).astype(np.float32)), name=name)


def _both(fn_of_param, shape, calls, seed=0):
    """Run ``fn_of_param(p)`` eagerly and jitted on two equal Parameters, over ``calls``
    (a list of argument tuples); return the eager and graph values after each call."""
    pe, pg = _param(shape, seed, "pe"), _param(shape, seed, "pg")
    fe = fn_of_param(pe)
    fg = jit(fn_of_param(pg))
    seen = []
    for args in calls:
        re_, rg = fe(*args), fg(*args)
        seen.append(
            (re_.asnumpy().copy(), rg.asnumpy().copy(), pe.asnumpy().copy(), pg.asnumpy().copy())
        )
    return seen


@pytest.mark.parametrize("op", ["update", "add", "sub", "mul", "div", "max", "min"])
@pytest.mark.parametrize("itype", [np.int32, np.int64])
def test_scatter_nd_on_a_parameter_under_jit_updates_it_in_place(op, itype):
    fn = getattr(ops, f"scatter_nd_{op}")
    idx = np.array([[0, 1], [2, 3], [0, 1]], itype)  # a repeat: applied in order
    upd = np.random.default_rng(1).uniform(0.5, 1.5, (3, 5)).astype(np.float32)
    x0 = _param((3, 4, 5)).asnumpy()

    def make(p):
        return lambda i, u: fn(p, i, u)

    calls = [(Tensor(idx), Tensor(upd)), (Tensor(idx[:2]), Tensor(upd[:2] * 2))]
    want = _ref_nd(x0, idx, upd, op)
    want = _ref_nd(want, idx[:2], upd[:2] * 2, op)
    seen = _both(make, (3, 4, 5), calls)
    for re_, rg, pe, pg in seen:
        np.testing.assert_array_equal(pg, pe)
        np.testing.assert_array_equal(rg, pe)  # the returned value is the updated Parameter
        np.testing.assert_array_equal(re_, pe)
    np.testing.assert_allclose(seen[-1][3], want, rtol=1e-6)


@pytest.mark.parametrize("op", ["update", "add", "sub", "mul", "div", "max", "min"])
def test_scatter_rows_on_a_parameter_under_jit(op):
    fn = getattr(ops, f"scatter_{op}")
    idx = np.array([[2, 0], [2, 1]], np.int32)  # rows of axis 0; 2 repeats
    upd = np.random.default_rng(2).uniform(0.5, 1.5, (2, 2, 4)).astype(np.float32)
    x0 = _param((3, 4)).asnumpy()

    def make(p):
        return lambda i, u: fn(p, i, u)

    seen = _both(make, (3, 4), [(Tensor(idx), Tensor(upd))] * 3)
    want = x0
    for _ in range(3):
        want = _ref_nd(want, idx.reshape(-1, 1), upd, op)
    for re_, rg, pe, pg in seen:
        np.testing.assert_array_equal(pg, pe)
        np.testing.assert_array_equal(rg, pe)
        np.testing.assert_array_equal(re_, pe)
    np.testing.assert_allclose(seen[-1][3], want, rtol=1e-5)


def test_constant_indices_and_updates_are_replayed_on_every_call():
    """Indices and updates the function makes itself (constants while tracing) must not be
    applied once at compile time: every call adds again."""
    p = Parameter(Tensor(np.zeros((2, 3), np.float32)), name="acc")

    @jit
    def step():
        return ops.scatter_nd_add(p, Tensor(np.array([[1, 2]], np.int64)), Tensor([1.0]))

    for k in range(1, 4):
        out = step()
        assert p.asnumpy()[1, 2] == k
        assert out.asnumpy()[1, 2] == k
    assert p.asnumpy().sum() == 3


def test_reads_before_and_after_the_update_see_the_old_and_new_values():
    p = _param((4, 3))
    x0 = p.asnumpy().copy()

    @jit
    def f(i, u):
        before = p * 1.0
        ops.scatter_nd_update(p, i, u)
        after = p * 1.0
        return before, after

    u = np.full((1, 3), 9.0, np.float32)
    for _ in range(2):
        b, a = f(Tensor(np.array([[3]], np.int32)), Tensor(u))
        np.testing.assert_array_equal(b.asnumpy(), x0)
        x0[3] = 9.0
        np.testing.assert_array_equal(a.asnumpy(), x0)
    np.testing.assert_array_equal(p.asnumpy(), x0)


def test_index_add_on_a_parameter_under_jit():
    def make(p):
        return lambda i, y: ops.index_add(p, i, y, 1)

    idx = np.array([3, 0, 3], np.int32)
    y = np.random.default_rng(3).uniform(size=(2, 3, 5)).astype(np.float32)
    x0 = _param((2, 4, 5)).asnumpy().astype(np.float64)
    seen = _both(make, (2, 4, 5), [(Tensor(idx), Tensor(y))] * 2)
    want = x0.copy()
    for _ in range(2):
        for k, r in enumerate(idx):
            want[:, r] += y[:, k]
    for re_, rg, pe, pg in seen:
        np.testing.assert_array_equal(pg, pe)
        np.testing.assert_array_equal(rg, pe)
        np.testing.assert_array_equal(re_, pe)
    np.testing.assert_allclose(seen[-1][3], want, rtol=1e-6)


class _Cache(nn.Cell):
    """A 3-d cache Parameter written at (batch, position) slots, as a decode step would."""

    def __init__(self):
        super().__init__()
        self.cache = Parameter(Tensor(np.zeros((2, 6, 4), np.float32)), name="cache")
        self.update = P.ScatterNdUpdate()
        self.add = P.ScatterAdd()

    def construct(self, idx, rows, bump):
        self.update(self.cache, idx, rows)
        self.add(self.cache, Tensor(np.array([0], np.int32)), bump)
        return self.cache * 1.0


@pytest.mark.parametrize("mode", ["graph", "jit"])
def test_a_cells_construct_updates_its_parameter_in_graph_mode(mode):
    eager, graph = _Cache(), _Cache()
    run = graph
    if mode == "graph":
        set_context(mode=GRAPH_MODE)
    else:
        run = jit(graph.construct)
    try:
        for step in range(3):
            idx = np.array([[0, step], [1, 5 - step]], [np.int32, np.int64][step % 2])
            rows = np.full((2, 4), step + 1.0, np.float32)
            bump = np.full((1, 6, 4), 0.5, np.float32)
            got = run(Tensor(idx), Tensor(rows), Tensor(bump))
            set_context(mode=PYNATIVE_MODE)
            want = eager(Tensor(idx), Tensor(rows), Tensor(bump))
            if mode == "graph":
                set_context(mode=GRAPH_MODE)
            np.testing.assert_array_equal(got.asnumpy(), want.asnumpy())
            np.testing.assert_array_equal(graph.cache.asnumpy(), eager.cache.asnumpy())
    finally:
        set_context(mode=PYNATIVE_MODE)
    c = eager.cache.asnumpy()
    assert c[0, 0, 0] == 1.0 + 1.5 and c[1, 3, 0] == 3.0  # slot writes, then 3 bumps of row 0
    assert c[1, 0, 0] == 0.0


def test_the_update_is_in_place_on_the_parameters_buffer():
    p = _param((3, 2))
    buf = p._data

    @jit
    def f(i, u):
        return ops.scatter_nd_update(p, i, u)

    f(Tensor(np.array([[1]], np.int32)), Tensor(np.ones((1, 2), np.float32)))
    assert p._data is buf
    np.testing.assert_array_equal(buf[1], [1.0, 1.0])


def test_a_read_only_parameter_buffer_gives_a_clear_error_in_graph_mode():
    p = Parameter(Tensor(np.zeros((3, 2), np.float32)), name="frozen")
    ro = np.zeros((3, 2), np.float32)
    ro.flags.writeable = False
    p._data = ro

    @jit
    def f(i, u):
        return ops.scatter_nd_update(p, i, u)

    with pytest.raises(
        TypeError, match=r"scatter_nd_update: argument 'input_x' \(Parameter 'frozen'"
    ):
        f(Tensor(np.array([[1]], np.int32)), Tensor(np.ones((1, 2), np.float32)))
    # eagerly the same update works (by a copy put back)
    ops.scatter_nd_update(p, Tensor(np.array([[1]], np.int32)), Tensor(np.ones((1, 2), np.float32)))
    np.testing.assert_array_equal(p.asnumpy()[1], [1.0, 1.0])


def test_out_of_range_indices_name_the_op_under_jit():
    p = _param((3, 2))

    @jit
    def f(i, u):
        return ops.scatter_nd_update(p, i, u)

    with pytest.raises(IndexError, match="scatter_nd_update: argument 'indices' holds index 7"):
        f(Tensor(np.array([[7]], np.int32)), Tensor(np.ones((1, 2), np.float32)))


@pytest.mark.parametrize("update", ["scatter_nd_add", "assign_add"])
def test_an_update_inside_a_differentiated_jit_function_is_a_clear_error(update):
    """jit's compiled backward recomputes the function: repeating the update would apply it
    twice, so it is refused with the op, the argument and the Parameter named."""
    from sporeling.core import grad

    w = Parameter(Tensor(np.ones(3, np.float32)), name="w")
    acc = Parameter(Tensor(np.zeros(3, np.float32)), name="acc", requires_grad=False)

    @jit
    def f(x):
        if update == "scatter_nd_add":
            ops.scatter_nd_add(acc, Tensor(np.array([[0]], np.int32)), Tensor([1.0]))
        else:
            ops.assign_add(acc, Tensor(np.array([1.0, 0.0, 0.0], np.float32)))
        return ops.reduce_sum(w * x)

    arg = "input_x" if update == "scatter_nd_add" else "variable"
    with pytest.raises(
        TypeError, match=rf"{update}: argument '{arg}' \(Parameter 'acc'.*differentiated"
    ):
        grad(f, grad_position=None, weights=[w])(Tensor(np.ones(3, np.float32)))
