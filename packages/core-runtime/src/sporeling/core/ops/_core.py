"""Primitives every other op and the autograd tape rely on: dtype casts, device moves,
reshapes, broadcasting and summation (the reverse of broadcasting), and fills.

Also the small helpers that public op wrappers share: turning Python values into tensors
on the right device, broadcasting shapes with a clear error, and normalizing axes.
"""

from __future__ import annotations

from operator import methodcaller
from typing import Any

import numpy as np

from .. import dtype as _dt
from .._backend import Device, get_device
from .._primitive import _STATE, Primitive, ShapedArray, StaticParams
from ..autograd.tape import GradMode, Node
from ..errors import check_axis, describe, op_error
from ..tensor import Tensor
from ._batch_rules import reshape_rule, transpose_rule

__all__ = [
    "cast",
    "to_device",
    "reshape",
    "broadcast_to",
    "reduce_sum",
    "transpose",
    "full",
    "zeros_like",
    "ones_like",
    "broadcast_shapes",
    "normalize_axes",
]
# as_tensor and sum_to are helpers for defining ops: sporeling.core.extend exports them

# ---- helpers shared by public wrappers ------------------------------------------------


def as_tensor(
    value: Any, op: str, arg: str, like: Tensor | None = None, dtype: Any = None
) -> Tensor:
    """``value`` as a Tensor: Tensors pass through; numbers and arrays are converted onto
    ``like``'s device (weak Python scalars take ``dtype`` when given)."""
    if isinstance(value, Tensor):
        return value
    if value is None or isinstance(value, (str, bytes, dict, set)):
        raise op_error(op, arg, value, "a Tensor or a number", TypeError)
    device = like._device if like is not None else None
    try:
        if dtype is not None:
            return Tensor(value, dtype=dtype, device=device)
        return Tensor(value, device=device)
    except (TypeError, ValueError) as exc:
        raise op_error(op, arg, value, "a Tensor or a number", TypeError) from exc


def broadcast_shapes(op: str, *shapes: tuple[int, ...]) -> tuple[int, ...]:
    """NumPy broadcasting of shapes, raising a ValueError that names the op and shapes."""
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        for i, d in enumerate(s):
            j = ndim - len(s) + i
            if d != 1:
                if out[j] != 1 and out[j] != d:
                    raise ValueError(
                        f"{op}: shapes {' and '.join(str(tuple(x)) for x in shapes)} "
                        "cannot be broadcast together"
                    )
                out[j] = d
    return tuple(out)


_ALL_AXES = [tuple(range(n)) for n in range(9)]


def normalize_axes(op: str, axis: Any, ndim: int) -> tuple[int, ...]:
    """``None`` (all), an int or a sequence of ints -> a sorted tuple of distinct axes."""
    if axis is None or (type(axis) in (tuple, list) and not axis):
        return _ALL_AXES[ndim] if ndim < len(_ALL_AXES) else tuple(range(ndim))
    if type(axis) is int and -ndim <= axis < ndim:
        return (axis % ndim,)  # one int axis, the common case (hot path)
    if isinstance(axis, Tensor):
        axis = axis.tolist()
    items = axis if isinstance(axis, (tuple, list)) else (axis,)
    axes = tuple(sorted(check_axis(op, a, ndim) for a in items))
    if len(set(axes)) != len(axes):
        raise op_error(op, "axis", axis, "distinct axes")
    if ndim == 0:  # axis 0 or -1 of a 0-d tensor (as PyTorch): nothing to reduce
        return ()
    return axes


def _tensor_input(op: str, arg: str, value: Any) -> Tensor:
    if not isinstance(value, Tensor):
        raise op_error(op, arg, value, "a Tensor", TypeError)
    return value


# ---- cast -------------------------------------------------------------------------------


def _cast_abstract(x: ShapedArray, *, dtype: _dt.DType) -> ShapedArray:
    return ShapedArray(x.shape, dtype)


def _cast_vjp(g: Tensor, x: Tensor, *, out: Tensor, dtype: _dt.DType) -> Any:
    # real -> complex: the real part of g (the cast back drops the imaginary part)
    return cast(g, x.dtype) if x.dtype.category >= 2 else None


def _cast_impl(xp: Any, x: Any, *, dtype: _dt.DType) -> Any:
    if x.dtype.kind == "c" and dtype.category != 3:  # complex -> real drops the imaginary
        x = x.real  # part, as MindSpore's Cast does (without NumPy's ComplexWarning)
    return x.astype(dtype.np)


cast_p = Primitive(
    "cast",
    "elementwise",
    _cast_abstract,
    impl=_cast_impl,
    vjp=_cast_vjp,
    scalar="x",
    scalar_rule=lambda params: "x",  # the result's dtype does the conversion
)


def cast(input_x: Tensor, dtype: Any) -> Tensor:
    """Convert ``input_x`` to ``dtype``; gradients flow back in the input's dtype.

    >>> cast(Tensor([1, 2]), "float32").dtype
    Float32
    """
    x = _tensor_input("cast", "input_x", input_x)
    try:
        dt = _dt.to_dtype(dtype)
    except TypeError:
        raise op_error(
            "cast", "dtype", dtype, "a sporeling dtype (e.g. float32)", TypeError
        ) from None
    if x.dtype == dt:
        return x
    return cast_p.bind(x, dtype=dt)


# ---- device moves ---------------------------------------------------------------------


def _to_device_vjp(g: Tensor, x: Tensor, *, out: Tensor, device: Device) -> Tensor:
    return to_device(g, x._device)


to_device_p = Primitive(
    "to_device",
    "opaque",
    lambda x, *, device: x,
    impl=lambda xp, x, *, device: device.asarray(x),
    vjp=_to_device_vjp,
)


def to_device(x: Tensor, device: str | Device) -> Tensor:
    """Copy ``x`` to ``device`` ("CPU" or "GPU"); differentiable.

    The move is the one op whose input and output live on different devices, so it is
    recorded here rather than through the single-device eager interpreter.
    """
    from ..autograd.tape import GradMode, Node

    dev = get_device(device)
    if x._device is dev:
        return x
    data = dev.asarray(x._data)
    track = GradMode.enabled and (x._node is not None or x._requires_grad) and x.dtype.category >= 2
    node = Node(to_device_p, (x,), {"device": dev}, [data], (True,), dev) if track else None
    return Tensor._wrap(data, dev, node, 0)


# ---- reshape / broadcast / sum / transpose ------------------------------------------------


def _reshape_abstract(x: ShapedArray, *, shape: tuple[int, ...]) -> ShapedArray:
    return ShapedArray(shape, x.dtype)


def _reshape_impl(xp: Any, x: Any, *, shape: tuple[int, ...]) -> Any:
    return x.reshape(shape)


def _reshape_specialize(impl: Any, arrays: list[Any], params: dict[str, Any]) -> Any:
    """The eager plan's kernel: the array's own reshape with the shape bound."""
    if impl is not _reshape_impl:
        return None
    return methodcaller("reshape", params["shape"])  # no Python frame per call


reshape_p = Primitive(
    "reshape",
    "movement",
    _reshape_abstract,
    impl=_reshape_impl,
    vjp=lambda g, x, *, out, shape: reshape(g, x.shape),
    same_order=True,
    batch_rule=reshape_rule,
)
reshape_p.eager_specialize = _reshape_specialize


def _reshape_resolved(x: Tensor, shape: tuple[int, ...]) -> Tensor:
    """``reshape``'s hot path for a checked ``shape`` of ``x``'s size."""
    data = x._data
    if shape == data.shape:
        return x
    params = _RESHAPES.get(shape)
    if params is None:
        params = _static(_RESHAPES, shape, shape=shape)
    if len(_STATE) == 1:  # eager: the view made here (what the plan would run)
        return _eager_view(x, data.reshape(shape), reshape_p, params)
    return _STATE[-1].process(reshape_p, (x,), params)


def _one_inferred(shape: tuple[Any, ...], size: int) -> tuple[int, ...] | None:
    """``shape`` (a tuple of Python ints with one -1, the others non-negative) with the -1
    worked out for ``size`` elements; None for anything else, which ``_resolve_shape``
    checks and explains."""
    known = 1
    at = -1
    for i, d in enumerate(shape):
        if type(d) is not int:
            return None
        if d < 0:
            if d != -1 or at >= 0:
                return None
            at = i
        else:
            known *= d
    if at < 0 or known == 0 or size % known:
        return None
    return shape[:at] + (size // known,) + shape[at + 1 :]


def _resolve_shape(op: str, shape: Any, size: int) -> tuple[int, ...]:
    if isinstance(shape, Tensor):
        if shape.dtype.category != 1:
            raise op_error(op, "shape", shape, "a tuple of ints", TypeError)
        shape = shape.tolist()
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    # Only real ints: a string ("32" -> (3, 2)) or floats (2.5 -> 2) would silently reshape
    # to something nobody asked for.
    if not isinstance(shape, (tuple, list)) or not all(
        isinstance(d, (int, np.integer)) and not isinstance(d, (bool, np.bool_)) for d in shape
    ):
        raise op_error(op, "shape", shape, "a tuple of ints", TypeError)
    dims = [int(d) for d in shape]
    if sum(d == -1 for d in dims) > 1 or any(d < -1 for d in dims):
        raise op_error(op, "shape", tuple(dims), "non-negative sizes and at most one -1")
    known = 1
    for d in dims:
        if d != -1:
            known *= d
    if -1 in dims:
        if known == 0 or size % known:
            raise op_error(op, "shape", tuple(dims), f"a shape compatible with {size} elements")
        dims[dims.index(-1)] = size // known
    elif known != size:
        raise op_error(op, "shape", tuple(dims), f"a shape with {size} elements")
    return tuple(dims)


#: NumPy dtypes whose tensors record autograd nodes (float and complex categories)
_DIFFERENTIABLE = frozenset(d.np for d in _dt.ALL if d.category >= 2)
_new = object.__new__


def _eager_view(x: Tensor, view: Any, prim: Primitive, params: StaticParams) -> Tensor:
    """``view`` (a view of ``x``'s array that ``prim`` with ``params`` makes) as the result
    Tensor, with the tape node the eager interpreter would record: a movement op's whole
    eager path when its wrapper has already checked the arguments (no plan lookup, no key:
    ``x.reshape(2, 8)`` 1.0 -> 0.6 us, benchmarks/bench_dispatch.py)."""
    t = _new(Tensor)
    t._data = view
    t._device = x._device
    t._index = 0
    t._requires_grad = False
    t.grad = None
    if (
        (x._node is not None or x._requires_grad)
        and GradMode.enabled
        and view.dtype in _DIFFERENTIABLE
    ):
        t._node = Node(prim, (x,), params, [view], (True,), x._device)
    else:
        t._node = None
    return t


#: memos of hot wrappers' parameters (shape tuples, axes...) -> their StaticParams
_RESHAPES: dict[Any, StaticParams] = {}
_REDUCE_PARAMS: dict[Any, StaticParams] = {}


def _static(memo: dict[Any, StaticParams], key: Any, **params: Any) -> StaticParams:
    """``params`` as a StaticParams kept in ``memo`` under ``key`` (the memo is bounded)."""
    sp = StaticParams(params)
    if len(memo) >= 4096:
        memo.clear()
    memo[key] = sp
    return sp


def reduce_params(axes: tuple[int, ...], keep_dims: bool) -> StaticParams:
    """The StaticParams ``{"axis": axes, "keep_dims": keep_dims}`` of a reduction."""
    params = _REDUCE_PARAMS.get((axes, keep_dims))
    if params is None:
        params = _static(_REDUCE_PARAMS, (axes, keep_dims), axis=axes, keep_dims=keep_dims)
    return params


def reshape(input_x: Tensor, input_shape: Any) -> Tensor:
    """View ``input_x`` with a new shape (one dimension may be -1).

    >>> reshape(Tensor([1, 2, 3, 4]), (2, -1)).shape
    (2, 2)
    """
    x = _tensor_input("reshape", "input_x", input_x)
    if type(input_shape) is tuple:  # non-negative Python ints only: the common case (hot path)
        size = 1
        for d in input_shape:
            if type(d) is not int or d < 0:
                break
            size *= d
        else:
            data = x._data
            if size == data.size:
                if input_shape == data.shape:
                    return x
                params = _RESHAPES.get(input_shape)
                if params is None:
                    params = _static(_RESHAPES, input_shape, shape=input_shape)
                if len(_STATE) == 1:  # eager: the view made here (what the plan would run)
                    return _eager_view(x, data.reshape(input_shape), reshape_p, params)
                return _STATE[-1].process(reshape_p, (x,), params)
        resolved = _one_inferred(input_shape, x._data.size)
        if resolved is not None:  # one -1 (flatten, the products' vjps): the same path
            return _reshape_resolved(x, resolved)
    shape = _resolve_shape("reshape", input_shape, x.size)
    if shape == x.shape:
        return x
    return reshape_p.bind(x, shape=shape)


def sum_to(g: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Sum a broadcast gradient back down to ``shape`` (the reverse of broadcasting)."""
    if g.shape == tuple(shape):
        return g
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, d in enumerate(shape) if d == 1 and g.shape[lead + i] != 1
    )
    out = reduce_sum(g, axes, keep_dims=False) if axes else g
    return reshape(out, shape)


def _broadcast_abstract(x: ShapedArray, *, shape: tuple[int, ...]) -> ShapedArray:
    if broadcast_shapes("broadcast_to", x.shape, shape) != shape:
        raise op_error("broadcast_to", "shape", shape, f"a shape that {x.shape} broadcasts to")
    return ShapedArray(shape, x.dtype)


broadcast_to_p = Primitive(
    "broadcast_to",
    "movement",
    _broadcast_abstract,
    impl=lambda xp, x, *, shape: xp.broadcast_to(x, shape),
    vjp=lambda g, x, *, out, shape: sum_to(g, x.shape),
    # fused, the input is read with broadcast indexing: the expression is the input itself
    scalar="x",
    scalar_rule=lambda params: "x",
)


def broadcast_to(input_x: Tensor, shape: Any) -> Tensor:
    """Broadcast ``input_x`` to ``shape``; -1 keeps that dimension of the input."""
    x = _tensor_input("broadcast_to", "input_x", input_x)
    shape = tuple(int(d) for d in shape)
    lead = len(shape) - x.ndim
    if lead < 0:
        raise op_error("broadcast_to", "shape", shape, f"at least {x.ndim} dimensions")
    shape = tuple(x.shape[i - lead] if d == -1 and i >= lead else d for i, d in enumerate(shape))
    if shape == x.shape:
        return x
    return broadcast_to_p.bind(x, shape=shape)


def _reduce_abstract(x: ShapedArray, *, axis: tuple[int, ...], keep_dims: bool) -> ShapedArray:
    shape = tuple(
        (1 if i in axis else d) for i, d in enumerate(x.shape) if keep_dims or i not in axis
    )
    dtype = x.dtype if x.dtype.category >= 2 else _dt.int64
    return ShapedArray(shape, dtype)


_add_reduce = np.add.reduce


def _sum_impl(xp: Any, x: Any, *, axis: tuple[int, ...], keep_dims: bool) -> Any:
    dtype = None if x.dtype.kind in "fc" else np.int64
    if xp is np:  # the ufunc's reduce, which ndarray.sum calls through a Python function:
        return _add_reduce(x, axis, dtype, None, keep_dims)  # 0.56 vs 0.78 us on 4x4
    return x.sum(axis=axis, keepdims=keep_dims, dtype=dtype)


def _sum_vjp(
    g: Tensor, x: Tensor, *, out: Tensor, axis: tuple[int, ...], keep_dims: bool
) -> Tensor:
    if not keep_dims:
        g = reshape(g, tuple(1 if i in axis else d for i, d in enumerate(x.shape)))
    return broadcast_to(g, x.shape)


def _sum_specialize(impl: Any, arrays: list[Any], params: dict[str, Any]) -> Any:
    """The eager plan's kernel for one signature: NumPy's reduce with the axes, dtype and
    keepdims bound (the ``**params`` call and dtype test cost ~0.3 us of a 4x4 sum)."""
    if impl is not _sum_impl or type(arrays[0]) is not np.ndarray:
        return None
    axis, keep = params["axis"], params["keep_dims"]
    dtype = None if arrays[0].dtype.kind in "fc" else np.int64
    return lambda x: _add_reduce(x, axis, dtype, None, keep)


reduce_sum_p = Primitive(
    "reduce_sum",
    "reduce",
    _reduce_abstract,
    impl=_sum_impl,
    vjp=_sum_vjp,
    fresh=True,
    reduction="sum",
)
reduce_sum_p.eager_specialize = _sum_specialize


def reduce_sum(x: Tensor, axis: Any = (), keep_dims: bool = False) -> Tensor:
    """Sum over ``axis`` (all axes when empty or None); integers and bools sum as int64.

    >>> reduce_sum(Tensor([[1.0, 2.0], [3.0, 4.0]]), 1).tolist()
    [3.0, 7.0]
    """
    x = _tensor_input("reduce_sum", "x", x)
    axes = normalize_axes("reduce_sum", axis, x.ndim)
    return _STATE[-1].process(reduce_sum_p, (x,), reduce_params(axes, bool(keep_dims)))


def _transpose_abstract(x: ShapedArray, *, perm: tuple[int, ...]) -> ShapedArray:
    return ShapedArray(tuple(x.shape[p] for p in perm), x.dtype)


transpose_p = Primitive(
    "transpose",
    "movement",
    _transpose_abstract,
    # the array's method: np.transpose(x, perm) goes through NumPy's Python wrapper (0.34 vs
    # 0.09 us on a 4x4 array); CuPy arrays have the same method
    impl=lambda xp, x, *, perm: x.transpose(perm),
    vjp=lambda g, x, *, out, perm: transpose(g, tuple(int(i) for i in np.argsort(perm))),
    batch_rule=transpose_rule,
)


def _transpose_specialize(impl: Any, arrays: list[Any], params: dict[str, Any]) -> Any:
    """The eager plan's kernel: the array's own transpose with the permutation bound."""
    if impl is not transpose_p.impls.get("any"):
        return None
    return methodcaller("transpose", params["perm"])  # no Python frame per call


transpose_p.eager_specialize = _transpose_specialize


#: (user permutation, ndim) -> the checked permutation's params (``{}``: the identity)
_CHECKED_PERMS: dict[tuple[tuple[int, ...], int], dict[str, Any]] = {}


def transpose(input_x: Tensor, input_perm: Any = None) -> Tensor:
    """Permute dimensions (reverse them when ``input_perm`` is None)."""
    x = _tensor_input("transpose", "input_x", input_x)
    if type(input_perm) is tuple:  # a permutation already checked for this ndim (hot path)
        params = _CHECKED_PERMS.get((input_perm, x._data.ndim))
        if params is not None:  # (straight to the interpreter, without bind's packing)
            if not params:
                return x
            if len(_STATE) == 1:  # eager: the view made here (what the plan would run)
                return _eager_view(x, x._data.transpose(params["perm"]), transpose_p, params)
            return _STATE[-1].process(transpose_p, (x,), params)
    if input_perm is None:
        perm = tuple(range(x.ndim - 1, -1, -1))
    else:
        perm = tuple(check_axis("transpose", p, x.ndim, "input_perm") for p in input_perm)
        if sorted(perm) != list(range(x.ndim)):
            raise op_error(
                "transpose", "input_perm", tuple(input_perm), f"a permutation of range({x.ndim})"
            )
    if (
        type(input_perm) is tuple
        and all(type(p) is int for p in input_perm)  # (hashable, and equal only to itself)
        and len(_CHECKED_PERMS) < 4096
    ):
        identity = perm == tuple(range(x.ndim))
        _CHECKED_PERMS[(input_perm, x.ndim)] = {} if identity else StaticParams(perm=perm)
    if perm == tuple(range(x.ndim)):
        return x
    return transpose_p.bind(x, perm=perm)


# ---- fills ----------------------------------------------------------------------------


def _full_abstract(
    *, shape: tuple[int, ...], value: Any, dtype: _dt.DType, device: Any
) -> ShapedArray:
    return ShapedArray(shape, dtype)


full_p = Primitive(
    "full",
    "creation",
    _full_abstract,
    impl=lambda xp, *, shape, value, dtype, device: xp.full(shape, value, dtype.np),
)


def full(shape: Any, value: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """A new tensor of ``shape`` filled with ``value`` (dtype inferred from the value)."""
    dt = _dt.result_type(value) if dtype is None else _dt.to_dtype(dtype)
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise op_error("full", "shape", shape, "non-negative sizes")
    if isinstance(value, Tensor):
        value = value.item()
    dev = device if device is None or isinstance(device, Device) else get_device(device)
    return full_p.bind(shape=shape, value=value, dtype=dt, device=dev)


def zeros_like(input_x: Tensor, dtype: Any = None) -> Tensor:
    """Zeros with ``input_x``'s shape, dtype (unless given) and device."""
    x = _tensor_input("zeros_like", "input_x", input_x)
    return full(x.shape, 0, dtype or x.dtype, x._device)


def ones_like(input_x: Tensor, dtype: Any = None) -> Tensor:
    """Ones with ``input_x``'s shape, dtype (unless given) and device."""
    x = _tensor_input("ones_like", "input_x", input_x)
    return full(x.shape, 1, dtype or x.dtype, x._device)


_ = describe  # re-exported helper for op modules


# ---- in-place assignment (an effect) -----------------------------------------------------


def _assign_abstract(v: ShapedArray, *, target: Tensor) -> ShapedArray:
    if tuple(v.shape) != target.shape:
        raise op_error("assign", "value", v, f"shape {target.shape} like the variable")
    return ShapedArray(v.shape, _dt.from_numpy(target._data.dtype))


def _assign_impl(xp: Any, v: Any, *, target: Tensor) -> Any:
    target._data[...] = v  # in place: views of this buffer (optimizer banks) stay valid
    return target._data.copy()


#: Writes a value into a tensor's buffer in place. An effect, so graph mode keeps it and
#: runs it in order (batch-norm running statistics, counters).
assign_p = Primitive("assign_inplace", "effect", _assign_abstract, impl=_assign_impl)


def assign_inplace(target: Tensor, value: Tensor) -> Tensor:
    """Write ``value`` into ``target``'s buffer in place (not differentiable)."""
    from ..autograd.functional import no_grad

    with no_grad():
        return assign_p.bind(cast(value, target.dtype), target=target)
