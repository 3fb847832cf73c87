"""Under ``mpiexec -n 2``: ``train_vit`` (the CLI's ViT run) with data_parallel=2, and with
data_parallel=2 + optimizer_shard, on a tiny generated MNIST folder: each rank keeps its half
of every batch one process reads, so the checkpoint rank 0 writes holds the single-process
run's parameters and the test accuracies are the same. ``train_t5`` (digit reversal) with
data_parallel=2, and + optimizer_shard: the same parameters and validation losses (each
rank's token mean rescaled to the whole batch's, ``GlobalTokenMean``). Both with
model_parallel=2 too (heads and feed-forward units split; the checkpoint gathered whole).
Under ``mpiexec -n 4``: both with data_parallel=2 x model_parallel=2 + optimizer_shard
(T5's token counts summed over the dp group only)."""

import sys
from pathlib import Path

import numpy as np
from _tiny_mnist import write_mnist_gz

from sporeling.core import communication as comm
from sporeling.core import load_checkpoint
from sporeling.core.parallel import reset_auto_parallel_context, set_auto_parallel_context
from sporeling.transformer.runner import train
from sporeling.transformer.settings import load_config

root = Path(sys.argv[1])
comm.init()
rank, world = comm.get_rank(), comm.get_group_size()
dp, mp = "parallel_config.data_parallel=2", "parallel_config.model_parallel=2"
shard = "parallel_config.optimizer_shard=true"
layouts = (
    {"dp2": [dp], "dp2_shard": [dp, shard], "mp2": [mp]}
    if world == 2
    else {"dp2xmp2_shard": [dp, mp, shard]}  # (dp x mp without the shard: the GPT's tests)
)
mnist = root / "mnist"
if rank == 0:
    rng = np.random.default_rng(0)
    imgs = rng.integers(0, 255, (40, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, 40).astype(np.uint8)
    write_mnist_gz(mnist, imgs, labels)
comm.barrier()

common = [f"data.path={mnist}", "data.holdout=8", "train.batch_size=8", "train.epochs=2",
          "model.num_layers=1", "model.hidden_size=16", "model.num_heads=2",
          "context.mode=pynative"]  # fmt: skip


def run(tag, *extra, config="vit_mnist", base=common):
    reset_auto_parallel_context()
    if shard in extra:  # slice the optimizer's small state too
        set_auto_parallel_context(parallel_optimizer_config={"parallel_optimizer_threshold": 0})
    cfg = load_config(config, [f"output_dir={root / tag}", *base, *extra])
    return train(cfg, log=lambda *_: None)


def same_checkpoints(tag, single):
    comm.barrier()  # rank 0 wrote the checkpoint
    a = load_checkpoint(str(root / single / "model.safetensors"))
    b = load_checkpoint(str(root / tag / "model.safetensors"))
    assert sorted(a) == sorted(b)
    for n in a:
        np.testing.assert_allclose(b[n].asnumpy(), a[n].asnumpy(), rtol=0, atol=2e-6, err_msg=n)


one = run(f"single{rank}")
for tag, extra in layouts.items():
    res = run(tag, *extra)
    if mp in extra:  # this rank holds its half of every attention and feed-forward
        assert one["parameters"] > res["parameters"] > one["parameters"] // 2, (res, one)
    assert res["test_accuracy"] == one["test_accuracy"], (tag, res, one)
    same_checkpoints(tag, f"single{rank}")
    print(f"rank {rank} vit {tag}: parameters equal the single-process run", flush=True)

t5 = ["train.max_iters=4", "train.eval_interval=2", "train.batch_size=8", "train.test_size=4",
      "data.length=4", "context.mode=pynative"]  # fmt: skip
one = run(f"t5_single{rank}", config="t5_reverse", base=t5)
for tag, extra in layouts.items():
    tag = f"t5_{tag}"
    res = run(tag, *extra, config="t5_reverse", base=t5)
    if mp in extra:
        assert one["parameters"] > res["parameters"] > one["parameters"] // 2, (res, one)
    np.testing.assert_allclose(res["val_loss"], one["val_loss"], rtol=1e-6, err_msg=tag)
    same_checkpoints(tag, f"t5_single{rank}")
    print(
        f"rank {rank} {tag}: parameters and val losses {res['val_loss']} equal one process's",
        flush=True,
    )
