"""Tests for the graph-syntax helpers (ops/misc.py): plain Python semantics and checks."""

import math

import numpy as np
import pytest

from sporeling.core import Tensor, ops

SCALAR_BINARY = [
    ("scalar_add", lambda a, b: a + b),
    ("scalar_sub", lambda a, b: a - b),
    ("scalar_mul", lambda a, b: a * b),
    ("scalar_div", lambda a, b: a / b),
    ("scalar_floordiv", lambda a, b: a // b),
    ("scalar_mod", lambda a, b: a % b),
    ("scalar_pow", lambda a, b: a**b),
    ("scalar_gt", lambda a, b: a > b),
    ("scalar_lt", lambda a, b: a < b),
    ("scalar_ge", lambda a, b: a >= b),
    ("scalar_le", lambda a, b: a <= b),
    ("scalar_eq", lambda a, b: a == b),
    ("scalar_ne", lambda a, b: a != b),
]
PAIRS = [(7, 3), (-7, 2), (2.5, -0.5), (3, 3), (np.int32(5), 2.0)]


@pytest.mark.parametrize("name,ref", SCALAR_BINARY, ids=[n for n, _ in SCALAR_BINARY])
def test_scalar_binary(name, ref):
    fn = getattr(ops, name)
    for a, b in PAIRS:
        got = fn(a, b)
        want = ref(a, b)
        want = want.item() if hasattr(want, "item") else want  # results are Python scalars
        assert got == want and type(got) is type(want), (a, b)
    with pytest.raises(TypeError, match=f"{name}.*'x'"):
        fn("1", 2)
    with pytest.raises(TypeError, match=f"{name}.*'y'"):
        fn(1, True)
    with pytest.raises(TypeError, match=f"{name}.*'y'"):
        fn(1, Tensor(2))


@pytest.mark.parametrize("name", ["scalar_div", "scalar_floordiv", "scalar_mod"])
def test_scalar_division_by_zero(name):
    with pytest.raises(ValueError, match=f"{name}.*'y'"):
        getattr(ops, name)(1, 0)


def test_scalar_unary():
    assert ops.scalar_log(math.e) == pytest.approx(1.0)
    assert ops.scalar_uadd(-3) == -3 and ops.scalar_usub(2.5) == -2.5
    with pytest.raises(ValueError, match="scalar_log.*'x'"):
        ops.scalar_log(0)
    with pytest.raises(TypeError, match="scalar_usub.*'x'"):
        ops.scalar_usub(None)


def test_bool_and_string_helpers():
    for a in (True, False):
        for b in (True, False):
            assert ops.bool_and(a, b) is (a and b)
            assert ops.bool_or(a, b) is (a or b)
            assert ops.bool_eq(a, b) is (a == b)
        assert ops.bool_not(a) is (not a)
    assert ops.bool_and(np.bool_(True), True) is True
    with pytest.raises(TypeError, match="bool_and.*'y'"):
        ops.bool_and(True, 1)
    with pytest.raises(TypeError, match="bool_not.*'x'"):
        ops.bool_not(0)
    assert ops.string_eq("ab", "ab") and not ops.string_eq("ab", "a")
    assert ops.string_concat("a", "b") == "ab"
    with pytest.raises(TypeError, match="string_concat.*'y'"):
        ops.string_concat("a", 1)


def test_type_queries():
    x = Tensor(np.zeros(2, np.int32))
    assert ops.typeof(x) == "Tensor[Int32]"
    assert ops.typeof(1) == "Int64" and ops.typeof(1.0) == "Float32" and ops.typeof(True) == "Bool"
    assert ops.typeof((1, "a")) == "Tuple[Int64, String]" and ops.typeof({}) == "Dictionary"
    assert ops.isinstance_(x, Tensor) and ops.isinstance_(x, ops_dtype("int32"))
    assert not ops.isinstance_(x, ops_dtype("float32"))
    assert ops.isinstance_(3, ops_dtype("int64")) and ops.isinstance_(3, (str, int))
    assert not ops.isinstance_(3.0, int)
    with pytest.raises(TypeError, match="isinstance_.*'t'"):
        ops.isinstance_(3, "int")
    assert ops.issubclass_(bool, int) and not ops.issubclass_(int, str)
    assert ops.issubclass_(ops_dtype("int32"), ops_dtype("int32"))
    assert not ops.issubclass_(ops_dtype("int32"), int)
    with pytest.raises(TypeError, match="issubclass_.*'dtype'"):
        ops.issubclass_(int, 3)
    assert ops.isconstant(x) and ops.isconstant(3)
    assert not ops.isconstant(Tensor([1.0]).requires_grad_())


def ops_dtype(name):
    from sporeling.core import dtype

    return dtype.to_dtype(name)


def test_dict_tuple_and_control_helpers(capsys):
    d = {"x": 1}
    assert ops.in_dict("x", d) and not ops.in_dict("y", d)
    assert ops.not_in_dict("y", d) and not ops.not_in_dict("x", d)
    with pytest.raises(TypeError, match="in_dict.*'target'"):
        ops.in_dict("x", ["x"])
    with pytest.raises(TypeError, match="not_in_dict.*'key'"):
        ops.not_in_dict(1, d)
    a = Tensor([1.0])
    assert ops.depend(a, Tensor([2.0])) is a
    add3 = ops.partial(ops.scalar_add, 3)
    assert add3(4) == 7
    with pytest.raises(TypeError, match="partial.*'func'"):
        ops.partial(3)
    assert ops.make_tuple(1, a) == (1, a) and ops.tuple_len((1, 2, 3)) == 3
    with pytest.raises(TypeError, match="tuple_len.*'x'"):
        ops.tuple_len(3)
    assert ops.shape_mul((2, 3, 4)) == 24 and ops.shape_mul(()) == 1
    with pytest.raises(TypeError, match="shape_mul.*'shape'"):
        ops.shape_mul((2, 1.5))
    assert ops.is_(None, None) and ops.is_not(a, None)
    assert ops.array_to_scalar(Tensor([[2.5]])) == 2.5
    with pytest.raises(TypeError, match="array_to_scalar.*'x'"):
        ops.array_to_scalar(Tensor([1.0, 2.0]))
    ops.print_("step", 3, Tensor(np.array([1, 2], np.int32)))
    assert capsys.readouterr().out == "step\n3\nTensor(shape=[2], dtype=Int32, value= [1 2])\n"
    with pytest.raises(TypeError, match=r"print_.*'input_x\[1\]'"):
        ops.print_("a", object())
