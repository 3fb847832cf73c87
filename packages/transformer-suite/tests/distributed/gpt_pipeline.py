"""Under ``mpiexec -n 2``: the tiny GPT (4 layers) with pipeline_stage=2 (layers 0-1 and the
embeddings on rank 0, layers 2-3 and the head on rank 1), 4 micro-batches, trained 3 AdamW
steps with both schedules, gives the single-process run's losses and each rank's own-stage
parameters; the other stage's parameters stay as initialised on each rank."""

import numpy as np

from sporeling.core import Tensor, nn, set_seed
from sporeling.core import communication as comm
from sporeling.core.parallel import reset_auto_parallel_context
from sporeling.transformer.models.gpt import GPT, GPTConfig, GPTWithLoss
from sporeling.transformer.parallel import apply_parallel
from sporeling.transformer.pipeline import StagesClipTrainOneStepCell, pipeline_gpt_with_loss

STEPS, BATCH, MICRO = 3, 8, 4
PC = {"pipeline_stage": 2, "micro_batch_num": MICRO}
CFG = dict(
    seq_length=8,
    vocab_size=20,
    embedding_size=16,
    num_layers=4,
    num_heads=4,
    dropout_rate=0.0,
    compute_dtype="float64",
    layernorm_dtype="float64",
    softmax_dtype="float64",
    param_init_type="float64",
)
data = np.random.default_rng(0).integers(0, 20, (STEPS, BATCH, 9)).astype(np.int32)
STAGE0 = ("word_embedding", "position_embedding", "blocks.0.", "blocks.1.")


def build():
    set_seed(5)
    return GPT(GPTConfig.from_dict(CFG, PC))


def params(net):
    return {n: p.asnumpy().copy() for n, p in net.parameters_and_names()}


def train(step):
    return [float(step(Tensor(data[s])).asnumpy()) for s in range(STEPS)]


reset_auto_parallel_context()
net = build()
init = params(net)
ref_losses = train(nn.TrainOneStepCell(GPTWithLoss(net), nn.AdamW(net.trainable_params(), 1e-2)))
ref = params(net)

info = apply_parallel({"parallel_config": PC})
rank = info.rank
assert (info.pp, info.micro) == (2, MICRO), (info.pp, info.micro)
for schedule in ("gpipe", "1f1b"):
    net = build()
    stages = [blk.pipeline_stage for blk in net.backbone.transformer.encoder.blocks]
    assert stages == [0, 0, 1, 1], stages
    train_net = pipeline_gpt_with_loss(GPTWithLoss(net), info.pp, info.micro, schedule)
    own = train_net.pipe.trainable_params()
    losses = train(nn.TrainOneStepCell(train_net, nn.AdamW(own, 1e-2)))
    # each micro-batch's loss divides by its own token count + 1e-5 (1.8's loss): rtol 1e-6
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-6, err_msg=schedule)
    own_ids = {id(p) for p in own}
    for n, p in net.parameters_and_names():
        mine = (0 if any(k in n for k in STAGE0) else 1) == rank
        assert (id(p) in own_ids) == mine, (schedule, rank, n)
        want = ref[n] if mine else init[n]
        np.testing.assert_allclose(p.asnumpy(), want, rtol=0, atol=1e-7, err_msg=f"{schedule}: {n}")
    print(f"rank {rank} pipeline {schedule}: losses {losses} equal the single-process run")

# global-norm clipping across the stages (SGD, whose update is proportional to the clipped
# gradient): the single-process TrainOneStepWithClipCell's losses and parameters
CLIP = 0.05
reset_auto_parallel_context()
net = build()
sgd = nn.SGD(net.trainable_params(), 0.5)
clip_losses = train(nn.TrainOneStepWithClipCell(GPTWithLoss(net), sgd, clip_norm=CLIP))
clip_ref = params(net)
net = build()
unclipped = train(nn.TrainOneStepCell(GPTWithLoss(net), nn.SGD(net.trainable_params(), 0.5)))
assert abs(unclipped[-1] - clip_losses[-1]) > 1e-3, "the clip must engage in this test"
info = apply_parallel({"parallel_config": PC})
net = build()
train_net = pipeline_gpt_with_loss(GPTWithLoss(net), info.pp, info.micro)
own = train_net.pipe.trainable_params()
losses = train(StagesClipTrainOneStepCell(train_net, nn.SGD(own, 0.5), CLIP))
np.testing.assert_allclose(losses, clip_losses, rtol=1e-6, err_msg="clip")
own_ids = {id(p) for p in own}
for n, p in net.parameters_and_names():
    if id(p) in own_ids:
        np.testing.assert_allclose(
            p.asnumpy(), clip_ref[n], rtol=0, atol=1e-7, err_msg=f"clip: {n}"
        )
print(f"rank {rank} pipeline with grad clip {CLIP}: losses {losses} equal the single-process run")

# MoE (2 experts per block): each micro-batch has its own routing capacity and aux loss, so
# the reference is one process on the same micro-batches (MeanOfCopies: the interleaved
# copies averaged); the pipeline carries the blocks' summed aux loss to the last stage
from sporeling.transformer.parallel import MeanOfCopies  # noqa: E402

MOE = {"expert_num": 2, "capacity_factor": 1.5, "aux_loss_factor": 0.05}


def build_moe():
    set_seed(5)
    return GPT(GPTConfig.from_dict(CFG, PC, MOE))


reset_auto_parallel_context()
net = build_moe()
moe_losses = train(
    nn.TrainOneStepCell(
        MeanOfCopies(GPTWithLoss(net), MICRO), nn.AdamW(net.trainable_params(), 1e-2)
    )
)
moe_ref = params(net)
info = apply_parallel({"parallel_config": PC})
net = build_moe()
train_net = pipeline_gpt_with_loss(GPTWithLoss(net), info.pp, info.micro)
own = train_net.pipe.trainable_params()
assert any("expert" in p.name or "router" in p.name for p in own), [p.name for p in own]
losses = train(nn.TrainOneStepCell(train_net, nn.AdamW(own, 1e-2)))
np.testing.assert_allclose(losses, moe_losses, rtol=1e-9, err_msg="moe")
own_ids = {id(p) for p in own}
for n, p in net.parameters_and_names():
    if id(p) in own_ids:
        np.testing.assert_allclose(p.asnumpy(), moe_ref[n], rtol=0, atol=1e-9, err_msg=f"moe: {n}")
print(f"rank {rank} pipeline moe: losses {losses} equal one process on the same micro-batches")

# the same path as `sporeling-transformer train`: gpt_tiny (2 layers, one per stage) trained
# by runner.train with pipeline_stage=2 gives the single-process validation loss, and the
# checkpoint rank 0 writes (every stage gathered to it) holds the single-process parameters
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

from sporeling.core import load_checkpoint  # noqa: E402
from sporeling.transformer.runner import train as run_train  # noqa: E402
from sporeling.transformer.settings import load_config  # noqa: E402

root = Path(sys.argv[1])
common = ["train.max_iters=4", "train.eval_interval=2", "optimizer.grad_clip=0.5"]
reset_auto_parallel_context()
plain = run_train(
    load_config("gpt_tiny", [f"output_dir={root / f'plain{rank}'}", *common]), log=lambda *_: None
)
pipe_run = run_train(
    load_config(
        "gpt_tiny",
        [
            f"output_dir={root / 'pipe'}",
            "parallel_config.pipeline_stage=2",
            "parallel_config.micro_batch_num=2",
            *common,
        ],
    ),
    log=lambda *_: None,
)
assert pipe_run["layout"]["pipeline_stage"] == 2, pipe_run["layout"]
# each rank holds only its stage's parameters, the bytes `plan` gives its stage, and one
# process all of them (the plan of the same config without the pipeline)
import yaml  # noqa: E402

from sporeling.transformer.plan import plan  # noqa: E402

run_cfg = yaml.safe_load((root / "pipe" / "config.yaml").read_text())
stage_bytes = plan(run_cfg, device_flops=1e9)["stage_parameter_bytes"]
assert pipe_run["parameter_bytes"] == stage_bytes[rank], (pipe_run["parameter_bytes"], stage_bytes)
one_bytes = plan({**run_cfg, "parallel_config": {}}, device_flops=1e9)["stage_parameter_bytes"]
assert plain["parameter_bytes"] == one_bytes[0] == sum(stage_bytes), (plain, one_bytes)
hist = [r["val_loss"] for r in pipe_run["history"]]
want = [r["val_loss"] for r in plain["history"]]
np.testing.assert_allclose(hist, want, rtol=1e-5, err_msg="runner val_loss")
# speed_up.micro_batch_num=2 (interleaved copies) inside the pipeline: the same losses
inter = run_train(
    load_config(
        "gpt_tiny",
        [
            f"output_dir={root / 'pipe_interleaved'}",
            "parallel_config.pipeline_stage=2",
            "parallel_config.micro_batch_num=2",
            "speed_up.micro_batch_num=2",
            *common,
        ],
    ),
    log=lambda *_: None,
)
assert inter["layout"]["interleaved_copies"] == 2, inter["layout"]
got = [r["val_loss"] for r in inter["history"]]
np.testing.assert_allclose(got, want, rtol=1e-5, err_msg="runner val_loss, interleaved copies")
comm.barrier()  # rank 0 reads the checkpoints once every rank has written
if rank == 0:
    a = load_checkpoint(str(root / "plain0" / "model.safetensors"))
    b = load_checkpoint(str(root / "pipe" / "model.safetensors"))
    assert sorted(a) == sorted(b)
    for n in a:
        np.testing.assert_allclose(b[n].asnumpy(), a[n].asnumpy(), rtol=0, atol=2e-5, err_msg=n)
print(f"rank {rank} runner: pipeline_stage=2 val losses {hist} equal the single-process run")
