"""The engine of ``nn.PipelineCell``: stages of one network on MPI ranks, micro-batched.

Rank ``r`` runs the cells whose ``pipeline_stage`` is ``r``. Every rank runs the
network's ``construct`` for each micro-batch; a *unit* (a cell with a ``pipeline_stage``,
or a parameterless cell with no stage anywhere above or below it, such as the loss) is
intercepted: a unit of another stage is skipped and returns a :class:`Remote`
placeholder, after this rank sends it any activation it computed itself; a unit of this
stage receives the activations its placeholders stand for (they become leaves requiring
gradients) and runs. An unstaged parameterless unit runs on the latest stage among its
inputs' producers (on every rank when its inputs are plain data).

In training the whole schedule runs inside the call: GPipe (all forwards, then all
backwards) or 1F1B (after ``stages - 1 - rank`` warm-up forwards, one forward then one
backward). A backward starts from the loss (its stage) and from the activations this
rank sent, with the gradients their consumers sent back; it sends the gradients of the
received activations to their producers. Parameter gradients are summed over the
micro-batches, and one tape node (inputs: this stage's parameters, output: the summed
loss) gives them to the caller's ``grad``/``TrainOneStepCell``. Sends are non-blocking,
receives block, so neither schedule can deadlock.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._primitive import Primitive, ShapedArray
from ..autograd.tape import backward
from ..dtype import from_numpy
from ..tensor import Tensor

__all__ = ["Remote", "StagePlan", "PipelineEngine", "pipeline_p"]

FWD_TAG, BWD_TAG, LOSS_TAG = 7101, 7102, 7103
SCHEDULES = ("gpipe", "1f1b")


class Remote:
    """Stands for an activation that stage ``stage`` computes on another rank."""

    __slots__ = ("stage",)

    def __init__(self, stage: int) -> None:
        self.stage = stage

    def __getitem__(self, index: Any) -> Remote:
        return self  # an element of a remote tuple comes from the same stage

    def __getattr__(self, name: str) -> Any:
        raise TypeError(
            f"PipelineCell: '{name}' used on an output of pipeline stage {self.stage}, which "
            "another rank computes: computation between stages must live inside a cell "
            "with a pipeline_stage"
        )

    def _refuse(self, *_: Any) -> Any:
        return self.__getattr__("an operator")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _refuse
    __truediv__ = __matmul__ = __neg__ = __float__ = __bool__ = _refuse


def _leaves(obj: Any, out: list[Any]) -> list[Any]:
    if isinstance(obj, (tuple, list)):
        for o in obj:
            _leaves(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            _leaves(o, out)
    else:
        out.append(obj)
    return out


def _rebuild(obj: Any, fn: Any) -> Any:
    if isinstance(obj, (tuple, list)):
        return type(obj)(_rebuild(o, fn) for o in obj)
    if isinstance(obj, dict):
        return {k: _rebuild(v, fn) for k, v in obj.items()}
    return fn(obj)


def _floating(t: Tensor) -> bool:
    return np.issubdtype(np.dtype(t.asnumpy().dtype), np.floating)


class Unit:
    def __init__(self, name: str, cell: Any, stage: int | None) -> None:
        self.name, self.cell, self.stage = name, cell, stage


class StagePlan:
    """The units of ``network`` and their stages; checks the stage ids."""

    def __init__(self, network: Any, stages: int) -> None:
        self.stages = stages
        self.units: list[Unit] = []
        self._visit(network, "network")
        used = {u.stage for u in self.units if u.stage is not None}
        missing = [s for s in range(stages) if s not in used]
        if missing:
            raise ValueError(
                f"PipelineCell: no cell has pipeline_stage in {missing}; with "
                f"pipeline_stages={stages} every stage 0..{stages - 1} needs at least one cell"
            )

    @staticmethod
    def _children(cell: Any) -> list[tuple[str, Any]]:
        return [(n, c) for n, c in cell._cells.items() if c is not None]

    def _staged_below(self, cell: Any) -> list[tuple[str, int]]:
        return [(n, c.pipeline_stage) for n, c in cell.cells_and_names()
                if c is not cell and c.pipeline_stage is not None]  # fmt: skip

    def _visit(self, cell: Any, name: str) -> None:
        stage = cell.pipeline_stage
        below = self._staged_below(cell)
        if stage is not None:
            if stage >= self.stages:
                raise ValueError(
                    f"PipelineCell: cell '{name}' has pipeline_stage={stage}, expected a stage "
                    f"in [0, {self.stages}) (pipeline_stages={self.stages})"
                )
            for sub, s in below:
                if s != stage:
                    raise ValueError(
                        f"PipelineCell: cell '{name}.{sub}' has pipeline_stage={s} inside cell "
                        f"'{name}' of pipeline_stage={stage}; a staged cell runs whole on its stage"
                    )
            self.units.append(Unit(name, cell, stage))
        elif below:
            own = [n for n, p in cell._params.items() if p is not None]
            if own:
                raise ValueError(
                    f"PipelineCell: cell '{name}' holds parameters {own} but has no "
                    "pipeline_stage (its sub-cells do): move them into a staged sub-cell"
                )
            for sub, child in self._children(cell):
                self._visit(child, f"{name}.{sub}")
        else:
            params = [p.name for p in cell.get_parameters()]
            if params:
                raise ValueError(
                    f"PipelineCell: cell '{name}' holds parameters ({params[:3]}...) but neither "
                    "it nor a cell above it has a pipeline_stage; set its pipeline_stage"
                )
            self.units.append(Unit(name, cell, None))

    def params_of(self, stage: int) -> list[Any]:
        seen: dict[int, Any] = {}
        for u in self.units:
            if u.stage == stage:
                for p in u.cell.get_parameters():
                    seen.setdefault(id(p), p)
        return list(seen.values())


class _Micro:
    """What one micro-batch's forward left for its backward."""

    def __init__(self) -> None:
        self.produced: dict[int, Tensor] = {}
        self.received: dict[int, tuple[Tensor, int]] = {}
        self.recv_order: list[tuple[Tensor, int]] = []
        self.sent: list[tuple[Tensor, int]] = []
        self.loss: Tensor | None = None
        self.loss_rank = -1


class PipelineEngine:
    """Runs the schedule for one call (see the module docstring)."""

    def __init__(
        self, network: Any, plan: StagePlan, rank: int, train: bool, peers: list[int] | None = None
    ) -> None:
        from ..communication import p2p

        self.p2p = p2p
        # ``rank`` is this rank's stage; ``peers[s]``: the world rank running stage s for this
        # rank's share of the data (the stage itself without data parallelism)
        self.network, self.plan, self.rank, self.train = network, plan, rank, train
        self.peers = list(range(plan.stages)) if peers is None else peers
        self.params = [p for p in plan.params_of(rank) if p.requires_grad] if train else []
        self.grads: dict[int, Any] = {}
        self.handles: list[Any] = []
        self.micro: list[_Micro] = []
        self.cur: _Micro | None = None
        self.losses: list[Any] = []
        self.order: list[str] = []  # "F0", "B0", ...: the schedule as it ran on this rank
        self.loss_rank = -1

    # ---- interception -----------------------------------------------------------------
    def _producer(self, x: Any) -> int | None:
        if isinstance(x, Remote):
            return x.stage
        if isinstance(x, Tensor) and self.cur is not None:
            if id(x) in self.cur.produced:
                return self.rank
            hit = self.cur.received.get(id(x))
            if hit is not None:
                return hit[1]
        return None

    def _wrap(self, unit: Unit, run: Any) -> Any:
        def construct(*args: Any, **kwargs: Any) -> Any:
            st = self.cur
            leaves = _leaves((args, kwargs), [])
            prods = [self._producer(x) for x in leaves]
            known = [p for p in prods if p is not None]
            stage = unit.stage
            if stage is None:
                if not known:
                    return run(*args, **kwargs)
                stage = max(known)
            late = [p for p in known if p > stage]
            if late:
                raise ValueError(
                    f"PipelineCell: cell '{unit.name}' of stage {stage} takes an output of "
                    f"stage {late[0]}; activations must flow from lower to higher stages"
                )
            if stage == self.rank:

                def fetch(x: Any) -> Any:
                    return self._recv(x.stage) if isinstance(x, Remote) else x

                out = run(*_rebuild(args, fetch), **_rebuild(kwargs, fetch))
                for t in _leaves(out, []):
                    if isinstance(t, Tensor):
                        st.produced[id(t)] = t
                return out
            for x, p in zip(leaves, prods, strict=True):
                if p == self.rank:
                    st.sent.append((x, stage))
                    self.handles.append(self.p2p.isend(x, self.peers[stage], tag=FWD_TAG))
            return Remote(stage)

        return construct

    def _recv(self, src: int) -> Tensor:
        t = self.p2p.irecv(self.peers[src], tag=FWD_TAG).wait()
        if self.train and _floating(t):
            t.requires_grad = True
        self.cur.received[id(t)] = (t, src)
        self.cur.recv_order.append((t, src))
        return t

    # ---- one micro-batch --------------------------------------------------------------
    def forward(self, inputs: tuple[Any, ...]) -> None:
        self.order.append(f"F{len(self.micro)}")
        st = self.cur = _Micro()
        out = self.network(*inputs)
        if isinstance(out, Remote):
            st.loss_rank = out.stage
        elif isinstance(out, Tensor) and id(out) in st.produced:
            st.loss, st.loss_rank = out, self.rank
        else:
            raise TypeError(
                "PipelineCell: the network must return one Tensor (the loss) computed by a "
                f"cell of some stage, got {type(out).__name__}"
            )
        if st.loss is not None:
            self.losses.append(st.loss.asnumpy())
        self.loss_rank = st.loss_rank
        self.micro.append(st)
        self.cur = None

    def backward(self, m: int) -> None:
        self.order.append(f"B{m}")
        st = self.micro[m]
        roots: dict[int, Tensor] = {}
        cts: dict[int, Tensor] = {}
        if st.loss is not None:
            roots[id(st.loss)] = st.loss
            cts[id(st.loss)] = Tensor(np.ones(st.loss.shape, st.loss.asnumpy().dtype))
        for t, dst in st.sent:
            if _floating(t):
                g = self.p2p.irecv(self.peers[dst], tag=BWD_TAG).wait()
                roots[id(t)] = t
                cts[id(t)] = g if id(t) not in cts else cts[id(t)] + g
        tracked = [i for i, t in roots.items() if t._node is not None or t._requires_grad]
        found = backward([roots[i] for i in tracked], [cts[i] for i in tracked], None, False)
        for p in self.params:
            hit = found.get(id(p))
            if hit is not None:
                prev = self.grads.get(id(p))
                self.grads[id(p)] = hit[1] if prev is None else prev + hit[1]
        for leaf, src in st.recv_order:
            if _floating(leaf):
                hit = found.get(id(leaf))
                g = hit[1] if hit is not None else Tensor(np.zeros_like(leaf.asnumpy()))
                self.handles.append(self.p2p.isend(g, self.peers[src], tag=BWD_TAG))
        self.micro[m] = _Micro()  # free the activations

    # ---- the schedule -----------------------------------------------------------------
    def run(self, micro_inputs: list[tuple[Any, ...]], schedule: str) -> Tensor:
        n = len(micro_inputs)
        saved = {}
        for u in self.plan.units:
            saved[id(u.cell)] = (u.cell, u.cell.__dict__.get("construct"))
        try:
            for u in self.plan.units:
                object.__setattr__(u.cell, "construct", self._wrap(u, u.cell.construct))
            if not self.train:
                for m in range(n):
                    self.forward(micro_inputs[m])
            elif schedule == "gpipe":
                for m in range(n):
                    self.forward(micro_inputs[m])
                for m in range(n):
                    self.backward(m)
            else:  # 1f1b
                warm = min(self.plan.stages - 1 - self.rank, n)
                for m in range(warm):
                    self.forward(micro_inputs[m])
                for m in range(n - warm):
                    self.forward(micro_inputs[warm + m])
                    self.backward(m)
                for m in range(n - warm, n):
                    self.backward(m)
        finally:
            for cell, before in saved.values():
                if before is None:
                    cell.__dict__.pop("construct", None)
                else:
                    object.__setattr__(cell, "construct", before)
        return self._loss(n)

    def param_grads(self) -> list[Any]:
        return [self.grads.get(id(p)) for p in self.params]

    def _loss(self, n: int) -> Tensor:
        """The micro-batches' losses summed, from the loss stage to every rank."""
        loss_rank = self.loss_rank
        if loss_rank == self.rank:
            total = self.losses[0]
            for v in self.losses[1:]:
                total = total + v
            for s in range(self.plan.stages):
                if s != self.rank:
                    self.handles.append(self.p2p.isend(Tensor(total), self.peers[s], tag=LOSS_TAG))
            loss = Tensor(total)
        else:
            loss = self.p2p.irecv(self.peers[loss_rank], tag=LOSS_TAG).wait()
        self.loss_data = loss.asnumpy()
        for h in self.handles:
            h.wait()
        self.handles.clear()
        return loss


class _Run:
    __hash__ = None  # type: ignore[assignment]  # never memoized

    def __init__(self, loss: Any, grads: list[Any]) -> None:
        self.loss, self.grads = loss, grads


def _abstract(*avals: ShapedArray, run: _Run) -> ShapedArray:
    return ShapedArray(run.loss.shape, from_numpy(run.loss.dtype))


def _impl(xp: Any, *arrays: Any, run: _Run) -> Any:
    return run.loss


def _vjp(ct: Any, *inputs: Tensor, out: Any, run: _Run) -> tuple[Any, ...]:
    from .. import ops

    return tuple(None if g is None else g * ops.reshape(ct, ()) for g in run.grads)


pipeline_p = Primitive("pipeline_cell", "opaque", _abstract, impl=_impl, vjp=_vjp)
