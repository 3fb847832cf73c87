"""Run under ``mpiexec -n 2``: MPI started with MPI_THREAD_SINGLE (``get_thread_level()``
says "single") refuses interleaved copies on threads (``overlap=True``) with a clear error;
by default (``overlap=None``) the copies run one after the other, with a warning.

Prints ``OK thread_level`` on every rank.
"""

from __future__ import annotations

import mpi4py

mpi4py.rc.thread_level = "single"  # before MPI starts: ask for less than the copies need

import warnings  # noqa: E402

import numpy as np  # noqa: E402

from sporeling.core import Tensor, nn, ops, set_seed  # noqa: E402
from sporeling.core.communication import get_rank, get_thread_level, init  # noqa: E402
from sporeling.core.parallel.tensor_parallel import RowParallelDense  # noqa: E402


def main() -> None:
    init()
    assert get_thread_level() == "single", get_thread_level()
    set_seed(0)
    net = RowParallelDense(8, 4)
    x = Tensor(np.ones((4, 8), np.float32))
    inter = nn.MicroBatchInterleaved(net, 2)
    inter.overlap = True
    try:
        inter(x)
    except RuntimeError as exc:
        msg = str(exc)
        assert "MPI_THREAD_SERIALIZED" in msg and "MPI_THREAD_SINGLE" in msg, msg
    else:
        raise AssertionError("MPI_THREAD_SINGLE did not refuse copies on threads")
    want = ops.reduce_sum(ops.reshape(net(x), (2, 2, 4)), 0).asnumpy()
    inter.overlap = None  # the default: one after the other here, with a warning
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        np.testing.assert_allclose(inter(x).asnumpy(), want, 1e-6)
    assert any("MPI_THREAD_SERIALIZED" in str(w.message) for w in caught), caught
    assert inter.events.summary()["runs_during_flight"] == 0
    inter.overlap = False  # one after the other: no threads, no requirement
    np.testing.assert_allclose(inter(x).asnumpy(), want, 1e-6)
    print(f"OK thread_level rank={get_rank()}", flush=True)


if __name__ == "__main__":
    main()
