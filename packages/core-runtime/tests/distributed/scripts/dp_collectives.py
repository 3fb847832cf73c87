"""Collectives' values and gradients against NumPy (run under mpiexec -n N, or alone)."""

import numpy as np

from sporeling.core import Tensor, grad, ops
from sporeling.core import communication as comm

comm.init()
rank, n = comm.get_rank(), comm.get_group_size()
rng = np.random.default_rng(0)
xs = [rng.standard_normal((2 * n, 3)) for _ in range(n)]  # every rank's input, known to all
x = Tensor(xs[rank])
tol = dict(rtol=1e-12, atol=1e-12)

# values
np.testing.assert_allclose(comm.all_reduce(x).asnumpy(), sum(xs), **tol)
for op, ref in (("max", np.maximum), ("min", np.minimum), ("prod", np.multiply)):
    out = comm.all_reduce(x, op).asnumpy()
    np.testing.assert_allclose(out, ref.reduce(np.stack(xs)), **tol)
np.testing.assert_allclose(comm.all_gather(x).asnumpy(), np.concatenate(xs), **tol)
np.testing.assert_allclose(
    comm.reduce_scatter(x).asnumpy(), sum(xs)[2 * rank : 2 * rank + 2], **tol
)
np.testing.assert_allclose(comm.broadcast(x, n - 1).asnumpy(), xs[n - 1], **tol)
a2a = comm.all_to_all(x, split_dim=0, concat_dim=1).asnumpy()
np.testing.assert_allclose(
    a2a, np.concatenate([xs[j][2 * rank : 2 * rank + 2] for j in range(n)], axis=1), **tol
)
np.testing.assert_allclose(ops.AllReduce()(x).asnumpy(), sum(xs), **tol)
np.testing.assert_allclose(ops.AllGather()(x).asnumpy(), np.concatenate(xs), **tol)
np.testing.assert_allclose(ops.Broadcast(0)((x,))[0].asnumpy(), xs[0], **tol)
if n > 1:  # a ring of send/recv
    comm.send(x, (rank + 1) % n) if rank % 2 == 0 else None
    got = comm.recv(x, (rank - 1) % n)
    if rank % 2 == 1:
        comm.send(x, (rank + 1) % n)
    np.testing.assert_allclose(got.asnumpy(), xs[(rank - 1) % n], **tol)
comm.barrier()

# receive from any rank: rank 0 takes the others' messages in the order they come
if n > 1 and rank == 0:
    seen = []
    for _ in range(n - 1):
        src = comm.probe(comm.ANY_SOURCE, tag=7)
        seen.append(src)
        np.testing.assert_allclose(comm.recv(x, src, tag=7).asnumpy(), xs[src], **tol)
    assert sorted(seen) == list(range(1, n)), seen
    # a named sender; probing leaves the message queued, and its tag is honoured
    assert comm.probe(n - 1, tag=8) == n - 1 and comm.probe(n - 1, tag=8) == n - 1
    for src in range(1, n):
        np.testing.assert_allclose(comm.recv(x, src, tag=8).asnumpy(), -xs[src], **tol)
elif n > 1:
    comm.send(Tensor(-xs[rank]), 0, tag=8)  # sent first, with another tag
    comm.send(x, 0, tag=7)
for bad in (rank, n, -2, True, 1.0):
    try:
        comm.probe(bad)
    except ValueError as exc:
        assert "probe: argument 'src' expected ANY_SOURCE (-1) or another rank" in str(exc)
    else:
        raise AssertionError(f"probe({bad!r}) did not raise")
if n == 1:
    try:
        comm.probe()
    except ValueError as exc:
        assert "in [0, 1) than this one (0)" in str(exc), exc
    else:
        raise AssertionError("probe in a world of one did not raise")
comm.barrier()

# gradients: L = sum_r sum(w_r * f(x_r)); each rank differentiates its own term.
ws = [rng.standard_normal((2 * n, 3)) for _ in range(n)]
w = Tensor(ws[rank])


def g_of(f):
    return grad(lambda t: (f(t) * w).sum())(x).asnumpy()


np.testing.assert_allclose(g_of(comm.all_reduce), sum(ws), **tol)
big = np.stack(xs)
for op, pick in (("max", np.max), ("min", np.min)):
    mask = xs[rank] == pick(big, axis=0)
    np.testing.assert_allclose(g_of(lambda t, op=op: comm.all_reduce(t, op)), sum(ws) * mask, **tol)
prod = np.prod(big, axis=0)
np.testing.assert_allclose(
    g_of(lambda t: comm.all_reduce(t, "prod")), sum(ws) * prod / xs[rank], rtol=1e-9
)
wg = [rng.standard_normal((2 * n * n, 3)) for _ in range(n)]
wgt = Tensor(wg[rank])
gg = grad(lambda t: (comm.all_gather(t) * wgt).sum())(x).asnumpy()
np.testing.assert_allclose(gg, sum(wg)[2 * n * rank : 2 * n * (rank + 1)], **tol)
wr = [rng.standard_normal((2, 3)) for _ in range(n)]
wrt = Tensor(wr[rank])
gr = grad(lambda t: (comm.reduce_scatter(t) * wrt).sum())(x).asnumpy()
np.testing.assert_allclose(gr, np.concatenate(wr), **tol)
gb = g_of(lambda t: comm.broadcast(t, 0))
np.testing.assert_allclose(gb, sum(ws) if rank == 0 else 0 * ws[0], **tol)
wa = [rng.standard_normal((2, 3 * n)) for _ in range(n)]
wat = Tensor(wa[rank])
ga = grad(lambda t: (comm.all_to_all(t, 0, 1) * wat).sum())(x).asnumpy()
ref = np.concatenate([wa[j][:, 3 * rank : 3 * rank + 3] for j in range(n)])
np.testing.assert_allclose(ga, ref, **tol)

# groups: the even ranks
evens = list(range(0, n, 2))
if rank in evens:
    comm.create_group("evens", evens)
    out = comm.all_reduce(x, group="evens").asnumpy()
    np.testing.assert_allclose(out, sum(xs[r] for r in evens), **tol)
    assert comm.get_group_size("evens") == len(evens)
    assert comm.get_group_rank_from_world_rank(rank, "evens") == evens.index(rank)
    comm.destroy_group("evens")
print(f"collectives OK rank {rank} of {n}", flush=True)
