"""Under ``mpiexec -n 2``: ViT and T5 with pipeline_stage=2 (1F1B) give one process's losses
and parameters.

* float64, 3 AdamW steps, 4 micro-batches: a 2-layer ViT (patches, class token and layer 0
  on rank 0; layer 1, norm and head on rank 1), its correct-prediction counts through the
  pipeline equal one process's; a T5 with 2 + 2 layers (encoder on rank 0, decoder on rank
  1) and one with 1 + 3 (the decoder's first layer with the encoder on rank 0), on padded
  rows whose micro-batches hold different numbers of target tokens (the batch's token mean
  is kept: each micro-batch weighted by its share).
* ``train_vit`` and ``train_t5`` (the CLI's runs) with pipeline_stage=2, micro_batch_num=2:
  the single-process test accuracies / validation losses, and the checkpoint rank 0 writes
  (gathered from the stages) loads in one process and holds the single-process parameters.
"""

import sys
from pathlib import Path

import numpy as np
from _tiny_mnist import write_bright_dark_mnist

from sporeling.core import Tensor, load_checkpoint, nn, set_seed
from sporeling.core import communication as comm
from sporeling.core.parallel import reset_auto_parallel_context
from sporeling.transformer.models.t5 import T5Config, T5Model, T5WithLoss
from sporeling.transformer.models.vit import ViT, ViTConfig, ViTWithLoss
from sporeling.transformer.modules import TransformerOpParallelConfig
from sporeling.transformer.parallel import apply_parallel
from sporeling.transformer.pipeline import keep_own_stage, stage_state
from sporeling.transformer.pipeline_vit_t5 import pipeline_t5_with_loss, pipeline_vit

STEPS, BATCH, MICRO = 3, 8, 4
PC = {"pipeline_stage": 2, "micro_batch_num": MICRO}
F64 = dict(compute_dtype="float64", param_init_type="float64")
rng = np.random.default_rng(0)


def pc():
    return TransformerOpParallelConfig(**PC)


def params(net):
    return {n: p.asnumpy().copy() for n, p in net.parameters_and_names()}


def check(tag, net, own, ref, init, rank, stage_of):
    own_ids = {id(p) for p in own}
    for n, p in net.parameters_and_names():
        mine = stage_of(n) == rank
        assert (id(p) in own_ids) == mine, (tag, rank, n)
        want = ref[n] if mine else init[n]
        np.testing.assert_allclose(p.asnumpy(), want, rtol=0, atol=1e-10, err_msg=f"{tag}: {n}")


# ---- ViT, float64 -----------------------------------------------------------------------
VIT = dict(image_size=8, patch_size=4, num_channels=1, num_classes=5, hidden_size=16,
           num_layers=2, num_heads=2, mlp_ratio=2, **F64)  # fmt: skip
images = rng.standard_normal((STEPS, BATCH, 1, 8, 8))
labels = rng.integers(0, 5, (STEPS, BATCH)).astype(np.int32)


def build_vit():
    set_seed(3)
    return ViT(ViTConfig.from_dict(VIT), pc())


reset_auto_parallel_context()
net = build_vit()
init = params(net)
step = nn.TrainOneStepCell(ViTWithLoss(net), nn.AdamW(net.trainable_params(), 1e-2))
ref_losses = [float(step(Tensor(images[s]), Tensor(labels[s])).asnumpy()) for s in range(STEPS)]
ref = params(net)
ref_correct = [
    int((net(Tensor(images[s])).asnumpy().argmax(1) == labels[s]).sum()) for s in range(STEPS)
]

info = apply_parallel({"parallel_config": PC})
rank = info.rank
net = build_vit()
train_net, eval_net = pipeline_vit(net, info.pp, info.micro)
own = train_net.pipe.trainable_params()
step = nn.TrainOneStepCell(train_net, nn.AdamW(own, 1e-2))
losses = [float(step(Tensor(images[s]), Tensor(labels[s])).asnumpy()) for s in range(STEPS)]
np.testing.assert_allclose(losses, ref_losses, rtol=1e-10, err_msg="vit")
last = ("encoder.blocks.1.", "layernorm.", "head.")  # the last stage's parameters
check("vit", net, own, ref, init, rank, lambda n: 1 if n.startswith(last) else 0)
eval_net.set_train(False)
correct = []
for s in range(STEPS):
    got, rows = eval_net(Tensor(images[s]), Tensor(labels[s]))
    correct.append(int(got.asnumpy()))
    assert float(rows.asnumpy()) == BATCH
assert correct == ref_correct and sum(correct) > 0, (correct, ref_correct)
print(f"rank {rank} vit pipeline: losses {losses} and correct counts equal one process's")


# ---- T5, float64: 2 + 2 layers, then 1 + 3 ----------------------------------------------
def t5_data(seq):
    src = rng.integers(2, 12, (STEPS, BATCH, seq)).astype(np.int32)
    src_mask = np.ones_like(src)
    tgt = rng.integers(2, 12, (STEPS, BATCH, seq + 1)).astype(np.int32)
    for s in range(STEPS):
        for r in range(BATCH):
            n = int(rng.integers(1, seq + 1))  # real source tokens
            src[s, r, n:], src_mask[s, r, n:] = 0, 0
            tgt[s, r, int(rng.integers(1, seq + 2)) :] = 0  # pad after a random length
    return src, src_mask, tgt


SEQ = 5
src, src_mask, tgt = t5_data(SEQ)
counts = [(tgt[0, k * 2 : k * 2 + 2] != 0).sum() for k in range(MICRO)]
assert len(set(counts)) > 1, counts  # the micro-batches hold different numbers of tokens

for enc_layers, dec_layers in ((2, 2), (1, 3)):
    T5 = dict(vocab_size=12, seq_length=SEQ, max_decode_length=SEQ + 1, hidden_size=16,
              num_layers=enc_layers, num_decoder_layers=dec_layers, num_heads=2, d_ff=32,
              dropout_rate=0.0, layernorm_dtype="float64", softmax_dtype="float64",
              **F64)  # fmt: skip

    def build_t5(t5=T5):
        set_seed(4)
        return T5Model(T5Config.from_dict(t5), pc())

    def batch(s):
        return Tensor(src[s]), Tensor(src_mask[s]), Tensor(tgt[s])

    reset_auto_parallel_context()
    net = build_t5()
    stages = [b.pipeline_stage for b in list(net.encoder.blocks) + list(net.decoder.blocks)]
    assert stages == [0, 0, 1, 1], stages  # 1.8's rule over both stacks (4 layers, 2 stages)
    init = params(net)
    step = nn.TrainOneStepCell(T5WithLoss(net), nn.AdamW(net.trainable_params(), 1e-2))
    ref_losses = [float(step(*batch(s)).asnumpy()) for s in range(STEPS)]
    ref = params(net)

    info = apply_parallel({"parallel_config": PC})
    net = build_t5()
    train_net = pipeline_t5_with_loss(T5WithLoss(net), info.pp, info.micro)
    own = train_net.pipe.trainable_params()
    step = nn.TrainOneStepCell(train_net, nn.AdamW(own, 1e-2))
    losses = [float(step(*batch(s)).asnumpy()) for s in range(STEPS)]
    tag = f"t5 {enc_layers}+{dec_layers}"
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-10, err_msg=tag)
    on_0 = ("embedding.", "encoder_position.", "encoder.", "encoder_layernorm.")  # + table
    on_0 += ("decoder.blocks.0.", "decoder_position.") if enc_layers == 1 else ()

    def stage_of(n, on_0=on_0):
        return 0 if n.startswith(on_0) else 1

    check(tag, net, own, ref, init, rank, stage_of)
    # every rank then keeps only its stage; the stages gathered to rank 0 are the whole model
    keep_own_stage(train_net)
    whole = stage_state(train_net)
    if rank == 0:
        assert sorted(whole) == sorted(ref), tag
        for n in ref:
            np.testing.assert_allclose(whole[n], ref[n], rtol=0, atol=1e-10, err_msg=n)
    print(f"rank {rank} {tag} pipeline: losses {losses} equal one process's", flush=True)

# ---- the CLI's runs: train_vit / train_t5 with pipeline_stage=2 ---------------------------
from sporeling.transformer.runner import train  # noqa: E402
from sporeling.transformer.settings import load_config  # noqa: E402
from sporeling.transformer.train_other import load_t5, load_vit  # noqa: E402

root = Path(sys.argv[1])
mnist = root / "mnist"
if rank == 0:
    write_bright_dark_mnist(mnist, rng)
comm.barrier()
pipe = ["parallel_config.pipeline_stage=2", "parallel_config.micro_batch_num=2"]
runs = {
    "vit": ("vit_mnist", [f"data.path={mnist}", "data.holdout=8", "train.batch_size=8",
                          "train.epochs=2", "model.num_layers=2", "model.hidden_size=16",
                          "model.num_heads=2", "optimizer.learning_rate=0.01",
                          "optimizer.warmup_iters=0", "context.mode=pynative"]),
    "t5": ("t5_reverse", ["train.max_iters=4", "train.eval_interval=2", "train.batch_size=8",
                          "train.test_size=4", "data.length=4", "model.num_layers=1",
                          "context.mode=pynative"]),
}  # fmt: skip
for arch, (config, base) in runs.items():
    reset_auto_parallel_context()
    quiet = {"log": lambda *_: None}
    one = train(load_config(config, [f"output_dir={root / f'{arch}{rank}'}", *base]), **quiet)
    res = train(load_config(config, [f"output_dir={root / f'{arch}_pipe'}", *base, *pipe]), **quiet)
    assert 0 < res["parameters"] < one["parameters"], (res["parameters"], one["parameters"])
    key = "test_accuracy" if arch == "vit" else "val_loss"
    np.testing.assert_allclose(res[key], one[key], rtol=1e-6, err_msg=arch)
    assert arch != "vit" or max(one[key]) > 0, one  # (not a trivial comparison)
    comm.barrier()  # rank 0 wrote the checkpoint
    if rank == 0:  # it loads in one process and holds the single-process parameters
        a = load_checkpoint(str(root / f"{arch}0" / "model.safetensors"))
        loaded, _ = (load_vit if arch == "vit" else load_t5)(root / f"{arch}_pipe")
        got = dict(loaded.parameters_and_names())
        assert sorted(a) == sorted(got), arch
        for n in a:
            if n.endswith("attention.dense2.bias"):
                # the key bias: softmax ignores it, so its gradient is float32 rounding
                # noise, which AdamW scales up to steps of ~lr (checked in float64 above)
                continue
            np.testing.assert_allclose(
                got[n].asnumpy(), a[n].asnumpy(), rtol=0, atol=2e-6, err_msg=n
            )
        if arch == "t5":
            assert res["exact_match"] == one["exact_match"], (res, one)
    print(f"rank {rank} {arch} runner pipeline: {key} {res[key]} equal one process's", flush=True)
