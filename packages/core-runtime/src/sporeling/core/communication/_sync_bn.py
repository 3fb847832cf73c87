"""The group ``nn.SyncBatchNorm`` all-reduces its statistics over (filled into
``sporeling.core._hooks.parallel``: nn sits below this layer and does not import it).

``process_groups`` is MindSpore's: a list of lists of world ranks; each rank syncs with the
list that holds it (a group ``sync_bn_group<i>`` is created for it at construction).
"""

from __future__ import annotations

from typing import Any

from . import management as comm

__all__ = ["sync_group"]


def sync_group(process_groups: Any) -> str | None:
    """The group name to all-reduce over, or None when there is nothing to sync with."""
    if not comm.GlobalComm.INITED:
        if process_groups is not None:
            _check_groups(process_groups, None)
        return None
    world = comm.get_group_size()
    if process_groups is None:
        return comm.GlobalComm.WORLD_COMM_GROUP if world > 1 else None
    _check_groups(process_groups, world)
    me = comm.get_rank()
    for i, ranks in enumerate(process_groups):
        if me in ranks:
            if len(ranks) == 1:
                return None
            name = f"sync_bn_group{i}"
            try:
                comm.get_group_size(name)
            except ValueError:
                comm.create_group(name, list(ranks))
            return name
    raise ValueError(
        f"SyncBatchNorm: argument 'process_groups' {process_groups!r} does not hold this "
        f"process's rank {me}; expected every rank in exactly one list"
    )


def _check_groups(groups: Any, world: int | None) -> None:
    ok = isinstance(groups, (list, tuple)) and all(
        isinstance(g, (list, tuple)) and g and all(isinstance(r, int) and r >= 0 for r in g)
        for g in groups
    )
    flat = [r for g in groups for r in g] if ok else []
    ok = ok and len(flat) == len(set(flat)) and (world is None or all(r < world for r in flat))
    if not ok:
        raise ValueError(
            "SyncBatchNorm: argument 'process_groups' expected a list of disjoint lists of "
            f"world ranks{'' if world is None else f' in [0, {world})'}, got {groups!r}"
        )
