"""Exports' shared runtime copies (see runtime_loader) go next to the suite's Numba cache
when nox sets one, not into the user's ~/.cache."""

import os

if os.environ.get("NUMBA_CACHE_DIR") and not os.environ.get("SPORELING_GS_RUNTIME_CACHE"):
    os.environ["SPORELING_GS_RUNTIME_CACHE"] = os.path.join(
        os.environ["NUMBA_CACHE_DIR"], "sporeling-gs-runtime"
    )
