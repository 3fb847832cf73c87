"""``sporeling.core.communication``: process groups and collectives (MindSpore's names).

MPI (mpi4py, the ``[mpi]`` extra) carries CPU tensors across any number of machines;
NCCL (CuPy, the ``[gpu]`` extra, bootstrapped over MPI) carries GPU tensors. Start a job
with ``sporeling launch -n N script.py`` and call :func:`init` in the script.
"""

from .collectives import *  # noqa: F403
from .collectives import __all__ as _coll
from .management import *  # noqa: F403
from .management import __all__ as _mgmt

__all__ = [*_mgmt, *_coll]

# MindSpore's collective primitive classes are ops too (``ops.AllReduce(op, group)(x)``):
# this layer adds them to ops, which does not import it.
from .. import ops as _ops  # noqa: E402
from . import collectives as _collectives  # noqa: E402

for _name in ("AllReduce", "AllGather", "ReduceScatter", "Broadcast", "AlltoAll", "Send",
              "Receive", "ReduceOp"):  # fmt: skip
    setattr(_ops, _name, getattr(_collectives, _name))

# nn.SyncBatchNorm (a lower layer) reaches its group and the all-reduce through these slots
from .. import _hooks  # noqa: E402
from ._sync_bn import sync_group as _sync_group  # noqa: E402

_hooks.parallel.register(sync_group=_sync_group, all_reduce=_collectives.all_reduce)
