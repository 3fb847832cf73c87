"""Run under ``mpiexec -n 2``, ``-n 3`` or ``-n 4``: ``nn.PipelineCell`` trains like one
process on the full batch.

With 4 ranks, 2 stages each run data parallel on 2 ranks (halves of the batch), and 2 stages
each split over 2 tensor-parallel ranks (``PipelineCell.model_parallel = 2``).

With 3 ranks the MLP has 3 stages and a ``skip`` network sends stage 0's output to stages
1 and 2 (its gradient comes back from both).

An N-stage MLP and a 2-stage transformer-like stack (pre-LayerNorm attention + MLP blocks)
are trained a few steps with ``TrainOneStepCell(PipelineCell(net, 4), Momentum)``, with the
GPipe and the 1F1B schedules; every step's loss and, at the end, this rank's stage's
parameters must equal those of the same network trained in this process on the full batch
(sum-reduced loss, so micro-batches add up to the batch). The other stage's parameters must
be untouched here (each rank updates only its own stage). Then the clear errors: a batch
that ``micro_size`` does not divide, a ``pipeline_stage`` out of range, and
``pipeline_stages`` not matching the number of ranks.

Prints ``OK pipeline`` on every rank.
"""

from __future__ import annotations

import warnings

import numpy as np

from sporeling.core import GRAPH_MODE, PYNATIVE_MODE, Tensor, nn, ops, set_context, set_seed
from sporeling.core.communication import get_group_size, get_rank, init
from sporeling.core.parallel import reset_auto_parallel_context, set_auto_parallel_context
from sporeling.core.train import ArrayDataset, Model

RTOL, ATOL = 2e-5, 2e-6
STEPS = 4


class MLP(nn.Cell):
    """``stages`` blocks of two Dense layers, ``stage0`` ... ``stage{n-1}``."""

    def __init__(self, stages: int) -> None:
        super().__init__()
        self.n = stages
        for k in range(stages - 1):
            first = nn.Dense(6 if k == 0 else 16, 16, activation="tanh")
            setattr(
                self, f"stage{k}", nn.SequentialCell([first, nn.Dense(16, 16, activation="tanh")])
            )
        last = nn.SequentialCell([nn.Dense(16, 8, activation="tanh"), nn.Dense(8, 3)])
        setattr(self, f"stage{stages - 1}", last)

    def construct(self, x: Tensor) -> Tensor:
        for k in range(self.n):
            x = getattr(self, f"stage{k}")(x)
        return x


class Join(nn.Cell):
    def __init__(self) -> None:
        super().__init__()
        self.out = nn.Dense(32, 3)

    def construct(self, h: Tensor, g: Tensor) -> Tensor:
        return self.out(ops.concat((h, g), -1))


class Skip(nn.Cell):
    """Three stages where stage 0's output goes to stage 1 *and* stage 2 (a skip)."""

    def __init__(self) -> None:
        super().__init__()
        self.stage0 = nn.Dense(6, 16, activation="tanh")
        self.stage1 = nn.Dense(16, 16, activation="tanh")
        self.stage2 = Join()

    def construct(self, x: Tensor) -> Tensor:
        h = self.stage0(x)
        return self.stage2(h, self.stage1(h))


class Block(nn.Cell):
    def __init__(self, h: int) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm((h,))
        self.attn = nn.MultiheadAttention(h, 2, batch_first=True)
        self.ln2 = nn.LayerNorm((h,))
        self.w1 = nn.Dense(h, 2 * h, activation="gelu")
        self.w2 = nn.Dense(2 * h, h)

    def construct(self, x: Tensor) -> Tensor:
        a = self.ln1(x)
        x = x + self.attn(a, a, a, need_weights=False)[0]
        return x + self.w2(self.w1(self.ln2(x)))


class Embed(nn.Cell):
    def __init__(self, d: int, h: int) -> None:
        super().__init__()
        self.proj = nn.Dense(d, h)
        self.block = Block(h)

    def construct(self, x: Tensor) -> Tensor:
        return self.block(self.proj(x))


class Head(nn.Cell):
    def __init__(self, h: int, k: int) -> None:
        super().__init__()
        self.block = Block(h)
        self.ln = nn.LayerNorm((h,))
        self.out = nn.Dense(h, k)

    def construct(self, x: Tensor) -> Tensor:
        return self.out(self.ln(self.block(x))).mean(1)


class Stack(nn.Cell):
    def __init__(self) -> None:
        super().__init__()
        self.stage0 = Embed(5, 8)
        self.stage1 = Head(8, 3)

    def construct(self, x: Tensor) -> Tensor:
        return self.stage1(self.stage0(x))


def build(kind: str, stages: int = 2) -> nn.Cell:
    set_seed(11)
    backbone = {"mlp": MLP, "stack": Stack, "skip": Skip}[kind](
        *([stages] if kind == "mlp" else [])
    )
    return nn.WithLossCell(backbone, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="sum"))


def data(kind: str, step: int) -> tuple[Tensor, Tensor]:
    rng = np.random.default_rng(100 + step)
    shape = (8, 4, 5) if kind == "stack" else (8, 6)
    x = rng.standard_normal(shape).astype(np.float32)
    return Tensor(x), Tensor(rng.integers(0, 3, (8,)).astype(np.int32))


def train(net: nn.Cell, params: list, kind: str) -> list[float]:
    step = nn.TrainOneStepCell(net, nn.Momentum(params, learning_rate=0.05, momentum=0.9))
    step.set_train()
    return [float(step(*data(kind, s)).asnumpy()) for s in range(STEPS)]


# the schedule each rank runs on 4 micro-batches: {(stages, rank): order}
ONE_F_ONE_B = {
    (2, 0): ["F0", "F1", "B0", "F2", "B1", "F3", "B2", "B3"],  # one warm-up forward
    (2, 1): ["F0", "B0", "F1", "B1", "F2", "B2", "F3", "B3"],  # the last stage: none
    (3, 0): ["F0", "F1", "F2", "B0", "F3", "B1", "B2", "B3"],
    (3, 1): ["F0", "F1", "B0", "F2", "B1", "F3", "B2", "B3"],
    (3, 2): ["F0", "B0", "F1", "B1", "F2", "B2", "F3", "B3"],
}


def check(kind: str, schedule: str, rank: int, size: int, mode: str = "stand_alone") -> None:
    reset_auto_parallel_context()
    ref = build(kind, size)
    ref_losses = train(ref, ref.trainable_params(), kind)

    set_auto_parallel_context(pipeline_stages=size, parallel_mode=mode)
    net = build(kind, size)
    for k in range(size):
        getattr(net.backbone_network, f"stage{k}").pipeline_stage = k
    pipe = nn.PipelineCell(net, 4)
    pipe.schedule = schedule
    mine = pipe.trainable_params()
    before = {p.name: p.asnumpy().copy() for p in net.trainable_params()}
    losses = train(pipe, mine, kind)
    what = f"{kind}/{schedule} rank {rank}" + ("" if mode == "stand_alone" else f" {mode}")
    np.testing.assert_allclose(losses, ref_losses, RTOL, 1e-5, err_msg=f"{what}: losses")
    own_prefix = f"stage{rank}."
    assert mine and all(p.name.startswith(own_prefix) for p in mine), [p.name for p in mine]
    ref_params = {p.name: p.asnumpy() for p in ref.trainable_params()}
    for p in net.trainable_params():
        if p.name.startswith(own_prefix):
            np.testing.assert_allclose(
                p.asnumpy(), ref_params[p.name], RTOL, ATOL, err_msg=f"{what}: {p.name}"
            )
            assert not np.array_equal(p.asnumpy(), before[p.name]), f"{what}: {p.name} not trained"
        else:  # the other stage's copy here is never computed with nor updated
            np.testing.assert_array_equal(p.asnumpy(), before[p.name], err_msg=p.name)
    expected = {
        "gpipe": ["F0", "F1", "F2", "F3", "B0", "B1", "B2", "B3"],
        "1f1b": ONE_F_ONE_B[(size, rank)],
    }[schedule]
    assert pipe.last_order == expected, f"{what}: ran {pipe.last_order}"
    print(f"rank {rank} {what}: losses {[round(v, 5) for v in losses]}", flush=True)


def graph_mode(rank: int) -> None:
    """Under GRAPH_MODE the training step falls back to eager (a warning says so) and
    still trains like one process."""
    reset_auto_parallel_context()
    ref = build("mlp")
    ref_losses = train(ref, ref.trainable_params(), "mlp")
    set_auto_parallel_context(pipeline_stages=2)
    net = build("mlp")
    net.backbone_network.stage0.pipeline_stage = 0
    net.backbone_network.stage1.pipeline_stage = 1
    pipe = nn.PipelineCell(net, 2)
    set_context(mode=GRAPH_MODE)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            losses = train(pipe, pipe.trainable_params(), "mlp")
    finally:
        set_context(mode=PYNATIVE_MODE)
    assert any("PYNATIVE" in str(w.message) for w in caught), [str(w.message) for w in caught]
    np.testing.assert_allclose(losses, ref_losses, RTOL, 1e-5, err_msg="GRAPH_MODE losses")
    print(f"rank {rank} graph_mode fallback ok", flush=True)


def check_dp(schedule: str, rank: int, size: int, shard_optimizer: bool = False) -> None:
    """``pipeline_stages=2`` on 4 ranks: ranks 0-1 run stage 0, 2-3 stage 1 (MindSpore's
    layout); column ``rank % 2`` is fed half ``rank % 2`` of the batch. ``shard_optimizer``:
    with ``enable_parallel_optimizer`` each stage's momentum state is sliced over the stage's
    two ranks, same result."""

    def global_batch(step: int) -> tuple[np.ndarray, np.ndarray]:
        rng = np.random.default_rng(200 + step)
        return rng.standard_normal((16, 6)).astype(np.float32), rng.integers(0, 3, (16,))

    opts: list = []

    def run(net: nn.Cell, params: list, part: slice) -> list[float]:
        opt = nn.Momentum(params, learning_rate=0.05, momentum=0.9)
        step = nn.TrainOneStepCell(net, opt)
        assert opt.use_parallel == (shard_optimizer and net is not ref)
        opts.append(opt)
        losses = []
        for s in range(STEPS):
            x, y = global_batch(s)
            losses.append(float(step(Tensor(x[part]), Tensor(y[part].astype(np.int32))).asnumpy()))
        return losses

    reset_auto_parallel_context()
    ref = build("mlp")
    ref_losses = run(ref, ref.trainable_params(), slice(0, 16))
    set_auto_parallel_context(pipeline_stages=2, parallel_mode="semi_auto_parallel")
    if shard_optimizer:
        set_auto_parallel_context(
            enable_parallel_optimizer=True,
            parallel_optimizer_config={"parallel_optimizer_threshold": 0},
        )
    net = build("mlp")
    net.backbone_network.stage0.pipeline_stage = 0
    net.backbone_network.stage1.pipeline_stage = 1
    pipe = nn.PipelineCell(net, 4)
    pipe.schedule = schedule
    column = rank % 2
    losses = run(pipe, pipe.trainable_params(), slice(8 * column, 8 * column + 8))
    what = f"mlp/{schedule} dp=2{' optimizer_shard' if shard_optimizer else ''} rank {rank}"
    if shard_optimizer:  # each rank holds half of its stage's momentum
        state = [q for q in opts[-1].get_parameters() if getattr(q, "shard_layout", None)]
        full = sum(int(np.prod(q.shard_layout[3])) for q in state)
        assert state and 2 * sum(q.size for q in state) <= full + 2 * len(state), what
    np.testing.assert_allclose(losses, ref_losses, RTOL, 1e-5, err_msg=f"{what}: losses")
    own = f"stage{rank // 2}."
    want = {p.name: p.asnumpy() for p in ref.trainable_params()}
    mine = pipe.trainable_params()
    assert mine and all(p.name.startswith(own) for p in mine), [p.name for p in mine]
    for p in mine:
        np.testing.assert_allclose(
            p.asnumpy(), want[p.name], RTOL, ATOL, err_msg=f"{what} {p.name}"
        )
    print(f"{what}: losses {[round(v, 5) for v in losses]}", flush=True)


def check_pp_mp(rank: int) -> None:
    """4 ranks, 2 stages, each stage's two Dense layers split column/row over its 2 ranks
    (``model_parallel = 2``): both ranks of a stage take the whole batch; losses and each
    rank's shards equal one process's."""
    from sporeling.core.communication import create_group
    from sporeling.core.parallel.tensor_parallel import ColumnParallelDense, RowParallelDense

    reset_auto_parallel_context()
    ref = build("mlp")
    ref_losses = train(ref, ref.trainable_params(), "mlp")
    set_auto_parallel_context(pipeline_stages=2)
    group = f"mp_of_stage{rank // 2}"
    create_group(group, [rank // 2 * 2, rank // 2 * 2 + 1])
    net = build("mlp")
    for k in (0, 1):
        seq = getattr(net.backbone_network, f"stage{k}")
        col = ColumnParallelDense.from_dense(seq[0], gather_output=False, group=group)
        row = RowParallelDense.from_dense(seq[1], input_is_parallel=True, group=group)
        split = nn.SequentialCell([col, row])
        split.pipeline_stage = k
        setattr(net.backbone_network, f"stage{k}", split)
    pipe = nn.PipelineCell(net, 4)
    pipe.model_parallel = 2
    pipe.schedule = "1f1b"
    losses = train(pipe, pipe.trainable_params(), "mlp")
    what = f"mlp/1f1b pp=2 x mp=2 rank {rank}"
    np.testing.assert_allclose(losses, ref_losses, RTOL, 1e-5, err_msg=f"{what}: losses")
    want = {p.name: p.asnumpy() for p in ref.trainable_params()}
    seq = getattr(net.backbone_network, f"stage{rank // 2}")
    for layer in seq:
        for attr in ("weight", "bias"):
            p = getattr(layer, attr)
            full = want[p.name]
            axis = layer.tensor_parallel_axes.get(attr)
            if axis is not None:
                k = full.shape[axis] // 2
                full = np.take(full, range(rank % 2 * k, (rank % 2 + 1) * k), axis=axis)
            np.testing.assert_allclose(p.asnumpy(), full, RTOL, ATOL, err_msg=f"{what} {p.name}")
    print(f"{what}: losses {[round(v, 5) for v in losses]}", flush=True)


def with_model(rank: int) -> None:
    """``Model(PipelineCell(...), optimizer=...).train`` trains like ``Model`` on one process."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((32, 6)).astype(np.float32)
    y = rng.integers(0, 3, (32,)).astype(np.int32)
    reset_auto_parallel_context()
    ref = build("mlp")
    Model(ref, optimizer=nn.Momentum(ref.trainable_params(), 0.05, 0.9)).train(
        2, ArrayDataset(x, y, batch_size=8)
    )
    set_auto_parallel_context(pipeline_stages=2)
    net = build("mlp")
    net.backbone_network.stage0.pipeline_stage = 0
    net.backbone_network.stage1.pipeline_stage = 1
    pipe = nn.PipelineCell(net, 4)
    Model(pipe, optimizer=nn.Momentum(pipe.trainable_params(), 0.05, 0.9)).train(
        2, ArrayDataset(x, y, batch_size=8)
    )
    want = {p.name: p.asnumpy() for p in ref.trainable_params()}
    for p in pipe.trainable_params():
        np.testing.assert_allclose(p.asnumpy(), want[p.name], RTOL, ATOL, err_msg=f"Model {p.name}")
    print(f"rank {rank} Model.train ok", flush=True)


def expect(exc: type, words: str, fn) -> None:
    try:
        fn()
    except exc as e:
        assert words in str(e), f"expected {words!r} in {e}"
        return
    raise AssertionError(f"no {exc.__name__} ({words})")


def errors() -> None:
    set_auto_parallel_context(pipeline_stages=2)
    net = build("mlp")
    net.backbone_network.stage0.pipeline_stage = 0
    net.backbone_network.stage1.pipeline_stage = 1
    x, y = data("mlp", 0)
    expect(ValueError, "micro_size=3", lambda: nn.PipelineCell(net, 3)(x, y))
    net.backbone_network.stage1.pipeline_stage = 2
    expect(ValueError, "expected a stage in [0, 2)", lambda: nn.PipelineCell(net, 2)(x, y))
    net.backbone_network.stage1.pipeline_stage = 1
    set_auto_parallel_context(parallel_mode="data_parallel")
    expect(ValueError, "parallel_mode='data_parallel'", lambda: nn.PipelineCell(net, 2)(x, y))
    set_auto_parallel_context(parallel_mode="stand_alone", pipeline_stages=4)
    expect(ValueError, "number of processes in the job (2)", lambda: nn.PipelineCell(net, 2)(x, y))
    reset_auto_parallel_context()


def main() -> None:
    init()
    rank, size = get_rank(), get_group_size()
    assert size in (2, 3, 4), size
    if size == 4:
        for schedule in ("gpipe", "1f1b"):
            check_dp(schedule, rank, size)
        check_dp("1f1b", rank, size, shard_optimizer=True)
        check_pp_mp(rank)
        print(f"OK pipeline rank={rank}", flush=True)
        return
    for kind in ("mlp", "stack") if size == 2 else ("mlp", "skip"):
        for schedule in ("gpipe", "1f1b"):
            check(kind, schedule, rank, size)
    if size == 2:  # as MindSpore scripts set it: no data-parallel reduction across stages
        check("mlp", "1f1b", rank, size, mode="semi_auto_parallel")
        graph_mode(rank)
        with_model(rank)
        errors()
    print(f"OK pipeline rank={rank}", flush=True)


if __name__ == "__main__":
    main()
