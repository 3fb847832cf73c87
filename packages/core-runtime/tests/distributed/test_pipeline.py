"""``nn.PipelineCell`` and ``Cell.pipeline_stage``.

In one process (``pipeline_stages=1``) the cell sums the network over micro-batches: with
a sum-reduced loss, loss and gradients equal the full batch's. The stage plan's and the
configuration's errors are checked here; ``mp_pipeline.py`` runs the real schedules
(GPipe and 1F1B) under ``mpiexec -n 2`` against one process training the whole network.
"""

from __future__ import annotations

import numpy as np
import pytest
from _mp_launch import run_mpi

from sporeling.core import Tensor, communication, nn, ops, set_seed
from sporeling.core.parallel import reset_auto_parallel_context, set_auto_parallel_context
from sporeling.core.parallel.pipeline import Remote, StagePlan


@pytest.fixture(autouse=True)
def _clean_context():
    reset_auto_parallel_context()
    yield
    reset_auto_parallel_context()


class TwoStage(nn.Cell):
    def __init__(self) -> None:
        super().__init__()
        self.first = nn.Dense(5, 8, activation="relu")
        self.second = nn.Dense(8, 3)

    def construct(self, x):
        return self.second(self.first(x))


def _net():
    set_seed(3)
    return nn.WithLossCell(
        TwoStage(), nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="sum")
    )


def _batch():
    rng = np.random.default_rng(0)
    x = Tensor(rng.standard_normal((8, 5)).astype(np.float32))
    return x, Tensor(rng.integers(0, 3, (8,)).astype(np.int32))


@pytest.mark.parametrize("micro", [1, 2, 4, 8])
def test_micro_batches_sum_to_the_full_batch(micro):
    x, y = _batch()
    full, pipe = _net(), nn.PipelineCell(_net(), micro)
    lf, gf = ops.value_and_grad(full, None, full.trainable_params())(x, y)
    lp, gp = ops.value_and_grad(pipe, None, pipe.trainable_params())(x, y)
    np.testing.assert_allclose(lp.asnumpy(), lf.asnumpy(), 1e-5)
    assert len(gp) == len(gf) == 4
    for a, b in zip(gf, gp, strict=True):
        np.testing.assert_allclose(b.asnumpy(), a.asnumpy(), 1e-5, 1e-6)


def test_mean_loss_is_micro_size_times_the_full_batch_mean():
    set_seed(3)
    net = nn.WithLossCell(
        TwoStage(), nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    )
    x, y = _batch()
    full = float(net(x, y).asnumpy())
    np.testing.assert_allclose(float(nn.PipelineCell(net, 4)(x, y).asnumpy()), 4 * full, 1e-5)


def test_bad_arguments_are_named():
    x, y = _batch()
    with pytest.raises(ValueError, match=r"shape \(8, 5\).*micro_size=3"):
        nn.PipelineCell(_net(), 3)(x, y)
    with pytest.raises(ValueError, match="micro_size"):
        nn.PipelineCell(_net(), 0)
    with pytest.raises(TypeError, match="network"):
        nn.PipelineCell(lambda a: a, 2)
    pipe = nn.PipelineCell(_net(), 2)
    pipe.schedule = "zigzag"
    with pytest.raises(ValueError, match="'gpipe' or '1f1b'"):
        pipe(x, y)
    cell = nn.Dense(2, 2)
    assert cell.pipeline_stage is None
    cell.pipeline_stage = 1
    assert cell.pipeline_stage == 1
    with pytest.raises(TypeError, match="pipeline_stage"):
        cell.pipeline_stage = "1"
    with pytest.raises(ValueError, match="pipeline_stage' expected an int >= 0, got -1"):
        cell.pipeline_stage = -1


def test_pipeline_stages_must_match_the_job():
    communication.init()  # a one-process job
    set_auto_parallel_context(pipeline_stages=2)
    net = _net()
    net.backbone_network.first.pipeline_stage = 0
    net.backbone_network.second.pipeline_stage = 1
    with pytest.raises(
        ValueError,
        match=r"pipeline_stages=2\) expected a divisor of the number of processes in the job \(1\)",
    ):
        nn.PipelineCell(net, 2)(*_batch())


def test_stage_plan_checks_the_stage_ids():
    net = _net()
    net.backbone_network.first.pipeline_stage = 0
    net.backbone_network.second.pipeline_stage = 2
    with pytest.raises(ValueError, match=r"'network._backbone.second' has pipeline_stage=2, "
                       r"expected a stage in \[0, 2\)"):  # fmt: skip
        StagePlan(net, 2)
    net.backbone_network.second.pipeline_stage = 0
    with pytest.raises(ValueError, match=r"no cell has pipeline_stage in \[1\]"):
        StagePlan(net, 2)
    net = _net()
    net.backbone_network.first.pipeline_stage = 0
    with pytest.raises(ValueError, match="'network._backbone.second' holds parameters"):
        StagePlan(net, 1)
    net.backbone_network.pipeline_stage = 1
    with pytest.raises(ValueError, match="has pipeline_stage=0 inside cell"):
        StagePlan(net, 2)
    net = _net()
    net.backbone_network.first.pipeline_stage = 0
    net.backbone_network.second.pipeline_stage = 1
    plan = StagePlan(net, 2)
    stages = {u.name: u.stage for u in plan.units}
    assert stages == {"network._backbone.first": 0, "network._backbone.second": 1,
                      "network._loss_fn": None}  # fmt: skip
    assert [p.name for p in plan.params_of(1)] == ["second.weight", "second.bias"]


def test_a_remote_activation_refuses_computation():
    with pytest.raises(TypeError, match="output of pipeline stage 1.*inside a cell"):
        Remote(1).reshape(2)
    with pytest.raises(TypeError, match="pipeline stage 0"):
        _ = Remote(0) + 1


def test_pipeline_schedules_train_like_one_process_under_mpi():
    out = run_mpi("mp_pipeline.py", 2)
    assert out.count("OK pipeline") == 2, out
    for kind in ("mlp", "stack"):
        for schedule in ("gpipe", "1f1b"):
            for rank in (0, 1):
                assert out.count(f"{kind}/{schedule} rank {rank}: losses") == 1, out
    for rank in (0, 1):  # parallel_mode as MindSpore's pipeline scripts set it
        assert f"mlp/1f1b rank {rank} semi_auto_parallel: losses" in out, out
        assert f"rank {rank} graph_mode fallback ok" in out, out
        assert f"rank {rank} Model.train ok" in out, out


def test_two_stages_times_two_data_parallel_ranks_under_mpi():
    """4 ranks, pipeline_stages=2: each stage on 2 ranks fed different halves of the batch,
    its gradients summed over them, equals one process on the whole batch; so does it with the
    parallel optimizer (each stage's state sliced over its two ranks); and two stages each split
    over two tensor-parallel ranks (PipelineCell.model_parallel) equal it too."""
    out = run_mpi("mp_pipeline.py", 4)
    assert out.count("OK pipeline") == 4, out
    for schedule in ("gpipe", "1f1b"):
        assert out.count(f"mlp/{schedule} dp=2 rank") == 4, out
    assert out.count("mlp/1f1b dp=2 optimizer_shard rank") == 4, out
    assert out.count("mlp/1f1b pp=2 x mp=2 rank") == 4, out


def test_three_stages_under_mpi():
    """The middle stage relays activations and gradients; an activation that two later
    stages consume (a skip connection) gets its gradient summed from both."""
    out = run_mpi("mp_pipeline.py", 3)
    assert out.count("OK pipeline") == 3, out
    for kind in ("mlp", "skip"):
        assert out.count(f"{kind}/1f1b rank") == 3, out
