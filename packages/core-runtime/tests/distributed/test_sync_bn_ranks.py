"""nn.SyncBatchNorm under ``mpiexec -n 2``: the ranks' halves give the full batch's statistics."""

from _mp_launch import run_mpi


def test_sync_batch_norm_two_ranks_match_the_full_batch():
    out = run_mpi("sync_batch_norm.py", 2)
    assert out.count("sync batch norm ok") == 2, out
