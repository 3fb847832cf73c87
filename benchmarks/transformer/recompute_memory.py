"""Peak traced memory (tracemalloc: NumPy's allocations included) of one GPT forward+backward
with and without the recompute config, on nanoGPT's "baby GPT" shape (4 layers, 4 heads,
embedding 128, block 64, batch 12, 65 characters). A warm-up step runs first so one-time
allocations (kernel caches) are not counted. Run:
``python benchmarks/transformer/recompute_memory.py`` (a few seconds) for PYNATIVE, and
``python benchmarks/transformer/recompute_memory.py graph [repeats]`` for the compiled step
(``jit(value_and_grad(...))``, fusion off and on): its peak with the memory plan's arena
allocated inside the measured call, and its time, the two graphs alternated in one process
(min and median of wall and CPU time)."""

import gc
import statistics
import sys
import time
import tracemalloc

import numpy as np

from sporeling.core import Tensor, jit, set_context, set_seed, value_and_grad
from sporeling.transformer.models.gpt import GPT, GPTConfig, GPTWithLoss
from sporeling.transformer.modules import TransformerOpParallelConfig, TransformerRecomputeConfig


def baby_gpt(recompute: bool, dropout: float) -> tuple[GPTWithLoss, Tensor]:
    """The baby-GPT shape (4 layers, width 128, block 64, batch 12) in training mode, seeded,
    and one batch of token ids."""
    set_seed(0)
    pc = TransformerOpParallelConfig(recompute=TransformerRecomputeConfig(recompute=recompute))
    cfg = GPTConfig(seq_length=64, vocab_size=65, embedding_size=128, num_layers=4, num_heads=4,
                    dropout_rate=dropout, parallel_config=pc)  # fmt: skip
    net = GPTWithLoss(GPT(cfg))
    net.set_train(True)
    ids = Tensor(np.random.default_rng(1).integers(0, 65, (12, 65)).astype(np.int32))
    return net, ids


def measure(recompute: bool, dropout: float) -> tuple[float, int, float]:
    net, ids = baby_gpt(recompute, dropout)
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


def compiled(recompute: bool, dropout: float) -> tuple[object, Tensor]:
    net, ids = baby_gpt(recompute, dropout)
    fn = jit(value_and_grad(net, None, weights=net.trainable_params()))
    fn(ids)  # compiles
    return fn, ids


def compiled_peak(fn: object, ids: Tensor) -> tuple[float, int]:
    """Loss and peak of one call, its memory plan's arena allocated inside the call."""
    for c in fn._cache.values():  # type: ignore[attr-defined]
        c.exe._arenas.clear()
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        set_seed(5)
        loss, _ = fn(ids)  # type: ignore[operator]
        peak = tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()
    return float(loss.asnumpy()), peak


def graph_main(repeats: int) -> None:
    for fusion in (False, True):
        set_context(enable_graph_kernel=fusion)
        for dropout in (0.0, 0.1):
            pair = [compiled(False, dropout), compiled(True, dropout)]
            (l0, p0), (l1, p1) = (compiled_peak(*f) for f in pair)
            times: list[list[tuple[float, float]]] = [[], []]
            for _ in range(repeats):
                for k, (fn, ids) in enumerate(pair):
                    w, c = time.perf_counter(), time.process_time()
                    fn(ids)  # type: ignore[operator]
                    times[k].append((time.perf_counter() - w, time.process_time() - c))
            (w0, c0), (w1, c1) = (
                [(min(x), statistics.median(x)) for x in zip(*t, strict=True)] for t in times
            )
            print(
                f"graph fusion={fusion} dropout {dropout}: loss {l0:.6f} / {l1:.6f}; peak "
                f"{p0 / 1e6:.1f} MB -> {p1 / 1e6:.1f} MB ({p1 / p0:.2f}x); step wall min/median "
                f"{w0[0] * 1e3:.1f}/{w0[1] * 1e3:.1f} -> {w1[0] * 1e3:.1f}/{w1[1] * 1e3:.1f} ms "
                f"({w1[1] / w0[1]:.2f}x median), CPU min/median {c0[0] * 1e3:.1f}/"
                f"{c0[1] * 1e3:.1f} -> {c1[0] * 1e3:.1f}/{c1[1] * 1e3:.1f} ms "
                f"({c1[1] / c0[1]:.2f}x median)"
            )


if __name__ == "__main__" and sys.argv[1:2] == ["graph"]:
    graph_main(int(sys.argv[2]) if len(sys.argv) > 2 else 20)
elif __name__ == "__main__":
    for dropout in (0.0, 0.1):
        (l0, p0, w0), (l1, p1, w1) = measure(False, dropout), measure(True, dropout)
        print(f"dropout {dropout}: loss {l0:.6f} / {l1:.6f}; peak {p0 / 1e6:.1f} MB -> "
              f"{p1 / 1e6:.1f} MB ({p1 / p0:.2f}x); step {w0:.3f} s -> {w1:.3f} s")  # fmt: skip
