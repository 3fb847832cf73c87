"""Differentiation depth is per thread: a grad running on another thread does not make this
thread's grad think it is nested (which would record a second-order graph)."""

import threading

import numpy as np

from sporeling.core import Tensor, grad, ops
from sporeling.core.autograd import functional


def test_grad_depth_is_per_thread():
    seen = []
    inside = threading.Event()
    release = threading.Event()

    def slow(x):
        inside.set()
        release.wait(10)
        return ops.reduce_sum(x * x)

    t = threading.Thread(target=lambda: grad(slow)(Tensor(np.ones(3, np.float32))))
    t.start()
    inside.wait(10)
    seen.append(functional._DEPTH[0])  # the other thread is inside grad; this one is not
    g = grad(lambda x: ops.reduce_sum(x * 3.0))(Tensor(np.ones(3, np.float32)))
    release.set()
    t.join(10)
    assert seen == [0]
    np.testing.assert_allclose(g.asnumpy(), 3.0)
    assert g._node is None  # not recorded as if nested
