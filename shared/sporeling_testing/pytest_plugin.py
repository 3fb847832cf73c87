"""pytest plugin for every Sporeling package: the ``gpu`` marker and the ``device`` fixture.

* Tests marked ``@pytest.mark.gpu`` need a real GPU (CuPy seeing a device) and are skipped
  with a reason otherwise.
* The ``device`` fixture runs a test on ``"CPU"`` and on ``"GPU"``. Without a real GPU the GPU
  device is the NumPy stand-in (``SPORELING_GPU_STANDIN=1``), so the array-library-generic
  GPU code path still runs in CI; only CuPy-specific kernels need the real thing.
"""

from __future__ import annotations

import os

import pytest


def _real_gpu() -> bool:
    try:
        import cupy

        return bool(cupy.cuda.runtime.getDeviceCount() > 0)
    except Exception:
        return False


HAS_GPU = _real_gpu()
if not HAS_GPU:
    os.environ.setdefault("SPORELING_GPU_STANDIN", "1")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gpu: needs a real GPU with CuPy (skipped without one)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if HAS_GPU:
        return
    skip = pytest.mark.skip(reason="needs a GPU with CuPy; none was found on this machine")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(params=["CPU", "GPU"])
def device(request: pytest.FixtureRequest) -> str:
    """The device target to run on (GPU is the NumPy stand-in without a real GPU)."""
    return str(request.param)
