"""Test setup: one BLAS thread (small matrices; on a shared 2-core machine extra BLAS threads
only spin), and the tests folder importable for the Python twins in naive.py."""

from __future__ import annotations

import sys
from pathlib import Path

from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).parent))
_LIMIT = threadpool_limits(1)
