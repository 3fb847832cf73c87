"""The top-level names a MindSpore script imports exist (``import mindspore as ms``)."""

import sporeling.core as ms

EXPECTED = [
    *("Tensor", "Parameter", "ParameterTuple", "RowTensor", "COOTensor", "CSRTensor", "ops"),
    *("nn", "initializer", "dtype", "set_seed", "get_seed", "set_context", "get_context"),
    *("GRAPH_MODE", "PYNATIVE_MODE", "grad", "value_and_grad", "vjp", "jvp", "vmap"),
    *("stop_gradient", "Model", "save_checkpoint", "load_checkpoint", "load_param_into_net"),
    *("jit", "mutable", "ms_function"),
    *("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool_"),
]


def test_expected_names_are_exported():
    missing = [n for n in EXPECTED if n not in ms.__all__ or not hasattr(ms, n)]
    assert not missing, missing


def test_every_listed_name_exists():
    assert [n for n in ms.__all__ if not hasattr(ms, n)] == []
