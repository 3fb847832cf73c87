"""Under ``mpiexec -n 4``: pipeline_stage=2 x data_parallel=2 (ranks 0-1 run stage 0, ranks
2-3 stage 1; ranks 0 and 2 take the first half of each batch, 1 and 3 the second), 2
micro-batches per half, 3 steps, gives the single-process losses and each rank's own-stage
parameters on the whole batch, with and without global-norm clipping (SGD); then
runner.train of gpt_tiny in that layout writes a checkpoint that evaluates, in one process,
to the run's last validation loss. The same with the stages' AdamW state sliced over their
two copies (optimizer_shard), and with pipeline_stage=2 x model_parallel=2 (each stage's heads
and feed-forward units split over two ranks), both with the clip engaged; runner.train of
pp2 x mp2 writes a checkpoint that evaluates to its last validation loss."""

import sys
from pathlib import Path

import numpy as np
from _shards import expected_shard

from sporeling.core import Tensor, nn, set_seed
from sporeling.core import communication as comm
from sporeling.core.parallel import reset_auto_parallel_context, set_auto_parallel_context
from sporeling.transformer.models.gpt import GPT, GPTConfig, GPTWithLoss
from sporeling.transformer.parallel import ParallelInfo, apply_parallel, shard_model, train_step
from sporeling.transformer.pipeline import StagesClipTrainOneStepCell, pipeline_gpt_with_loss

STEPS, BATCH, CLIP = 3, 8, 0.05
PC = {"pipeline_stage": 2, "data_parallel": 2, "micro_batch_num": 2}
CFG = dict(seq_length=8, vocab_size=20, embedding_size=16, num_layers=2, num_heads=4,
           dropout_rate=0.0, compute_dtype="float64", layernorm_dtype="float64",
           softmax_dtype="float64", param_init_type="float64")  # fmt: skip
data = np.random.default_rng(0).integers(0, 20, (STEPS, BATCH, 9)).astype(np.int32)


def build(pc=PC):
    set_seed(5)
    return GPT(GPTConfig.from_dict(CFG, pc))


def train(step, rows=slice(None)):
    return [float(step(Tensor(data[s][rows])).asnumpy()) for s in range(STEPS)]


reset_auto_parallel_context()
refs = {}
for clip in (0.0, CLIP):
    net = build()
    opt = nn.SGD(net.trainable_params(), 0.5)
    wl = GPTWithLoss(net)
    step = (
        nn.TrainOneStepWithClipCell(wl, opt, clip_norm=clip)
        if clip
        else nn.TrainOneStepCell(wl, opt)
    )
    refs[clip] = (train(step), {n: p.asnumpy().copy() for n, p in net.parameters_and_names()})
assert abs(refs[0.0][0][-1] - refs[CLIP][0][-1]) > 1e-3, "the clip must engage in this test"


def adamw(params):
    return nn.AdamW(params, learning_rate=1e-2, weight_decay=0.1)


net = build()
step = train_step(GPTWithLoss(net), adamw(net.trainable_params()), CLIP, ParallelInfo(1, 1))
ref_adamw = (train(step), {n: p.asnumpy().copy() for n, p in net.parameters_and_names()})

info = apply_parallel({"parallel_config": PC})
rank, column = info.rank, info.dp_rank
assert (info.pp, info.dp, column) == (2, 2, rank % 2), (info.pp, info.dp, column)
half = slice(column * BATCH // 2, (column + 1) * BATCH // 2)
for clip, name in ((0.0, "pp2xdp2"), (CLIP, "pp2xdp2 clip")):
    net = build()
    train_net = pipeline_gpt_with_loss(GPTWithLoss(net), info.pp, info.micro)
    own = train_net.pipe.trainable_params()
    opt = nn.SGD(own, 0.5)
    if clip:
        step = StagesClipTrainOneStepCell(train_net, opt, clip, replicas=info.dp)
    else:
        step = nn.TrainOneStepCell(train_net, opt)
    losses = train(step, half)
    ref_losses, ref_params = refs[clip]
    # the loss is averaged over the stage's two halves (each divided by its own token count
    # + 1e-5, 1.8's loss): 1e-6 relative
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-6, err_msg=name)
    own_ids = {id(p) for p in own}
    assert own_ids, f"rank {rank} has no stage parameters"
    for n, p in net.parameters_and_names():
        if id(p) in own_ids:
            np.testing.assert_allclose(
                p.asnumpy(), ref_params[n], atol=1e-7, err_msg=f"{name}: {n}"
            )
    print(f"rank {rank} {name}: losses {losses} equal the single-process run", flush=True)


def stage_run(pc, name, rows):
    """AdamW, the clip engaged, through the runner's train_step, against ref_adamw."""
    reset_auto_parallel_context()
    info = apply_parallel({"parallel_config": pc})
    set_auto_parallel_context(parallel_optimizer_config={"parallel_optimizer_threshold": 0})
    net = build(pc)
    if info.mp > 1:
        shard_model(net, info.mp_group)
    train_net = pipeline_gpt_with_loss(
        GPTWithLoss(net), info.pp, info.micro, model_parallel=info.mp
    )
    own = train_net.pipe.trainable_params()
    opt = adamw(own)
    assert opt.use_parallel == pc.get("optimizer_shard", False), name
    losses = train(train_step(train_net, opt, CLIP, info), rows(info))
    if opt.use_parallel:  # each rank holds half of its stage's moments
        state = [q for q in opt.get_parameters() if getattr(q, "shard_layout", None)]
        full = sum(int(np.prod(q.shard_layout[3])) for q in state)
        assert state and 2 * sum(q.size for q in state) <= full + 2 * len(state), name
    ref_losses, ref_params = ref_adamw
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-6, err_msg=name)
    own_ids = {id(p) for p in own}
    j = info.rank % info.mp
    for n, p in net.parameters_and_names():
        if id(p) in own_ids:
            full = expected_shard(ref_params[n], p.shape, j)
            np.testing.assert_allclose(p.asnumpy(), full, atol=1e-7, err_msg=f"{name}: {n}")
    print(f"rank {info.rank} {name}: losses {losses} equal the single-process run", flush=True)


stage_run({**PC, "optimizer_shard": True}, "pp2xdp2 optimizer_shard",
          lambda i: slice(i.dp_rank * BATCH // 2, (i.dp_rank + 1) * BATCH // 2))  # fmt: skip
PC_MP = {"pipeline_stage": 2, "model_parallel": 2, "micro_batch_num": 2}
stage_run(PC_MP, "pp2xmp2", lambda i: slice(None))

import yaml  # noqa: E402

from sporeling.transformer.plan import plan  # noqa: E402
from sporeling.transformer.runner import evaluate  # noqa: E402
from sporeling.transformer.runner import train as run_train  # noqa: E402
from sporeling.transformer.settings import load_config  # noqa: E402

for tag, layout in (
    ("pp2xdp2", ["parallel_config.data_parallel=2"]),
    ("pp2xmp2", ["parallel_config.model_parallel=2"]),
):
    out = Path(sys.argv[1]) / tag
    reset_auto_parallel_context()
    res = run_train(load_config("gpt_tiny", [
        f"output_dir={out}", "train.max_iters=2", "train.eval_interval=2", "train.batch_size=8",
        "parallel_config.pipeline_stage=2", *layout,
        "parallel_config.micro_batch_num=2", "optimizer.grad_clip=0.5",
    ]), log=lambda *_: None)  # fmt: skip
    assert res["layout"]["pipeline_stage"] == 2, res["layout"]
    # the rank holds only its stage's parameters (its shards under mp), as `plan` says
    # (config.yaml, which rank 0 wrote before training, holds the tokenizer's vocab_size)
    want = plan(yaml.safe_load((out / "config.yaml").read_text()), device_flops=1e9)
    assert res["parameter_bytes"] == want["stage_parameter_bytes"][rank // 2], (res, want)
    comm.barrier()  # rank 0 wrote the gathered checkpoint
    reset_auto_parallel_context()
    last = res["history"][-1]["val_loss"]
    got = evaluate(out)
    np.testing.assert_allclose(got, last, rtol=1e-5, err_msg=f"checkpoint of the {tag} run")
    print(f"rank {rank} {tag} runner: checkpoint evaluates to {got} = the run's {last}", flush=True)
