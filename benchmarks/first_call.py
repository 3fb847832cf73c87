"""First-call (compile) time of the core's benchmarks, with a cold and a warm Numba cache.

Each case runs in a fresh process twice: first with ``NUMBA_CACHE_DIR`` pointing at a new,
empty folder (every ``cache=True`` kernel is compiled), then again with that folder as
the first run left it (every kernel is loaded from disk). Each run reports the import of
``sporeling.core``, the first call (the step that compiles), the step after it (min of
three: so a change that slows the steady state shows next to the compile time it saves),
and every Numba compile or cache load, by kernel and signature, ranked by seconds
(exclusive: a kernel compiled while another was being typed counts for itself only).

    python benchmarks/first_call.py [--cases import,mlp,conv2d,lenet,resnet20,gpt] [--json out]

Cases: ``import`` (``import sporeling.core`` alone), ``mlp`` (784-512-256-10 eager step,
batch 128), ``conv2d`` (bench_conv2d's two forward+backward cases), ``lenet`` (eager
step, batch 64), ``resnet20`` (eager step, batch 64), ``gpt``
(the GPT graph step of ``bench_graph.py``, ``jit``), ``chain`` (its fused
``ln(gelu(x*w+b))`` forward and gradients on 1024x1024, ``jit``). Run it under
``nice -n 19``: timings on a loaded machine are only comparable within one run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CASES = ("import", "mlp", "conv2d", "lenet", "resnet20", "gpt", "chain")


# ---- the child: one case in this process ---------------------------------------------------


class CompileLog:
    """Times every ``Dispatcher.compile`` (a compile or a disk-cache load) in this process."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self._stack: list[float] = []  # children's inclusive seconds, per open frame
        self._cpu: list[float] = []  # the same in this thread's CPU seconds
        self._names: list[str] = []  # the kernels being compiled, outermost first

    def install(self) -> None:
        from numba.core import ccallback, dispatcher
        from numba.core.compiler_lock import global_compiler_lock

        original = dispatcher.Dispatcher.compile
        original_cfunc = ccallback.CFunc.compile
        log = self

        def compile(disp: Any, sig: Any) -> Any:  # noqa: A001 - the method it wraps
            # Taken before the clock starts: a worker thread waiting for another thread's
            # compile does not count that compile again.
            with global_compiler_lock:
                return timed(disp, sig)

        def timed(disp: Any, sig: Any) -> Any:
            misses = sum(disp._cache_misses.values())
            had = len(disp.overloads)
            py = disp.py_func
            with log._frame(f"{py.__module__}.{py.__qualname__}", str(sig)) as event:
                out = original(disp, sig)
                if len(disp.overloads) > had:  # not an overload that already existed
                    event["compiled"] = sum(disp._cache_misses.values()) > misses
                    log.events.append(event)
                return out

        def compile_cfunc(cf: Any) -> Any:
            # a ``cfunc`` (the GIL-free jobs): compiled or loaded once, when first built
            with global_compiler_lock:
                hits = cf._cache_hits
                py = cf._pyfunc
                with log._frame(f"{py.__module__}.{py.__qualname__}", str(cf._sig)) as event:
                    out = original_cfunc(cf)
                    event["compiled"] = cf._cache_hits == hits
                    event["cfunc"] = True
                    log.events.append(event)
                return out

        dispatcher.Dispatcher.compile = compile
        ccallback.CFunc.compile = compile_cfunc

    @contextlib.contextmanager
    def _frame(self, kernel: str, sig: str) -> Iterator[dict[str, Any]]:
        """One compile's record: seconds exclusive of the compiles nested in it, and the
        kernel whose compile asked for it (``parent``, None at the top)."""
        event: dict[str, Any] = {
            "kernel": kernel,
            "sig": sig,
            "parent": self._names[-1] if self._names else None,
        }
        self._stack.append(0.0)
        self._cpu.append(0.0)
        self._names.append(kernel)
        t0, c0 = time.perf_counter(), time.thread_time()
        try:
            yield event
        finally:
            secs, cpu = time.perf_counter() - t0, time.thread_time() - c0
            children, children_cpu = self._stack.pop(), self._cpu.pop()
            self._names.pop()
            if self._stack:
                self._stack[-1] += secs
                self._cpu[-1] += cpu
            event["secs"], event["cpu"] = secs - children, cpu - children_cpu

    def take(self) -> list[dict[str, Any]]:
        out, self.events = self.events, []
        return out


def _mlp(core: Any) -> tuple[Any, tuple[Any, ...]]:
    import numpy as np

    nn = core.nn
    net = nn.SequentialCell(
        [nn.Dense(784, 512), nn.ReLU(), nn.Dense(512, 256), nn.ReLU(), nn.Dense(256, 10)]
    )
    rng = np.random.default_rng(0)
    x = rng.standard_normal((128, 784), dtype="float32")
    y = rng.integers(0, 10, 128).astype(np.int32)
    return _train_cell(core, net), (core.Tensor(x), core.Tensor(y))


def _lenet(core: Any) -> tuple[Any, tuple[Any, ...]]:
    import numpy as np

    nn = core.nn
    net = nn.SequentialCell(
        [
            nn.Conv2d(1, 6, 5, pad_mode="valid"),
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=2, stride=2),
            nn.Conv2d(6, 16, 5, pad_mode="valid"),
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=2, stride=2),
            nn.Flatten(),
            nn.Dense(400, 120),
            nn.ReLU(),
            nn.Dense(120, 84),
            nn.ReLU(),
            nn.Dense(84, 10),
        ]
    )
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 1, 32, 32), dtype="float32")
    y = rng.integers(0, 10, 64).astype(np.int32)
    return _train_cell(core, net), (core.Tensor(x), core.Tensor(y))


def _resnet20(core: Any) -> tuple[Any, tuple[Any, ...]]:
    import numpy as np

    nn, ops = core.nn, core.ops

    def conv(cin: int, cout: int, k: int, stride: int) -> Any:
        pad = {"pad_mode": "pad", "padding": 1} if k == 3 else {"pad_mode": "valid"}
        return nn.Conv2d(cin, cout, k, stride=stride, **pad)

    class Block(nn.Cell):
        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            self.conv1, self.bn1 = conv(cin, cout, 3, stride), nn.BatchNorm2d(cout)
            self.conv2, self.bn2 = conv(cout, cout, 3, 1), nn.BatchNorm2d(cout)
            self.relu = nn.ReLU()
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.SequentialCell([conv(cin, cout, 1, stride), nn.BatchNorm2d(cout)])

        def construct(self, x: Any) -> Any:
            out = self.bn2(self.conv2(self.relu(self.bn1(self.conv1(x)))))
            return self.relu(out + (x if self.down is None else self.down(x)))

    class ResNet20(nn.Cell):
        def __init__(self) -> None:
            super().__init__()
            self.conv, self.bn, self.relu = conv(3, 16, 3, 1), nn.BatchNorm2d(16), nn.ReLU()
            blocks, cin = [], 16
            for cout, stride in ((16, 1), (32, 2), (64, 2)):
                for i in range(3):
                    blocks.append(Block(cin, cout, stride if i == 0 else 1))
                    cin = cout
            self.layers = nn.SequentialCell(blocks)
            self.fc = nn.Dense(64, 10)

        def construct(self, x: Any) -> Any:
            x = self.layers(self.relu(self.bn(self.conv(x))))
            return self.fc(ops.mean(x, (2, 3)))

    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 3, 32, 32), dtype="float32")
    y = rng.integers(0, 10, 64).astype(np.int32)
    return _train_cell(core, ResNet20()), (core.Tensor(x), core.Tensor(y))


def _gpt(core: Any) -> tuple[Any, tuple[Any, ...]]:
    import numpy as np

    core.set_context(enable_graph_kernel=True)  # with fusion, as bench_graph measures it

    sys.path.insert(0, str(HERE))
    import bench_graph as g

    net = g._sp_gpt(core)
    loss = core.nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = core.nn.AdamW(net.trainable_params(), learning_rate=1e-3, weight_decay=0.01)
    cell = core.nn.TrainOneStepCell(core.nn.WithLossCell(net, loss), opt)
    cell.set_train()
    rng = np.random.default_rng(5)
    idx = rng.integers(0, g.VOCAB, (g.BATCH, g.SEQ)).astype(np.int32)
    tgt = rng.integers(0, g.VOCAB, g.BATCH * g.SEQ).astype(np.int32)
    return core.jit(cell), (core.Tensor(idx), core.Tensor(tgt))


def _chain(core: Any) -> tuple[Any, tuple[Any, ...]]:
    """bench_graph's fused chain ln(gelu(x*w+b)), forward and gradients: the generated row
    kernels (``kernels/codegen_rows.py``) the issue's 72 s compile came from."""
    import numpy as np

    core.set_context(enable_graph_kernel=True)  # with fusion, as bench_graph measures it

    ops = core.ops
    rng = np.random.default_rng(4)
    x, r = (rng.standard_normal((1024, 1024)).astype("float32") for _ in range(2))
    w, b = (rng.standard_normal(1024).astype("float32") for _ in range(2))
    gamma, beta = core.Tensor(np.ones(1024, "float32")), core.Tensor(np.zeros(1024, "float32"))
    sr = core.Tensor(r)

    def loss(x: Any, w: Any, b: Any) -> Any:
        y, _, _ = ops.layer_norm(ops.gelu(x * w + b, "none"), gamma, beta, 1, 1, 1e-5)
        return ops.reduce_sum(y * sr)

    step = core.jit(core.value_and_grad(loss, (0, 1, 2)))
    return (lambda *a: step(*a)[0]), (core.Tensor(x), core.Tensor(w), core.Tensor(b))


def _conv2d(core: Any) -> tuple[Any, tuple[Any, ...]]:
    """bench_conv2d's two cases in one step: ``sum(conv2d(x, w) * r)`` and its gradients,
    N32 3->32 32x32 and N32 32->64 16x16, 3x3, padding 1."""
    import numpy as np

    ops = core.ops
    vg = core.value_and_grad(
        lambda x, w, r: ops.reduce_sum(ops.conv2d(x, w, pad_mode="pad", padding=1) * r), (0, 1)
    )
    rng = np.random.default_rng(3)
    shapes = [(32, 3, 32, 32), (32, 32, 64, 16)]
    args = []
    for n, cin, cout, hw in shapes:
        x = rng.standard_normal((n, cin, hw, hw)).astype("float32")
        w = (rng.standard_normal((cout, cin, 3, 3)) / (9 * cin) ** 0.5).astype("float32")
        r = rng.standard_normal((n, cout, hw, hw)).astype("float32")
        args += [core.Tensor(x), core.Tensor(w), core.Tensor(r)]

    def step(*a: Any) -> Any:
        return [vg(*a[i : i + 3])[0] for i in range(0, len(a), 3)][-1]

    return step, tuple(args)


def _train_cell(core: Any, net: Any) -> Any:
    loss = core.nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = core.nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9)
    cell = core.nn.TrainOneStepCell(core.nn.WithLossCell(net, loss), opt)
    cell.set_train()
    return cell


BUILDERS = {
    "mlp": _mlp,
    "conv2d": _conv2d,
    "lenet": _lenet,
    "resnet20": _resnet20,
    "gpt": _gpt,
    "chain": _chain,
}


def child(case: str) -> dict[str, Any]:
    log = CompileLog()
    t0 = time.perf_counter()
    import numba  # noqa: F401 - its import is part of the core's import, timed apart

    t_numba = time.perf_counter() - t0
    log.install()
    t0 = time.perf_counter()
    from sporeling import core

    out: dict[str, Any] = {
        "case": case,
        "numba_import": t_numba,
        "import": time.perf_counter() - t0,
        "import_kernels": log.take(),
    }
    if case == "import":
        return out
    step, args = BUILDERS[case](core)
    # Numba's contexts load their registries (and import numba.np.*, scipy's BLAS) on the
    # first compile or cache load of a process: timed apart, counted in the first call
    t0, c0 = time.perf_counter(), time.thread_time()
    from numba.core.registry import cpu_target

    cpu_target.typing_context.refresh()
    cpu_target.target_context.refresh()
    out["numba_init"] = time.perf_counter() - t0
    out["numba_init_cpu"] = time.thread_time() - c0
    t0, c0 = time.perf_counter(), time.thread_time()
    step(*args).asnumpy()
    out["first_call"] = time.perf_counter() - t0 + out["numba_init"]
    # this thread's CPU seconds (the compiles run here): a fair measure on a loaded machine
    out["first_call_cpu"] = time.thread_time() - c0 + out["numba_init_cpu"]
    out["kernels"] = log.take()
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        step(*args).asnumpy()
        times.append(time.perf_counter() - t0)
    out["step"] = min(times)
    out["late_kernels"] = log.take()  # compiled after the first call: should be none
    return out


# ---- the parent: cold then warm, per case --------------------------------------------------


def child_env(cache: str, pyc: str | None) -> dict[str, str]:
    # generated kernels' sources live beside Numba's cache of them: both start empty
    env = dict(os.environ, NUMBA_CACHE_DIR=cache, SPORELING_KERNEL_CACHE=f"{cache}/generated")
    if pyc is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = pyc
    return env


WARM_UP = (
    "import numpy as np, numba, sporeling.core\n"
    "numba.njit(lambda a: a.sum() + np.float32(1))(np.zeros(4, np.float32))"
)


def fill_bytecode(pyc: str) -> None:
    """Compile the imported modules' bytecode into ``pyc`` once (numpy, Numba and the
    registries its first compile imports, the core), as ``pip install`` does."""
    with tempfile.TemporaryDirectory(prefix="numba-warmup-") as cache:
        env = child_env(cache, pyc)
        subprocess.run([sys.executable, "-c", WARM_UP], env=env, check=True)


def run_case(case: str, cache: str, pyc: str | None) -> dict[str, Any]:
    env = child_env(cache, pyc)
    cmd = [sys.executable, __file__, "--child", case]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{case}: child failed\n{proc.stderr[-4000:]}")
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    res["process"] = wall
    return res


def summary(res: dict[str, Any], top: int) -> str:
    ks = res.get("kernels", []) + res["import_kernels"]
    n_comp = sum(k["compiled"] for k in ks)
    secs = sum(k["secs"] for k in ks)
    cpu = sum(k["cpu"] for k in ks)
    head = f"import {res['import']:.2f} s ({len(res['import_kernels'])} kernels)"
    if "first_call" in res:
        head += (
            f", first call {res['first_call']:.2f} s, CPU {res['first_call_cpu']:.2f} s"
            f" (Numba init {res['numba_init']:.2f}),"
            f" step {res['step'] * 1e3:.1f} ms,"
            f" late compiles {len(res['late_kernels'])}"
        )
    n_cf = sum(bool(k.get("cfunc")) for k in ks)
    head += (
        f"; Numba {secs:.2f} s (CPU {cpu:.2f} s) over {len(ks)} kernels"
        f" ({n_cf} cfuncs; {n_comp} compiled, rest loaded)"
    )
    lines = [head]
    for k in sorted(ks, key=lambda k: -k["cpu"])[:top]:
        how = ("compile" if k["compiled"] else "load") + (" cfunc" if k.get("cfunc") else "")
        parent = f" [in {k['parent'].rsplit('.', 1)[-1]}]" if k.get("parent") else ""
        lines.append(
            f"    {k['secs']:7.2f} s {k['cpu']:6.2f} cpu  {how:13s} {k['kernel']}{parent}"
            f" {k['sig'][:90]}"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--child", choices=CASES)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--top", type=int, default=8, help="kernels listed per run")
    ap.add_argument("--json", type=Path, help="write every run's record here")
    ap.add_argument("--warm-only", action="store_true", help="skip the cold run")
    ap.add_argument(
        "--bytecode",
        choices=("installed", "as-is"),
        default="installed",
        help="installed (default): modules' bytecode compiled once beforehand into a"
        " PYTHONPYCACHEPREFIX folder, as after `pip install`; as-is: this environment's"
        " (a uv venv has no .pyc, and PYTHONDONTWRITEBYTECODE=1 recompiles every import)",
    )
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(a.child)))
        return
    records = []
    print(f"load average {os.getloadavg()[0]:.1f}, bytecode {a.bytecode}", flush=True)
    pyc = None
    if a.bytecode == "installed":
        pyc = str(Path(tempfile.gettempdir()) / f"sporeling-first-call-pyc-{os.getuid()}")
        fill_bytecode(pyc)
    for case in a.cases.split(","):
        with tempfile.TemporaryDirectory(prefix="numba-cold-") as cache:
            for label in ("warm",) if a.warm_only else ("cold", "warm"):
                if a.warm_only:
                    run_case(case, cache, pyc)  # fill the cache first
                res = run_case(case, cache, pyc)
                res["cache"], res["bytecode"] = label, a.bytecode
                records.append(res)
                print(f"{case} {label}: process {res['process']:.1f} s; " + summary(res, a.top))
                print(flush=True)
    if a.json:
        a.json.write_text(json.dumps(records, indent=1))


if __name__ == "__main__":
    main()
