"""The jit graph cache is bounded (hardening issue #20): least recently used graphs are
evicted past SPORELING_JIT_CACHE_SIZE, with one warning."""

import warnings

import numpy as np
import pytest

from sporeling.core import Tensor, jit


def test_cache_keeps_the_most_recently_used_graphs_and_warns_once(monkeypatch):
    monkeypatch.setenv("SPORELING_JIT_CACHE_SIZE", "3")
    monkeypatch.setenv("SPORELING_RECOMPILE_BUDGET", "100")
    f = jit(lambda x: x * 2)
    xs = [Tensor(np.ones(n, np.float32)) for n in range(1, 7)]
    for x in xs[:3]:
        f(x)
    f(xs[0])  # shape (1,) is now the most recently used
    with pytest.warns(RuntimeWarning, match="more than 3 compiled graphs.*least recently used"):
        f(xs[3])  # evicts (2,)
    assert len(f._cache) == 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f(xs[4])  # evicts again, without a second warning
    count = f.compile_count  # cache now holds (1,), (4,), (5,)
    np.testing.assert_array_equal(f(xs[0]).asnumpy(), np.full(1, 2.0))
    assert f.compile_count == count  # kept: it was used recently
    np.testing.assert_array_equal(f(xs[1]).asnumpy(), np.full(2, 2.0))
    assert f.compile_count == count + 1  # evicted, so compiled again
    assert len(f._cache) == 3
