"""A cost model for (dp, mp, optimizer-shard) layouts of GPT-style models, fed with a
measured or given link bandwidth/latency, and the ``sporeling plan`` command.

Formulas (documented so they can be checked by hand; ``tests/distributed/test_cost_model``
does so on a small case). A GPT with hidden ``h``, ``L`` layers, ``a`` heads, sequence
``s``, vocabulary ``V``, global batch ``B``; ``t = mp``, ``d = dp``, ``b = B / d``:

* parameters: ``P = L (12 h^2 + 13 h) + V h + s h`` (Megatron-LM's count);
* FLOPs per step (forward + backward, no recomputation; Narayanan et al. 2021):
  ``F = 72 B s L h^2 (1 + s / (6 h) + V / (12 L h))``;
* compute time: ``F / (d t * flops * efficiency)``;
* collective times on a link of bandwidth ``beta`` (bytes/s) and latency ``alpha`` (s),
  ring algorithms over ``p`` ranks and ``n`` bytes: all-reduce
  ``2 (p-1) alpha + 2 (p-1)/p * n / beta``; reduce-scatter and all-gather half of that;
* tensor-parallel traffic: 4 all-reduces per layer and step (2 forward, 2 backward) of the
  activations ``b s h`` elements over the ``t`` ranks;
* data-parallel traffic: the gradients of the ``P / t`` local parameters all-reduced over
  ``d`` ranks (with the optimizer shard: reduce-scatter + all-gather, the same volume);
  ``overlap`` (0..1) of it hides behind the backward pass;
* memory per device (bytes): weights ``P/t * w``, gradients ``P/t * w``, optimizer state
  ``P/t * o`` (Adam: two fp32 moments, ``o = 8``, plus an fp32 master copy when ``w < 4``),
  divided by ``d`` with the optimizer shard (and with it the gradients, reduce-scattered),
  plus activations ``L * s b h (10 + 24 / t + 5 a s / (h t)) * w / 2`` (Korthikanti et
  al. 2022, 16-bit activations scaled to ``w``-byte ones, no sequence parallelism);
* with every layer recomputed (``recompute=True``: ``Cell.recompute()``, in PyNative and in
  compiled graphs alike), the activations are each layer's input ``L * s b h * w`` plus one
  layer's full set (the one being recomputed and differentiated), and the FLOPs are
  ``96 B s L h^2 (1 + s / (6 h) + V / (16 L h))`` (one more forward of each layer;
  Narayanan et al. 2021).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

__all__ = [
    "LinkModel",
    "GPTConfig",
    "Layout",
    "Estimate",
    "estimate",
    "measure_link",
    "fit_link",
    "plan_table",
    "plan_main",
]


@dataclass(frozen=True)
class LinkModel:
    """A link: ``time(n bytes) = latency + n / bandwidth`` (bandwidth in bytes/s)."""

    bandwidth: float  # bytes / s
    latency: float  # s

    def __post_init__(self) -> None:
        if not (self.bandwidth > 0 and math.isfinite(self.bandwidth)):
            raise ValueError(f"LinkModel: bandwidth must be > 0 bytes/s, got {self.bandwidth}")
        if not (self.latency >= 0 and math.isfinite(self.latency)):
            raise ValueError(f"LinkModel: latency must be >= 0 s, got {self.latency}")

    def all_reduce(self, nbytes: float, p: int) -> float:
        if p <= 1:
            return 0.0
        return 2 * (p - 1) * self.latency + 2 * (p - 1) / p * nbytes / self.bandwidth

    def all_gather(self, nbytes: float, p: int) -> float:
        """``nbytes`` is the gathered (full) size; reduce-scatter costs the same."""
        if p <= 1:
            return 0.0
        return (p - 1) * self.latency + (p - 1) / p * nbytes / self.bandwidth


@dataclass(frozen=True)
class GPTConfig:
    hidden: int = 5120
    layers: int = 35
    heads: int = 40
    seq: int = 1024
    vocab: int = 50304

    def params(self) -> int:
        h, L = self.hidden, self.layers
        return L * (12 * h * h + 13 * h) + self.vocab * h + self.seq * h

    def flops(self, batch: int, recompute: bool = False) -> float:
        h, L, s, V = self.hidden, self.layers, self.seq, self.vocab
        if recompute:  # one more forward of each layer
            return 96.0 * batch * s * L * h * h * (1 + s / (6 * h) + V / (16 * L * h))
        return 72.0 * batch * s * L * h * h * (1 + s / (6 * h) + V / (12 * L * h))


@dataclass(frozen=True)
class Layout:
    dp: int = 1
    mp: int = 1
    optimizer_shard: bool = False


@dataclass(frozen=True)
class Estimate:
    layout: Layout
    step_time: float  # s
    compute_time: float
    tp_comm_time: float
    dp_comm_time: float
    samples_per_s: float
    memory_bytes: float  # per device
    weights_bytes: float
    grads_bytes: float
    optimizer_bytes: float
    activation_bytes: float


def estimate(
    model: GPTConfig,
    layout: Layout,
    link: LinkModel,
    global_batch: int,
    device_flops: float = 100e12,
    efficiency: float = 0.4,
    weight_bytes: int = 2,
    overlap: float = 0.0,
    intra_link: LinkModel | None = None,
    recompute: bool = False,
) -> Estimate:
    """Predicted step time and per-device memory of ``model`` at ``layout`` (module doc).

    ``intra_link`` is the link inside a model-parallel group (default ``link``);
    ``recompute``: every layer is recomputed in backward.
    """
    d, t = layout.dp, layout.mp
    if global_batch % d:
        raise ValueError(f"estimate: global_batch {global_batch} does not divide over dp={d}")
    if model.heads % t or model.hidden % t:
        raise ValueError(f"estimate: heads {model.heads} / hidden {model.hidden} vs mp={t}")
    if not 0 <= overlap <= 1:
        raise ValueError(f"estimate: overlap must be in [0, 1], got {overlap}")
    b = global_batch // d
    h, s, L, a = model.hidden, model.seq, model.layers, model.heads
    w = weight_bytes
    p_local = model.params() / t
    compute = model.flops(global_batch, recompute) / (d * t * device_flops * efficiency)
    tp_link = intra_link or link
    tp = 4 * L * tp_link.all_reduce(b * s * h * w, t)
    grad_bytes = p_local * w
    if layout.optimizer_shard:
        dp_comm = 2 * link.all_gather(grad_bytes, d)  # reduce-scatter + all-gather
    else:
        dp_comm = link.all_reduce(grad_bytes, d)
    exposed = dp_comm * (1 - overlap)
    step = compute + tp + exposed
    opt_per_param = 8 + (4 if w < 4 else 0)
    shard = d if layout.optimizer_shard else 1
    weights = p_local * w
    grads = p_local * w / shard
    optimizer = p_local * opt_per_param / shard
    layer_acts = s * b * h * (10 + 24 / t + 5 * a * s / (h * t)) * w / 2
    acts = L * s * b * h * w + layer_acts if recompute else L * layer_acts
    return Estimate(
        layout,
        step,
        compute,
        tp,
        exposed,
        global_batch / step,
        weights + grads + optimizer + acts,
        weights,
        grads,
        optimizer,
        acts,
    )


# ---- measuring the link -------------------------------------------------------------------


def fit_link(sizes: Sequence[float], times: Sequence[float]) -> LinkModel:
    """Least-squares ``time = latency + size / bandwidth`` over one-way times."""
    n = len(sizes)
    if n < 2 or n != len(times):
        raise ValueError("fit_link: need at least two (size, time) pairs of equal length")
    mx, my = sum(sizes) / n, sum(times) / n
    sxx = sum((x - mx) ** 2 for x in sizes)
    sxy = sum((x - mx) * (y - my) for x, y in zip(sizes, times, strict=True))
    slope = sxy / sxx if sxx else 0.0
    slope = max(slope, 1e-15)
    latency = max(my - slope * mx, 0.0)
    return LinkModel(1.0 / slope, latency)


def measure_link(
    sizes: Sequence[int] = (8, 1 << 10, 1 << 14, 1 << 18, 1 << 21, 1 << 23), repeats: int = 20
) -> LinkModel:
    """MPI ping-pong between world ranks 0 and 1 (run under ``mpiexec -n 2`` or more; the
    other ranks wait). Every rank returns the fitted link."""
    import time

    import numpy as np

    try:
        from mpi4py import MPI
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise RuntimeError(
            "measure_link needs mpi4py: pip install 'sporeling-core-runtime[mpi]' "
            "(or pip install mpi4py mpich), or give --bandwidth/--latency or --link-file"
        ) from exc
    comm = MPI.COMM_WORLD
    if comm.Get_size() < 2:
        raise RuntimeError(
            "measure_link: the ping-pong needs two ranks; run "
            "`sporeling launch -n 2 -- sporeling plan --measure` (or mpiexec -n 2 ...)"
        )
    rank = comm.Get_rank()
    times = []
    for n in sizes:
        buf = np.zeros(max(int(n), 1), np.uint8)
        comm.Barrier()
        best = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            if rank == 0:
                comm.Send(buf, 1)
                comm.Recv(buf, 1)
            elif rank == 1:
                comm.Recv(buf, 0)
                comm.Send(buf, 0)
            best = min(best, (time.perf_counter() - t0) / 2)
        times.append(best)
    times = comm.bcast(times, root=0)
    return fit_link([float(s) for s in sizes], times)


# ---- the table ------------------------------------------------------------------------------


def _gib(n: float) -> str:
    return f"{n / 2**30:8.2f}"


def plan_table(estimates: Sequence[Estimate], link: LinkModel) -> str:
    lines = [
        f"link: bandwidth {link.bandwidth / 1e9:.3f} GB/s, latency {link.latency * 1e6:.2f} us",
        f"{'dp':>3} {'mp':>3} {'opt':>4} {'devices':>7} {'step s':>9} {'compute':>9} "
        f"{'tp comm':>9} {'dp comm':>9} {'samples/s':>10} {'mem GiB':>8} {'weights':>8} "
        f"{'grads':>8} {'optim':>8} {'activ':>8}",
    ]
    for e in estimates:
        lay = e.layout
        lines.append(
            f"{lay.dp:>3} {lay.mp:>3} {'yes' if lay.optimizer_shard else 'no':>4} "
            f"{lay.dp * lay.mp:>7} {e.step_time:9.3f} {e.compute_time:9.3f} "
            f"{e.tp_comm_time:9.3f} {e.dp_comm_time:9.3f} {e.samples_per_s:10.2f} "
            f"{_gib(e.memory_bytes)} {_gib(e.weights_bytes)} {_gib(e.grads_bytes)} "
            f"{_gib(e.optimizer_bytes)} {_gib(e.activation_bytes)}"
        )
    return "\n".join(lines)


def _ints(text: str) -> list[int]:
    try:
        return [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ValueError(f"expected a comma-separated list of ints, got {text!r}") from None


def plan_main(argv: Sequence[str] | None = None) -> int:
    """``sporeling plan``: predicted step time and memory for layouts of a GPT."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="sporeling plan",
        description="Predict step time and per-device memory of (dp, mp) layouts of a GPT "
        "from a link model (measured with an MPI ping-pong, read from a file, or given).",
    )
    parser.add_argument("--hidden", type=int, default=5120)
    parser.add_argument("--layers", type=int, default=35)
    parser.add_argument("--heads", type=int, default=40)
    parser.add_argument("--seq", type=int, default=1024)
    parser.add_argument("--vocab", type=int, default=50304)
    parser.add_argument("--mp", default="8", help="model-parallel sizes, e.g. 8 or 4,8")
    parser.add_argument("--dp", default="1,2,4", help="data-parallel sizes, e.g. 1,2,4")
    parser.add_argument(
        "--batch-per-dp",
        type=int,
        default=8,
        help="samples per data-parallel rank (global batch = dp * this)",
    )
    parser.add_argument(
        "--optimizer-shard",
        action="store_true",
        help="also list layouts with the optimizer state sharded over dp",
    )
    parser.add_argument("--bandwidth", type=float, help="link bandwidth in GB/s")
    parser.add_argument("--latency", type=float, help="link latency in microseconds")
    parser.add_argument(
        "--intra-bandwidth",
        type=float,
        help="bandwidth inside a model-parallel group in GB/s (default: link)",
    )
    parser.add_argument("--link-file", help='JSON {"bandwidth_GBps": .., "latency_us": ..}')
    parser.add_argument(
        "--measure",
        action="store_true",
        help="measure the link with an MPI ping-pong (needs 2 ranks)",
    )
    parser.add_argument("--save-link", help="write the link used to this JSON file")
    parser.add_argument("--tflops", type=float, default=100.0, help="device peak TFLOP/s")
    parser.add_argument("--efficiency", type=float, default=0.4, help="achieved / peak FLOPs")
    parser.add_argument("--weight-bytes", type=int, default=2, help="2 (fp16/bf16) or 4")
    parser.add_argument(
        "--overlap",
        type=float,
        default=0.0,
        help="fraction of the dp gradient traffic hidden behind backward",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(list(argv) if argv is not None else None)

    if args.measure:
        link = measure_link()
        from mpi4py import MPI

        if MPI.COMM_WORLD.Get_rank() != 0:
            return 0
    elif args.link_file:
        with open(args.link_file, encoding="utf-8") as fh:
            obj = json.load(fh)
        link = LinkModel(float(obj["bandwidth_GBps"]) * 1e9, float(obj["latency_us"]) * 1e-6)
    elif args.bandwidth is not None:
        link = LinkModel(args.bandwidth * 1e9, (args.latency or 0.0) * 1e-6)
    else:
        raise ValueError("give --measure, --link-file F or --bandwidth GBps [--latency us]")
    if args.save_link:
        with open(args.save_link, "w", encoding="utf-8") as fh:
            json.dump(
                {"bandwidth_GBps": link.bandwidth / 1e9, "latency_us": link.latency * 1e6}, fh
            )
    intra = (
        LinkModel(args.intra_bandwidth * 1e9, link.latency)
        if args.intra_bandwidth is not None
        else None
    )
    model = GPTConfig(args.hidden, args.layers, args.heads, args.seq, args.vocab)
    shards = (False, True) if args.optimizer_shard else (False,)
    rows = []
    for mp in _ints(args.mp):
        for dp in _ints(args.dp):
            for opt in shards:
                rows.append(
                    estimate(
                        model,
                        Layout(dp, mp, opt),
                        link,
                        dp * args.batch_per_dp,
                        args.tflops * 1e12,
                        args.efficiency,
                        args.weight_bytes,
                        args.overlap,
                        intra,
                    )
                )
    if args.json:
        print(json.dumps([asdict(r) for r in rows], indent=1, default=str))
        return 0
    print(
        f"GPT hidden={model.hidden} layers={model.layers} heads={model.heads} seq={model.seq} "
        f"vocab={model.vocab}: {model.params() / 1e9:.2f} B parameters, "
        f"{args.batch_per_dp} samples per dp rank, {args.tflops:g} TFLOP/s x {args.efficiency:g}"
    )
    print(plan_table(rows, link))
    return 0
