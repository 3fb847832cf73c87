"""In-place Parameter updates (assign*, scatter_*, scatter_nd_*, index_add) and inplace_* ops."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import dtype as _dt
from ..._eager import EagerInterpreter
from ..._primitive import _STATE, Primitive, ShapedArray, current_interpreter
from ...errors import check_axis, check_int, op_error
from ...errors import check_bool as _check_bool
from ...kernels.cpu._rows import PARALLEL_MIN
from ...tensor import Parameter, Tensor
from .._core import as_tensor, assign_inplace, broadcast_shapes, broadcast_to, cast, reshape
from .._elementwise import add, sub
from ._common import _check_index_dtype, _check_range, _index, _scatter_rows, _split3, _tensor
from ._prims import (
    _scatter_dtype_check,
    _scatter_nd_into,
    _scatter_shapes,
    gather_grad_p,
    tensor_scatter_p,
)
from .tensor_scatter import _updates_for

# ---- in-place updates of Parameters -----------------------------------------------------


def _variable(op: str, arg: str, x: Any) -> Tensor:
    from ...autograd.tape import GradMode

    t = _tensor(op, arg, x)
    if not isinstance(t, Parameter) and t._requires_grad and t._node is None and GradMode.enabled:
        raise RuntimeError(
            f"{op}: cannot update a leaf tensor that requires gradients in "
            "place; use a Parameter, update a copy (y = x * 1), or use no_grad()"
        )
    return t


def _mutate(x: Tensor, fn: Any) -> Tensor:
    """Run ``fn(array)`` on the Parameter's own C-contiguous array (in place)."""
    data = x._data
    writeable = bool(getattr(data.flags, "writeable", True))
    if data.flags.c_contiguous and writeable:
        fn(data)
    else:
        tmp = data.copy()
        fn(tmp)
        if writeable:
            data[...] = tmp
        else:
            x._data = tmp
    return x


def _traceable(x: Tensor) -> bool:
    """A Parameter whose buffer takes writes directly: its update is the ``assign_inplace``
    effect, which graph mode (``jit``) records and runs in order."""
    flags = getattr(x._data, "flags", None)  # None: a traced value (no buffer)
    return (
        isinstance(x, Parameter)
        and flags is not None
        and bool(getattr(flags, "writeable", True))
        and bool(flags.c_contiguous)
    )


def _in_graph(op: str, arg: str, x: Tensor) -> Tensor:
    """``x`` when its buffer takes writes directly; else, while tracing (``jit``, GRAPH_MODE),
    a clear error: such a Parameter (a read-only or strided buffer) is only updated eagerly,
    by a copy put back, which a compiled graph cannot replay."""
    if _traceable(x) or isinstance(current_interpreter(), EagerInterpreter):
        return x
    what = f"{op}: argument '{arg}' (Parameter {getattr(x, 'name', '?')!r}, shape {x.shape})"
    if getattr(x._data, "flags", None) is None:
        # jit's compiled backward re-runs the function on the Parameters as traced values
        raise TypeError(
            f"{what} is updated in place inside a jit function being differentiated: the "
            "compiled backward recomputes the function and cannot repeat the update; update "
            "the Parameter outside the differentiated function"
        )
    raise TypeError(
        f"{what} has a read-only or non-contiguous buffer, which graph mode (jit / "
        "GRAPH_MODE) cannot update in place; give it a writeable contiguous value first "
        "(e.g. param.set_data(param.copy())) or call this op outside jit"
    )


def _write(x: Tensor, value: Tensor) -> Tensor:
    assign_inplace(x, broadcast_to(value, x.shape))
    return x


def _rebind(x: Tensor, compute: Any) -> Tensor:
    """A plain Tensor takes the functional result (recorded by autograd if tracked)."""
    old = Tensor._wrap(x._data, x._device, x._node, x._index)
    return x._rebind(compute(old))


def _fast(x: Tensor) -> bool:
    return x._device.kind == "cpu"


# ---- the in-place scatter effect (eager and graph mode) ----------------------------------


def _param_scatter_abstract(
    x: ShapedArray,
    idx: ShapedArray,
    u: ShapedArray,
    *,
    target: Tensor,
    op: str,
    name: str,
    axis: int | None,
) -> ShapedArray:
    _check_index_dtype(name, "indices", idx)
    dtype = _dt.from_numpy(target._data.dtype)
    if u.dtype != dtype:
        raise TypeError(f"{name}: 'updates' must have input_x's dtype {dtype}, got {u.dtype}")
    if axis is None:
        _scatter_shapes(name, target.shape, idx, u.shape)
    return ShapedArray((0,), dtype)  # nothing to copy: the result is the Parameter itself


def _param_scatter_impl(
    xp: Any,
    x: Any,
    idx: Any,
    u: Any,
    *,
    target: Tensor,
    op: str,
    name: str,
    axis: int | None,
    fast: bool = False,
) -> Any:
    """Scatter into the Parameter's own buffer (``x`` is that buffer: the Parameter is an
    input so a graph captures it, orders the write after earlier reads, and jit's compiled
    backward sees it); ``axis`` set: rows of that axis (``index_add``), else nd-indices
    (``scatter_*``, ``scatter_nd_*``)."""

    def apply(a: Any) -> None:
        if axis is None:
            _scatter_nd_into(xp, a, idx, u, op, name, fast)
            return
        o, n, i = _split3(a.shape, axis)
        ids = _check_range(xp, name, "indices", idx, n, what=f" for axis {axis} of size {n}")
        _scatter_rows(xp, a.reshape(o, n, i), ids, u.reshape(o, ids.shape[0], i), op, fast)

    _mutate(target, apply)
    return xp.empty((0,), target._data.dtype)


def _param_scatter_cpu(xp: Any, *args: Any, **params: Any) -> Any:
    return _param_scatter_impl(xp, *args, fast=True, **params)


#: Scatters into a Parameter's buffer in place. An effect, so graph mode (``jit``) records
#: it and runs it in order on every call, like ``assign_inplace``; its output is empty (the
#: op returns the Parameter, so no copy of it is made per call).
param_scatter_p = Primitive(
    "param_scatter_inplace",
    "effect",
    _param_scatter_abstract,
    impl=_param_scatter_impl,
    cpu=_param_scatter_cpu,
)


def _scatter_param(
    x: Tensor, idx: Tensor, u: Tensor, op: str, name: str, axis: int | None = None
) -> Tensor:
    from ...autograd.functional import no_grad

    _in_graph(name, "input_x" if axis is None else "x", x)
    with no_grad():
        param_scatter_p.bind(x, idx, u, target=x, op=op, name=name, axis=axis)
    return x


def _scatter_inplace(
    name: str, reduction: str, input_x: Any, indices: Any, updates: Any, nd: bool
) -> Tensor:
    x = _variable(name, "input_x", input_x)
    if x.ndim == 0:
        raise op_error(name, "input_x", x, "a tensor of rank >= 1")
    idx = _index(name, "indices", indices, x)
    if not nd:  # scatter_<op>: indices address rows of axis 0
        idx = reshape(idx, idx.shape + (1,))
    u = _updates_for(name, x, updates)
    _scatter_dtype_check(name, reduction, x.dtype)
    _scatter_shapes(name, x.shape, ShapedArray(idx.shape, idx.dtype), u.shape)
    if isinstance(x, Parameter):
        return _scatter_param(x, idx, u, reduction, name)
    return _rebind(x, lambda old: tensor_scatter_p.bind(old, idx, u, op=reduction, name=name))


def _make_scatter(reduction: str, nd: bool) -> Any:
    name = f"scatter_nd_{reduction}" if nd else f"scatter_{reduction}"
    verb = {
        "update": "writes",
        "add": "adds",
        "sub": "subtracts",
        "mul": "multiplies by",
        "div": "divides by",
        "max": "takes the maximum with",
        "min": "takes the minimum with",
    }

    if nd:
        default_lock = reduction == "update"  # ScatterNdUpdate locks by default

        def fn(
            input_x: Any, indices: Any, updates: Any, use_locking: bool = default_lock
        ) -> Tensor:
            _check_bool(name, "use_locking", use_locking)
            return _scatter_inplace(name, reduction, input_x, indices, updates, True)

        where = "the nd-indices ``indices[..., :]``"
    else:

        def fn(input_x: Any, indices: Any, updates: Any) -> Tensor:  # type: ignore[misc]
            return _scatter_inplace(name, reduction, input_x, indices, updates, False)

        where = "the rows ``indices`` of axis 0"
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (
        f"In place: ``input_x`` {verb[reduction]} ``updates`` at {where}; returns the "
        "updated Parameter (repeated indices apply in order; kernels are serial, so "
        "results are deterministic and ``use_locking`` changes nothing)."
    )
    return fn


scatter_add = _make_scatter("add", False)
scatter_sub = _make_scatter("sub", False)
scatter_mul = _make_scatter("mul", False)
scatter_div = _make_scatter("div", False)
scatter_max = _make_scatter("max", False)
scatter_min = _make_scatter("min", False)
scatter_update = _make_scatter("update", False)
scatter_nd_add = _make_scatter("add", True)
scatter_nd_sub = _make_scatter("sub", True)
scatter_nd_mul = _make_scatter("mul", True)
scatter_nd_div = _make_scatter("div", True)
scatter_nd_max = _make_scatter("max", True)
scatter_nd_min = _make_scatter("min", True)
scatter_nd_update = _make_scatter("update", True)


def _assign_value(op: str, variable: Any, value: Any) -> tuple[Tensor, Tensor]:
    x = _variable(op, "variable", variable)
    v = as_tensor(value, op, "value", x, x.dtype)
    if v.dtype.category > x.dtype.category:
        raise TypeError(
            f"{op}: argument 'value' of dtype {v.dtype} cannot be written into "
            f"'variable' of dtype {x.dtype}"
        )
    if v._device is not x._device:
        raise ValueError(
            f"{op}: argument 'value' is on {v.device} but 'variable' is on "
            f"{x.device}; move one with .to(...)"
        )
    try:
        ok = broadcast_shapes(op, v.shape, x.shape) == x.shape
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(
            f"{op}: argument 'value' of shape {v.shape} does not broadcast to "
            f"the variable's shape {x.shape}"
        )
    return x, cast(v, x.dtype)


_ndarray = np.ndarray
_asarray = np.asarray
_np_add = np.add
_np_sub = np.subtract


def _fast_operands(variable: Any, value: Any) -> tuple[Any, Any] | None:
    """The common eager case as (the Parameter's buffer, the array to write), else None.

    The case: eager execution (no tracer on the interpreter stack), ``variable`` a Parameter
    whose buffer is a writeable C-contiguous NumPy array, ``value`` a Tensor with the
    buffer's shape and dtype on the same device, or a Python int/float (converted exactly as
    the generic path converts it). The generic path's checks all pass there, its casts and
    broadcasts do nothing and its ``assign_inplace`` effect writes the buffer under no_grad,
    so writing the buffer directly is the same update at ~1/8 of the cost (bench_dispatch).
    Every other case (and every error) takes the generic path."""
    if type(variable) is not Parameter or type(_STATE[-1]) is not EagerInterpreter:
        return None
    d = variable._data
    if type(d) is not _ndarray:
        return None
    flags = d.flags
    if not (flags.c_contiguous and flags.writeable):
        return None
    tv = type(value)
    if tv is Tensor or tv is Parameter:
        vd = value._data
        if (
            type(vd) is _ndarray
            and vd.dtype == d.dtype
            and vd.shape == d.shape
            and value._device is variable._device
        ):
            return d, vd
        return None
    if tv is float or tv is int:
        try:
            return d, _asarray(value, d.dtype)  # as Tensor(value, dtype=variable.dtype)
        except (TypeError, ValueError, OverflowError):
            return None  # the generic path raises its error
    return None


def assign(variable: Any, value: Any) -> Tensor:
    """In place: ``variable = value`` (broadcast); returns the variable.

    >>> p = Parameter(Tensor([1.0, 2.0]), name="p")
    >>> assign(p, Tensor([5.0, 6.0])).tolist()
    [5.0, 6.0]
    """
    fast = _fast_operands(variable, value)
    if fast is not None:
        fast[0][...] = fast[1]  # in place: views of the buffer see the write
        return variable  # type: ignore[no-any-return]
    x, v = _assign_value("assign", variable, value)
    if isinstance(x, Parameter):
        _in_graph("assign", "variable", x)
    if _traceable(x):
        return _write(x, v)
    if isinstance(x, Parameter):
        return _mutate(x, lambda a: a.__setitem__(Ellipsis, v._data))
    return _rebind(x, lambda old: broadcast_to(v, x.shape))


def _assign_arith(op: str, variable: Any, value: Any, sign: int) -> Tensor:
    fast = _fast_operands(variable, value)
    # (bool variables raise below; from PARALLEL_MIN elements the generic add's row-block
    # kernel runs on several threads)
    if fast is not None and fast[0].dtype.kind != "b" and fast[0].size < PARALLEL_MIN:
        d = fast[0]
        (_np_add if sign > 0 else _np_sub)(d, fast[1], out=d)  # NumPy's add, as add_p's
        return variable  # type: ignore[no-any-return]
    x, v = _assign_value(op, variable, value)
    if x.dtype.category == 0:
        raise TypeError(f"{op}: argument 'variable' expected a numeric dtype, got Bool")
    if isinstance(x, Parameter):
        _in_graph(op, "variable", x)
    if _traceable(x):
        return _write(x, add(x, v) if sign > 0 else sub(x, v))
    if isinstance(x, Parameter):

        def apply(a: Any) -> None:
            if sign > 0:
                a += v._data
            else:
                a -= v._data

        return _mutate(x, apply)
    return _rebind(x, lambda old: add(old, v) if sign > 0 else sub(old, v))


def assign_add(variable: Any, value: Any) -> Tensor:
    """In place: ``variable += value``; returns the variable."""
    return _assign_arith("assign_add", variable, value, 1)


def assign_sub(variable: Any, value: Any) -> Tensor:
    """In place: ``variable -= value``; returns the variable."""
    return _assign_arith("assign_sub", variable, value, -1)


def index_add(
    x: Any, indices: Any, y: Any, axis: int, use_lock: bool = True, check_index_bound: bool = True
) -> Tensor:
    """In place: ``x[..., indices[k], ...] += y[..., k, ...]`` along ``axis``; returns ``x``.

    Indices are always checked (``check_index_bound=False`` does not skip the check, so a
    bad index can never corrupt memory); ``use_lock`` changes nothing (serial kernels).

    >>> p = Parameter(Tensor([[1.0, 1.0], [1.0, 1.0]]), name="p")
    >>> index_add(p, Tensor([1, 1]), Tensor([[1.0, 2.0], [3.0, 4.0]]), 0).tolist()
    [[1.0, 1.0], [5.0, 7.0]]
    """
    op = "index_add"
    t = _variable(op, "x", x)
    _check_bool(op, "use_lock", use_lock)
    _check_bool(op, "check_index_bound", check_index_bound)
    if t.ndim == 0:
        raise op_error(op, "x", t, "a tensor of rank >= 1")
    if t.dtype.category == 0:
        raise TypeError(f"{op}: argument 'x' expected a numeric dtype, got Bool")
    ax = check_axis(op, axis, t.ndim)
    idx = _index(op, "indices", indices, t)
    v = _tensor(op, "y", y)
    if v._device is not t._device:
        raise ValueError(f"{op}: argument 'y' is on {v.device} but 'x' is on {t.device}")
    if v.dtype.category > t.dtype.category:
        raise TypeError(
            f"{op}: argument 'y' of dtype {v.dtype} cannot be added into 'x' of dtype {t.dtype}"
        )
    v = cast(v, t.dtype)
    if idx.ndim != 1:
        raise op_error(op, "indices", idx, "a 1-D tensor")
    if v.ndim != t.ndim or any(v.shape[d] != t.shape[d] for d in range(t.ndim) if d != ax):
        raise ValueError(
            f"{op}: argument 'y' expected x's shape {t.shape} outside axis {ax}, got {v.shape}"
        )
    if v.shape[ax] != idx.shape[0]:
        raise ValueError(
            f"{op}: argument 'indices' has {idx.shape[0]} entries but 'y' has "
            f"{v.shape[ax]} along axis {ax}"
        )
    if isinstance(t, Parameter):
        return _scatter_param(t, idx, v, "add", op, axis=ax)
    return _rebind(t, lambda old: add(old, gather_grad_p.bind(v, idx, axis=ax, size=t.shape[ax])))


# ---- inplace_add / inplace_sub / inplace_update (functional in MindSpore) -----------------


def _inplace_rows(op: str, reduction: str, x: Any, v: Any, indices: Any) -> Tensor:
    t = _tensor(op, "x", x)
    if t.ndim == 0:
        raise op_error(op, "x", t, "a tensor of rank >= 1")
    if isinstance(indices, (bool, np.bool_)) or not isinstance(
        indices, (int, np.integer, tuple, list)
    ):
        raise op_error(op, "indices", indices, "an int or a tuple of ints", TypeError)
    rows = (indices,) if isinstance(indices, (int, np.integer)) else tuple(indices)
    for r in rows:
        check_int(op, "indices", r)
        if not 0 <= r < t.shape[0]:
            raise ValueError(
                f"{op}: argument 'indices' holds {r}, expected values in "
                f"[0, {t.shape[0]}) (x's first dimension)"
            )
    val = _tensor(op, "v", v)
    if val.ndim == t.ndim - 1 and len(rows) == 1:
        val = reshape(val, (1,) + val.shape)
    if val.ndim != t.ndim or val.shape[1:] != t.shape[1:] or val.shape[0] != len(rows):
        raise ValueError(
            f"{op}: argument 'v' expected shape {(len(rows),) + t.shape[1:]}, got {val.shape}"
        )
    u = _updates_for(op, t, val)
    idx = Tensor(np.asarray(rows, np.int64).reshape(-1, 1), device=t._device)
    return tensor_scatter_p.bind(t, idx, u, op=reduction, name=op)


def inplace_add(x: Tensor, v: Tensor, indices: Any) -> Tensor:
    """``x`` with ``v[k]`` added to row ``indices[k]``; a new tensor, as in MindSpore (its
    "inplace" ops return the result and leave ``x`` alone). Differentiable.

    >>> inplace_add(Tensor([[1.0], [2.0]]), Tensor([[5.0]]), 1).tolist()
    [[1.0], [7.0]]
    """
    return _inplace_rows("inplace_add", "add", x, v, indices)


def inplace_sub(x: Tensor, v: Tensor, indices: Any) -> Tensor:
    """``x`` with ``v[k]`` subtracted from row ``indices[k]`` (a new tensor)."""
    return _inplace_rows("inplace_sub", "sub", x, v, indices)


def inplace_update(x: Tensor, v: Tensor, indices: Any) -> Tensor:
    """``x`` with row ``indices[k]`` replaced by ``v[k]`` (a new tensor)."""
    return _inplace_rows("inplace_update", "update", x, v, indices)
