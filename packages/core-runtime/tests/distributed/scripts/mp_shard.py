"""Run under ``mpiexec -n N``: ``op.shard(strategy)`` against the unsharded op (values and
gradients of every input). Prints ``OK <checks>`` on rank 0."""

from __future__ import annotations

import sys

import numpy as np

from sporeling.core import Tensor, ops
from sporeling.core.communication import get_group_size, get_rank, init
from sporeling.core.parallel import shard as S


def check(name, make_op, strategy, inputs, extra=()):
    rng = np.random.default_rng(3)
    plain = make_op()
    sharded = make_op().shard(strategy)
    floats = tuple(i for i, t in enumerate(inputs) if t.dtype.category == 2)
    ref = plain(*inputs, *extra)
    r = Tensor(rng.standard_normal(ref.shape).astype(np.float32))

    def loss(op):
        return lambda *xs: ops.reduce_sum(op(*xs, *extra) * r)

    gd = ops.grad(loss(plain), grad_position=floats)(*inputs)
    gs = ops.grad(loss(sharded), grad_position=floats)(*inputs)
    out = sharded(*inputs, *extra)
    np.testing.assert_allclose(out.asnumpy(), ref.asnumpy(), 1e-5, 1e-5, err_msg=name)
    gd = gd if isinstance(gd, tuple) else (gd,)
    gs = gs if isinstance(gs, tuple) else (gs,)
    for a, b in zip(gd, gs, strict=True):
        np.testing.assert_allclose(b.asnumpy(), a.asnumpy(), 1e-5, 1e-5, err_msg=name + " grad")
    return 1


def main() -> int:
    init()
    n = get_group_size()
    rng = np.random.default_rng(0)

    def t(*shape):
        return Tensor(rng.standard_normal(shape).astype(np.float32))

    k = 2 * n
    checks = 0
    x, w = t(4 * n, k), t(k, 3 * n)
    checks += check("matmul (1,n),(n,1)", S.MatMul, ((1, n), (n, 1)), [x, w])
    checks += check("matmul (n,1),(1,1)", S.MatMul, ((n, 1), (1, 1)), [x, w])
    checks += check("matmul (1,1),(1,n)", S.MatMul, ((1, 1), (1, n)), [x, w])
    if n % 2 == 0:
        h = n // 2
        checks += check("matmul (2,h),(h,1)", S.MatMul, ((2, h), (h, 1)), [x, w])
        checks += check("matmul (1,1) repeated", S.MatMul, ((1, 2), (2, 1)), [x, w])
    checks += check(
        "matmul transpose_b",
        lambda: S.MatMul(transpose_b=True),
        ((1, n), (1, n)),
        [x, t(3 * n, k)],
    )
    a, b = t(n, 3, k), t(n, k, 5)
    checks += check("batchmatmul", S.BatchMatMul, ((n, 1, 1), (n, 1, 1)), [a, b])
    checks += check("batchmatmul k", S.BatchMatMul, ((1, 1, n), (1, n, 1)), [a, b])
    table = t(4 * n, 6)
    ids = Tensor(rng.integers(0, 4 * n, (3, 5)))
    checks += check("gather rows", S.Gather, ((n, 1), (1, 1)), [table, ids], (0,))
    checks += check("gather cols", S.Gather, ((1, n), (1, 1)), [t(4, 3 * n), ids % 4], (0,))
    ids2 = Tensor(rng.integers(0, 4 * n, (2 * n, 5)))
    checks += check("gather ids", S.Gather, ((1, 1), (n, 1)), [table, ids2], (0,))
    checks += check("gather axis1", S.Gather, ((1, n), (1, 1)), [t(3, 2 * n), ids % (2 * n)], (1,))
    e1, e2 = t(2 * n, 4), t(2 * n, 4)
    for cls in (S.Add, S.Sub, S.Mul, S.Maximum, S.Minimum):
        checks += check(cls.__name__, cls, ((n, 1), (n, 1)), [e1, e2])
    checks += check("RealDiv", S.RealDiv, ((1, 1), (1, 1)), [e1, ops.exp(e2)])
    for cls in (S.ReLU, S.Tanh, S.Sigmoid, S.Exp, S.Neg, S.Square):
        checks += check(cls.__name__, cls, ((n, 1),), [e1])
    if get_rank() == 0:
        print(f"OK {checks} size={n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
