"""ops.assign / assign_add / assign_sub: the eager fast path (a Parameter, a same-shape
same-dtype Tensor or a Python scalar) gives what the generic path gives, in every case."""

import re

import numpy as np
import pytest

from sporeling.core import Parameter, Tensor, grad, jit, ops
from sporeling.core.ops.scatter import inplace

UPDATES = {"assign": ops.assign, "assign_add": ops.assign_add, "assign_sub": ops.assign_sub}


def _ref(name, base, value):
    v = np.asarray(value, base.dtype) if not isinstance(value, np.ndarray) else value
    if name == "assign":
        return np.broadcast_to(v.astype(base.dtype), base.shape).copy()
    return (base + v if name == "assign_add" else base - v).astype(base.dtype)


def _values(dtype):
    """(description, value maker from a rng) for a Parameter of shape (3, 4) and ``dtype``."""
    ints = dtype.startswith("int")

    def arr(rng, shape, dt=dtype):
        a = rng.integers(-5, 6, shape) if ints or dt.startswith("int") else rng.random(shape)
        return a.astype(dt)

    return [
        ("same shape and dtype", lambda r: Tensor(arr(r, (3, 4)))),
        ("non-contiguous", lambda r: Tensor(arr(r, (4, 3)).T)),
        ("strided", lambda r: Tensor(arr(r, (3, 8))[:, ::2])),
        ("broadcast row", lambda r: Tensor(arr(r, (4,)))),
        ("broadcast column", lambda r: Tensor(arr(r, (3, 1)))),
        ("0-d", lambda r: Tensor(arr(r, ()))),
        ("int into the dtype", lambda r: Tensor(arr(r, (3, 4), "int32"))),
        ("python int", lambda r: 3),
        ("python float", lambda r: 2.75),
        ("python negative float", lambda r: -1.5),
        ("numpy array", lambda r: arr(r, (3, 4))),
        ("list", lambda r: arr(r, (4,)).tolist()),
    ]


def _run(name, dtype, make_value, fast, monkeypatch):
    """The update on a fresh Parameter: (base, value, result, a view's values, dtype)."""
    rng = np.random.default_rng(7)
    base = (rng.integers(-9, 10, (3, 4)) if dtype.startswith("int") else rng.random((3, 4))).astype(
        dtype
    )
    p = Parameter(Tensor(base), name="p")
    buf = p._data
    view = buf[1]  # a NumPy view of the buffer, as optimizer banks hold
    value = make_value(np.random.default_rng(11))
    with monkeypatch.context() as m:
        if not fast:
            m.setattr(inplace, "_fast_operands", lambda variable, value: None)
        out = UPDATES[name](p, value)
    assert out is p and p._data is buf  # updated in place, never rebound
    return base, value, p.asnumpy().copy(), view.copy(), p._data.dtype


@pytest.mark.parametrize("name", list(UPDATES))
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32", "int64"])
def test_fast_path_equals_generic_path(name, dtype, monkeypatch):
    for what, make in _values(dtype):
        v0 = make(np.random.default_rng(11))
        if dtype.startswith("int") and isinstance(v0, Tensor) and v0.dtype.category > 1:
            continue  # float into int: an error, tested below
        base, value, fast, fast_view, fast_dt = _run(name, dtype, make, True, monkeypatch)
        _, _, slow, slow_view, slow_dt = _run(name, dtype, make, False, monkeypatch)
        assert fast_dt == slow_dt == np.dtype(dtype), what
        np.testing.assert_array_equal(fast, slow, err_msg=f"{name} {dtype} {what}")
        np.testing.assert_array_equal(fast_view, fast[1], err_msg=f"view sees the write: {what}")
        np.testing.assert_array_equal(slow_view, slow[1])
        raw = value.asnumpy() if isinstance(value, Tensor) else value
        if isinstance(raw, list):
            raw = np.asarray(raw, dtype)
        want = _ref(name, base, raw)
        if dtype == "float16" and name != "assign":
            np.testing.assert_allclose(fast, want, rtol=1e-3, err_msg=what)
        else:
            np.testing.assert_array_equal(fast, want, err_msg=f"{name} {dtype} {what}")


def test_fast_path_is_taken_for_the_common_cases_only():
    p = Parameter(Tensor(np.zeros((2, 3), np.float32)), name="p")
    assert inplace._fast_operands(p, Tensor(np.ones((2, 3), np.float32))) is not None
    assert inplace._fast_operands(p, Tensor(np.ones((3, 2), np.float32)).T) is not None
    assert inplace._fast_operands(p, 1.0) is not None
    assert inplace._fast_operands(p, 2) is not None
    for value in (
        Tensor(np.ones(3, np.float32)),  # broadcast
        Tensor(np.ones((2, 3), np.float64)),  # a cast
        True,
        np.float32(1.0),
        "1.0",
    ):
        assert inplace._fast_operands(p, value) is None
    assert inplace._fast_operands(Tensor(np.zeros((2, 3), np.float32)), 1.0) is None
    q = Parameter(Tensor(np.zeros((2, 3), np.float32)), name="q")
    q._data = np.asfortranarray(q._data)
    assert inplace._fast_operands(q, 1.0) is None


def _error(fn, monkeypatch, fast):
    with monkeypatch.context() as m:
        if not fast:
            m.setattr(inplace, "_fast_operands", lambda variable, value: None)
        with pytest.raises(Exception) as info:
            fn()
    return type(info.value), str(info.value)


F32 = np.ones(3, np.float32)
ERRORS = [  # (op, variable: "f32" / "bool" / "int" / a non-Tensor, value, error, message)
    ("assign", "f32", Tensor(F32[:2]), ValueError, "argument 'value' of shape \\(2,\\)"),
    ("assign_add", "int", Tensor(F32), TypeError, "argument 'value' of dtype Float32"),
    ("assign_add", "bool", True, TypeError, "argument 'variable' expected a numeric dtype"),
    ("assign_sub", "bool", Tensor(np.ones(3, bool)), TypeError, "argument 'variable'.*Bool"),
    ("assign", "f32", "x", TypeError, "argument 'value'"),
    ("assign", "f32", None, TypeError, "argument 'value'"),
    ("assign", np.zeros(3), 1.0, TypeError, "argument 'variable'"),
    ("assign_add", "int", 2**70, OverflowError, ""),
]


@pytest.mark.parametrize("name,variable,value,kind,match", ERRORS)
def test_errors_are_the_generic_paths(name, variable, value, kind, match, monkeypatch):
    def fresh():
        dtypes = {"f32": np.float32, "bool": bool, "int": np.int32}
        var = variable
        if isinstance(variable, str):
            var = Parameter(Tensor(np.zeros(3, dtypes[variable])), name="p")
        return lambda: UPDATES[name](var, value)

    fast = _error(fresh(), monkeypatch, True)
    slow = _error(fresh(), monkeypatch, False)
    assert fast == slow
    assert fast[0] is kind
    assert re.search(f"{name}: " + match if match else "", fast[1]), fast[1]


def test_bool_assign_and_int_parameter_take_scalars_as_the_generic_path():
    b = Parameter(Tensor(np.zeros(3, bool)), name="b")
    ops.assign(b, Tensor(np.array([True, False, True])))
    assert b.asnumpy().tolist() == [True, False, True]
    ops.assign(b, 0)
    assert b.asnumpy().tolist() == [False] * 3
    i = Parameter(Tensor(np.zeros(3, np.int32)), name="i")
    ops.assign(i, 2.75)  # truncates, as Tensor(2.75, dtype=int32) does
    ops.assign_add(i, 1)
    assert i.asnumpy().tolist() == [3, 3, 3] and i.dtype == "int32"


def test_parameter_update_inside_grad_records_nothing(monkeypatch):
    """An update of a Parameter from a tracked value is not differentiated (both paths)."""

    def run(fast):
        p = Parameter(Tensor(np.ones(3, np.float32)), name="p")
        c = Parameter(Tensor(np.zeros(3, np.float32)), name="c")

        def f(x):
            y = x * 2.0
            ops.assign(p, y)
            ops.assign_add(c, y)
            return ops.reduce_sum(p * x) + ops.reduce_sum(c * x)

        with monkeypatch.context() as m:
            if not fast:
                m.setattr(inplace, "_fast_operands", lambda variable, value: None)
            x = Tensor(np.array([1.0, 2.0, 3.0], np.float32))
            g = grad(f)(x)
        assert p._node is None and c._node is None
        return g.asnumpy(), p.asnumpy(), c.asnumpy()

    for a, b in zip(run(True), run(False), strict=True):
        np.testing.assert_array_equal(a, b)
    g, p, c = run(True)
    np.testing.assert_array_equal(p, [2.0, 4.0, 6.0])
    np.testing.assert_array_equal(g, p + c)  # d/dx of sum(p*x) + sum(c*x), p and c constant


def test_graph_mode_equals_eager():
    def make():
        return (
            Parameter(Tensor(np.zeros((2, 3), np.float32)), name="w"),
            Parameter(Tensor(np.zeros(1, np.float32)), name="n"),
            Parameter(Tensor(np.ones((2, 3), np.float32)), name="acc"),
        )

    def step(w, n, acc, x):
        ops.assign(w, x * 0.5)
        ops.assign_add(n, 1.0)
        ops.assign_sub(acc, x)
        ops.assign_add(acc, w)
        ops.assign_add(w, 0.25)
        return x + 1.0

    eager = make()
    graph = make()
    compiled = jit(lambda x: step(*graph, x))
    for k in range(3):
        x = Tensor(np.arange(6, dtype=np.float32).reshape(2, 3) * (k + 1))
        want = step(*eager, x)
        got = compiled(x)
        np.testing.assert_array_equal(got.asnumpy(), want.asnumpy())
        for pe, pg in zip(eager, graph, strict=True):
            np.testing.assert_array_equal(pg.asnumpy(), pe.asnumpy())
    assert graph[1].asnumpy().tolist() == [3.0]
