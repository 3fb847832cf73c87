"""Collectives on 0-d tensors, and shapes that differ across ranks (refused on every rank,
naming which rank had which shape)."""

import sys

import numpy as np

from sporeling.core import Tensor
from sporeling.core import communication as comm

comm.init()
rank, n = comm.get_rank(), comm.get_group_size()
if sys.argv[1] == "scalar":
    out = comm.all_reduce(Tensor(np.float64(rank + 1)))
    assert out.shape == () and float(out) == n * (n + 1) / 2, out
    assert comm.broadcast(Tensor(np.float32(rank)), 0).shape == ()
    print(f"scalar OK rank {rank}", flush=True)
else:
    try:
        comm.all_reduce(Tensor(np.ones(3 + rank)))
    except ValueError as exc:
        print(f"refused on rank {rank}: {exc}", flush=True)
