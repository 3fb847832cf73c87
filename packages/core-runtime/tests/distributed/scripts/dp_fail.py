"""Failure modes: ``raise`` (rank 1 raises while the others wait in a collective) and
``mismatch`` (ranks build different networks)."""

import sys

import numpy as np

from sporeling.core import Tensor, nn
from sporeling.core import communication as comm
from sporeling.core.parallel import ParallelMode, set_auto_parallel_context

comm.init()
rank, n = comm.get_rank(), comm.get_group_size()
if sys.argv[1] == "raise":
    if rank == 1:
        raise ValueError(f"boom from rank {rank}")
    comm.all_reduce(Tensor(np.ones(3)))  # would wait forever without the abort
    comm.barrier()
else:
    set_auto_parallel_context(parallel_mode=ParallelMode.DATA_PARALLEL)
    net = nn.Dense(4, 3 + (rank == 1))
    nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), nn.SGD(net.trainable_params()))
print("not reached", flush=True)
