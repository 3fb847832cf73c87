"""Graph mode compiles ``if`` / ``while`` / ``for`` on tensor values into ``cond`` and
``while_loop`` primitives (compiler/convert.py, compiler/control_flow.py): results equal
eager mode's, one graph serves every branch taken, gradients match eager autograd and
central differences, and what cannot be converted says why."""

import numpy as np
import pytest

from sporeling.core import (
    GRAPH_MODE,
    PYNATIVE_MODE,
    Tensor,
    grad,
    nn,
    ops,
    set_context,
    value_and_grad,
    vmap,
)
from sporeling.core.compiler import TracingError, jit
from sporeling_testing.gradcheck import check_grad


def t(*values, dtype=np.float32):
    return Tensor(np.array(values, dtype))


def prims(jf):
    (compiled,) = jf._cache.values()
    return [e.prim.name for e in compiled.graph.eqns]


# ---- if ------------------------------------------------------------------------------------


def pick(x, y):
    if x.sum() > y.sum():
        z = x * 2
        w = y
    else:
        z = y - 1
        w = x * y
    return z + w


def test_if_on_a_tensor_value_is_one_cond_and_matches_eager():
    jf = jit(pick)
    a, b = t(1.0, 2.0), t(0.5, 0.5)
    for x, y in ((a, b), (b, a)):
        np.testing.assert_allclose(jf(x, y).asnumpy(), pick(x, y).asnumpy())
    assert jf.compile_count == 1  # both branches live in one graph
    assert "cond" in prims(jf)


def early_return(x):
    if ops.reduce_max(x) > 1:
        return x / ops.reduce_max(x)
    elif x.sum() < -1:
        return -x
    return x * 3


def test_return_inside_if_and_elif():
    jf = jit(early_return)
    for x in (t(0.5, 2.0), t(-3.0, 0.5), t(0.1, 0.2)):
        np.testing.assert_allclose(jf(x).asnumpy(), early_return(x).asnumpy(), rtol=1e-6)
    assert jf.compile_count == 1


def logic(x, y):
    if x.sum() > 0 and not y.sum() > 0 or x.max() > 5:
        return x
    s = x if y.min() > 0 else y
    return s * 2


def test_and_or_not_and_conditional_expressions():
    jf = jit(logic)
    cases = [(t(1.0, 1.0), t(-1.0, -1.0)), (t(1.0, 1.0), t(1.0, 1.0)), (t(-1.0, 9.0), t(1.0, 1.0))]
    cases += [(t(-1.0, -1.0), t(-1.0, 2.0))]
    for x, y in cases:
        np.testing.assert_allclose(jf(x, y).asnumpy(), logic(x, y).asnumpy())


def nested(x, flag):
    y = x
    if flag:  # a Python value: decided while tracing  # noqa: SIM102
        if x.sum() > 0:
            y = x * 2
            if x.max() > 3:
                y = y + 100
    return y


def test_nested_ifs_and_python_conditions():
    jf = jit(nested)
    for x in (t(1.0, 1.0), t(1.0, 4.0), t(-1.0, -1.0)):
        for flag in (True, False):
            np.testing.assert_allclose(jf(x, flag).asnumpy(), nested(x, flag).asnumpy())


def branchy(x, y):
    if ops.reduce_sum(x * y) > 0:
        r = ops.sin(x) * y
    else:
        r = x * x * x - y
    return r


class Branchy(nn.Cell):
    def construct(self, x, y):
        return branchy(x, y)  # a user function a construct calls is converted too


def test_gradients_through_cond_match_numerical():
    f = branchy
    for sign in (1.0, -1.0):
        x = sign * np.array([0.5, 1.0, 1.5])
        y = np.array([0.3, 0.7, 1.1])
        check_grad(jit(f), [x, y])
        ex = grad(f, grad_position=(0, 1))(Tensor(x), Tensor(y))
        gx = grad(jit(f), grad_position=(0, 1))(Tensor(x), Tensor(y))
        for e, g in zip(ex, gx):
            np.testing.assert_allclose(g.asnumpy(), e.asnumpy(), rtol=1e-12)


def test_second_order_through_cond():
    cell = Branchy()
    y = Tensor(np.array([0.3, 0.7, 1.1]))

    def second(x):
        first = grad(lambda x: ops.reduce_sum(cell(x, y)))
        return grad(lambda x: ops.reduce_sum(first(x) * first(x)))(x)

    for sign in (1.0, -1.0):
        x = Tensor(sign * np.array([0.5, 1.0, 1.5]))
        np.testing.assert_allclose(jit(second)(x).asnumpy(), second(x).asnumpy(), rtol=1e-12)
    # and against the closed forms: d/dx sum((y cos x)^2) = -y^2 sin 2x, d/dx sum((3x^2)^2)
    xs = np.array([0.5, 1.0, 1.5])
    np.testing.assert_allclose(
        jit(second)(Tensor(xs)).asnumpy(), -(y.asnumpy() ** 2) * np.sin(2 * xs), rtol=1e-12
    )
    np.testing.assert_allclose(jit(second)(Tensor(-xs)).asnumpy(), 36 * (-xs) ** 3, rtol=1e-12)


# ---- while / for ------------------------------------------------------------------------


def grow(x, limit):
    i = 0
    while x.sum() < limit:
        x = x * 1.5 + 0.1
        i = i + 1
    return x, i


def test_while_on_a_tensor_value_matches_eager_for_any_trip_count():
    jf = jit(grow)
    x = t(0.5, 1.0)
    for limit in (0.0, 2.0, 10.0, 1000.0):
        out, n = jf(x, Tensor(np.float32(limit)))
        ref, ref_n = grow(x, Tensor(np.float32(limit)))
        np.testing.assert_allclose(out.asnumpy(), ref.asnumpy(), rtol=1e-6)
        assert int(n) == ref_n
    assert jf.compile_count == 1
    assert "while_loop" in prims(jf)


def first_set_in_body(x, n):
    k = 0
    while k < n:
        y = x * 2  # first bound inside the loop
        x = y - 0.5
        k += 1
    return x


def test_loop_variable_first_assigned_in_the_body():
    jf = jit(first_set_in_body)
    for n in (0, 1, 4):
        ref = first_set_in_body(t(1.0, 2.0), Tensor(n))
        np.testing.assert_allclose(jf(t(1.0, 2.0), Tensor(n)).asnumpy(), ref.asnumpy())


def power_sum(x, n):
    s = x * 0
    for k in range(1, n):
        s = s + x**2 / k
    return s


def test_for_range_with_a_tensor_bound_and_gradients():
    jf = jit(power_sum)
    for n in (0, 1, 2, 5):
        np.testing.assert_allclose(
            jf(t(1.0, 2.0), Tensor(n)).asnumpy(),
            power_sum(t(1.0, 2.0), Tensor(n)).asnumpy(),
            rtol=1e-6,
        )
    assert jf.compile_count == 1
    check_grad(jit(power_sum), [np.array([0.3, -1.2]), np.array(4)])


def test_while_gradients_reach_inputs_and_values_read_from_outside():
    def f(x, w, limit):
        while ops.reduce_sum(x * x) < limit:
            x = ops.tanh(x * w) + x
        return x * w

    x = np.array([0.2, -0.1, 0.3])
    w = np.array([1.1, 0.9, 1.3])
    check_grad(jit(f), [x, w, np.array(5.0)], wrt=[0, 1])
    ex = grad(f, grad_position=(0, 1))(Tensor(x), Tensor(w), Tensor(5.0))
    gx = grad(jit(f), grad_position=(0, 1))(Tensor(x), Tensor(w), Tensor(5.0))
    for e, g in zip(ex, gx):
        np.testing.assert_allclose(g.asnumpy(), e.asnumpy(), rtol=1e-12)


# ---- cells in GRAPH_MODE ------------------------------------------------------------------------


class Body(nn.Cell):
    def __init__(self):
        super().__init__()
        # fixed weights that expand (|1.5 x| > |x|): the loop below ends whatever the seed
        w = Tensor(np.array([[1.5, 0.2], [-0.1, 1.5]], np.float32))
        self.dense = nn.Dense(2, 2, weight_init=w, bias_init="zeros")

    def construct(self, x):
        if ops.reduce_sum(x) > 0:
            return self.dense(x)
        return x


class Looping(nn.Cell):
    def __init__(self):
        super().__init__()
        self.body = Body()
        self.scale = nn.Dense(2, 2)

    def construct(self, x, n):
        y = self.scale(x)
        i = 0
        while ops.reduce_sum(ops.abs(y)) < n and i < 40:  # capped, so it ends for any weights
            y = self.body(y) * 2 + 0.5
            i += 1
        return y


@pytest.fixture
def graph_mode():
    set_context(mode=GRAPH_MODE)
    yield
    set_context(mode=PYNATIVE_MODE)


def test_cells_compile_with_control_flow_and_train_like_eager(graph_mode):
    net = Looping()
    x = t(0.1, -0.2).reshape(1, 2)
    loss = lambda x, n: ops.reduce_sum(net(x, n))  # noqa: E731
    step = value_and_grad(loss, None, net.trainable_params())
    set_context(mode=PYNATIVE_MODE)
    ref_out = net(x, Tensor(np.float32(20.0)))
    ref_loss, ref_grads = step(x, Tensor(np.float32(20.0)))
    set_context(mode=GRAPH_MODE)
    out = net(x, Tensor(np.float32(20.0)))  # no warning: it compiles (warnings are errors)
    np.testing.assert_allclose(out.asnumpy(), ref_out.asnumpy(), rtol=1e-5)
    assert not net.__dict__.get("_graph_fallback")

    class Step(nn.Cell):
        def __init__(self):
            super().__init__()
            self.net = net
            self.step = step

        def construct(self, x, n):
            return self.step(x, n)

    got_loss, got_grads = Step()(x, Tensor(np.float32(20.0)))
    np.testing.assert_allclose(got_loss.asnumpy(), ref_loss.asnumpy(), rtol=1e-5)
    for g, r in zip(got_grads, ref_grads):
        np.testing.assert_allclose(g.asnumpy(), r.asnumpy(), rtol=1e-4, atol=1e-6)


class Mutating(nn.Cell):
    def construct(self, x):
        while ops.reduce_sum(x) < 10:
            x = x * 2
            if ops.reduce_max(x) > 4:
                self.big = x  # an attribute assigned on a tensor condition: not converted
        return x


def test_what_cannot_be_converted_falls_back_with_the_reason(graph_mode):
    net = Mutating()
    with pytest.warns(UserWarning, match="Mutating runs in PYNATIVE mode.*attribute"):
        out = net(t(1.0, 1.0))
    np.testing.assert_allclose(out.asnumpy(), [8.0, 8.0])
    with pytest.raises(TracingError, match="assigns to an attribute"):
        jit(Mutating())(t(1.0, 1.0))


def test_branches_that_disagree_say_which_variable():
    def f(x):
        if x.sum() > 0:
            y = x
        else:
            y = ops.concat((x, x))
        return y

    with pytest.raises(TracingError, match=r"`y` is float32\[2\] in the true branch"):
        jit(f)(t(1.0, 2.0))

    def g(x):
        if x.sum() > 0:
            z = x
        return z  # noqa: F821

    with pytest.raises(TracingError, match="assigns `z` in only one branch"):
        jit(g)(t(1.0, 2.0))

    def h(x):
        while x.sum() < 5:
            x = ops.concat((x, x))
        return x

    with pytest.raises(TracingError, match="`x` is float32\\[2\\] before the body"):
        jit(h)(t(1.0, 2.0))


def test_functions_handed_to_grad_and_vmap_inside_jit_are_converted():
    def loss(x, y):
        return ops.reduce_sum(branchy(x, y))

    def per_row(a):
        return loss(a, Tensor(np.array([0.3, 0.7, 1.1])))

    y = Tensor(np.array([0.3, 0.7, 1.1]))
    for sign in (1.0, -1.0):
        x = Tensor(sign * np.array([0.5, 1.0, 1.5]))
        np.testing.assert_allclose(
            jit(grad(loss))(x, y).asnumpy(), grad(loss)(x, y).asnumpy(), rtol=1e-12
        )
    rows = Tensor(np.array([[0.5, 1.0, 1.5], [-0.5, -1.0, -1.5]]))
    np.testing.assert_allclose(
        jit(vmap(per_row))(rows).asnumpy(), vmap(per_row)(rows).asnumpy(), rtol=1e-12
    )
