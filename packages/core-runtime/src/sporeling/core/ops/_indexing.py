"""Tensor indexing (``x[idx]``) and item assignment (``x[idx] = v``), with gradients.

An index is split into a static *template* (ints, slices, None, Ellipsis, scalar bools —
part of the op's parameters) and the tensors used as advanced indices (op inputs). Boolean
masks are turned into integer indices first, so every indexing primitive has a shape known
from its inputs' shapes alone.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._backend import scatter_at
from .._primitive import Primitive, ShapedArray
from ..tensor import Tensor
from ._core import as_tensor, sum_to

__all__ = ["getitem", "setitem"]

Template = tuple[tuple[Any, ...], ...]


def _split_index(x: Tensor, index: Any) -> tuple[Template, list[Tensor]]:
    items = index if isinstance(index, tuple) else (index,)
    template: list[tuple[Any, ...]] = []
    tensors: list[Tensor] = []
    for item in items:
        if item is None:
            template.append(("n",))
        elif item is Ellipsis:
            template.append(("e",))
        elif isinstance(item, slice):
            parts = []
            for v in (item.start, item.stop, item.step):
                parts.append(None if v is None else int(v))
            if parts[2] == 0:
                raise ValueError("getitem: slice step cannot be zero")
            template.append(("s", *parts))
        elif isinstance(item, (bool, np.bool_)):
            template.append(("b", bool(item)))
        elif isinstance(item, (int, np.integer)):
            template.append(("i", int(item)))
        else:
            t = item if isinstance(item, Tensor) else as_tensor(item, "getitem", "index", x)
            if t.dtype.category == 0 and t.ndim == 0:  # a 0-d mask acts as a Python bool
                template.append(("b", bool(t.item())))
            elif t.dtype.category == 0:  # boolean mask -> one integer index per masked axis
                nz = np.nonzero(t.asnumpy())
                for axis_index in nz:
                    tensors.append(Tensor(axis_index.astype(np.int64), device=x._device))
                    template.append(("t", len(tensors) - 1))
            elif t.dtype.category == 1:
                tensors.append(t if t._device is x._device else t.to(x._device))
                template.append(("t", len(tensors) - 1))
            else:
                raise TypeError(
                    f"getitem: index tensors must be integer or bool, got dtype {t.dtype}"
                )
    return tuple(template), tensors


def _static_template(index: Any) -> Template | None:
    """The template of an index made only of Python ints and of slices of ints or None (the
    common ``x[1:3, 0]``), built without ``_split_index``'s general checks; None otherwise."""
    items = index if type(index) is tuple else (index,)
    template: list[tuple[Any, ...]] = []
    for item in items:
        kind = type(item)
        if kind is int:
            template.append(("i", item))
        elif kind is slice:
            start, stop, step = item.start, item.stop, item.step
            if not (
                (start is None or type(start) is int)
                and (stop is None or type(stop) is int)
                and (step is None or (type(step) is int and step != 0))
            ):
                return None
            template.append(("s", start, stop, step))
        else:
            return None
    return tuple(template)


#: template -> NumPy index, for templates without tensors (bounded: cleared when full)
_STATIC_INDEX: dict[Template, tuple[Any, ...]] = {}


def _build(template: Template, arrays: tuple[Any, ...]) -> tuple[Any, ...]:
    out: list[Any] = []
    for item in template:
        tag = item[0]
        if tag == "i":
            out.append(item[1])
        elif tag == "s":
            out.append(slice(item[1], item[2], item[3]))
        elif tag == "n":
            out.append(None)
        elif tag == "e":
            out.append(Ellipsis)
        elif tag == "b":  # a scalar mask: a new axis of length 1 (True) or 0 (False)
            out.append(item[1])
        else:
            out.append(arrays[item[1]])
    return tuple(out)


def _index_shape(
    op: str, shape: tuple[int, ...], template: Template, idx: tuple[ShapedArray, ...]
) -> tuple[int, ...]:
    dummies = tuple(np.zeros(a.shape, np.int64) for a in idx)
    probe = np.broadcast_to(np.zeros((), np.int8), shape)
    try:
        return tuple(probe[_build(template, dummies)].shape)
    except IndexError as exc:
        raise IndexError(f"{op}: index out of range for a tensor of shape {shape}: {exc}") from None


def _run_index(op: str, fn: Any) -> Any:
    try:
        return fn()
    except IndexError as exc:
        raise IndexError(f"{op}: {exc}") from None


def _getitem_abstract(x: ShapedArray, *idx: ShapedArray, template: Template) -> ShapedArray:
    return ShapedArray(_index_shape("getitem", x.shape, template, idx), x.dtype)


def _getitem_impl(xp: Any, x: Any, *idx: Any, template: Template) -> Any:
    if idx:
        return _run_index("getitem", lambda: x[_build(template, idx)])
    where = _STATIC_INDEX.get(template)
    if where is None:
        if len(_STATIC_INDEX) > 1024:
            _STATIC_INDEX.clear()
        where = _STATIC_INDEX[template] = _build(template, ())
    try:
        return x[where]
    except IndexError as exc:
        raise IndexError(f"getitem: {exc}") from None


def _getitem_vjp(
    g: Tensor, x: Tensor, *idx: Tensor, out: Tensor, template: Template
) -> tuple[Any, ...]:
    return (getitem_grad_p.bind(g, *idx, template=template, shape=x.shape),) + (None,) * len(idx)


def _grad_abstract(
    g: ShapedArray, *idx: ShapedArray, template: Template, shape: tuple[int, ...]
) -> ShapedArray:
    return ShapedArray(shape, g.dtype)


def _grad_impl(xp: Any, g: Any, *idx: Any, template: Template, shape: tuple[int, ...]) -> Any:
    out = xp.zeros(shape, g.dtype)
    where = _build(template, idx)
    if idx:  # advanced indices may repeat: accumulate
        scatter_at(xp, "add", out, where, g)
    else:
        out[where] = g
    return out


getitem_p = Primitive(
    "getitem", "movement", _getitem_abstract, impl=_getitem_impl, vjp=_getitem_vjp
)
getitem_grad_p = Primitive(
    "getitem_grad",
    "opaque",
    _grad_abstract,
    impl=_grad_impl,
    vjp=lambda gg, g, *idx, out, template, shape: (
        (getitem_p.bind(gg, *idx, template=template),) + (None,) * len(idx)
    ),
)


def _slices_abstract(
    *gs: ShapedArray, templates: Any, shape: tuple[int, ...], order: Any = None
) -> ShapedArray:
    return ShapedArray(shape, gs[0].dtype)


def _slices_impl(
    xp: Any,
    *gs: Any,
    templates: Any,
    shape: tuple[int, ...],
    order: tuple[int, ...] | None = None,
    out: Any = None,
) -> Any:
    """``order``: store the result so that its ``transpose(order)`` is contiguous (the
    reader's layout); ``out``: a contiguous buffer of the result's size to store it in."""
    dtype = gs[0].dtype
    stored = shape if order is None else tuple(shape[p] for p in order)
    if out is None:
        base = xp.empty(stored, dtype)
    else:
        base = out.reshape(-1).reshape(stored)
    res = base if order is None else base.transpose(tuple(int(a) for a in np.argsort(order)))
    if _tiles_first_axis(templates, shape):  # each element written once: no zero fill
        for g, template in zip(gs, templates, strict=True):
            res[_build(template, ())] = g
        return res
    res[...] = 0
    for g, template in zip(gs, templates, strict=True):
        res[_build(template, ())] += g
    return res


def _tiles_first_axis(templates: Any, shape: tuple[int, ...]) -> bool:
    """Whether the templates are one int index each, along the first axis, covering every
    position once (``x[0], x[1], x[2]``)."""
    if not shape or any(len(t) != 1 or t[0][0] != "i" for t in templates):
        return False
    return sorted(t[0][1] % shape[0] for t in templates) == list(range(shape[0]))


#: ``getitem_grad(g0, t0) + getitem_grad(g1, t1) + ...`` for static indices (ints, slices):
#: one result instead of one zero-filled array per term and the adds between them. The graph
#: compiler makes it from such sums (a ``qkv[0], qkv[1], qkv[2]`` split's backward), and
#: gives it the ``order`` of the transpose that reads it (the split's backward transposes
#: the gradient back and reshapes it: stored in that order, neither copies).
getitem_grad_sum_p = Primitive(
    "getitem_grad_sum",
    "opaque",
    _slices_abstract,
    impl=_slices_impl,
    cpu_into=_slices_impl,
    vjp=lambda gg, *gs, out, templates, shape, order=None: tuple(
        getitem_p.bind(gg, template=t) for t in templates
    ),
)


def getitem(x: Tensor, index: Any) -> Tensor:
    """``x[index]`` with NumPy semantics (basic and advanced indexing, masks)."""
    template = _static_template(index)
    if template is not None and isinstance(x, Tensor):
        return getitem_p.bind(x, template=template)
    template, tensors = _split_index(x, index)
    return getitem_p.bind(x, *tensors, template=template)


def _setitem_abstract(
    x: ShapedArray, v: ShapedArray, *idx: ShapedArray, template: Template
) -> ShapedArray:
    target = _index_shape("setitem", x.shape, template, idx)
    from ._core import broadcast_shapes

    if broadcast_shapes("setitem", v.shape, target) != target:
        raise ValueError(
            f"setitem: a value of shape {v.shape} cannot be assigned to a selection "
            f"of shape {target}"
        )
    return ShapedArray(x.shape, x.dtype)


def _setitem_impl(xp: Any, x: Any, v: Any, *idx: Any, template: Template) -> Any:
    out = x.copy()

    def assign() -> Any:
        out[_build(template, idx)] = v
        return out

    return _run_index("setitem", assign)


def _setitem_vjp(
    g: Tensor, x: Tensor, v: Tensor, *idx: Tensor, out: Tensor, template: Template
) -> tuple[Any, ...]:
    def dx() -> Tensor:
        from ._core import zeros_like

        return setitem_p.bind(g, zeros_like(v), *idx, template=template)

    def dv() -> Tensor:
        return sum_to(getitem_p.bind(g, *idx, template=template), v.shape)

    return (dx, dv) + (None,) * len(idx)


setitem_p = Primitive("setitem", "opaque", _setitem_abstract, impl=_setitem_impl, vjp=_setitem_vjp)


def setitem(x: Tensor, index: Any, value: Any) -> Tensor:
    """A new tensor equal to ``x`` with ``x[index] = value`` applied (differentiable)."""
    from ._core import cast

    template, tensors = _split_index(x, index)
    v = cast(as_tensor(value, "setitem", "value", x, x.dtype), x.dtype)
    return setitem_p.bind(x, v, *tensors, template=template)
