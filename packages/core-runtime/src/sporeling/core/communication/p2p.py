"""Non-blocking point-to-point messages whose receiver need not know the shape.

``isend(tensor, dst)`` posts a small header (dtype, shape) and the data, both
non-blocking; ``irecv(src)`` reads the header and returns a handle whose ``wait()``
gives the Tensor. Messages between two ranks with the same ``tag`` arrive in the order
they were posted (MPI's non-overtaking rule), so a pipeline schedule can pair its sends
and receives by order alone. Blocking ``send``/``recv`` (shape given by the receiver)
live in :mod:`.collectives`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor import Tensor
from .management import GlobalComm, get_group

__all__ = ["isend", "irecv", "P2PHandle"]

_WORLD = GlobalComm.WORLD_COMM_GROUP
_MAX_NDIM = 8
_DTYPES = [
    np.dtype(t)
    for t in ("float32", "float64", "float16", "int32", "int64", "int8", "uint8", "bool")
]


class P2PHandle:
    """An in-flight message: ``wait()`` returns ``None`` (send) or the Tensor (receive)."""

    def __init__(self, requests: list[Any], keep: Any = None, finish: Any = None) -> None:
        self._requests = requests
        self._keep = keep  # the buffers must outlive the non-blocking call
        self._finish = finish
        self._result: Any = None
        self._done = False

    def wait(self) -> Any:
        if not self._done:
            for r in self._requests:
                r.Wait()
            self._done = True
            if self._finish is not None:
                self._result = self._finish()
        return self._result


def _peer(func: str, arg: str, peer: Any, group: Any) -> Any:
    g = get_group(group, func)
    if isinstance(peer, bool) or not isinstance(peer, int) or not 0 <= peer < g.size:
        raise ValueError(f"{func}: argument '{arg}' expected a rank in [0, {g.size}), got {peer!r}")
    if peer == g.rank:
        raise ValueError(f"{func}: argument '{arg}' is this rank ({peer}); expected another rank")
    return g


def isend(tensor: Tensor, dst: int, group: str = _WORLD, tag: int = 0) -> P2PHandle:
    """Post ``tensor`` to rank ``dst`` of ``group`` (header, then data; non-blocking)."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"isend: argument 'tensor' expected a Tensor, got {type(tensor).__name__}")
    g = _peer("isend", "dst", dst, group)
    data = np.asarray(tensor.asnumpy())
    if not data.flags.c_contiguous:  # (np.ascontiguousarray would make a 0-d array 1-d)
        data = data.copy()
    if data.dtype not in _DTYPES or data.ndim > _MAX_NDIM:
        raise ValueError(
            f"isend: argument 'tensor' expected at most {_MAX_NDIM} dims of a dtype among "
            f"{[str(d) for d in _DTYPES]}, got {data.dtype} with shape {data.shape}"
        )
    header = np.full(2 + _MAX_NDIM, -1, np.int64)
    header[0], header[1] = _DTYPES.index(data.dtype), data.ndim
    header[2 : 2 + data.ndim] = data.shape
    reqs = [g.comm.Isend(header, dest=dst, tag=tag), g.comm.Isend(data, dest=dst, tag=tag)]
    return P2PHandle(reqs, keep=(header, data))


def irecv(src: int, group: str = _WORLD, tag: int = 0) -> P2PHandle:
    """Receive the next tensor ``src`` posted with ``tag`` (the header is read now,
    blocking; the data arrives by ``wait()``)."""
    g = _peer("irecv", "src", src, group)
    header = np.empty(2 + _MAX_NDIM, np.int64)
    g.comm.Recv(header, source=src, tag=tag)
    dtype, ndim = _DTYPES[int(header[0])], int(header[1])
    out = np.empty(tuple(int(s) for s in header[2 : 2 + ndim]), dtype)
    req = g.comm.Irecv(out, source=src, tag=tag)
    return P2PHandle([req], keep=out, finish=lambda: Tensor(out))
