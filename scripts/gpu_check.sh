#!/usr/bin/env bash
# One prepared check for a GPU machine (written for an H200 with CUDA 13, no internet).
#
#   bash scripts/gpu_check.sh            # from the repository root; results go to $OUT
#
# 1. records the GPU (nvidia-smi, nvcc);
# 2. makes a venv (with the system's site-packages, so a preinstalled CuPy/PyTorch/pytest is
#    used offline) and installs the core from a local wheel: $WHEEL, else dist/*.whl, else
#    one built here; first with the [gpu] extra, then cupy-cuda13x, then without CuPy;
# 3. says clearly whether CuPy imports and sees the GPU (no CuPy: GPU parts are skipped);
# 4. runs `pytest -m gpu` and the op tests on the real GPU device (`-k GPU`);
# 5. runs the benchmarks with Sporeling on the GPU (PyTorch on CUDA when it has it);
# 6. writes $OUT/summary.md (plus logs). Exit status: 0 when every step that ran passed.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu-check-out}"
VENV="${VENV:-/tmp/sporeling-gpu-venv}"
mkdir -p "$OUT"
SUMMARY="$OUT/summary.md"
FAILED=0
PIP_FAST=(--disable-pip-version-check --timeout 15 --retries 0)  # fail fast offline

note() { echo "$*" | tee -a "$SUMMARY"; }
step() {  # step NAME LOGFILE CMD...: run, log, record pass/fail in the summary
    local name="$1" log="$OUT/$2"; shift 2
    echo "== $name: $*"
    "$@" >"$log" 2>&1
    local rc=$?
    if [ "$rc" = 0 ]; then note "- $name: passed: $(tail -n1 "$log")"
    elif [ "$rc" = 5 ]; then note "- $name: no tests collected (pytest exit 5)"
    else
        FAILED=1; note "- $name: FAILED with exit $rc ($2); last lines:"
        tail -n 15 "$log" | sed 's/^/      /' | tee -a "$SUMMARY"
    fi
}

echo "# Sporeling GPU check, $(date -u +%FT%TZ)" >"$SUMMARY"
{ nvidia-smi || echo "nvidia-smi not found"; } >"$OUT/nvidia-smi.txt" 2>&1
note "- GPU: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader \
    2>/dev/null | head -n1 || echo 'none found')"
note "- nvcc: $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' || echo 'not found')"

python3 -m venv --system-site-packages "$VENV" || { note "- venv: FAILED"; exit 1; }
PY="$VENV/bin/python"

WHEEL="${WHEEL:-$(ls -t dist/sporeling_core_runtime-*.whl 2>/dev/null | head -n1)}"
if [ -z "$WHEEL" ]; then  # build one: offline this needs hatchling already installed
    if "$PY" -c "import hatchling" 2>/dev/null; then NOISO=(--no-build-isolation); else NOISO=(); fi
    "$PY" -m pip wheel "${PIP_FAST[@]}" "${NOISO[@]}" --no-deps -w "$OUT/wheels" \
        packages/core-runtime >"$OUT/build.log" 2>&1
    WHEEL="$(ls "$OUT"/wheels/sporeling_core_runtime-*.whl 2>/dev/null | head -n1)"
fi
if [ -z "$WHEEL" ]; then
    note "- wheel: none found and none could be built (see build.log); give WHEEL=path"
    exit 1
fi
note "- wheel: $WHEEL"

if "$PY" -m pip install "${PIP_FAST[@]}" "$WHEEL[gpu]" >"$OUT/install.log" 2>&1; then
    note "- install: core with the [gpu] extra"
elif "$PY" -m pip install "${PIP_FAST[@]}" "$WHEEL" cupy-cuda13x >>"$OUT/install.log" 2>&1; then
    note "- install: core + cupy-cuda13x (the [gpu] extra's cupy-cuda12x was not installable)"
elif "$PY" -m pip install "${PIP_FAST[@]}" "$WHEEL" >>"$OUT/install.log" 2>&1; then
    note "- install: core WITHOUT CuPy: neither the [gpu] extra nor cupy-cuda13x could be" \
        "installed (offline and not preinstalled?); see install.log"
else
    note "- install: FAILED even without CuPy (numpy/numba missing offline?); see install.log"
    exit 1
fi

CUPY_OK=0
if "$PY" - >"$OUT/cupy.txt" 2>&1 <<'EOF'
import cupy
n = cupy.cuda.runtime.getDeviceCount()
a = cupy.arange(10, dtype=cupy.float32)
assert float((a * 2).sum()) == 90.0
print(f"cupy {cupy.__version__}, CUDA runtime {cupy.cuda.runtime.runtimeGetVersion()}, {n} GPU(s)")
EOF
then CUPY_OK=1; note "- CuPy: OK, $(tail -n1 "$OUT/cupy.txt")"
else
    FAILED=1
    note "- CuPy: NOT USABLE ($(tail -n1 "$OUT/cupy.txt")); GPU tests and benchmarks skipped"
fi

if [ "$CUPY_OK" = 1 ]; then
    export PYTHONPATH="$PWD/shared${PYTHONPATH:+:$PYTHONPATH}"  # the gpu marker and device fixture
    PYTEST=("$PY" -m pytest -q)
    if ! "$PY" -c "import importlib.metadata as m; m.distribution('sporeling-testing')" \
        2>/dev/null; then PYTEST+=(-p sporeling_testing.pytest_plugin); fi  # not installed
    if "$PY" -c "import pytest" 2>/dev/null || "$PY" -m pip install "${PIP_FAST[@]}" pytest \
        >>"$OUT/install.log" 2>&1; then
        step "pytest -m gpu" pytest-gpu.log "${PYTEST[@]}" -m gpu packages/core-runtime/tests
        step "op tests on the GPU device" pytest-ops-gpu.log \
            "${PYTEST[@]}" -k GPU packages/core-runtime/tests/ops
    else
        FAILED=1; note "- pytest: not installed and not installable offline; tests skipped"
    fi
    if "$PY" -c "import torch" 2>/dev/null; then
        step "benchmarks on GPU" bench.log \
            "$PY" benchmarks/run.py --quick --device GPU --out "$OUT/bench"
    else
        note "- benchmarks: skipped, PyTorch (the peer) is not installed in this venv"
    fi
fi
note "- overall: $([ "$FAILED" = 0 ] && echo passed || echo 'something FAILED or was missing')"
exit "$FAILED"
