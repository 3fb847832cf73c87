"""Peak traced memory (tracemalloc: NumPy's allocations included) of one GPT forward+backward
with and without the recompute config, on nanoGPT's "baby GPT" shape (4 layers, 4 heads,
embedding 128, block 64, batch 12, 65 characters). A warm-up step runs first so one-time
allocations (kernel caches) are not counted. Run:
``python benchmarks/transformer/recompute_memory.py`` (a few seconds)."""

import time
import tracemalloc

import numpy as np

from sporeling.core import Tensor, set_seed, value_and_grad
from sporeling.transformer.models.gpt import GPT, GPTConfig, GPTWithLoss
from sporeling.transformer.modules import TransformerOpParallelConfig, TransformerRecomputeConfig


def measure(recompute: bool, dropout: float) -> tuple[float, int, float]:
    set_seed(0)
    pc = TransformerOpParallelConfig(recompute=TransformerRecomputeConfig(recompute=recompute))
    cfg = GPTConfig(seq_length=64, vocab_size=65, embedding_size=128, num_layers=4, num_heads=4,
                    dropout_rate=dropout, parallel_config=pc)  # fmt: skip
    net = GPTWithLoss(GPT(cfg))
    net.set_train(True)
    ids = Tensor(np.random.default_rng(1).integers(0, 65, (12, 65)).astype(np.int32))
    fn = value_and_grad(net, None, weights=net.trainable_params())
    fn(ids)  # warm-up
    set_seed(5)
    t0 = time.perf_counter()
    loss, _ = fn(ids)
    wall = time.perf_counter() - t0
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        set_seed(5)
        fn(ids)
        peak = tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()
    return float(loss.asnumpy()), peak, wall


if __name__ == "__main__":
    for dropout in (0.0, 0.1):
        (l0, p0, w0), (l1, p1, w1) = measure(False, dropout), measure(True, dropout)
        print(f"dropout {dropout}: loss {l0:.6f} / {l1:.6f}; peak {p0 / 1e6:.1f} MB -> "
              f"{p1 / 1e6:.1f} MB ({p1 / p0:.2f}x); step {w0:.3f} s -> {w1:.3f} s")  # fmt: skip
