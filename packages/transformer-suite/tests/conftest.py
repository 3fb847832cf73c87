import numpy as np
import pytest

from sporeling.core import set_seed


@pytest.fixture(autouse=True)
def _seed():
    set_seed(0)
    np.random.seed(0)
