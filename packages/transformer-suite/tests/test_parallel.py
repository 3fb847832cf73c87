"""Parallel layouts: micro-batch copies in process, dp/optimizer-shard/mp and pipeline stages
under mpiexec -n 2."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sporeling.core import Tensor, ops, set_seed
from sporeling.transformer.models.gpt import GPT, GPTConfig, GPTWithLoss
from sporeling.transformer.parallel import MeanOfCopies, apply_parallel
from sporeling.transformer.pipeline import pipeline_gpt_with_loss

CFG = dict(
    seq_length=8,
    vocab_size=20,
    embedding_size=16,
    num_layers=2,
    num_heads=4,
    dropout_rate=0.0,
    compute_dtype="float64",
    layernorm_dtype="float64",
    softmax_dtype="float64",
    param_init_type="float64",
)


def test_micro_batch_copies_give_the_full_batch_loss_and_gradients():
    ids = Tensor(np.random.default_rng(0).integers(0, 20, (4, 9)).astype(np.int32))
    set_seed(1)
    full = GPTWithLoss(GPT(GPTConfig(**CFG)))
    set_seed(1)
    copies = MeanOfCopies(GPTWithLoss(GPT(GPTConfig(**CFG))), 2)
    lf, gf = ops.value_and_grad(full, None, full.trainable_params())(ids)
    lc, gc = ops.value_and_grad(copies, None, copies.trainable_params())(ids)
    # each copy divides by its own token count + 1e-5 (1.8's loss), hence 1e-6 not 1e-12
    np.testing.assert_allclose(lc.asnumpy(), lf.asnumpy(), rtol=1e-6)
    for a, b in zip(gf, gc):
        np.testing.assert_allclose(b.asnumpy(), a.asnumpy(), rtol=1e-5, atol=1e-9)


def test_layout_errors():
    pp = {"pipeline_stage": 2, "micro_batch_num": 2}
    with pytest.raises(ValueError, match="x model_parallel 2 needs 4 processes"):
        apply_parallel({"parallel_config": {**pp, "model_parallel": 2}})
    with pytest.raises(ValueError, match="pipeline_stage 2 x data_parallel 2 x model_parallel 1 "):
        apply_parallel({"parallel_config": {**pp, "data_parallel": 2, "optimizer_shard": True}})
    assert apply_parallel({}).world == 1
    from sporeling.transformer.runner import train

    # what T5 and ViT do not implement is refused, not ignored: their pipeline stages run
    # data parallel or model parallel, not both
    dp_mp = {**pp, "data_parallel": 2, "model_parallel": 2}
    for arch in ("t5", "vit"):
        with pytest.raises(
            ValueError,
            match=rf"\{{'data_parallel': 2, 'model_parallel': 2\}} with pipeline_stage 2: not "
            rf"implemented for arch '{arch}'",
        ):
            train({"arch": arch, "parallel_config": dp_mp})
    with pytest.raises(ValueError, match="pipeline_stage 2 x data_parallel 1 x model_parallel 1 "):
        train({"arch": "t5", "parallel_config": pp})  # one process for two stages
    with pytest.raises(ValueError, match="pipeline_stage 2 x data_parallel 2 x model_parallel 1 "):
        train({"arch": "vit", "parallel_config": {**pp, "data_parallel": 2}, "data": {}})


def test_vit_and_t5_pipeline_errors():
    from sporeling.transformer.models.t5 import T5Config, T5Model, T5WithLoss
    from sporeling.transformer.models.vit import ViT, ViTConfig
    from sporeling.transformer.modules import TransformerOpParallelConfig
    from sporeling.transformer.pipeline_vit_t5 import pipeline_t5_with_loss, pipeline_vit

    pc = TransformerOpParallelConfig(pipeline_stage=2, micro_batch_num=2)
    vit = dict(image_size=8, patch_size=4, num_channels=1, num_classes=3, hidden_size=8,
               num_heads=2)  # fmt: skip
    with pytest.raises(ValueError, match="micro_batch_num 1 must be at least pipeline_stage 2"):
        pipeline_vit(ViT(ViTConfig(**vit, num_layers=2), pc), 2, 1)
    with pytest.raises(ValueError, match=r"the 1 layers of the ViT give stages \[0\]; num_lay"):
        pipeline_vit(ViT(ViTConfig(**vit, num_layers=1), pc), 2, 2)
    with pytest.raises(ValueError, match=r"layers of the ViT give stages \[0\]; .* parallel_conf"):
        pipeline_vit(ViT(ViTConfig(**vit, num_layers=2)), 2, 2)  # built without the stages
    t5 = T5Model(
        T5Config(vocab_size=6, seq_length=3, max_decode_length=4, hidden_size=8, num_heads=2,
                 d_ff=8, num_layers=1, num_decoder_layers=1), pc,
    )  # fmt: skip
    # 1.8's rule over both stacks: the encoder's layer on stage 0, the decoder's on stage 1
    assert [t5.encoder.blocks[0].pipeline_stage, t5.decoder.blocks[0].pipeline_stage] == [0, 1]
    with pytest.raises(ValueError, match="micro_batch_num 1 must be at least pipeline_stage 2"):
        pipeline_t5_with_loss(T5WithLoss(t5), 2, 1)
    with pytest.raises(ValueError, match=r"2 layers of the T5 give stages \[0, 1\]; num_layers"):
        pipeline_t5_with_loss(T5WithLoss(t5), 3, 3)


def test_pipeline_wrapper_errors():
    gpt = GPT(GPTConfig.from_dict({**CFG, "num_layers": 1}, {"pipeline_stage": 2}))
    with pytest.raises(ValueError, match="micro_batch_num 1 must be at least pipeline_stage 2"):
        pipeline_gpt_with_loss(GPTWithLoss(gpt), 2, 1)
    with pytest.raises(ValueError, match=r"layers give stages \[0\]; num_layers must be"):
        pipeline_gpt_with_loss(GPTWithLoss(gpt), 2, 2)


def test_pipeline_stage_2_under_mpiexec(tmp_path):
    """gpt_pipeline.py: GPipe and 1F1B over 2 ranks equal one process (losses, own-stage
    parameters), so does global-norm clipping across the stages, and runner.train with
    pipeline_stage=2 (grad_clip 0.5) equals its single-process run."""
    out = _mpiexec("gpt_pipeline.py", 2, str(tmp_path))
    for what in ("pipeline gpipe:", "pipeline 1f1b:", "pipeline with grad clip 0.05:",
                 "pipeline moe:", "runner:"):  # fmt: skip
        assert out.count(f" {what}") == 2, out


def test_pipeline_stage_2_times_data_parallel_2_under_mpiexec_4(tmp_path):
    """gpt_pipeline_dp.py: 2 stages x 2 data-parallel copies (with and without global-norm
    clipping) equal one process on the whole batch; runner.train's checkpoint of that layout
    evaluates to its last validation loss."""
    out = _mpiexec("gpt_pipeline_dp.py", 4, str(tmp_path))
    for what in ("pp2xdp2:", "pp2xdp2 clip:", "pp2xdp2 optimizer_shard:", "pp2xmp2:",
                 "pp2xdp2 runner:", "pp2xmp2 runner:"):  # fmt: skip
        assert out.count(f" {what}") == 4, out


def _mpiexec(script: str, n: int, *args: str) -> str:
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        pytest.skip("mpi4py is not installed (pip install 'sporeling-transformer-suite[mpi]')")
    mpiexec = shutil.which("mpiexec") or str(Path(sys.executable).parent / "mpiexec")
    if not Path(mpiexec).exists():
        pytest.skip("mpiexec is not on PATH (pip install mpich)")
    env = dict(os.environ, OMP_NUM_THREADS="1", NUMBA_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    path = Path(__file__).parent / "distributed" / script
    proc = subprocess.run(
        [mpiexec, "-n", str(n), sys.executable, str(path), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr[-4000:]
    return proc.stdout


def test_dp_times_mp_under_mpiexec_4():
    out = _mpiexec("gpt_hybrid.py", 4)
    for what in ("dpxmp:", "dpxmp optimizer_shard:", "dpxmp optimizer_shard clip:",
                 "dpxmp runner:"):  # fmt: skip
        assert out.count(f" {what}") == 4, out


def test_dp_optimizer_shard_and_mp_under_mpiexec():
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        pytest.skip("mpi4py is not installed (pip install 'sporeling-transformer-suite[mpi]')")
    mpiexec = shutil.which("mpiexec") or str(Path(sys.executable).parent / "mpiexec")
    if not Path(mpiexec).exists():
        pytest.skip("mpiexec is not on PATH (pip install mpich)")
    script = Path(__file__).parent / "distributed" / "gpt_parallel.py"
    env = dict(os.environ, OMP_NUM_THREADS="1", NUMBA_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    proc = subprocess.run(
        [mpiexec, "-n", "2", sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr[-4000:]
    for what in (
        "dp:",
        "dp+optimizer_shard:",
        "dp+optimizer_shard+clip:",
        "mp+clip:",
        "mp:",
        "reshard:",
    ):
        assert proc.stdout.count(f" {what}") == 2, proc.stdout


def test_vit_and_t5_data_parallel_under_mpiexec(tmp_path):
    """t5_vit_parallel.py: train_vit and train_t5 with dp=2, dp=2 + optimizer_shard and mp=2
    write the single-process run's parameters (each rank keeps its half of every
    batch; T5's token mean rescaled to the whole batch's)."""
    out = _mpiexec("t5_vit_parallel.py", 2, str(tmp_path))
    for what in ("vit dp2:", "vit dp2_shard:", "vit mp2:", "t5_dp2:", "t5_dp2_shard:", "t5_mp2:"):
        assert out.count(f" {what}") == 2, out


def test_vit_and_t5_dp_times_mp_under_mpiexec_4(tmp_path):
    """t5_vit_parallel.py under 4 ranks: train_vit and train_t5 with data_parallel=2 x
    model_parallel=2 + optimizer_shard write one process's parameters."""
    out = _mpiexec("t5_vit_parallel.py", 4, str(tmp_path))
    for what in ("vit dp2xmp2_shard:", "t5_dp2xmp2_shard:"):
        assert out.count(f" {what}") == 4, out


def test_vit_and_t5_pipeline_stage_2_times_dp_or_mp_under_mpiexec_4(tmp_path):
    """vit_t5_pipeline_dp_mp.py: ViT and T5 over 2 stages x 2 data-parallel copies (with and
    without optimizer_shard) and 2 stages x 2 tensor-parallel shards equal one process
    (float64 losses, own-stage parameters and the gathered state to 1e-10; T5's micro-batches
    and halves hold different token counts); train_t5 (pp2 x dp2 + optimizer_shard) and
    train_vit (pp2 x mp2) give one process's validation losses / accuracies and checkpoint;
    under GRAPH_MODE the pipelined step and evaluation warn once each, then never."""
    out = _mpiexec("vit_t5_pipeline_dp_mp.py", 4, str(tmp_path))
    assert out.count(" vit graph mode: one warning per network, then none") == 4, out
    for arch in ("vit", "t5"):
        for layout in ("pp2xdp2:", "pp2xdp2 optimizer_shard:", "pp2xmp2:", "runner "):
            assert out.count(f" {arch} {layout}") == 4, out


def test_vit_and_t5_pipeline_stage_2_under_mpiexec(tmp_path):
    """vit_t5_pipeline.py: ViT and T5 (2 + 2 and 1 + 3 layers) over 2 stages, 4 micro-batches,
    equal one process (float64 losses and parameters, ViT correct counts); train_vit and
    train_t5 with pipeline_stage=2 give one process's accuracies / validation losses and a
    checkpoint that loads in one process."""
    out = _mpiexec("vit_t5_pipeline.py", 2, str(tmp_path))
    for what in ("vit pipeline:", "t5 2+2 pipeline:", "t5 1+3 pipeline:", "vit runner pipeline:",
                 "t5 runner pipeline:"):  # fmt: skip
        assert out.count(f" {what}") == 2, out


@pytest.mark.parametrize(
    "model", [{}, {"layernorm_dtype": "float64", "expand_ratio": 2, "num_layers": 3}]
)
def test_plan_stage_parameter_bytes_add_up_to_the_built_model(model):
    """`plan`'s per-stage parameter bytes (what a pipeline rank holds; the mpiexec tests
    compare each rank's) sum to the bytes of the GPT built in one process."""
    from sporeling.transformer.plan import plan
    from sporeling.transformer.runner import build_gpt
    from sporeling.transformer.settings import load_config

    cfg = load_config("gpt_tiny", [f"model.{k}={v}" for k, v in model.items()])
    net = build_gpt(cfg, 30)
    built = sum(p.asnumpy().nbytes for p in net.get_parameters())
    cfg["model"]["vocab_size"] = 30
    one = plan(cfg, device_flops=1e9)["stage_parameter_bytes"]
    cfg["parallel_config"] = {"pipeline_stage": 2, "micro_batch_num": 2}
    two = plan(cfg, device_flops=1e9)["stage_parameter_bytes"]
    assert one == [built] and sum(two) == built and len(two) == 2, (one, two, built)
    assert min(two) < built
