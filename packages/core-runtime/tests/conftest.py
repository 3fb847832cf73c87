"""The core's tests exercise kernel fusion under jit (off by default, as in MindSpore):
each test starts with ``enable_graph_kernel=True``; tests of the switch set it themselves."""

import pytest

from sporeling.core import get_context, set_context


@pytest.fixture(autouse=True)
def _fusion_on():
    before = get_context("enable_graph_kernel")
    set_context(enable_graph_kernel=True)
    yield
    set_context(enable_graph_kernel=before)
