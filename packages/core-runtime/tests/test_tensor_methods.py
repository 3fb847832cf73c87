"""Every Tensor method in the method table is attached, and the ones with
MindSpore-specific semantics behave as the 1.8 Tensor does."""

import numpy as np
import pytest

from sporeling.core import Tensor
from sporeling.core.ops._tensor_methods import METHODS


@pytest.mark.parametrize("name", sorted(METHODS))
def test_method_is_attached(name):
    assert callable(getattr(Tensor, name, None)), f"Tensor.{name} -> ops.{METHODS[name]} missing"


def test_methods_with_tensor_semantics():
    a = np.arange(6.0).reshape(2, 3)
    x = Tensor(a)
    assert x.max().item() == 5 and x.max(1).tolist() == [2, 5]
    assert x.min(0, True).tolist() == [[0, 1, 2]]
    np.testing.assert_allclose(x.std().item(), a.std())
    np.testing.assert_allclose(x.std(1, ddof=1).asnumpy(), a.std(1, ddof=1))
    assert x.cumsum().tolist() == list(np.cumsum(a))
    assert x.cumsum(1).tolist() == np.cumsum(a, 1).tolist()
    assert x.flatten().shape == (6,) and x.ravel().shape == (6,)
    assert x.repeat(2).tolist() == list(np.repeat(a, 2))
    assert x.repeat(2, axis=1).tolist() == np.repeat(a, 2, 1).tolist()
    assert x.sum(1).tolist() == [3, 12] and x.sum().item() == 15
    assert x.reshape(3, 2).shape == (3, 2) and x.reshape((6,)).shape == (6,)
    assert x.T.shape == (3, 2)
