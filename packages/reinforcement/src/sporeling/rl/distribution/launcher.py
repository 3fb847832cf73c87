"""Run an algorithm under a distribution policy or user fragments, one process or MPI ranks."""

from __future__ import annotations

import copy
import importlib
from typing import Any

from sporeling.core import communication as comm

from ..core.msrl import MSRL
from .fragment import get_all_fragments
from .policy import DistributionPolicy


def _with_actors(alg_config: dict[str, Any], n: int) -> dict[str, Any]:
    """The config with ``n`` actors, each with its own environments (seeded by actor)."""
    config = copy.copy(alg_config)
    config["actor"] = {**alg_config["actor"], "number": n, "share_env": False}
    return config


def run_policy(
    policy: DistributionPolicy,
    alg_config: dict[str, Any],
    iterations: int,
    num_steps: int,
) -> tuple[MSRL, Any]:
    """Build the algorithm on this rank and run its fragment: ``iterations`` rounds of
    ``num_steps`` steps per environment. Returns ``(msrl, fragment)``."""
    comm.init()
    rank, size = comm.get_rank(), comm.get_group_size()
    if size != policy.fragments:
        raise RuntimeError(
            f"{policy.name} needs {policy.fragments} processes, this job has {size} "
            f"(start it with `sporeling launch -n {policy.fragments} ...`)"
        )
    msrl = MSRL(_with_actors(alg_config, policy.actor_number))
    fragment = get_all_fragments(policy)[rank](msrl, rank, num_steps, iterations)
    return msrl, fragment.run()


def run_distributed(
    session: Any, class_type: type, episode: int, duration: int, params: Any, callbacks: Any
) -> Any:
    """0.5's path: ``deploy_config = {'distributed': True, 'worker_num': n, 'fragments':
    module-or-callable}``; rank ``r`` runs ``get_all_fragments(n)[r](msrl, r, duration,
    episode).run()``. ``'distribution_policy': DistributionPolicy`` generates the fragments."""
    deploy = session.deploy_config
    comm.init()
    rank = comm.get_rank()
    worker_num = int(deploy.get("worker_num", comm.get_group_size()))
    policy = deploy.get("distribution_policy")
    if policy is not None:
        msrl, fragment = run_policy(policy, session.alg_config, episode, duration)
        session.msrl = msrl
        return fragment
    source = deploy.get("fragments")
    if source is None:
        raise ValueError(
            "deploy_config: 'distributed' needs 'fragments' (a module or a get_all_fragments "
            "function) or 'distribution_policy'"
        )
    if isinstance(source, str):
        source = importlib.import_module(source)
    get_all = getattr(source, "get_all_fragments", source)
    fragments = get_all(worker_num)
    session.msrl = MSRL(session.alg_config, deploy)
    return fragments[rank](session.msrl, rank, duration, episode).run()
