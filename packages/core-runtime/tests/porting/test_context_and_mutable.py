"""``set_context`` accepts every MindSpore 1.8 key (works, or warns once that it has no
effect); ``mutable`` takes scalar leaves and validates ``dynamic_len``; gradients with
respect to a mutable dict in GRAPH_MODE give one gradient per value."""

import warnings

import numpy as np
import pytest

from sporeling.core import (
    GRAPH_MODE,
    PYNATIVE_MODE,
    Tensor,
    _context_keys,
    get_context,
    grad,
    jit,
    mutable,
    nn,
    ops,
    set_context,
)

# the keyword arguments of mindspore.set_context in r1.8 (its API page), less mode /
# device_target / device_id / enable_graph_kernel, which act here
MS18_KEYS = [
    "max_device_memory",
    "variable_memory_max_size",
    "mempool_block_size",
    "save_graphs",
    "save_graphs_path",
    "enable_dump",
    "save_dump_path",
    "enable_profiling",
    "profiling_options",
    "print_file_path",
    "env_config_path",
    "precompile_only",
    "reserve_class_name_in_scope",
    "pynative_synchronize",
    "auto_tune_mode",
    "check_bprop",
    "max_call_depth",
    "grad_for_scalar",
    "enable_compile_cache",
    "compile_cache_path",
    "runtime_num_threads",
    "graph_kernel_flags",
    "enable_reduce_precision",
    "disable_format_transform",
]


@pytest.fixture(autouse=True)
def fresh_warnings(monkeypatch):
    monkeypatch.setattr(_context_keys, "_WARNED", set())
    saved = dict(_context_keys_store())
    yield
    _context_keys_store().clear()
    _context_keys_store().update(saved)


def _context_keys_store():
    from sporeling.core import context

    return context._SETTINGS


@pytest.mark.parametrize("key", MS18_KEYS)
def test_every_18_key_is_accepted_and_stored(key):
    value = {"pynative_synchronize": False, "max_call_depth": 5000}.get(key, "x")
    with pytest.warns(UserWarning, match=f"set_context: {key}="):
        set_context(**{key: value})
    assert get_context(key) == value
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        set_context(**{key: value})  # once per key


def test_what_is_already_true_is_silent_and_unknown_keys_fail():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        set_context(pynative_synchronize=True, device_id=0)
    assert get_context("save_graphs") is False  # default of a key never set
    with pytest.raises(ValueError, match="unknown setting 'no_such_key'"):
        set_context(no_such_key=1)


def test_mutable_scalar_leaves_are_graph_inputs():
    f = jit(lambda pair: pair[0] * pair[1]["s"])
    x = Tensor(np.array([1.0, 2.0], np.float32))
    np.testing.assert_allclose(f(mutable((x, {"s": 2.0}))).asnumpy(), [2.0, 4.0])
    np.testing.assert_allclose(f(mutable((x, {"s": 3.0}))).asnumpy(), [3.0, 6.0])
    assert f.compile_count == 1  # a new scalar value reuses the graph


def test_dynamic_len_validation():
    x = Tensor(np.ones(2, np.float32))
    assert mutable([x, x], dynamic_len=True).__ms_dynamic_len__ is True
    with pytest.raises(TypeError, match="'dynamic_len' expected a bool"):
        mutable([x], dynamic_len=1)
    with pytest.raises(TypeError, match="tuple or list"):
        mutable({"a": x}, dynamic_len=True)
    with pytest.raises(ValueError, match="element 1"):
        mutable([x, Tensor(np.ones(3, np.float32))], dynamic_len=True)
    with pytest.raises(ValueError, match="same type"):
        mutable([1, 2.0], dynamic_len=True)


class DictNet(nn.Cell):
    def construct(self, d):
        return ops.reduce_sum(d["a"] * d["b"] * 2.0)


@pytest.mark.parametrize("mode", [PYNATIVE_MODE, GRAPH_MODE])
def test_gradient_of_a_mutable_dict_has_one_entry_per_value(mode):
    a = np.array([1.0, 2.0], np.float32)
    b = np.array([3.0, 4.0], np.float32)
    set_context(mode=mode)
    try:
        ga, gb = grad(DictNet())(mutable({"a": Tensor(a), "b": Tensor(b)}))
    finally:
        set_context(mode=PYNATIVE_MODE)
    np.testing.assert_allclose(ga.asnumpy(), 2 * b)
    np.testing.assert_allclose(gb.asnumpy(), 2 * a)


def test_enable_graph_kernel_defaults_to_false_as_in_mindspore():
    import subprocess
    import sys

    code = "from sporeling.core import get_context; print(get_context('enable_graph_kernel'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
