"""Graph mode equals eager mode on random compositions of the ops fusion treats specially:
elementwise chains, broadcasts, softmax / log-softmax / layer norm (expanded into row
kernels), row sums and maxima used in later passes, column and full sums. Forward and
gradients, over several shapes (size-1 axes, 1-d, 4-d)."""

import random

import numpy as np
import pytest

from sporeling.core import Tensor, grad, ops
from sporeling.core.compiler import jit

UNARY = [
    lambda a: ops.exp(a * 0.3),
    ops.tanh,
    lambda a: ops.gelu(a, "none"),
    ops.sigmoid,
    lambda a: a * a,
    ops.relu,
]
SHAPES = [(5, 7), (3, 4, 9), (1, 6), (8, 1), (2, 3, 1, 5), (17,)]


def _program(rs: random.Random, shape: tuple[int, ...]):
    steps, n = [], 2
    for _ in range(rs.randint(2, 7)):
        steps.append((rs.randint(0, 8), rs.randint(0, n - 1), rs.randint(0, n - 1),
                      rs.randint(0, len(UNARY) - 1)))  # fmt: skip
        n += 1
    pick = rs.randint(0, n - 1)
    last = len(shape) - 1

    def f(x, y, w):
        vals = [x, y]
        for kind, i, j, u in steps:
            a = vals[i]
            if kind <= 2:
                v = UNARY[u](a)
            elif kind == 3:
                v = a + vals[j] * w
            elif kind == 4:
                v = ops.softmax(a, -1)
            elif kind == 5:
                v = ops.layer_norm(a, w * 0 + 1.5, w, last, last, 1e-5)[0]
            elif kind == 6:
                v = a - ops.reduce_sum(a, -1, keep_dims=True) / shape[-1]
            elif kind == 7:
                v = a * ops.amax(a, -1, keep_dims=True)
            else:
                v = ops.log_softmax(a, -1)
            vals.append(v)
        out = vals[-1]
        return ops.reduce_sum(out * vals[pick]) + ops.reduce_sum(ops.reduce_sum(out, 0))

    return f


@pytest.mark.parametrize("seed", range(30))
def test_random_program_graph_equals_eager(seed):
    rs = random.Random(seed)
    shape = rs.choice(SHAPES)
    f = _program(rs, shape)
    rng = np.random.default_rng(seed)
    x, y = (Tensor(rng.standard_normal(shape).astype(np.float32)) for _ in range(2))
    w = Tensor(rng.standard_normal(shape[-1:]).astype(np.float32))
    np.testing.assert_allclose(jit(f)(x, y, w).asnumpy(), f(x, y, w).asnumpy(), rtol=2e-4,
                               atol=2e-4)  # fmt: skip
    for a, b in zip(jit(grad(f, (0, 1, 2)))(x, y, w), grad(f, (0, 1, 2))(x, y, w), strict=True):
        np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=2e-3, atol=2e-3)
