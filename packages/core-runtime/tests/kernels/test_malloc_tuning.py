"""glibc malloc tuning at import (kernels/cpu/_malloc.py): when it applies, the opt-out,
and that a process which imports the core reuses freed blocks instead of faulting anew."""

import os
import subprocess
import sys

import pytest

from sporeling.core.kernels.cpu import _malloc


def test_wanted_by_default_and_not_when_the_user_chose():
    assert _malloc.wanted({})
    assert _malloc.wanted({"SPORELING_MALLOC": "retain"})
    assert not _malloc.wanted({"SPORELING_MALLOC": "default"})
    for var in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_"):
        assert not _malloc.wanted({var: "65536"})


def test_unknown_mode_names_the_variable_and_the_choices():
    with pytest.raises(ValueError, match=r"SPORELING_MALLOC='keep'.*'retain'.*'default'"):
        _malloc.wanted({"SPORELING_MALLOC": "keep"})


_FAULTS = """
import resource, numpy as np
import sporeling.core
from sporeling.core.kernels.cpu import _malloc
def cycle():
    # a step-like pattern: a few live 4 MB arrays and a growing, then freed, heap top
    live = [np.ones(1 << 20, np.float32) for _ in range(8)]
    big = [np.ones(1 << 21, np.float32) for _ in range(4)]
    del big, live
cycle()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
cycle()
print(_malloc.applied, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(mode: str) -> tuple[bool, int]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    env["SPORELING_MALLOC"] = mode
    out = subprocess.run(
        [sys.executable, "-c", _FAULTS], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    return out[0] == "True", int(out[1])


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or os.confstr("CS_GNU_LIBC_VERSION") is None,
    reason="glibc only",
)
def test_a_second_step_like_cycle_reuses_pages_only_when_tuned():
    tuned, tuned_faults = _faults("retain")
    plain, plain_faults = _faults("default")
    assert tuned and not plain
    # 40 MB of fresh pages is ~10,000 faults; reused blocks fault on a few pages at most
    assert tuned_faults < 1000 < plain_faults, (tuned_faults, plain_faults)
