"""Python operators and MindSpore-style methods on :class:`Tensor`, attached by ``ops``.

The op library installs them into the Tensor class when it is imported, so the Tensor class
(a lower layer) does not import the op library (which imports Tensor). Methods whose op has
not been defined are simply not attached; the inventory test lists the ones expected.
"""

from __future__ import annotations

from types import FunctionType
from typing import Any

import numpy as np

from ..tensor import Device, Tensor

#: Tensor method -> ops function; called as ``ops.<fn>(self, *args, **kwargs)``
METHODS = {
    "gather_nd": "gather_nd",
    "gather_elements": "gather_elements",
    "scatter_sub": "tensor_scatter_sub",
    "scatter_mul": "tensor_scatter_mul",
    "scatter_div": "tensor_scatter_div",
    "scatter_max": "tensor_scatter_max",
    "scatter_min": "tensor_scatter_min",
    "unsorted_segment_sum": "unsorted_segment_sum",
    "unsorted_segment_max": "unsorted_segment_max",
    "unsorted_segment_min": "unsorted_segment_min",
    "unsorted_segment_prod": "unsorted_segment_prod",
    "index_add": "index_add",
    "asinh": "asinh",
    "atan": "atan",
    "atanh": "atanh",
    "erfc": "erfc",
    "erfinv": "erfinv",
    "exp2": "exp2",
    "hypot": "hypot",
    "inv": "inv",
    "rsqrt": "rsqrt",
    "isinf": "isinf",
    "isclose": "isclose",
    "logaddexp": "logaddexp",
    "logaddexp2": "logaddexp2",
    "gcd": "gcd",
    "lcm": "lcm",
    "ldexp": "ldexp",
    "deg2rad": "deg2rad",
    "rad2deg": "rad2deg",
    "logical_and": "logical_and",
    "logical_or": "logical_or",
    "logical_not": "logical_not",
    "logical_xor": "logical_xor",
    "invert": "invert",
    "absolute": "absolute",
    "isreal": "isreal",
    "ne": "ne",
    "ge": "ge",
    "gt": "gt",
    "le": "le",
    "log_softmax": "log_softmax",
    "hardshrink": "hardshrink",
    "softplus": "softplus",
    "gelu": "gelu",
    "abs": "abs",
    "conj": "conj",
    "real": "real",
    "imag": "imag",
    "angle": "angle",
    "add": "add",
    "sub": "sub",
    "mul": "mul",
    "div": "div",
    "neg": "neg",
    "exp": "exp",
    "log": "log",
    "sqrt": "sqrt",
    "square": "square",
    "pow": "pow",
    "matmul": "matmul",
    "transpose": "transpose",
    "broadcast_to": "broadcast_to",
    "expand_dims": "expand_dims",
    "squeeze": "squeeze",
    "astype": "cast",
    "cast": "cast",
    "tile": "tile",
    "gather": "gather",
    "argmax": "argmax",
    "argmin": "argmin",
    "amax": "amax",
    "amin": "amin",
    "mean": "mean",
    "prod": "prod",
    "var": "var",
    "logsumexp": "logsumexp",
    "norm": "norm",
    "sin": "sin",
    "cos": "cos",
    "tanh": "tanh",
    "sigmoid": "sigmoid",
    "relu": "relu",
    "softmax": "softmax",
    "clip": "clip_by_value",
    "isnan": "isnan",
    "isfinite": "isfinite",
    "floor": "floor",
    "ceil": "ceil",
    "round": "round",
    "masked_fill": "masked_fill",
    "nonzero": "nonzero",
    "all": "all",
    "any": "any",
    "diag": "diag",
    "top_k": "top_k",
    "expm1": "expm1",
    "log1p": "log1p",
    "erf": "erf",
    "lerp": "lerp",
    "sign": "sign",
    "equal": "equal",
    "maximum": "maximum",
    "minimum": "minimum",
    "view": "reshape",
    "select": "select",
    "split": "split",
    "unique": "unique",
    "sort": "sort",
    "index_fill": "index_fill",
    "scatter_add": "tensor_scatter_add",
    "swapaxes": "swapaxes",
    "cumprod": "cumprod",
    "cummax": "cummax",
    "cummin": "cummin",
    "argsort": "argsort",
    "flip": "flip",
    "roll": "roll",
    "masked_select": "masked_select",
    "unique_consecutive": "unique_consecutive",
    "unique_with_pad": "unique_with_pad",
    "tril": "tril",
    "triu": "triu",
    "count_nonzero": "count_nonzero",
    "fill": "fills",
    "reverse_sequence": "reverse_sequence",
    "to_coo": "dense_to_sparse_coo",
    "to_csr": "dense_to_sparse_csr",
    "bernoulli": "bernoulli",
    "atan2": "atan2",
    "xlogy": "xlogy",
    "xdivy": "xdivy",
    "bitwise_and": "bitwise_and",
    "bitwise_or": "bitwise_or",
    "bitwise_xor": "bitwise_xor",
    "ger": "ger",
    "tan": "tan",
    "acos": "acos",
    "asin": "asin",
    "acosh": "acosh",
    "cosh": "cosh",
    "sinh": "sinh",
    "trunc": "trunc",
    "reciprocal": "reciprocal",
    "narrow": "narrow",
    "log2": "log2",
}

_BINARY = {
    "__add__": ("add", False),
    "__radd__": ("add", True),
    "__sub__": ("sub", False),
    "__rsub__": ("sub", True),
    "__mul__": ("mul", False),
    "__rmul__": ("mul", True),
    "__truediv__": ("div", False),
    "__rtruediv__": ("div", True),
    "__floordiv__": ("floor_div", False),
    "__rfloordiv__": ("floor_div", True),
    "__mod__": ("floor_mod", False),
    "__rmod__": ("floor_mod", True),
    "__pow__": ("pow", False),
    "__rpow__": ("pow", True),
    "__matmul__": ("matmul", False),
    "__rmatmul__": ("matmul", True),
    "__eq__": ("equal", False),
    "__ne__": ("not_equal", False),
    "__lt__": ("less", False),
    "__le__": ("less_equal", False),
    "__gt__": ("greater", False),
    "__ge__": ("greater_equal", False),
    "__and__": ("bitwise_and_or_logical", False),
    "__or__": ("bitwise_or_or_logical", False),
    "__xor__": ("bitwise_xor_or_logical", False),
}


def _method(fn: Any) -> Any:
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        return fn(self, *args, **kwargs)

    method.__doc__ = fn.__doc__
    method.__name__ = fn.__name__
    return method


def _binary(fn: Any, reflected: bool) -> Any:
    if reflected:
        return lambda self, other: fn(other, self)
    if isinstance(fn, FunctionType):  # the op itself: one Python call less per operator
        return fn
    return lambda self, other: fn(self, other)


def _logical_or_bitwise(logical: str, bitwise: str, ops: Any) -> Any:
    def fn(x: Any, y: Any) -> Any:
        is_bool = getattr(x, "dtype", None) == "bool" or isinstance(x, bool)
        return getattr(ops, logical if is_bool else bitwise)(x, y)

    return fn


def install(ops: Any) -> None:
    """Attach every operator and method whose op exists in ``ops`` (the package
    ``sporeling.core.ops``, passed in by it while it is being imported)."""
    specials = {
        "bitwise_and_or_logical": _logical_or_bitwise("logical_and", "bitwise_and", ops),
        "bitwise_or_or_logical": _logical_or_bitwise("logical_or", "bitwise_or", ops),
        "bitwise_xor_or_logical": _logical_or_bitwise("logical_xor", "bitwise_xor", ops),
    }
    for name, (opname, reflected) in _BINARY.items():
        fn = specials.get(opname) or getattr(ops, opname, None)
        if fn is not None:
            setattr(Tensor, name, _binary(fn, reflected))
    for name, opname in METHODS.items():
        fn = getattr(ops, opname, None)
        if fn is not None and not hasattr(Tensor, name):
            setattr(Tensor, name, _method(fn))
    # Set through setattr (one loop at the end): Tensor declares these for type checkers.
    attached: dict[str, Any] = {
        "__neg__": lambda self: ops.neg(self),
        "__pos__": lambda self: self,
    }
    if hasattr(ops, "abs"):
        attached["__abs__"] = lambda self: ops.abs(self)
    if hasattr(ops, "logical_not"):
        attached["__invert__"] = lambda self: (
            ops.logical_not(self) if self.dtype == "bool" else ops.invert(self)
        )
    attached["__getitem__"] = lambda self, index: ops.getitem(self, index)

    def setitem(self: Tensor, index: Any, value: Any) -> None:
        from ..autograd.tape import GradMode

        if self._requires_grad and self._node is None and GradMode.enabled:
            raise RuntimeError(
                "setitem: cannot assign into a leaf tensor that requires gradients; "
                "assign into a copy (y = x * 1) or inside no_grad()"
            )
        old = Tensor._wrap(self._data, self._device, self._node, self._index)
        self._rebind(ops.setitem(old, index, value))

    attached["__setitem__"] = setitem
    attached["__hash__"] = lambda self: id(self)
    attached["__iter__"] = lambda self: (self[i] for i in range(len(self)))
    attached["T"] = property(lambda self: ops.transpose(self))

    from ._core import reshape as _reshape

    def reshape(self: Tensor, *shape: Any) -> Tensor:
        return _reshape(self, shape[0] if len(shape) == 1 else shape)

    from .._backend import CPU as _CPU
    from .._primitive import _STATE
    from ._core import (
        _ALL_AXES,
        _DIFFERENTIABLE,
        _add_reduce,
        reduce_params,
        reduce_sum_p,
        to_device,
    )
    from ._core import _eager_view as _eager_result

    _ndarray = np.ndarray
    _empty = np.empty

    # the full reductions' StaticParams per ndim, (keep_dims False, True)
    full = [(reduce_params(a, False), reduce_params(a, True)) for a in _ALL_AXES]
    n_full = len(full)
    full_shape = [((), (1,) * len(a)) for a in _ALL_AXES]  # their results' shapes

    def sum(self: Tensor, axis: Any = None, keepdims: bool = False, dtype: Any = None) -> Tensor:
        if axis is None and dtype is None and (data := self._data).ndim < n_full:
            # the common full reduction, without argument normalisation (hot in loss code)
            keep = keepdims is True or (keepdims is not False and bool(keepdims))
            params = full[data.ndim][keep]
            if (
                len(_STATE) == 1
                and self._device is _CPU
                and type(data) is _ndarray
                and (dt := data.dtype) in _DIFFERENTIABLE
            ):
                # eager, float or complex on the CPU: what the interpreter's plan runs
                # (``_sum_impl``: add.reduce over every axis), without the plan lookup and
                # the NumPy scalar's conversion (an ``out`` array), and the same tape node
                out = _empty(full_shape[data.ndim][keep], dt)
                out = _add_reduce(data, params["axis"], None, out, keep)
                return _eager_result(self, out, reduce_sum_p, params)
            # handed to the interpreter directly (bind's packing costs ~0.2 us here)
            return _STATE[-1].process(reduce_sum_p, (self,), params)
        out = ops.reduce_sum(self, axis, keepdims)
        return out if dtype is None else ops.cast(out, dtype)

    # Methods whose MindSpore 1.8 Tensor semantics differ from the functional op's.
    def max(self: Tensor, axis: Any = None, keepdims: bool = False) -> Tensor:
        return ops.amax(self, () if axis is None else axis, keepdims)

    def min(self: Tensor, axis: Any = None, keepdims: bool = False) -> Tensor:
        return ops.amin(self, () if axis is None else axis, keepdims)

    def std(self: Tensor, axis: Any = None, ddof: int = 0, keepdims: bool = False) -> Tensor:
        return ops.sqrt(ops.var(self, axis, ddof, keepdims))

    def cumsum(self: Tensor, axis: Any = None, dtype: Any = None) -> Tensor:
        x = self if axis is not None else ops.reshape(self, (-1,))
        return ops.cumsum(x, 0 if axis is None else axis, dtype)

    def flatten(self: Tensor) -> Tensor:
        return ops.reshape(self, (-1,))

    def repeat(self: Tensor, repeats: int, axis: Any = None) -> Tensor:
        x = self if axis is not None else ops.reshape(self, (-1,))
        return ops.repeat_elements(x, repeats, 0 if axis is None else axis)

    def to(self: Tensor, device: str | Device) -> Tensor:
        """This tensor on another device ("CPU" or "GPU"); differentiable."""
        return to_device(self, device)

    for fn in (reshape, sum, max, min, std, cumsum, flatten, repeat, to):
        attached[fn.__name__] = fn
    attached["ravel"] = flatten
    attached["move_to"] = to
    for name, value in attached.items():
        setattr(Tensor, name, value)
