"""A rank ending early while rank 0 waits in a collective: ``mode`` is raise, exit0, exit3,
osexit or sigkill. Rank 1 writes the time it ends to ``stamp`` first."""

import os
import signal
import sys
import time

import numpy as np

from sporeling.core import Tensor
from sporeling.core import communication as comm

mode, stamp = sys.argv[1], sys.argv[2]
comm.init()
if comm.get_rank() == 1:
    # Let the launcher's exit watcher see both ranks alive first (it polls every 0.05 s):
    # a rank gone before it was ever seen cannot be ordered, and under a loaded CI the
    # watcher then named rank 0 (1 run of 4).
    time.sleep(1.0)
    with open(stamp, "w") as f:
        f.write(repr(time.time()))
    if mode == "raise":
        raise RuntimeError("boom from rank 1")
    if mode == "exit0":
        sys.exit(0)
    if mode == "exit3":
        sys.exit(3)
    if mode == "osexit":
        os._exit(0)
    os.kill(os.getpid(), signal.SIGKILL)
comm.all_reduce(Tensor(np.ones(3)))  # never completes: rank 1 is gone
print("not reached", flush=True)
