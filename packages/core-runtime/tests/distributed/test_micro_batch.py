"""``nn.MicroBatchInterleaved``: summed copies equal the full batch (loss and gradients),
and the copies take turns around their collectives.

In-process tests use a stand-in two-rank group (its all-reduce doubles, as if the other
rank held the same values) registered under a group name, so the scheduling, the event log
and the error paths are checked without MPI; ``mp_micro_batch.py`` checks the real thing
under ``mpiexec -n 2`` and ``-n 4`` with a tensor-parallel GPT block.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from _mp_launch import run_mpi

from sporeling.core import Tensor, communication, jit, nn, no_grad, ops, set_seed
from sporeling.core.communication import management
from sporeling.core.communication._backend import Pending
from sporeling.core.communication.overlap import current_copy


def _net():
    set_seed(3)
    return nn.WithLossCell(
        nn.SequentialCell([nn.Dense(5, 8, activation="relu"), nn.Dense(8, 3)]),
        nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="sum"),
    )


@pytest.mark.parametrize("overlap", [None, True, False])
@pytest.mark.parametrize("k", [1, 2, 4])
def test_loss_and_gradients_match_full_batch(k, overlap):
    rng = np.random.default_rng(0)
    x = Tensor(rng.standard_normal((8, 5)).astype(np.float32))
    y = Tensor(rng.integers(0, 3, (8,)).astype(np.int32))
    full = _net()
    inter = nn.MicroBatchInterleaved(_net(), k)
    inter.overlap = overlap
    lf, gf = ops.value_and_grad(full, None, full.trainable_params())(x, y)
    li, gi = ops.value_and_grad(inter, None, inter.trainable_params())(x, y)
    np.testing.assert_allclose(li.asnumpy(), lf.asnumpy(), 1e-5)
    for a, b in zip(gf, gi, strict=True):
        np.testing.assert_allclose(b.asnumpy(), a.asnumpy(), 1e-5, 1e-6)


def test_tuple_outputs_are_summed_and_errors():
    class Two(nn.Cell):
        def construct(self, x):
            return x.sum(), x.max()

    out = nn.MicroBatchInterleaved(Two(), 2)(Tensor(np.arange(4.0, dtype=np.float32)))
    assert [float(o.asnumpy()) for o in out] == [6.0, 4.0]
    with pytest.raises(ValueError, match="interleave_num=3"):
        nn.MicroBatchInterleaved(Two(), 3)(Tensor(np.ones(4, np.float32)))
    with pytest.raises(TypeError):
        nn.MicroBatchInterleaved(lambda x: x)
    bad = nn.MicroBatchInterleaved(Two(), 2)
    bad.overlap = "yes"
    with pytest.raises(TypeError, match="overlap"):
        bad(Tensor(np.ones(4, np.float32)))


def test_second_order_gradients_through_copies():
    """Nested differentiation runs the copies on the caller's tape (exact to any order)."""
    set_seed(0)
    cell = nn.Dense(3, 1, activation="tanh")
    x = Tensor(np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32))

    def g2(net):
        inner = ops.grad(lambda t: ops.reduce_sum(net(t) ** 2), 0)
        return ops.grad(lambda t: ops.reduce_sum(inner(t) ** 2), 0)(x)

    inter = nn.MicroBatchInterleaved(cell, 2)
    inter.overlap = True

    def copies_summed(t):  # what MicroBatchInterleaved computes: the copies' outputs summed
        return cell(t[:2]) + cell(t[2:])

    np.testing.assert_allclose(g2(inter).asnumpy(), g2(copies_summed).asnumpy(), 1e-5, 1e-6)


def test_tensor_backward_and_jit_through_copies():
    """``loss.backward()`` fills ``.grad`` through the copies' node; under ``jit`` the copies
    are traced as plain ops."""
    rng = np.random.default_rng(4)
    x = Tensor(rng.standard_normal((4, 5)).astype(np.float32))
    y = Tensor(rng.integers(0, 3, (4,)).astype(np.int32))
    full, inter = _net(), nn.MicroBatchInterleaved(_net(), 2)
    inter.overlap = True
    full(x, y).backward()
    inter(x, y).backward()
    for a, b in zip(full.trainable_params(), inter.trainable_params(), strict=True):
        np.testing.assert_allclose(b.grad.asnumpy(), a.grad.asnumpy(), 1e-5, 1e-6)
    traced = jit(lambda a, b: inter(a, b))
    np.testing.assert_allclose(traced(x, y).asnumpy(), full(x, y).asnumpy(), 1e-5)


# ---- a stand-in two-rank group ----------------------------------------------------------


class _Request:
    def __init__(self, log):
        self.log = log
        self.done = False

    def Test(self):  # noqa: N802 - mpi4py's name
        self.log.append("test")
        return self.done

    def Wait(self):  # noqa: N802
        self.done = True


class FakeGroup:
    """Rank 0 of two identical ranks: all-reduce(sum) = 2 * x, started non-blocking."""

    name, size, rank = "fake", 2, 0

    def __init__(self):
        self.calls = []

    def allreduce(self, a, op="sum"):
        self.calls.append(("allreduce", threading.current_thread().name))
        return a * 2

    def iallreduce(self, a, op="sum"):
        self.calls.append(("iallreduce", threading.current_thread().name))
        return Pending(_Request(self.calls), a * 2)

    def allgather_object(self, obj):  # the collectives' shape check: both ranks agree
        return [obj, obj]


@pytest.fixture
def fake_group(monkeypatch):
    communication.init()
    group = FakeGroup()
    monkeypatch.setitem(management._State.groups, "fake", group)
    return group


class ReduceNet(nn.Cell):
    """Dense -> all_reduce -> Dense: one collective in the forward, one in the backward."""

    def __init__(self, fail_on_copy=None):
        super().__init__()
        set_seed(5)
        self.a = nn.Dense(4, 6, activation="tanh")
        self.b = nn.Dense(6, 2)
        self.fail_on_copy = fail_on_copy

    def construct(self, x):
        h = communication.all_reduce(self.a(x), group="fake")
        copy = current_copy()
        if copy is not None and copy.index == self.fail_on_copy:
            raise ValueError("boom in a copy")
        return ops.reduce_sum(self.b(h) ** 2)


def _first(events, phase, copy, kind):
    return next(i for i, e in enumerate(events) if (e.phase, e.copy, e.kind) == (phase, copy, kind))


@pytest.mark.parametrize("threads", [True, False])
def test_copies_take_turns_around_collectives(fake_group, threads):
    x = Tensor(np.random.default_rng(2).standard_normal((6, 4)).astype(np.float32))
    net = ReduceNet()
    params = net.trainable_params()
    lf, gf = ops.value_and_grad(net, 0, params)(x)
    inter = nn.MicroBatchInterleaved(net, 3)
    inter.overlap = threads
    li, gi = ops.value_and_grad(inter, 0, params)(x)
    np.testing.assert_allclose(li.asnumpy(), lf.asnumpy(), 1e-5)
    np.testing.assert_allclose(gi[0].asnumpy(), gf[0].asnumpy(), 1e-5, 1e-6)
    for a, b in zip(gf[1], gi[1], strict=True):
        np.testing.assert_allclose(b.asnumpy(), a.asnumpy(), 1e-5, 1e-6)

    ev = inter.events.events
    for phase in ("forward", "backward"):
        recs = inter.events.collectives(phase)
        assert [r["copy"] for r in recs] == [0, 1, 2]  # the same order on every rank
        assert all("done" in r for r in recs)
        summary = inter.events.summary(phase)
        assert summary["collectives"] == 3
        if threads:  # copies 1 and 2 compute while copy 0's all-reduce is in flight
            assert _first(ev, phase, 1, "run") < _first(ev, phase, 0, "done")
            assert _first(ev, phase, 2, "run") < _first(ev, phase, 0, "done")
            assert summary["runs_during_flight"] == 2 * 2  # 1 and 2 start, 1 and 2 resume
        else:
            assert _first(ev, phase, 0, "done") < _first(ev, phase, 1, "run")
            assert summary["runs_during_flight"] == 0
    started = [c for c in fake_group.calls if c[0] == "iallreduce"]
    assert len(started) == 6 + 0  # 3 copies x (forward + backward), none blocking
    on_threads = {name.startswith("sporeling-copy-") for _, name in started}
    assert on_threads == {threads}
    if threads:  # in-flight requests are polled when the turn changes hands
        assert "test" in fake_group.calls


def test_a_failing_copy_raises_on_the_caller_and_stops_the_others(fake_group):
    inter = nn.MicroBatchInterleaved(ReduceNet(fail_on_copy=0), 3)
    inter.overlap = True
    before = threading.active_count()
    with pytest.raises(ValueError, match="boom in a copy"):
        inter(Tensor(np.ones((6, 4), np.float32)))
    assert threading.active_count() == before  # every copy thread has ended
    ends = [e for e in inter.events.events if e.kind == "end"]
    assert ends == []  # copy 0 failed after its all-reduce; 1 and 2 were stopped, waiting


# ---- the tape and threads -----------------------------------------------------------------


def test_two_threads_recording_tapes_at_once_do_not_mix():
    """Grad mode is per thread: one thread under no_grad does not stop another recording,
    and each thread's gradients are its own."""
    from sporeling.core.autograd.tape import GradMode

    barrier = threading.Barrier(2, timeout=30)
    out = {}

    def worker(name, scale, record):
        w = Tensor(np.full((3,), scale, np.float32))
        w.requires_grad = True
        for _ in range(50):
            if record:
                y = ops.reduce_sum(w * w * scale)
                barrier.wait()  # the other thread is inside no_grad now
                out[name] = (GradMode.enabled, y._node is not None, ops.grad(
                    lambda t: ops.reduce_sum(t * t * scale))(w).asnumpy())  # fmt: skip
                barrier.wait()
            else:
                with no_grad():
                    barrier.wait()
                    out[name] = (GradMode.enabled, (w * w)._node is not None, None)
                    barrier.wait()

    threads = [
        threading.Thread(target=worker, args=("rec", 2.0, True)),
        threading.Thread(target=worker, args=("off", 3.0, False)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out["rec"][:2] == (True, True)
    np.testing.assert_allclose(out["rec"][2], np.full(3, 8.0))  # d/dw sum(2 w^2) at w=2
    assert out["off"][:2] == (False, False)
    assert GradMode.enabled  # the main thread's mode was never touched


# ---- under MPI ----------------------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 4])
def test_tensor_parallel_block_interleaved_under_mpi(n):
    out = run_mpi("mp_micro_batch.py", n)
    assert out.count("OK micro_batch") == n, out
    assert f"size={n}" in out


def test_mpi_without_thread_support_is_refused_clearly():
    out = run_mpi("mp_thread_level.py", 2)
    assert out.count("OK thread_level") == 2, out


def test_get_thread_level_names_what_mpi_provided(monkeypatch):
    communication.init()
    level = communication.get_thread_level()
    try:
        from mpi4py import MPI
    except ImportError:  # a world of one without MPI
        assert level is None
    else:
        names = {MPI.THREAD_SINGLE: "single", MPI.THREAD_FUNNELED: "funneled"}
        names |= {MPI.THREAD_SERIALIZED: "serialized", MPI.THREAD_MULTIPLE: "multiple"}
        assert level == names[MPI.Query_thread()]
    monkeypatch.setattr(communication.GlobalComm, "INITED", False)
    assert communication.get_thread_level() is None  # before init
