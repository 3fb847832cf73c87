"""Graph-syntax helpers that MindSpore 1.8 exports as functions (``ops.functional``).

In MindSpore these are primitives the graph compiler folds away; here they are plain Python
with argument checks: scalar arithmetic and comparisons (``scalar_*``), bool and string
helpers, type queries, ``depend``, ``partial``, ``print_`` and tuple helpers.
"""

from __future__ import annotations

import functools
import math
import numbers
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import dtype as _dt
from ..errors import op_error
from ..tensor import Tensor

__all__ = [
    "depend",
    "partial",
    "typeof",
    "isinstance_",
    "issubclass_",
    "isconstant",
    "in_dict",
    "not_in_dict",
    "print_",
    "is_",
    "is_not",
    "make_tuple",
    "tuple_len",
    "shape_mul",
    "array_to_scalar",
    "scalar_add",
    "scalar_sub",
    "scalar_mul",
    "scalar_div",
    "scalar_floordiv",
    "scalar_mod",
    "scalar_pow",
    "scalar_log",
    "scalar_uadd",
    "scalar_usub",
    "scalar_gt",
    "scalar_lt",
    "scalar_ge",
    "scalar_le",
    "scalar_eq",
    "scalar_ne",
    "bool_and",
    "bool_or",
    "bool_not",
    "bool_eq",
    "string_eq",
    "string_concat",
]


def _number(op: str, arg: str, value: Any) -> Any:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise op_error(op, arg, value, "an int or a float", TypeError)
    return value.item() if isinstance(value, np.generic) else value


def _bool(op: str, arg: str, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise op_error(op, arg, value, "a bool", TypeError)
    return bool(value)


def _str(op: str, arg: str, value: Any) -> str:
    if not isinstance(value, str):
        raise op_error(op, arg, value, "a str", TypeError)
    return value


# ---- scalar arithmetic ------------------------------------------------------------------------


def _binary(name: str, fn: Callable[[Any, Any], Any], doc: str, nonzero_y: bool = False) -> Any:
    def op(x: Any, y: Any) -> Any:
        a = _number(name, "x", x)
        b = _number(name, "y", y)
        if nonzero_y and b == 0:
            raise op_error(name, "y", y, "a non-zero divisor")
        return fn(a, b)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc
    return op


scalar_add = _binary("scalar_add", operator.add, "``x + y`` for Python numbers.")
scalar_sub = _binary("scalar_sub", operator.sub, "``x - y`` for Python numbers.")
scalar_mul = _binary("scalar_mul", operator.mul, "``x * y`` for Python numbers.")
scalar_div = _binary("scalar_div", operator.truediv, "True division ``x / y``.", True)
scalar_floordiv = _binary("scalar_floordiv", operator.floordiv, "Floor division ``x // y``.", True)
scalar_mod = _binary("scalar_mod", operator.mod, "``x % y`` (sign of ``y``, as Python).", True)
scalar_pow = _binary("scalar_pow", operator.pow, "``x ** y`` for Python numbers.")
scalar_gt = _binary("scalar_gt", operator.gt, "``x > y`` for Python numbers.")
scalar_lt = _binary("scalar_lt", operator.lt, "``x < y`` for Python numbers.")
scalar_ge = _binary("scalar_ge", operator.ge, "``x >= y`` for Python numbers.")
scalar_le = _binary("scalar_le", operator.le, "``x <= y`` for Python numbers.")
scalar_eq = _binary("scalar_eq", operator.eq, "``x == y`` for Python numbers.")
scalar_ne = _binary("scalar_ne", operator.ne, "``x != y`` for Python numbers.")


def scalar_log(x: Any) -> float:
    """Natural logarithm of a positive Python number.

    >>> scalar_log(1)
    0.0
    """
    v = _number("scalar_log", "x", x)
    if v <= 0:
        raise op_error("scalar_log", "x", x, "a positive number")
    return math.log(v)


def scalar_uadd(x: Any) -> Any:
    """Unary ``+x``."""
    return +_number("scalar_uadd", "x", x)


def scalar_usub(x: Any) -> Any:
    """Unary ``-x``."""
    return -_number("scalar_usub", "x", x)


# ---- bools and strings ----------------------------------------------------------------------


def bool_and(x: Any, y: Any) -> bool:
    """``x and y`` for two bools."""
    return _bool("bool_and", "x", x) and _bool("bool_and", "y", y)


def bool_or(x: Any, y: Any) -> bool:
    """``x or y`` for two bools."""
    return _bool("bool_or", "x", x) or _bool("bool_or", "y", y)


def bool_not(x: Any) -> bool:
    """``not x`` for a bool."""
    return not _bool("bool_not", "x", x)


def bool_eq(x: Any, y: Any) -> bool:
    """``x == y`` for two bools."""
    return _bool("bool_eq", "x", x) == _bool("bool_eq", "y", y)


def string_eq(x: Any, y: Any) -> bool:
    """``x == y`` for two strings."""
    return _str("string_eq", "x", x) == _str("string_eq", "y", y)


def string_concat(x: Any, y: Any) -> str:
    """``x + y`` for two strings.

    >>> string_concat("spore", "ling")
    'sporeling'
    """
    return _str("string_concat", "x", x) + _str("string_concat", "y", y)


# ---- types ------------------------------------------------------------------------------------


def _scalar_dtype(value: Any) -> _dt.DType | None:
    if isinstance(value, (bool, np.bool_)):
        return _dt.bool_
    if isinstance(value, np.generic):
        return _dt.from_numpy(value.dtype)
    if isinstance(value, int):
        return _dt.int64
    if isinstance(value, float):
        return _dt.float32
    return None


def typeof(x: Any) -> str:
    """A MindSpore-style type name: ``Tensor[Float32]``, ``Int64``, ``Tuple[Int64, Bool]``...

    >>> typeof(Tensor([1.0]))
    'Tensor[Float32]'
    """
    if isinstance(x, Tensor):
        return f"Tensor[{x.dtype!r}]"
    dt = _scalar_dtype(x)
    if dt is not None:
        return repr(dt)
    if x is None:
        return "None"
    if isinstance(x, str):
        return "String"
    if isinstance(x, tuple):
        return f"Tuple[{', '.join(typeof(v) for v in x)}]"
    if isinstance(x, list):
        return f"List[{', '.join(typeof(v) for v in x)}]"
    if isinstance(x, dict):
        return "Dictionary"
    if callable(x):
        return "Function"
    return type(x).__name__


def _check_type_arg(op: str, arg: str, t: Any) -> None:
    items = t if isinstance(t, tuple) else (t,)
    if not items or not all(isinstance(v, (type, _dt.DType)) for v in items):
        raise op_error(op, arg, t, "a type, a sporeling dtype or a tuple of them", TypeError)


def isinstance_(x: Any, t: Any) -> bool:
    """Whether ``x`` is an instance of ``t``: a Python type, or a dtype (a Tensor of that
    dtype, or a Python scalar whose default dtype it is), or a tuple of those."""
    _check_type_arg("isinstance_", "t", t)
    for item in t if isinstance(t, tuple) else (t,):
        if isinstance(item, _dt.DType):
            dt = x.dtype if isinstance(x, Tensor) else _scalar_dtype(x)
            if dt is not None and dt == item:
                return True
        elif isinstance(x, item):
            return True
    return False


def issubclass_(type_: Any, dtype: Any) -> bool:
    """Whether ``type_`` is ``dtype`` (dtypes) or a subclass of it (Python types)."""
    _check_type_arg("issubclass_", "type_", type_)
    _check_type_arg("issubclass_", "dtype", dtype)
    if isinstance(type_, _dt.DType) or isinstance(dtype, _dt.DType):
        return isinstance(type_, _dt.DType) and isinstance(dtype, _dt.DType) and type_ == dtype
    return issubclass(type_, dtype)


def isconstant(x: Any) -> bool:
    """Whether ``x`` is known when the program is built. Eager code has every value in hand,
    so this is True except for tensors that are being differentiated (they are variables)."""
    if isinstance(x, Tensor):
        return not (x._requires_grad or x._node is not None)
    return True


def in_dict(key: Any, target: Any) -> bool:
    """Whether the string ``key`` is a key of the dict ``target``."""
    k = _str("in_dict", "key", key)
    if not isinstance(target, dict):
        raise op_error("in_dict", "target", target, "a dict", TypeError)
    return k in target


def not_in_dict(key: Any, target: Any) -> bool:
    """Whether the string ``key`` is not a key of the dict ``target``."""
    k = _str("not_in_dict", "key", key)
    if not isinstance(target, dict):
        raise op_error("not_in_dict", "target", target, "a dict", TypeError)
    return k not in target


def is_(x: Any, y: Any) -> bool:
    """``x is y``."""
    return x is y


def is_not(x: Any, y: Any) -> bool:
    """``x is not y``."""
    return x is not y


# ---- control helpers --------------------------------------------------------------------------


def depend(value: Any, expr: Any) -> Any:
    """Return ``value``; in MindSpore's graph mode this orders ``expr`` before its users.
    Eager execution already runs ``expr`` first, so nothing else is needed."""
    return value


def partial(func: Any, *args: Any) -> Any:
    """``func`` with its first arguments bound (``functools.partial``)."""
    if not callable(func):
        raise op_error("partial", "func", func, "a callable", TypeError)
    return functools.partial(func, *args)


def _printable(value: Any) -> bool:
    if isinstance(value, (Tensor, str, bool, numbers.Number, np.generic)):
        return True
    return isinstance(value, (tuple, list)) and all(_printable(v) for v in value)


def print_(*input_x: Any) -> None:
    """Print tensors, strings and numbers, one input per line (MindSpore ``Print``).

    >>> print_("loss:", Tensor([1.5]))
    loss:
    Tensor(shape=[1], dtype=Float32, value= [ 1.50000000e+00])
    """
    if not input_x:
        raise op_error("print_", "input_x", (), "at least one value", TypeError)
    for i, v in enumerate(input_x):
        if not _printable(v):
            raise op_error("print_", f"input_x[{i}]", v, "a Tensor, a str or a number", TypeError)
    for v in input_x:
        print(_format(v))


def _format(v: Any) -> str:
    if isinstance(v, Tensor):
        host = v.asnumpy()
        if v.dtype.category == 2:
            data = np.array2string(host, separator=" ", formatter={"float_kind": _sci})
        else:
            data = np.array2string(host, separator=" ")
        dims = ", ".join(str(d) for d in v.shape)
        return f"Tensor(shape=[{dims}], dtype={v.dtype!r}, value= {data})"
    if isinstance(v, (tuple, list)):
        return "\n".join(_format(x) for x in v)
    return str(v)


def _sci(f: Any) -> str:
    return f"{f: .8e}"


# ---- tuples and shapes ------------------------------------------------------------------------


def make_tuple(*args: Any) -> tuple[Any, ...]:
    """The tuple of the arguments."""
    return tuple(args)


def tuple_len(x: Any) -> int:
    """The length of a tuple (or list)."""
    if not isinstance(x, (tuple, list)):
        raise op_error("tuple_len", "x", x, "a tuple", TypeError)
    return len(x)


def shape_mul(shape: Any) -> int:
    """The product of a shape tuple's entries (the element count).

    >>> shape_mul((2, 3, 4))
    24
    """
    if not isinstance(shape, (tuple, list)):
        raise op_error("shape_mul", "shape", shape, "a tuple of ints", TypeError)
    out = 1
    for d in shape:
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)):
            raise op_error("shape_mul", "shape", shape, "a tuple of ints", TypeError)
        out *= int(d)
    return out


def array_to_scalar(x: Any) -> Any:
    """The Python number held by a one-element tensor."""
    if not isinstance(x, Tensor) or x.size != 1:
        raise op_error("array_to_scalar", "x", x, "a one-element Tensor", TypeError)
    return x.item()
