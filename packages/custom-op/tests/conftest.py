"""Keep generated kernels and compiled libraries of the test runs out of ~/.cache, in one
stable folder so Numba's on-disk cache makes later runs fast."""

import os
import tempfile

os.environ.setdefault(
    "SPORELING_CUSTOMOP_CACHE", os.path.join(tempfile.gettempdir(), "sporeling-customop-tests")
)
