"""Data parallelism: ``DistributedGradReducer``, a bucketed gradient all-reduce that starts
while the backward pass is still running.

How it works (the same plan as MindSpore's fused AllReduce and PyTorch's DDP):

* Buckets: the parameters, in reverse order (roughly the order backward finishes them),
  are packed into flat buffers of at most ``comm_fusion['allreduce']`` MB (``'size'``
  mode; ``'index'`` mode splits at the given parameter indices; ``'auto'`` is 64 MB, as in
  MindSpore). float16 gradients travel as float32 (``gradient_fp32_sync``).
* Overlap: inside :meth:`capture` the reducer listens to the autograd tape
  (:data:`~sporeling.core.autograd.tape.GRADIENT_READY_HOOKS`). When a parameter's
  gradient is final it is copied into its bucket; a full bucket starts a non-blocking
  ``MPI_Iallreduce`` (NCCL on a side stream for GPU tensors) at once, in bucket order on
  every rank. Each later hook call also tests the open requests so MPI makes progress.
* Completion: calling the reducer with the step's gradients starts what is left, waits,
  divides by ``degree`` when ``mean`` and returns the reduced gradients. A gradient that
  was changed after backward (e.g. multiplied by ``sens``) is reduced again, blocking, so
  the result is always the all-reduce of what was passed in.
* Measured, not assumed: :attr:`stats` holds, per step, the seconds spent in MPI calls
  during backward (``launch_s``), blocked at the end (``wait_s``) and the bucket count;
  ``sporeling``'s ``benchmarks/bench_distributed.py`` compares ``wait_s`` with the time of
  the same all-reduces run after backward (:attr:`overlap` = False).

* GRAPH_MODE: inside a compiled step (a trace) the gradients are symbolic, so there is no
  overlap: each bucket becomes one ``all_reduce`` op of the graph over the concatenated,
  flattened gradients (the same buckets, sums and division), and :attr:`stats` is not
  updated by the compiled step.

At the first step every rank compares its parameter names, shapes and dtypes, its
parallel context and its bucket plan with the others', and raises a ``RuntimeError``
naming the ranks that disagree, instead of hanging or mixing mismatched buffers.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from .._backend import scatter_at
from .._eager import EagerInterpreter
from .._primitive import current_interpreter
from ..communication.management import GlobalComm, get_group
from ..compiler.graph import TracingError
from ..errors import describe
from ..nn.cell import Cell
from ..tensor import Tensor
from . import context as _ctx

__all__ = ["DistributedGradReducer", "check_consistency"]

_MB = 1 << 20


def _tracing() -> bool:
    """Whether ops are being traced into a graph (GRAPH_MODE's compile), not run."""
    return not isinstance(current_interpreter(), EagerInterpreter)


def _is_row_sparse(g: Any) -> bool:
    return hasattr(g, "indices") and hasattr(g, "values") and hasattr(g, "dense_shape")


def check_consistency(group: Any, what: str, value: Any) -> None:
    """Raise on every rank when ``value`` (a small picklable description) differs."""
    values = group.allgather_object(value)
    if all(v == values[0] for v in values):
        return
    ref = values[0]
    bad = [r for r, v in enumerate(values) if v != ref]
    detail = ""
    if isinstance(ref, dict):
        diffs = [
            f"{k}: rank 0 has {ref.get(k)!r}, rank {bad[0]} has {values[bad[0]].get(k)!r}"
            for k in sorted(set(ref) | set(values[bad[0]]))
            if ref.get(k) != values[bad[0]].get(k)
        ]
        detail = "; ".join(diffs[:4])
    raise RuntimeError(
        f"{what}: ranks disagree on their configuration (ranks {bad} differ from rank 0): "
        f"{detail}. Every rank must build the same network and call "
        "set_auto_parallel_context with the same settings"
    )


class _Bucket:
    __slots__ = ("slots", "offsets", "size", "dtype", "device", "buf", "remaining", "req",
                 "got")  # fmt: skip

    def __init__(self, slots: list[int], sizes: list[int], dtype: Any, device: Any) -> None:
        self.slots = slots
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.size = int(self.offsets[-1])
        self.dtype = dtype
        self.device = device
        self.buf: Any = None
        self.remaining = 0
        self.req: Any = None
        self.got: dict[int, Any] = {}


class DistributedGradReducer(Cell):
    """``DistributedGradReducer(parameters, mean=None, degree=None, fusion_type=1,
    group=GlobalComm.WORLD_COMM_GROUP)``: all-reduce gradients over ``group``.

    ``mean=None`` reads ``gradients_mean`` from the parallel context; ``degree`` (default:
    the group size) is the divisor when averaging. ``reducer(grads)`` returns the reduced
    gradients, one per parameter.
    """

    def __init__(
        self,
        parameters: Any,
        mean: Any = None,
        degree: Any = None,
        fusion_type: int = 1,
        group: str = GlobalComm.WORLD_COMM_GROUP,
    ) -> None:
        super().__init__(auto_prefix=False)
        name = "DistributedGradReducer"
        params = list(parameters)
        if not params or not all(isinstance(p, Tensor) for p in params):
            raise TypeError(
                f"{name}: argument 'parameters' expected a non-empty list of Parameters, "
                f"got {describe(parameters)}"
            )
        if not GlobalComm.INITED:
            raise RuntimeError(
                f"{name}: the communication backend is not initialized; call "
                "sporeling.core.communication.init() before building data-parallel training"
            )
        self._group = get_group(group, name)
        self._group_name = group
        if mean is None:
            mean = _ctx.get_auto_parallel_context("gradients_mean")
        if not isinstance(mean, bool):
            raise TypeError(f"{name}: argument 'mean' expected a bool or None, got {mean!r}")
        if degree is None:
            degree = self._group.size
        if isinstance(degree, bool) or not isinstance(degree, int) or degree < 1:
            raise ValueError(f"{name}: argument 'degree' expected a positive int, got {degree!r}")
        self.mean = mean
        self.degree = degree
        self.fusion_type = fusion_type
        self._grad_params = params
        self._index = {id(p): i for i, p in enumerate(params)}
        self._fp32 = bool(_ctx.get_auto_parallel_context("gradient_fp32_sync"))
        self._buckets = self._plan()
        self._slot_bucket = {s: b for b in self._buckets for s in b.slots}
        #: start all-reduces during backward (False: all after backward, for comparison)
        self.overlap = True
        self.stats: dict[str, Any] = {}
        self.totals = {"steps": 0, "launch_s": 0.0, "wait_s": 0.0, "bytes": 0}
        self._capturing = False
        self._captured: dict[int, Any] = {}
        self._next = 0
        self._launch_s = 0.0
        check_consistency(self._group, name, self._fingerprint())

    # ---- plan -------------------------------------------------------------------------
    def _bucket_limit(self) -> tuple[str, Any]:
        cfg = _ctx.get_auto_parallel_context("comm_fusion").get("allreduce")
        if cfg is None:
            return "size", 64
        if cfg["mode"] == "auto":
            return "size", 64
        return cfg["mode"], cfg["config"]

    def _plan(self) -> list[_Bucket]:
        mode, cfg = self._bucket_limit()
        cuts = set(cfg) if mode == "index" else set()
        limit = float(cfg) * _MB if mode == "size" else float("inf")
        buckets: list[_Bucket] = []
        cur: list[int] = []
        cur_bytes = 0
        key = None

        def close() -> None:
            if cur:
                p0 = self._grad_params[cur[0]]
                sizes = [int(self._grad_params[i].size) for i in cur]
                buckets.append(_Bucket(list(cur), sizes, self._wire_dtype(p0), p0._device))

        for i in reversed(range(len(self._grad_params))):
            p = self._grad_params[i]
            k = (id(p._device), self._wire_dtype(p))
            nbytes = int(p.size) * np.dtype(self._wire_dtype(p)).itemsize
            if cur and (k != key or cur_bytes + nbytes > limit or (i + 1) in cuts):
                close()
                cur, cur_bytes = [], 0
            cur.append(i)
            cur_bytes += nbytes
            key = k
        close()
        return buckets

    def _wire_dtype(self, p: Tensor) -> Any:
        dt = np.dtype(p._data.dtype)
        if self._fp32 and dt == np.float16:
            return np.dtype(np.float32)
        return dt

    def _fingerprint(self) -> dict[str, Any]:
        return {
            "parameters": [
                (getattr(p, "name", "?"), tuple(p.shape), str(p.dtype)) for p in self._grad_params
            ],  # fmt: skip
            "parallel context": _ctx.snapshot(),
            "buckets": [b.slots for b in self._buckets],
            "mean": self.mean,
            "degree": self.degree,
        }

    @property
    def num_buckets(self) -> int:
        return len(self._buckets)

    # ---- overlap with backward -------------------------------------------------------
    @contextlib.contextmanager
    def capture(self) -> Iterator[None]:
        """While active, gradients that backward finishes are reduced in the background."""
        from ..autograd.tape import GRADIENT_READY_HOOKS

        self._reset()
        if not self.overlap or self._group.size == 1 or _tracing():
            yield
            return
        self._capturing = True
        GRADIENT_READY_HOOKS.append(self._on_ready)
        try:
            yield
        finally:
            GRADIENT_READY_HOOKS.remove(self._on_ready)

    def _reset(self) -> None:
        for b in self._buckets:
            b.buf = None
            b.req = None
            b.got = {}
            b.remaining = len(b.slots)
        self._captured = {}
        self._next = 0
        self._launch_s = 0.0

    def _on_ready(self, t: Any, g: Any) -> None:
        slot = self._index.get(id(t))
        if slot is None or slot in self._captured or not isinstance(g, Tensor):
            return
        t0 = time.perf_counter()
        b = self._slot_bucket[slot]
        self._fill(b, slot, g)
        self._captured[slot] = g
        b.remaining -= 1
        self._launch_ready()
        for other in self._buckets[: self._next]:
            if other.req is not None:
                other.req.Test()  # let MPI progress the open all-reduces
        self._launch_s += time.perf_counter() - t0

    def _fill(self, b: _Bucket, slot: int, g: Tensor) -> None:
        if b.buf is None:
            b.buf = b.device.xp.empty(b.size, b.dtype)
        j = b.slots.index(slot)
        a, e = b.offsets[j], b.offsets[j + 1]
        b.buf[a:e] = g._data.reshape(-1)
        b.got[slot] = g

    def _launch_ready(self) -> None:
        while self._next < len(self._buckets) and self._buckets[self._next].remaining == 0:
            b = self._buckets[self._next]
            b.req = self._group.iallreduce_inplace(b.buf, "sum")
            self._next += 1

    # ---- the reduction ---------------------------------------------------------------
    def construct(self, grads: Any) -> tuple[Any, ...]:
        grads = tuple(grads)
        if len(grads) != len(self._grad_params):
            raise ValueError(
                f"DistributedGradReducer: argument 'grads' expected {len(self._grad_params)} "
                f"gradients (one per parameter), got {len(grads)}"
            )
        if _tracing():
            return self._traced(grads)
        t0 = time.perf_counter()
        if not self._capturing:
            self._reset()
        early = self._next  # buckets started during backward
        redo = []  # captured but changed after backward: reduce again, blocking
        for slot, g in enumerate(grads):
            if _is_row_sparse(g):
                g = self._densify(slot, g)
            if slot in self._captured:
                if g is not self._captured[slot]:
                    redo.append(slot)
                continue
            b = self._slot_bucket[slot]
            self._fill(b, slot, g)
            b.remaining -= 1
        self._launch_ready()
        t1 = time.perf_counter()
        for b in self._buckets:
            b.req.Wait()
        wait = time.perf_counter() - t1
        scale = 1.0 / self.degree if self.mean else None
        out: list[Any] = [None] * len(grads)
        for b in self._buckets:
            if scale is not None:
                b.buf *= b.dtype.type(scale)
            for j, slot in enumerate(b.slots):
                p = self._grad_params[slot]
                view = b.buf[b.offsets[j] : b.offsets[j + 1]].reshape(p.shape)
                if view.dtype != p._data.dtype:
                    view = view.astype(p._data.dtype)
                out[slot] = Tensor._wrap(view, p._device)
        for slot in redo:
            g = grads[slot]
            red = self._group.allreduce(g._data, "sum")
            out[slot] = Tensor._wrap(red * red.dtype.type(scale) if scale else red, g._device)
        self.stats = {
            "buckets": len(self._buckets),
            "bytes": int(sum(b.size * b.dtype.itemsize for b in self._buckets)),
            "overlapped_buckets": early,
            "launch_s": self._launch_s + (t1 - t0),
            "wait_s": wait,
            "redone": len(redo),
        }
        self.totals["steps"] += 1
        self.totals["launch_s"] += self.stats["launch_s"]
        self.totals["wait_s"] += wait
        self.totals["bytes"] += self.stats["bytes"]
        self._capturing = False
        self._captured = {}
        return tuple(out)

    def _traced(self, grads: tuple[Any, ...]) -> tuple[Any, ...]:
        """The reduction as graph ops: one ``all_reduce`` per bucket (see the module doc)."""
        from .. import ops
        from ..communication.collectives import all_reduce

        if any(_is_row_sparse(g) for g in grads):  # the outermost cell then runs eagerly
            raise TracingError(
                "DistributedGradReducer: row-sparse gradients are reduced eagerly only"
            )
        scale = 1.0 / self.degree if self.mean else None
        out: list[Any] = [None] * len(grads)
        for b in self._buckets:
            parts = [ops.reshape(ops.cast(grads[s], b.dtype), (-1,)) for s in b.slots]
            flat = all_reduce(parts[0] if len(parts) == 1 else ops.concat(parts), "sum",
                              self._group_name)  # fmt: skip
            if scale is not None:
                flat = flat * ops.cast(Tensor(np.asarray(scale, b.dtype)), b.dtype)
            for j, slot in enumerate(b.slots):
                p = self._grad_params[slot]
                piece = ops.reshape(flat[int(b.offsets[j]) : int(b.offsets[j + 1])], p.shape)
                out[slot] = (
                    ops.cast(piece, p.dtype) if b.dtype != np.dtype(p._data.dtype) else piece
                )
        return tuple(out)

    def _densify(self, slot: int, g: Any) -> Tensor:
        p = self._grad_params[slot]
        xp = p._device.xp
        dense = xp.zeros(p.shape, p._data.dtype)
        idx = xp.asarray(getattr(g.indices, "_data", g.indices)).reshape(-1)
        vals = xp.asarray(getattr(g.values, "_data", g.values))
        scatter_at(xp, "add", dense, idx, vals)
        return Tensor._wrap(dense, p._device)


def grad_reducer_for(cls: str, weights: Any, optimizer: Any) -> DistributedGradReducer | None:
    """The reducer ``TrainOneStepCell`` uses under the current parallel context (or None).

    As in MindSpore: a ``DistributedGradReducer`` under ``data_parallel`` and
    ``hybrid_parallel``; none with the parallel optimizer (the optimizer reduce-scatters).
    """
    mode = _ctx.get_auto_parallel_context("parallel_mode")
    if mode not in ("data_parallel", "hybrid_parallel"):
        return None
    if not GlobalComm.INITED:
        raise RuntimeError(
            f"{cls}: parallel_mode={mode!r} needs the communication backend; call "
            "sporeling.core.communication.init() first (and start the job with "
            "`sporeling launch -n N script.py`)"
        )
    if getattr(optimizer, "use_parallel", False):
        return None
    return DistributedGradReducer(
        weights,
        _ctx.get_auto_parallel_context("gradients_mean"),
        _ctx.get_auto_parallel_context("device_num"),
    )
