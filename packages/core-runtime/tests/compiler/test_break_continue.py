"""``break`` and ``continue`` on tensor conditions in graph mode: the converter turns them
into flags (the loop's test gains ``not broken``, the statements after a jump run only while
no flag is set), so such loops compile into one ``while_loop`` / ``for_range``, checked
against the eager Python loop, forward and gradient."""

import numpy as np
import pytest

from sporeling.core import GRAPH_MODE, PYNATIVE_MODE, Tensor, grad, nn, ops, set_context
from sporeling.core.compiler import jit
from sporeling_testing.gradcheck import check_grad

X = np.array([0.5, 1.0])


def grow_until(x, limit):
    i = 0
    while i < 10:
        x = x * 1.5
        if ops.reduce_sum(x) > limit:
            break
        i = i + 1
    return x * i


def skip_large(x):
    n = ops.zeros((), "float64")
    total = ops.zeros_like(x)
    while n < 6:
        n = n + 1
        if ops.reduce_sum(x * n) > 5:
            continue
        total = total + x * n
    return total


def for_with_both(x, n):
    acc = ops.zeros_like(x)
    for i in range(n):
        if ops.reduce_sum(acc) > 4:
            break
        if i % 2 == 1:
            continue
        acc = acc + x * (i + 1)
    return acc


def nested(x):
    total = ops.zeros_like(x)
    for _ in range(3):
        k = ops.zeros((), "float64")
        while k < 5:  # the inner loop's break leaves the inner loop only
            k = k + 1
            if ops.reduce_sum(total) > 3 * k:
                break
            total = total + x
    return total


@pytest.mark.parametrize("limit", [3.0, 10.0, 1000.0])
def test_break_in_a_while_loop_matches_python(limit):
    args = (Tensor(X), Tensor(limit))
    np.testing.assert_allclose(jit(grow_until)(*args).asnumpy(), grow_until(*args).asnumpy())
    np.testing.assert_allclose(
        grad(jit(grow_until))(*args).asnumpy(), grad(grow_until)(*args).asnumpy()
    )


def test_continue_skips_the_rest_of_the_body():
    np.testing.assert_allclose(
        jit(skip_large)(Tensor(X)).asnumpy(), skip_large(Tensor(X)).asnumpy()
    )
    check_grad(jit(skip_large), [X])


@pytest.mark.parametrize("n", [8, Tensor(8)], ids=["python-range", "tensor-range"])
def test_for_loops_with_break_and_continue(n):
    want = for_with_both(Tensor(X), 8)
    np.testing.assert_allclose(jit(for_with_both)(Tensor(X), n).asnumpy(), want.asnumpy())


def test_break_leaves_only_the_innermost_loop():
    np.testing.assert_allclose(jit(nested)(Tensor(X)).asnumpy(), nested(Tensor(X)).asnumpy())
    check_grad(jit(nested), [X])


class Searching(nn.Cell):
    def construct(self, x):
        while ops.reduce_sum(x) < 100:
            x = x * 2
            if ops.reduce_max(x) > 4:
                break
        return x


def test_a_cell_with_break_compiles_in_graph_mode_without_fallback():
    net = Searching()
    set_context(mode=GRAPH_MODE)
    try:
        out = net(Tensor(np.array([1.0, 1.0], np.float32)))  # warnings are errors here
        assert net._graph_call.compile_count == 1
    finally:
        set_context(mode=PYNATIVE_MODE)
    np.testing.assert_allclose(out.asnumpy(), [8.0, 8.0])


def test_loops_over_other_iterables_keep_python_break():
    import itertools

    def endless(x):
        for i in itertools.count():  # not rewritten: the iterator is endless
            if i == 3:
                break
            x = x + 1
        if ops.reduce_sum(x) > 0:  # (makes the function convert)
            x = x * 2
        return x

    np.testing.assert_allclose(jit(endless)(Tensor(X)).asnumpy(), endless(Tensor(X)).asnumpy())


# ---- `return` inside a top-level loop: a flag, the value, a break, and `if flag: return` ----


def find(x, limit):
    i = 0
    while i < 10:
        x = x * 1.5
        if ops.reduce_sum(x) > limit:
            return x * 2
        i = i + 1
    return x


def find_for(x, n):
    for i in range(n):
        if ops.reduce_sum(x) > 3:
            return x - i
        x = x + 1
    return x * 0


@pytest.mark.parametrize("limit", [3.0, 10.0, 1000.0])
def test_return_from_inside_a_while_loop(limit):
    args = (Tensor(X), Tensor(limit))
    np.testing.assert_allclose(jit(find)(*args).asnumpy(), find(*args).asnumpy())
    np.testing.assert_allclose(grad(jit(find))(*args).asnumpy(), grad(find)(*args).asnumpy())


@pytest.mark.parametrize("n", [1, 5])
def test_return_from_inside_a_for_loop(n):
    want = find_for(Tensor(X), n).asnumpy()
    np.testing.assert_allclose(jit(find_for)(Tensor(X), n).asnumpy(), want)
    np.testing.assert_allclose(jit(find_for)(Tensor(X), Tensor(n)).asnumpy(), want)
