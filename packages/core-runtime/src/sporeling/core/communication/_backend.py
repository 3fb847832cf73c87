"""Transports under the collectives: a world of one process, MPI (mpi4py) and NCCL (CuPy).

Each backend exposes the same small set of blocking calls on raw arrays (NumPy on the CPU,
CuPy on the GPU) plus non-blocking all-reduce, all-gather and reduce-scatter (each returns
a :class:`Pending` handle whose ``wait()`` gives the result), over a :class:`Group`. Nothing here is
home-made: MPI does the CPU work, NCCL the GPU work (bootstrapped by broadcasting its
unique id over MPI), and a GPU array meets an MPI-only world by staging through the host.

mpi4py and CuPy are imported lazily; their absence gives an error naming the extra.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any

import numpy as np

__all__ = ["Group", "Pending", "import_mpi", "launched_by_mpi"]

_LAUNCH_VARS = ("PMI_RANK", "PMI_SIZE", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE", "MPI_LOCALNRANKS")


def launched_by_mpi() -> bool:
    """True when this process was started by mpiexec (a process manager set its variables)."""
    return any(v in os.environ for v in _LAUNCH_VARS)


def import_mpi(caller: str) -> Any:
    """``mpi4py.MPI``, or an ImportError that names the ``[mpi]`` extra."""
    try:
        from mpi4py import MPI
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            f"{caller}: the MPI backend needs mpi4py and an MPI library; install the extra "
            "with `pip install 'sporeling-core-runtime[mpi]'` (mpi4py and the mpich wheel)"
        ) from exc
    return MPI


def import_nccl(caller: str) -> Any:
    try:
        import cupy
        from cupy.cuda import nccl
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            f"{caller}: the NCCL backend needs CuPy with NCCL; install the extra with "
            "`pip install 'sporeling-core-runtime[gpu]'` (and `[mpi]` to bootstrap it)"
        ) from exc
    return cupy, nccl


def _is_gpu(a: Any) -> bool:
    return type(a).__module__.startswith("cupy")


_MPI_OPS = {"sum": "SUM", "max": "MAX", "min": "MIN", "prod": "PROD"}
_NUMPY_OPS = {"sum": np.add, "max": np.maximum, "min": np.minimum, "prod": np.multiply}


class _Done:
    """A request that is already complete (one-process worlds, staged GPU copies)."""

    def __init__(self, after: Any = None) -> None:
        self._after = after

    def Test(self) -> bool:  # noqa: N802 - mirrors mpi4py.MPI.Request
        return True

    def Wait(self) -> None:  # noqa: N802
        if self._after is not None:
            after, self._after = self._after, None
            after()


class _StreamRequest:
    """A NCCL call queued on a side stream; ``Wait`` makes the current stream wait for it."""

    def __init__(self, cupy: Any, stream: Any) -> None:
        self._event = stream.record()
        self._cupy = cupy

    def Test(self) -> bool:  # noqa: N802
        return bool(self._event.done)

    def Wait(self) -> None:  # noqa: N802
        self._cupy.cuda.get_current_stream().wait_event(self._event)


class Pending:
    """A started non-blocking collective: ``test()`` polls (and lets MPI progress),
    ``wait()`` blocks until it is complete and returns its result array.

    The input buffer is kept alive until then (MPI and NCCL read it in the background).
    """

    def __init__(self, request: Any, out: Any, keep: Any = None, after: Any = None) -> None:
        self._request = request
        self._out = out
        self._keep = keep
        self._after = after
        self.complete = isinstance(request, _Done) and after is None

    def test(self) -> bool:
        if not self.complete and self._request.Test():
            self.complete = True
        return self.complete

    def wait(self) -> Any:
        if self._request is not None:
            self._request.Wait()
            self._request = None
            self._keep = None
            if self._after is not None:
                self._out = self._after(self._out)
                self._after = None
        self.complete = True
        return self._out


class Group:
    """A set of world ranks and the communicators that reach them.

    ``comm`` is an mpi4py communicator (None in a one-process world), ``nccl`` a
    ``cupy.cuda.nccl.NcclCommunicator`` when the backend is NCCL.
    """

    def __init__(self, name: str, ranks: list[int], rank: int, comm: Any, nccl: Any = None):
        self.name = name
        self.ranks = list(ranks)  # world ranks, in group-rank order
        self.rank = rank  # this process's rank inside the group
        self.size = len(ranks)
        self.comm = comm
        self.nccl = nccl
        self._stream = None

    # ---- helpers ----------------------------------------------------------------------
    def _mpi(self) -> Any:
        from mpi4py import MPI

        return MPI

    def _mpi_op(self, op: str) -> Any:
        return getattr(self._mpi(), _MPI_OPS[op])

    def _nccl_op(self, op: str) -> Any:
        from cupy.cuda import nccl

        return {"sum": nccl.NCCL_SUM, "max": nccl.NCCL_MAX, "min": nccl.NCCL_MIN,
                "prod": nccl.NCCL_PROD}[op]  # fmt: skip

    @staticmethod
    def _nccl_dtype(a: Any) -> Any:
        from cupy.cuda import nccl

        table = {
            np.dtype(np.float16): nccl.NCCL_FLOAT16, np.dtype(np.float32): nccl.NCCL_FLOAT32,
            np.dtype(np.float64): nccl.NCCL_FLOAT64, np.dtype(np.int32): nccl.NCCL_INT32,
            np.dtype(np.int64): nccl.NCCL_INT64, np.dtype(np.uint8): nccl.NCCL_UINT8,
            np.dtype(np.int8): nccl.NCCL_INT8, np.dtype(np.bool_): nccl.NCCL_UINT8,
        }  # fmt: skip
        try:
            return table[np.dtype(a.dtype)]
        except KeyError:
            raise TypeError(f"NCCL: dtype {a.dtype} is not supported") from None

    def _staged(self, fn: Any, a: Any, *args: Any) -> Any:
        """Run an MPI call on a GPU array through host memory."""
        import cupy

        return cupy.asarray(fn(cupy.asnumpy(a), *args))

    def _side_stream(self) -> Any:
        import cupy

        if self._stream is None:
            self._stream = cupy.cuda.Stream(non_blocking=True)
        return self._stream

    # ---- collectives on raw arrays ---------------------------------------------------
    def allreduce(self, a: Any, op: str = "sum") -> Any:
        if self.size == 1:
            return a.copy()
        if _is_gpu(a):
            if self.nccl is None:
                return self._staged(self.allreduce, a, op)
            a = a if a.flags.c_contiguous else a.copy()
            out = a.copy()
            import cupy

            stream = cupy.cuda.get_current_stream().ptr
            self.nccl.allReduce(a.data.ptr, out.data.ptr, a.size, self._nccl_dtype(a),
                                self._nccl_op(op), stream)  # fmt: skip
            return out
        a = np.ascontiguousarray(a).reshape(a.shape)  # keeps 0-d shapes
        out = np.empty_like(a)
        self.comm.Allreduce(a, out, op=self._mpi_op(op))
        return out

    def iallreduce_inplace(self, buf: Any, op: str = "sum") -> Any:
        """Start an in-place all-reduce of a contiguous buffer; returns a request."""
        if self.size == 1:
            return _Done()
        if _is_gpu(buf):
            if self.nccl is None:

                def finish() -> None:
                    buf[...] = self._staged(self.allreduce, buf, op)

                return _Done(finish)
            import cupy

            stream = self._side_stream()
            stream.wait_event(cupy.cuda.get_current_stream().record())
            self.nccl.allReduce(buf.data.ptr, buf.data.ptr, buf.size, self._nccl_dtype(buf),
                                self._nccl_op(op), stream.ptr)  # fmt: skip
            return _StreamRequest(cupy, stream)
        return self.comm.Iallreduce(self._mpi().IN_PLACE, buf, op=self._mpi_op(op))

    def _start(self, call: str, a: Any, out: Any, *args: Any, **kw: Any) -> Pending:
        """Start a non-blocking collective: MPI's ``I<call>`` on CPU arrays, NCCL's on a
        side stream for GPU arrays (``call`` is then the NCCL method name)."""
        if _is_gpu(a):
            import cupy

            stream = self._side_stream()
            stream.wait_event(cupy.cuda.get_current_stream().record())
            getattr(self.nccl, call)(a.data.ptr, out.data.ptr, *args, stream.ptr)
            return Pending(_StreamRequest(cupy, stream), out, keep=a)
        return Pending(getattr(self.comm, call)(a, out, **kw), out, keep=a)

    def iallreduce(self, a: Any, op: str = "sum") -> Pending:
        """Start ``allreduce(a, op)``; ``wait()`` returns the result (a new array)."""
        if self.size == 1 or (_is_gpu(a) and self.nccl is None):
            return Pending(_Done(), self.allreduce(a, op))
        if _is_gpu(a):
            import cupy

            a = cupy.ascontiguousarray(a).reshape(a.shape)
            return self._start("allReduce", a, cupy.empty_like(a), a.size,
                               self._nccl_dtype(a), self._nccl_op(op))  # fmt: skip
        a = np.ascontiguousarray(a).reshape(a.shape)  # keeps 0-d shapes
        return self._start("Iallreduce", a, np.empty_like(a), op=self._mpi_op(op))

    def iallgather(self, a: Any) -> Pending:
        """Start ``allgather(a)`` (concatenation along axis 0)."""
        if self.size == 1 or a.ndim == 0 or (_is_gpu(a) and self.nccl is None):
            return Pending(_Done(), self.allgather(a))
        shape = (self.size * a.shape[0], *a.shape[1:])
        if _is_gpu(a):
            import cupy

            a = cupy.ascontiguousarray(a).reshape(a.shape)
            out = cupy.empty(shape, a.dtype)
            return self._start("allGather", a, out, a.size, self._nccl_dtype(a))
        a = np.ascontiguousarray(a).reshape(a.shape)  # keeps 0-d shapes
        return self._start("Iallgather", a, np.empty(shape, a.dtype))

    def ireduce_scatter(self, a: Any, op: str = "sum") -> Pending:
        """Start ``reduce_scatter(a, op)`` (this rank keeps block ``rank`` of axis 0)."""
        if self.size == 1 or (_is_gpu(a) and self.nccl is None):
            return Pending(_Done(), self.reduce_scatter(a, op))
        block = (a.shape[0] // self.size, *a.shape[1:])
        if _is_gpu(a):
            import cupy

            a = cupy.ascontiguousarray(a).reshape(a.shape)
            out = cupy.empty(block, a.dtype)
            return self._start("reduceScatter", a, out, out.size, self._nccl_dtype(a),
                               self._nccl_op(op))  # fmt: skip
        a = np.ascontiguousarray(a).reshape(a.shape)  # keeps 0-d shapes
        out = np.empty(block, a.dtype)
        return self._start("Ireduce_scatter_block", a, out, op=self._mpi_op(op))

    def allgather(self, a: Any) -> Any:
        """Concatenate every rank's ``a`` along axis 0 (group-rank order)."""
        if self.size == 1:
            return a.copy()
        shape = (self.size * a.shape[0], *a.shape[1:]) if a.ndim else (self.size,)
        if _is_gpu(a):
            if self.nccl is None:
                return self._staged(self.allgather, a)
            import cupy

            a = cupy.ascontiguousarray(a).reshape(a.shape)
            out = cupy.empty(shape, a.dtype)
            self.nccl.allGather(a.data.ptr, out.data.ptr, a.size, self._nccl_dtype(a),
                                cupy.cuda.get_current_stream().ptr)  # fmt: skip
            return out
        a = np.ascontiguousarray(a).reshape(a.shape)  # keeps 0-d shapes
        out = np.empty(shape, a.dtype)
        self.comm.Allgather(a, out)
        return out

    def reduce_scatter(self, a: Any, op: str = "sum") -> Any:
        """Reduce ``a`` over ranks and keep this rank's equal block of axis 0."""
        if self.size == 1:
            return a.copy()
        block = (a.shape[0] // self.size, *a.shape[1:])
        if _is_gpu(a):
            if self.nccl is None:
                return self._staged(self.reduce_scatter, a, op)
            import cupy

            a = cupy.ascontiguousarray(a).reshape(a.shape)
            out = cupy.empty(block, a.dtype)
            stream = cupy.cuda.get_current_stream().ptr
            self.nccl.reduceScatter(a.data.ptr, out.data.ptr, out.size, self._nccl_dtype(a),
                                    self._nccl_op(op), stream)  # fmt: skip
            return out
        a = np.ascontiguousarray(a).reshape(a.shape)  # keeps 0-d shapes
        out = np.empty(block, a.dtype)
        self.comm.Reduce_scatter_block(a, out, op=self._mpi_op(op))
        return out

    def reduce_scatter_v(self, flat: Any, counts: list[int], op: str = "sum") -> Any:
        """Reduce a 1-D buffer and keep this rank's ``counts[rank]`` elements."""
        if self.size == 1:
            return flat.copy()
        if _is_gpu(flat):
            if self.nccl is None or len(set(counts)) != 1:
                return self._staged(self.reduce_scatter_v, flat, counts, op)
            return self.reduce_scatter(flat, op)
        out = np.empty(counts[self.rank], flat.dtype)
        self.comm.Reduce_scatter(np.ascontiguousarray(flat), out, counts, op=self._mpi_op(op))
        return out

    def allgather_v_inplace(self, flat: Any, counts: list[int]) -> None:
        """Every rank's block ``counts[r]`` of the 1-D ``flat`` gathered into ``flat``."""
        if self.size == 1:
            return
        displs = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        if _is_gpu(flat):
            import cupy

            if self.nccl is None or len(set(counts)) != 1:
                host = cupy.asnumpy(flat)
                self.allgather_v_inplace(host, counts)
                flat[...] = cupy.asarray(host)
                return
            n = counts[0]
            mine = flat[self.rank * n : (self.rank + 1) * n].copy()
            self.nccl.allGather(mine.data.ptr, flat.data.ptr, n, self._nccl_dtype(flat),
                                cupy.cuda.get_current_stream().ptr)  # fmt: skip
            return
        MPI = self._mpi()  # noqa: N806
        self.comm.Allgatherv(MPI.IN_PLACE, [flat, (list(counts), [int(d) for d in displs])])

    def broadcast(self, a: Any, root: int) -> Any:
        if self.size == 1:
            return a.copy()
        if _is_gpu(a):
            if self.nccl is None:
                return self._staged(self.broadcast, a, root)
            import cupy

            out = cupy.ascontiguousarray(a).reshape(a.shape).copy()
            self.nccl.bcast(out.data.ptr, out.size, self._nccl_dtype(out), root,
                            cupy.cuda.get_current_stream().ptr)  # fmt: skip
            return out
        out = np.ascontiguousarray(a).reshape(a.shape).copy()
        self.comm.Bcast(out, root=root)
        return out

    def alltoall(self, a: Any) -> Any:
        """Block ``i`` of axis 0 goes to rank ``i``; block ``j`` of the result came from ``j``."""
        if self.size == 1:
            return a.copy()
        if _is_gpu(a):
            return self._staged(self.alltoall, a)  # NCCL has no all-to-all: grouped p2p later
        a = np.ascontiguousarray(a).reshape(a.shape)  # keeps 0-d shapes
        out = np.empty_like(a)
        self.comm.Alltoall(a, out)
        return out

    def send(self, a: Any, dst: int, tag: int) -> None:
        if _is_gpu(a):
            import cupy

            a = cupy.asnumpy(a)
        self.comm.Send(np.ascontiguousarray(a), dest=dst, tag=tag)

    def recv(self, shape: tuple[int, ...], dtype: Any, src: int, tag: int) -> Any:
        out = np.empty(shape, dtype)
        self.comm.Recv(out, source=src, tag=tag)
        return out

    def probe(self, src: int, tag: int) -> int:
        """Block until a message from ``src`` (-1: any rank) with ``tag`` is queued; its sender."""
        MPI = self._mpi()  # noqa: N806
        status = MPI.Status()
        self.comm.Probe(source=MPI.ANY_SOURCE if src < 0 else src, tag=tag, status=status)
        return int(status.Get_source())

    def barrier(self) -> None:
        if self.size > 1:
            if self.nccl is not None:
                import cupy

                cupy.cuda.get_current_stream().synchronize()
            self.comm.Barrier()

    def allgather_object(self, obj: Any) -> list[Any]:
        """Small Python objects from every rank (configuration checks)."""
        if self.size == 1:
            return [obj]
        return self.comm.allgather(obj)

    def free(self) -> None:
        if self.comm is not None and self.name not in ("world",):
            with contextlib.suppress(Exception):  # freeing is best effort at shutdown
                self.comm.Free()
        self.comm = None
        self.nccl = None


def install_abort_hook(world_comm: Any, rank: int, size: int) -> None:
    """Turn an uncaught exception on any rank into a job-wide abort with that rank's error.

    Without this, the other ranks would wait forever in their next collective.
    """
    previous = sys.excepthook

    def hook(exc_type: Any, exc: Any, tb: Any) -> None:
        import traceback

        text = "".join(traceback.format_exception(exc_type, exc, tb))
        sys.stderr.write(
            f"sporeling: rank {rank} of {size} failed; aborting the job\n"
            + "".join(f"[rank {rank}] {line}\n" for line in text.rstrip().splitlines())
        )
        sys.stderr.flush()
        sys.stdout.flush()
        if previous is not hook and exc_type is KeyboardInterrupt:
            previous(exc_type, exc, tb)
        world_comm.Abort(1)

    sys.excepthook = hook
