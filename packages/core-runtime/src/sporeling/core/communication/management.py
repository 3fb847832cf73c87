"""Process groups: ``init``, ranks and sizes, ``create_group`` (MindSpore's ``communication``).

``init(backend_name=None)`` picks the transport from ``set_context(device_target=...)``:
MPI (mpi4py) on the CPU, NCCL (through CuPy, bootstrapped over MPI) on the GPU. A process
that was not started by ``mpiexec`` / ``sporeling launch`` and has no mpi4py gets a world
of one (every collective is then the identity), so a script runs unchanged on one process.

>>> from sporeling.core.communication import init, get_rank, get_group_size
>>> init()
>>> get_rank(), get_group_size()
(0, 1)
"""

from __future__ import annotations

from typing import Any

from ._backend import Group, import_mpi, import_nccl, install_abort_hook, launched_by_mpi

__all__ = [
    "init",
    "release",
    "get_rank",
    "get_group_size",
    "get_local_rank",
    "get_local_rank_size",
    "get_world_rank_from_group_rank",
    "get_group_rank_from_world_rank",
    "create_group",
    "destroy_group",
    "get_thread_level",
    "GlobalComm",
    "HCCL_WORLD_COMM_GROUP",
    "NCCL_WORLD_COMM_GROUP",
    "MCCL_WORLD_COMM_GROUP",
]

HCCL_WORLD_COMM_GROUP = "hccl_world_group"
NCCL_WORLD_COMM_GROUP = "nccl_world_group"
MCCL_WORLD_COMM_GROUP = "mccl_world_group"
_WORLD_NAMES = (HCCL_WORLD_COMM_GROUP, NCCL_WORLD_COMM_GROUP, MCCL_WORLD_COMM_GROUP)
_BACKENDS = ("mpi", "mccl", "nccl")


class GlobalComm:
    """MindSpore's communication globals: the backend and the world group's name.

    Every world name (``hccl_world_group``, ``nccl_world_group``, ``mccl_world_group``)
    refers to the world group, so defaults written for any device work here.
    """

    BACKEND = "mpi"
    WORLD_COMM_GROUP = HCCL_WORLD_COMM_GROUP
    INITED = False
    CHECK_ENVS = True


class _State:
    backend: str | None = None
    world: Group | None = None
    local: Group | None = None
    groups: dict[str, Group] = {}
    mpi_inited_here = False
    thread_level: int | None = None  # what MPI_Init_thread provided (None: no MPI)


#: MPI's thread support levels, in increasing order (their values in the MPI standard).
THREAD_LEVELS = ("single", "funneled", "serialized", "multiple")


def thread_support(level: str) -> bool:
    """Whether MPI calls may be made as ``level`` allows (always, in a world without MPI)."""
    provided = _State.thread_level
    if provided is None or _State.world is None or _State.world.size == 1:
        return True
    return provided >= THREAD_LEVELS.index(level)


def get_thread_level() -> str | None:
    """The thread support MPI provided at :func:`init`: ``"single"``, ``"funneled"``,
    ``"serialized"`` or ``"multiple"`` (``MPI_THREAD_*``, as ``MPI_Query_thread`` says);
    ``None`` before ``init`` or in a world of one without MPI.

    Code that makes MPI calls from several threads at once (a server answering each
    worker on a thread of its own) needs ``"multiple"``; mpi4py asks for it unless
    ``mpi4py.rc.thread_level`` says otherwise before MPI starts.
    """
    if not GlobalComm.INITED or _State.thread_level is None:
        return None
    return THREAD_LEVELS[_State.thread_level]


def require_thread_level(func: str, level: str) -> None:
    """Raise unless MPI was started with at least ``level`` of thread support.

    ``init`` starts MPI through mpi4py, which asks for ``MPI_THREAD_MULTIPLE`` unless
    ``mpi4py.rc.thread_level`` says otherwise; a world without MPI needs nothing.
    """
    if not thread_support(level):
        provided = _State.thread_level or 0
        raise RuntimeError(
            f"{func}: needs MPI thread support MPI_THREAD_{level.upper()} (MPI calls from "
            f"several threads), but the MPI library provided "
            f"MPI_THREAD_{THREAD_LEVELS[provided].upper()}; leave mpi4py.rc.thread_level at "
            f"'multiple' (its default) or set it to '{level}' before sporeling's init()"
        )


def _fail(func: str, what: str) -> RuntimeError:
    return RuntimeError(f"{func}: {what}")


def init(backend_name: str | None = None) -> None:
    """Start the communication backend: ``None`` (from the device target), ``"mpi"``/
    ``"mccl"`` (CPU) or ``"nccl"`` (GPU). Calling it again is a no-op."""
    if GlobalComm.INITED:
        return
    if backend_name is None:
        from ..context import get_context

        backend_name = "nccl" if get_context("device_target") == "GPU" else "mpi"
    if not isinstance(backend_name, str) or backend_name.lower() not in (*_BACKENDS, "hccl"):
        raise ValueError(
            f"init: argument 'backend_name' expected one of {list(_BACKENDS)} or None, "
            f"got {backend_name!r}"
        )
    backend = backend_name.lower()
    if backend == "hccl":
        raise ValueError(
            "init: backend_name='hccl' needs Ascend devices, which Sporeling does not drive; "
            "use 'mpi' on the CPU or 'nccl' on the GPU (or None to pick from device_target)"
        )
    if backend == "mccl":
        backend = "mpi"
    comm = None
    try:
        MPI = import_mpi("init")  # noqa: N806
    except ImportError:
        if launched_by_mpi() or backend == "nccl":
            raise
        MPI = None  # noqa: N806 - one process without MPI: a world of one
    if MPI is not None:
        comm = MPI.COMM_WORLD
        _State.thread_level = THREAD_LEVELS.index(
            {MPI.THREAD_SINGLE: "single", MPI.THREAD_FUNNELED: "funneled",
             MPI.THREAD_SERIALIZED: "serialized"}.get(MPI.Query_thread(), "multiple")
        )  # fmt: skip
        rank, size = comm.Get_rank(), comm.Get_size()
        local_comm = comm.Split_type(MPI.COMM_TYPE_SHARED, key=rank)
        local = Group("local", [], local_comm.Get_rank(), local_comm)
        local.size = local_comm.Get_size()
    else:
        rank, size = 0, 1
        local = Group("local", [0], 0, None)
        _State.thread_level = None
    world = Group("world", list(range(size)), rank, comm)
    if backend == "nccl":
        world.nccl = _nccl_comm("init", world, local.rank)
    _State.backend = backend
    _State.world = world
    _State.local = local
    _State.groups = {}
    GlobalComm.BACKEND = backend
    GlobalComm.WORLD_COMM_GROUP = (
        NCCL_WORLD_COMM_GROUP if backend == "nccl" else MCCL_WORLD_COMM_GROUP
    )
    GlobalComm.INITED = True
    if size > 1:
        install_abort_hook(comm, rank, size)
    from ..parallel import context as _pctx

    _pctx._on_init(rank, size)


def _nccl_comm(func: str, group: Group, local_rank: int) -> Any:
    cupy, nccl = import_nccl(func)
    ndev = cupy.cuda.runtime.getDeviceCount()
    if ndev == 0:
        raise RuntimeError(f"{func}: backend 'nccl' needs a GPU, but CuPy sees none")
    cupy.cuda.Device(local_rank % ndev).use()
    uid = nccl.get_unique_id() if group.rank == 0 else None
    if group.comm is not None:
        uid = group.comm.bcast(uid, root=0)
    return nccl.NcclCommunicator(group.size, uid, group.rank)


def release() -> None:
    """Free every group and forget the backend (MPI itself finalizes at exit)."""
    for g in _State.groups.values():
        g.free()
    _State.groups = {}
    _State.world = None
    _State.local = None
    _State.backend = None
    _State.thread_level = None
    GlobalComm.INITED = False
    GlobalComm.WORLD_COMM_GROUP = HCCL_WORLD_COMM_GROUP


def _require(func: str) -> Group:
    if _State.world is None:
        raise _fail(
            func, "the communication backend is not initialized; call "
            "sporeling.core.communication.init() first",
        )  # fmt: skip
    return _State.world


def get_group(group: Any, func: str) -> Group:
    """The :class:`Group` named ``group`` (a world name or one made by create_group)."""
    world = _require(func)
    if not isinstance(group, str):
        raise TypeError(f"{func}: argument 'group' expected a str, got {group!r}")
    if group in _WORLD_NAMES or group == "world":
        return world
    found = _State.groups.get(group)
    if found is None:
        raise ValueError(
            f"{func}: group {group!r} does not exist on rank {world.rank}; create it with "
            f"create_group (known: {[*_WORLD_NAMES, *_State.groups]})"
        )
    return found


def get_rank(group: str = GlobalComm.WORLD_COMM_GROUP) -> int:
    """This process's rank in ``group``."""
    return get_group(group, "get_rank").rank


def get_group_size(group: str = GlobalComm.WORLD_COMM_GROUP) -> int:
    """The number of processes in ``group``."""
    return get_group(group, "get_group_size").size


def get_local_rank(group: str = GlobalComm.WORLD_COMM_GROUP) -> int:
    """This process's rank among the processes of its machine."""
    get_group(group, "get_local_rank")
    return _State.local.rank  # type: ignore[union-attr]


def get_local_rank_size(group: str = GlobalComm.WORLD_COMM_GROUP) -> int:
    """The number of processes on this machine."""
    get_group(group, "get_local_rank_size")
    return _State.local.size  # type: ignore[union-attr]


def get_world_rank_from_group_rank(group: str, group_rank_id: int) -> int:
    """The world rank of ``group``'s rank ``group_rank_id``."""
    g = get_group(group, "get_world_rank_from_group_rank")
    if not isinstance(group_rank_id, int) or not 0 <= group_rank_id < g.size:
        raise ValueError(
            f"get_world_rank_from_group_rank: argument 'group_rank_id' expected an int in "
            f"[0, {g.size}) for group {group!r}, got {group_rank_id!r}"
        )
    return g.ranks[group_rank_id]


def get_group_rank_from_world_rank(world_rank_id: int, group: str) -> int:
    """The rank in ``group`` of world rank ``world_rank_id``."""
    g = get_group(group, "get_group_rank_from_world_rank")
    if world_rank_id not in g.ranks:
        raise ValueError(
            f"get_group_rank_from_world_rank: world rank {world_rank_id!r} is not in group "
            f"{group!r} (its ranks are {g.ranks})"
        )
    return g.ranks.index(world_rank_id)


def create_group(group: str, rank_ids: list[int]) -> None:
    """Make a group of the world ranks ``rank_ids``; called by every rank in it."""
    world = _require("create_group")
    if not isinstance(group, str) or not group or group in _WORLD_NAMES:
        raise ValueError(
            f"create_group: argument 'group' expected a new group name (not a world group), "
            f"got {group!r}"
        )
    if group in _State.groups:
        raise ValueError(f"create_group: group {group!r} already exists; destroy it first")
    ids = list(rank_ids) if isinstance(rank_ids, (list, tuple)) else None
    if (
        not ids
        or not all(isinstance(r, int) and 0 <= r < world.size for r in ids)
        or len(set(ids)) != len(ids)
    ):
        raise ValueError(
            f"create_group: argument 'rank_ids' expected distinct world ranks in "
            f"[0, {world.size}), got {rank_ids!r}"
        )
    if world.rank not in ids:
        raise ValueError(
            f"create_group: rank {world.rank} is not in rank_ids {ids}; only the ranks of a "
            "group call create_group for it"
        )
    comm = None
    if world.comm is not None:
        sub = world.comm.Get_group().Incl(ids)
        comm = world.comm.Create_group(sub, tag=_tag(group))
        sub.Free()
    g = Group(group, ids, ids.index(world.rank), comm)
    if _State.backend == "nccl" and g.size > 1:
        g.nccl = _nccl_comm("create_group", g, get_local_rank())
    _State.groups[group] = g


def _tag(name: str) -> int:
    import zlib

    return zlib.crc32(name.encode()) & 0x7FFF


def destroy_group(group: str) -> None:
    """Free a group made by :func:`create_group`."""
    _require("destroy_group")
    if group in _WORLD_NAMES:
        raise ValueError("destroy_group: the world group can not be destroyed; call release()")
    g = _State.groups.pop(group, None)
    if g is None:
        raise ValueError(f"destroy_group: group {group!r} does not exist")
    g.free()
