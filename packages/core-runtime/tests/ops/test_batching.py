"""vmap through batching rules (ops/batching.py): each primitive with a rule runs once over
the batch, the rest once per example; results equal the per-example loop and NumPy, and
gradients through vmap match central differences."""

import numpy as np
import pytest

from sporeling.core import Tensor, grad, ops, vmap
from sporeling.core.ops.batching import run_batched
from sporeling_testing.gradcheck import check_grad

rng = np.random.default_rng(0)
X = rng.standard_normal((4, 3, 2))
W = rng.standard_normal((2, 5))


def loop(fn, *args, axes):
    n = next(a.shape[ax] for a, ax in zip(args, axes) if ax is not None)
    outs = [
        fn(*(a if ax is None else Tensor(np.take(a.asnumpy(), i, ax)) for a, ax in zip(args, axes)))
        for i in range(n)
    ]
    return np.stack([o.asnumpy() for o in outs])


CASES = {
    "unary+binary": (lambda x: ops.exp(x) * 2 - ops.tanh(x) / 3, (X,), (0,)),
    "unmapped operand": (lambda x, y: x * y + 1, (X, X[0] + 1), (0, None)),
    "broadcast ranks": (lambda x, y: x + y, (X[:, 0, :], X[0]), (0, None)),
    "reduce axes": (lambda x: ops.reduce_sum(x, (0, -1)) + ops.reduce_max(x, 1).sum(), (X,), (0,)),
    "keep_dims": (lambda x: ops.reduce_mean(x, -1, keep_dims=True) - x, (X,), (0,)),
    "argmax": (lambda x: ops.argmax(x, -1), (X,), (0,)),
    "reshape+transpose": (lambda x: ops.transpose(ops.reshape(x, (2, 3)), (1, 0)), (X,), (0,)),
    "concat": (lambda x: ops.concat((x, x * 2), -1), (X,), (0,)),
    "matmul unmapped": (lambda x, w: ops.matmul(x, w), (X, W), (0, None)),
    "matmul both": (lambda x, y: ops.matmul(x, y), (X, np.swapaxes(X, 1, 2)), (0, 0)),
    "in_axes 1": (lambda x: ops.softmax(x, -1), (X,), (1,)),
    "sort, cumsum": (lambda x: ops.sort(x, 0)[0] + ops.cumsum(x, -1), (X,), (0,)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_rules_run_once_over_the_batch_and_equal_the_loop(name):
    fn, arrays, axes = CASES[name]
    args = tuple(Tensor(a) for a in arrays)
    expected = loop(fn, *args, axes=axes)
    got = vmap(fn, in_axes=axes)(*args)
    np.testing.assert_allclose(got.asnumpy(), expected, rtol=1e-12, atol=1e-12)
    n = expected.shape[0]
    _, interp = run_batched(fn, args, axes, n)
    assert interp.loop_calls == 0 and interp.rule_calls > 0


def test_primitives_without_a_rule_loop_per_example():
    fn = lambda x: x[1:, 0] * 2  # noqa: E731  indexing (getitem) has no rule
    args = (Tensor(X),)
    np.testing.assert_allclose(vmap(fn)(*args).asnumpy(), X[:, 1:, 0] * 2, rtol=1e-12)
    _, interp = run_batched(fn, args, (0,), 4)
    assert interp.loop_calls >= 1 and interp.rule_calls >= 1  # the product still batched


def test_value_reads_and_inner_gradients_fall_back_to_the_function_loop():
    reads = lambda x: x * float(ops.reduce_sum(x))  # noqa: E731
    np.testing.assert_allclose(
        vmap(reads)(Tensor(X)).asnumpy(), X * X.sum((1, 2))[:, None, None], rtol=1e-12
    )
    inner = lambda x: grad(lambda y: ops.reduce_sum(ops.sin(y)))(x)  # noqa: E731
    np.testing.assert_allclose(vmap(inner)(Tensor(X)).asnumpy(), np.cos(X), rtol=1e-12)


def test_out_axes_and_tuple_outputs():
    out = vmap(lambda x: (x * 2, ops.reduce_sum(x)), out_axes=(1, 0))(Tensor(X))
    np.testing.assert_allclose(out[0].asnumpy(), np.moveaxis(X * 2, 0, 1), rtol=1e-12)
    np.testing.assert_allclose(out[1].asnumpy(), X.sum((1, 2)), rtol=1e-12)
    const = vmap(lambda x: Tensor(np.ones(2)))(Tensor(X))  # an unmapped result is repeated
    assert const.shape == (4, 2)


def test_gradients_through_vmap_match_numerical():
    f = vmap(lambda x, w: ops.tanh(ops.matmul(x, w)).sum() * x.mean(), in_axes=(0, None))
    check_grad(lambda x, w: f(x, w), [X, W])


def test_vmap_inside_jit_is_one_graph_without_a_loop():
    from sporeling.core import jit

    f = jit(vmap(lambda x: ops.softmax(x * 2, -1)))
    got = f(Tensor(X[:, 0, :])).asnumpy()
    e = np.exp(X[:, 0, :] * 2)
    np.testing.assert_allclose(got, e / e.sum(-1, keepdims=True), rtol=1e-12)
    (compiled,) = f._cache.values()
    assert all(eq.prim.name not in ("getitem", "stack") for eq in compiled.graph.eqns)
