"""Parameter-server parts that make MPI calls from several threads check that MPI provides
``MPI_THREAD_MULTIPLE`` (through the core's public ``communication.get_thread_level``) and
refuse a lower level with an error naming both levels and what to change. The world of three
ranks and the thread level are stood in for, so no MPI run is needed."""

from __future__ import annotations

import pytest

from sporeling.core import communication as comm
from sporeling.recommender import ps
from sporeling.recommender.models import WideDeepModel
from sporeling.recommender.ps_cache import EmbeddingServer, RemoteCachedEmbeddingLookup


@pytest.fixture
def serialized_world_of_three(monkeypatch):
    monkeypatch.setattr(comm, "get_thread_level", lambda: "serialized")
    monkeypatch.setattr(comm, "get_group_size", lambda group=None: 3)
    monkeypatch.setattr(comm, "get_rank", lambda group=None: 0)
    monkeypatch.setitem(ps._CONTEXT, "enable_ps", True)
    monkeypatch.setitem(ps._CONTEXT, "server_num", 1)


def _says_what_to_change(exc: pytest.ExceptionInfo, hint: str) -> None:
    msg = str(exc.value)
    assert "MPI_THREAD_MULTIPLE" in msg and "MPI_THREAD_SERIALIZED" in msg, msg
    assert "mpi4py.rc.thread_level" in msg and hint in msg, msg


def test_cached_parameter_servers_with_two_workers_need_thread_multiple(
    serialized_world_of_three,
):
    with pytest.raises(RuntimeError, match="ParameterServerTrainer") as exc:
        ps.ParameterServerTrainer(WideDeepModel(50, 4, 2, (4,)), vocab_cache_size=10)
    _says_what_to_change(exc, "vocab_cache_size=0")


def test_server_for_several_workers_and_prefetch_need_thread_multiple(
    serialized_world_of_three,
):
    with pytest.raises(RuntimeError, match="EmbeddingServer") as exc:
        EmbeddingServer({0: (50, 2)}, [0], worker=[1, 2])
    _says_what_to_change(exc, "one worker")
    with pytest.raises(RuntimeError, match="RemoteCachedEmbeddingLookup") as exc:
        RemoteCachedEmbeddingLookup(50, 2, 10, 0, [0], prefetch=True)
    _says_what_to_change(exc, "prefetch=False")


def test_one_server_one_worker_without_prefetch_needs_no_threads(serialized_world_of_three):
    EmbeddingServer({0: (50, 2)}, [0], worker=1)  # answers on the calling thread
    RemoteCachedEmbeddingLookup(50, 2, 10, 0, [0], prefetch=False)
