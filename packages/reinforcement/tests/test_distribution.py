"""Distribution policies: two MPI ranks (one actor each, a learner on rank 0) compute
exactly what one process with two actors computes; 0.5's user-fragment path."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sporeling.core.communication.launch import find_mpiexec, mpiexec_command
from sporeling.rl.core import Session
from sporeling.rl.distribution import Fragment, get_policy

SCRIPT = Path(__file__).parent / "scripts" / "ppo_fragments.py"
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}
try:
    find_mpiexec()
    import mpi4py  # noqa: F401

    MISSING = None
except (RuntimeError, ImportError) as exc:
    MISSING = str(exc)


def _run(n, *args, timeout=300, env=ENV):
    argv = [str(SCRIPT), *map(str, args)]
    cmd = [sys.executable, *argv] if n is None else mpiexec_command(n, argv)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    return out


@pytest.mark.skipif(MISSING is not None, reason=f"no MPI: {MISSING}")
def test_two_ranks_equal_one_process_with_two_actors(tmp_path):
    single, multi = tmp_path / "single", tmp_path / "multi"
    assert "fragment OK rank 0 of 1" in _run(None, "single", 2, 3, single)
    out = _run(2, "multi-actor", 2, 3, multi)
    assert out.count("fragment OK") == 2
    ref = np.load(f"{single}.rank0.npz")
    assert int(ref["steps"]) == 3 * 16 * 2 * 2  # iterations x steps x envs x actors
    for rank in (0, 1):
        got = np.load(f"{multi}.rank{rank}.npz")
        assert sorted(got.files) == sorted(ref.files)
        for key in ref.files:
            if key == "losses" and rank == 1:
                assert got[key].size == 0  # rank 1 does not learn
                continue
            np.testing.assert_array_equal(got[key], ref[key], err_msg=f"{key} on rank {rank}")


@pytest.mark.skipif(MISSING is not None, reason=f"no MPI: {MISSING}")
def test_async_policy_equals_its_one_process_replay(tmp_path):
    """Rank 0 learns, ranks 1 and 2 act, collection overlapping learning, rollouts taken as
    they arrive: rank 1 starts 2 s late, so rank 2's rollout is learned first. Given the
    learner's arrival order, the weights and losses equal the schedule replayed in one
    process, and every actor ends with the learner's final weights."""
    replay, multi = tmp_path / "replay", tmp_path / "async"
    out = _run(3, "async", 2, 3, multi, env={**ENV, "PPO_FRAGMENTS_SLOW_RANK": "1"})
    assert out.count("fragment OK") == 3
    learner = np.load(f"{multi}.rank0.npz")
    order = learner["order"].tolist()
    assert sorted(order) == [1, 1, 1, 2, 2, 2] and order[0] == 2, order
    assert "fragment OK rank 0 of 1" in _run(
        None, "async-replay", 2, 3, replay, f"{multi}.rank0.npz"
    )
    ref = np.load(f"{replay}.rank0.npz")
    assert int(ref["steps"]) == 3 * 16 * 2 * 2 and ref["losses"].size == 3 * 2
    for key in ref.files:
        if key != "order":
            np.testing.assert_array_equal(learner[key], ref[key], err_msg=key)
    for rank in (1, 2):  # each actor ends with the learner's final weights
        got = np.load(f"{multi}.rank{rank}.npz")
        assert got["losses"].size == 0 and int(got["steps"]) == 3 * 16 * 2
        for key in ref.files:
            if ":" in key:
                np.testing.assert_array_equal(got[key], ref[key], err_msg=f"{key}, rank {rank}")


def test_policy_needs_one_process_per_actor():
    from sporeling.rl.algorithm import ppo_config
    from sporeling.rl.distribution import run_policy

    with pytest.raises(RuntimeError, match="needs 2 processes, this job has 1"):
        run_policy(get_policy("multi-actor", 2), ppo_config(), 1, 4)
    with pytest.raises(RuntimeError, match="needs 3 processes, this job has 1"):
        run_policy(get_policy("async", 2), ppo_config(), 1, 4)
    with pytest.raises(ValueError, match="unknown distribution policy 'ring'"):
        get_policy("ring", 2)


class CountingFragment(Fragment):
    def run(self):
        self.msrl.seen = (self.rank, self.duration, self.episode)
        return self


def get_all_fragments(num_actors):
    return [CountingFragment] * num_actors


def test_user_fragments_as_in_0_5():
    from sporeling.rl.algorithm import PPOTrainer, ppo_config

    session = Session(ppo_config(), deploy_config={"distributed": True, "worker_num": 1,
                                                   "fragments": sys.modules[__name__]})  # fmt: skip
    fragment = session.run(class_type=PPOTrainer, episode=3, duration=7)
    assert isinstance(fragment, CountingFragment) and session.msrl.seen == (0, 7, 3)
    with pytest.raises(ValueError, match="needs 'fragments'"):
        Session(ppo_config(), deploy_config={"distributed": True}).run(class_type=PPOTrainer)
