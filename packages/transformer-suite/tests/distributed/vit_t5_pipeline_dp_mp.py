"""Under ``mpiexec -n 4``: ViT and T5 with pipeline_stage=2 x data_parallel=2 (ranks 0-1 run
stage 0, ranks 2-3 stage 1; ranks 0 and 2 take the first half of each batch, 1 and 3 the
second), with that and optimizer_shard (each stage's AdamW state sliced over its two copies),
and with pipeline_stage=2 x model_parallel=2 (each stage's heads and feed-forward units split
over two ranks), 2 micro-batches, 3 AdamW steps, float64: the single-process losses and
parameters (each rank's own stage, its shard under mp) to 1e-10, and the stages gathered to
rank 0 (the checkpoint's state) are the single-process model.

The T5 rows are padded so that the two halves of a batch, and the micro-batches of each, hold
different numbers of target tokens: the batch's token mean needs the count summed over the
stage's data-parallel copies, and only over them (summed over every rank it is doubled, and
the loss halved; a plain average of the halves' means differs too).

Under GRAPH_MODE the pipelined ViT's training step and evaluation network run eagerly with
one warning each on their first call (not one per cell inside them), none on the second, and
the same losses.

Then ``train_t5`` with pipeline_stage=2 x data_parallel=2 + optimizer_shard and ``train_vit``
with pipeline_stage=2 x model_parallel=2 (the CLI's runs) give one process's validation losses
/ test accuracies and a checkpoint holding one process's parameters; the T5 run, configured
in graph mode, says once that its pipeline runs eagerly.
"""

import sys
import warnings
from pathlib import Path

import numpy as np
from _shards import expected_shard
from _tiny_mnist import write_bright_dark_mnist

from sporeling.core import (
    GRAPH_MODE,
    PYNATIVE_MODE,
    Tensor,
    load_checkpoint,
    nn,
    set_context,
    set_seed,
)
from sporeling.core import communication as comm
from sporeling.core.parallel import reset_auto_parallel_context, set_auto_parallel_context
from sporeling.transformer.models.t5 import T5Config, T5Model, T5WithLoss
from sporeling.transformer.models.vit import ViT, ViTConfig, ViTWithLoss
from sporeling.transformer.modules import TransformerOpParallelConfig
from sporeling.transformer.parallel import apply_parallel, shard_model, train_step
from sporeling.transformer.pipeline import stage_state
from sporeling.transformer.pipeline_vit_t5 import pipeline_t5_with_loss, pipeline_vit

STEPS, BATCH, MICRO, SEQ = 3, 8, 2, 5
PIPE = {"pipeline_stage": 2, "micro_batch_num": MICRO}
LAYOUTS = {
    "pp2xdp2": {**PIPE, "data_parallel": 2},
    "pp2xdp2 optimizer_shard": {**PIPE, "data_parallel": 2, "optimizer_shard": True},
    "pp2xmp2": {**PIPE, "model_parallel": 2},
}
F64 = dict(compute_dtype="float64", param_init_type="float64")
VIT = dict(image_size=8, patch_size=4, num_channels=1, num_classes=5, hidden_size=16,
           num_layers=2, num_heads=2, mlp_ratio=2, **F64)  # fmt: skip
T5 = dict(vocab_size=12, seq_length=SEQ, max_decode_length=SEQ + 1, hidden_size=16,
          num_layers=1, num_decoder_layers=1, num_heads=2, d_ff=32, dropout_rate=0.0,
          layernorm_dtype="float64", softmax_dtype="float64", **F64)  # fmt: skip
rng = np.random.default_rng(0)
images = rng.standard_normal((STEPS, BATCH, 1, 8, 8))
labels = rng.integers(0, 5, (STEPS, BATCH)).astype(np.int32)
src = rng.integers(2, 12, (STEPS, BATCH, SEQ)).astype(np.int32)
src_mask = np.ones_like(src)
tgt = rng.integers(2, 12, (STEPS, BATCH, SEQ + 1)).astype(np.int32)
for s in range(STEPS):
    for r in range(BATCH):
        n = int(rng.integers(1, SEQ + 1))  # real source tokens
        src[s, r, n:], src_mask[s, r, n:] = 0, 0
        tgt[s, r, int(rng.integers(1, SEQ + 2)) :] = 0  # pad after a random length
halves = [(tgt[0, h * 4 : h * 4 + 4] != 0).sum() for h in range(2)]
micros = [(tgt[0, m * 2 : m * 2 + 2] != 0).sum() for m in range(4)]
assert halves[0] != halves[1] and len(set(micros)) > 1, (halves, micros)

MODELS = {
    "vit": (
        lambda pc=None: ViT(ViTConfig.from_dict(VIT), pc),
        lambda net: ViTWithLoss(net),
        lambda s, rows: (Tensor(images[s][rows]), Tensor(labels[s][rows])),
    ),
    "t5": (
        lambda pc=None: T5Model(T5Config.from_dict(T5), pc),
        lambda net: T5WithLoss(net),
        lambda s, rows: (Tensor(src[s][rows]), Tensor(src_mask[s][rows]), Tensor(tgt[s][rows])),
    ),
}


def adamw(params):
    return nn.AdamW(params, learning_rate=1e-2, weight_decay=0.1)


def params(net):
    return {n: p.asnumpy().copy() for n, p in net.parameters_and_names()}


def one_process(arch):
    build, with_loss, batch = MODELS[arch]
    reset_auto_parallel_context()
    set_seed(4)
    net = build(TransformerOpParallelConfig(**PIPE))  # (the stages are metadata here)
    step = nn.TrainOneStepCell(with_loss(net), adamw(net.trainable_params()))
    losses = [float(step(*batch(s, slice(None))).asnumpy()) for s in range(STEPS)]
    return losses, params(net)


def warnings_of(fn, *args):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn(*args)
    return out, [str(w.message) for w in caught]


def graph_mode(ref_losses):
    """The ViT's pp2 x dp2 step and evaluation under GRAPH_MODE: one warning each, once."""
    reset_auto_parallel_context()
    info = apply_parallel({"parallel_config": LAYOUTS["pp2xdp2"]})
    set_seed(4)
    net = MODELS["vit"][0](TransformerOpParallelConfig(**PIPE))
    train_net, eval_net = pipeline_vit(net, info.pp, info.micro)
    step = train_step(train_net, adamw(train_net.pipe.trainable_params()), 0.0, info)
    eval_net.set_train(False)
    rows = slice(info.dp_rank * BATCH // 2, (info.dp_rank + 1) * BATCH // 2)
    set_context(mode=GRAPH_MODE)
    try:
        said, losses = [], []
        for s in range(2):
            loss, train_said = warnings_of(step, *MODELS["vit"][2](s, rows))
            _, eval_said = warnings_of(eval_net, *MODELS["vit"][2](s, slice(None)))
            losses.append(float(loss.asnumpy()))
            said.append((train_said, eval_said))
    finally:
        set_context(mode=PYNATIVE_MODE)
    np.testing.assert_allclose(losses, ref_losses[:2], rtol=1e-10, err_msg="graph mode")
    (train_said, eval_said), second = said
    assert second == ([], []), second
    assert len(train_said) == 1 and "TrainOneStepCell runs in PYNATIVE" in train_said[0], said
    assert len(eval_said) == 1 and "_SumOfMicroBatches runs in PYNATIVE" in eval_said[0], said
    print(f"rank {info.rank} vit graph mode: one warning per network, then none", flush=True)


def pipelined(arch, name, pc, ref_losses, ref):
    build, with_loss, batch = MODELS[arch]
    reset_auto_parallel_context()
    info = apply_parallel({"parallel_config": pc})
    set_auto_parallel_context(parallel_optimizer_config={"parallel_optimizer_threshold": 0})
    set_seed(4)
    net = build(TransformerOpParallelConfig(**PIPE))
    if info.mp > 1:
        shard_model(net, info.mp_group)
    if arch == "vit":
        train_net, _ = pipeline_vit(net, info.pp, info.micro, model_parallel=info.mp)
    else:
        train_net = pipeline_t5_with_loss(
            with_loss(net), info.pp, info.micro, model_parallel=info.mp
        )
    own = train_net.pipe.trainable_params()
    opt = adamw(own)
    assert opt.use_parallel == pc.get("optimizer_shard", False), name
    step = train_step(train_net, opt, 0.0, info)
    rows = slice(info.dp_rank * BATCH // info.dp, (info.dp_rank + 1) * BATCH // info.dp)
    losses = [float(step(*batch(s, rows)).asnumpy()) for s in range(STEPS)]
    tag = f"{arch} {name}"
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-10, err_msg=tag)
    if opt.use_parallel:  # each rank holds half of its stage's moments
        state = [q for q in opt.get_parameters() if getattr(q, "shard_layout", None)]
        full = sum(int(np.prod(q.shard_layout[3])) for q in state)
        assert state and 2 * sum(q.size for q in state) <= full + 2 * len(state), tag
    own_ids, j = {id(p) for p in own}, info.rank % info.mp
    assert own_ids, f"rank {info.rank} has no stage parameters"
    for n, p in net.parameters_and_names():
        if id(p) in own_ids:
            full = expected_shard(ref[n], p.shape, j)
            np.testing.assert_allclose(p.asnumpy(), full, rtol=0, atol=1e-10, err_msg=f"{tag} {n}")
    whole = stage_state(train_net, info.mp)  # what the runner's checkpoint holds
    if info.rank == 0:
        assert sorted(whole) == sorted(ref), tag
        for n in ref:
            np.testing.assert_allclose(whole[n], ref[n], rtol=0, atol=1e-10, err_msg=f"{tag} {n}")
    print(f"rank {info.rank} {tag}: losses {losses} equal one process's", flush=True)
    return info.rank


for arch in MODELS:
    ref_losses, ref = one_process(arch)
    for name, pc in LAYOUTS.items():
        rank = pipelined(arch, name, pc, ref_losses, ref)
    if arch == "vit":
        graph_mode(ref_losses)

# ---- the CLI's runs ------------------------------------------------------------------------
from sporeling.transformer.runner import train  # noqa: E402
from sporeling.transformer.settings import load_config  # noqa: E402

root = Path(sys.argv[1])
mnist = root / "mnist"
if rank == 0:
    write_bright_dark_mnist(mnist, rng)
comm.barrier()
pipe = ["parallel_config.pipeline_stage=2", "parallel_config.micro_batch_num=2"]
runs = {
    "vit": ("vit_mnist", ["parallel_config.model_parallel=2"],
            [f"data.path={mnist}", "data.holdout=8", "train.batch_size=8", "train.epochs=2",
             "model.num_layers=2", "model.hidden_size=16", "model.num_heads=2",
             "optimizer.learning_rate=0.01", "optimizer.warmup_iters=0",
             "context.mode=pynative"]),
    "t5": ("t5_reverse", ["parallel_config.data_parallel=2",
                          "parallel_config.optimizer_shard=true"],
           ["train.max_iters=4", "train.eval_interval=2", "train.batch_size=8",
            "train.test_size=4", "data.length=4", "model.num_layers=1",
            "context.mode=graph"]),
}  # fmt: skip
for arch, (config, layout, base) in runs.items():
    quiet = {"log": lambda *_: None}
    reset_auto_parallel_context()
    one = None
    if rank == 0:  # one process's run (the other ranks wait)
        one_base = [b.replace("mode=graph", "mode=pynative") for b in base]  # (eager's rounding)
        one = train(load_config(config, [f"output_dir={root / f'{arch}_one'}", *one_base]), **quiet)
    comm.barrier()
    reset_auto_parallel_context()
    set_auto_parallel_context(parallel_optimizer_config={"parallel_optimizer_threshold": 0})
    out = root / f"{arch}_pipe"
    cfg = load_config(config, [f"output_dir={out}", *base, *pipe, *layout])
    res, said = warnings_of(train, cfg, quiet["log"])
    if arch == "t5":  # configured in graph mode: one warning says the pipeline runs eagerly
        assert len(said) == 1 and "pipeline_stage 2: the training step" in said[0], said
    key = "test_accuracy" if arch == "vit" else "val_loss"
    comm.barrier()  # rank 0 wrote the checkpoint
    if rank == 0:
        assert 0 < res["parameters"] < one["parameters"], (res["parameters"], one["parameters"])
        np.testing.assert_allclose(res[key], one[key], rtol=1e-6, err_msg=arch)
        assert arch != "vit" or max(one[key]) > 0, one  # (not a trivial comparison)
        a = load_checkpoint(str(root / f"{arch}_one" / "model.safetensors"))
        b = load_checkpoint(str(out / "model.safetensors"))
        assert sorted(a) == sorted(b), arch
        for n in a:
            if n.endswith("attention.dense2.bias"):
                # the key bias: softmax ignores it, so its gradient is float32 rounding
                # noise, which AdamW scales up to steps of ~lr (checked in float64 above)
                continue
            np.testing.assert_allclose(
                b[n].asnumpy(), a[n].asnumpy(), rtol=0, atol=2e-6, err_msg=f"{arch} {n}"
            )
        if arch == "t5":
            assert res["exact_match"] == one["exact_match"], (res, one)
    print(f"rank {rank} {arch} runner {' '.join(layout)}: {key} {res[key]}", flush=True)
