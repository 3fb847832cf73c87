"""A seeded ViT run is bit-reproducible: the same seed gives the same weights and test
accuracies whether the 1-worker map runs inline or moves to its own thread (what it does
when its rows look heavy, which depends on the machine's load), and a different seed does
not. Graph mode, as the ``vit_mnist`` config trains; a tiny generated MNIST folder."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from sporeling.core import load_checkpoint
from sporeling.data.engine import workers
from sporeling.transformer.settings import load_config
from sporeling.transformer.train_other import train_vit


def _write_idx_gz(path, array):
    head = bytes([0, 0, 8, array.ndim]) + b"".join(n.to_bytes(4, "big") for n in array.shape)
    path.write_bytes(gzip.compress(head + array.astype(np.uint8).tobytes()))


@pytest.fixture
def mnist(tmp_path):
    rng = np.random.default_rng(3)
    root = tmp_path / "mnist"
    root.mkdir()
    _write_idx_gz(root / "train-images-idx3-ubyte.gz", rng.integers(0, 256, (80, 28, 28)))
    _write_idx_gz(root / "train-labels-idx1-ubyte.gz", rng.integers(0, 10, 80))
    return root


def _run(root, out, seed=0):
    cfg = load_config(
        "vit_mnist",
        [
            f"data.path={root}",
            f"output_dir={out}",
            "data.holdout=16",
            "train.batch_size=16",
            "train.epochs=2",
            f"train.seed={seed}",
            "model.num_layers=1",
            "model.hidden_size=32",
            "model.num_heads=2",
            "optimizer.warmup_iters=2",
        ],
    )
    res = train_vit(cfg, log=lambda *_: None)
    params = {k: v.asnumpy() for k, v in load_checkpoint(str(out / "model.safetensors")).items()}
    return params, res["test_accuracy"]


def test_seeded_vit_run_is_bit_reproducible_inline_or_threaded(mnist, tmp_path, monkeypatch):
    monkeypatch.setattr(workers._InlineRunner, "HEAVY_S", float("inf"))  # map stays inline
    inline, acc_inline = _run(mnist, tmp_path / "inline")
    # every map now counts as heavy: after its probe rows it runs on its own thread, ahead of
    # the training step that consumes its batches
    monkeypatch.setattr(workers._InlineRunner, "HEAVY_S", 0.0)
    started = []

    class Counted(workers._ThreadRunner):
        def __init__(self, *args, **kwargs):
            started.append(1)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(workers, "_ThreadRunner", Counted)
    threaded, acc_threaded = _run(mnist, tmp_path / "threaded")
    assert started, "the map never moved to its own thread"
    assert acc_threaded == acc_inline
    assert sorted(threaded) == sorted(inline)
    for name, value in inline.items():
        assert np.array_equal(threaded[name], value), name
    other, _ = _run(mnist, tmp_path / "seed1", seed=1)
    assert any(not np.array_equal(other[k], v) for k, v in inline.items())
