"""MindSpore's functional differentiation API over the tape.

``grad``/``value_and_grad`` follow MindSpore 2.x (a superset of 1.8's ``ops.grad``):
``grad_position`` picks positional inputs (int, tuple, or None), ``weights`` picks
Parameters, ``has_aux`` treats outputs after the first as auxiliary (not differentiated).
A function with several outputs and no ``has_aux`` is differentiated through all of them
(each with a sensitivity of ones), as MindSpore does.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Sequence
from typing import Any

from .. import _hooks
from ..tensor import Tensor
from .tape import GradMode, _zeros_for, backward, new_epoch

__all__ = [
    "grad",
    "value_and_grad",
    "vjp",
    "jvp",
    "vmap",
    "stop_gradient",
    "no_grad",
    "enable_grad",
    "is_grad_enabled",
]


class _Depth(threading.local):
    """How many differentiation calls are active on this thread (nesting -> create_graph);
    per thread, so threads differentiating at once (MicroBatchInterleaved) do not mix."""

    def __init__(self) -> None:
        self.n = 0

    def __getitem__(self, _: int) -> int:
        return self.n

    def __setitem__(self, _: int, value: int) -> None:
        self.n = value


_DEPTH = _Depth()


class no_grad:  # noqa: N801
    """Context manager / decorator: ops inside record nothing for autograd."""

    def __enter__(self) -> None:
        self._prev = GradMode.enabled
        GradMode.enabled = False

    def __exit__(self, *exc: Any) -> None:
        GradMode.enabled = self._prev

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with no_grad():
                return fn(*args, **kwargs)

        return wrapper


class enable_grad(no_grad):  # noqa: N801
    """Context manager: re-enable recording inside ``no_grad``."""

    def __enter__(self) -> None:
        self._prev = GradMode.enabled
        GradMode.enabled = True


def is_grad_enabled() -> bool:
    return GradMode.enabled


def stop_gradient(value: Any) -> Any:
    """The same values with no gradient flowing back (tensors inside tuples/lists too)."""
    if isinstance(value, Tensor):
        return value.detach()
    if isinstance(value, (tuple, list)):
        return type(value)(stop_gradient(v) for v in value)
    return value


def _ones_like(t: Tensor) -> Tensor:
    return Tensor._wrap(t._device.xp.ones(t._data.shape, t._data.dtype), t._device)


def _zeros_like(t: Tensor) -> Tensor:
    return _zeros_for(t._data, t._device)


def _as_weights(weights: Any) -> list[Tensor]:
    if weights is None:
        return []
    if isinstance(weights, Tensor):
        return [weights]
    if hasattr(weights, "trainable_params") and callable(weights.trainable_params):
        weights = weights.trainable_params()
    out = list(weights)
    for w in out:
        if not isinstance(w, Tensor):
            raise TypeError(f"grad: argument 'weights' expected Parameters, got {type(w).__name__}")
    return out


def _positions(grad_position: Any, nargs: int) -> tuple[int, ...] | None:
    if grad_position is None:
        return None
    single = isinstance(grad_position, int)
    pos = (grad_position,) if single else tuple(grad_position)
    for p in pos:
        if not isinstance(p, int) or isinstance(p, bool) or not -nargs <= p < nargs:
            raise ValueError(
                f"grad: argument 'grad_position' expected ints in [{-nargs}, {nargs - 1}] "
                f"for a function called with {nargs} positional arguments, got {grad_position!r}"
            )
    return tuple(p % nargs for p in pos)


def _flat_tensors(value: Any) -> list[Tensor]:
    if isinstance(value, Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _flat_tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _flat_tensors(v)]
    return []


def _prepare_input(value: Any) -> Any:
    """A differentiable stand-in for an input: tensors become tracked (nested ones too)."""
    if isinstance(value, Tensor):
        if value._node is not None or value._requires_grad:
            return value  # already tracked by an enclosing differentiation: keep the link
        t = Tensor._wrap(value._data, value._device)
        t._requires_grad = True
        return t
    if isinstance(value, (tuple, list)):
        return _same_kind(value, [_prepare_input(v) for v in value])
    if isinstance(value, dict):  # a (mutable) dict: its values are differentiated
        return _same_kind(value, {k: _prepare_input(v) for k, v in value.items()})
    return value


def _same_kind(original: Any, items: Any) -> Any:
    """``items`` in ``original``'s container type, keeping a ``mutable`` mark."""
    out = type(original)(items)
    if hasattr(original, "__ms_dynamic_len__"):
        out.__ms_dynamic_len__ = original.__ms_dynamic_len__
    return out


def _grads_for(value: Any, found: dict[int, Any]) -> Any:
    if isinstance(value, Tensor):
        hit = found.get(id(value))
        return hit[1] if hit is not None else _zeros_like(value)
    if isinstance(value, (tuple, list)):
        return tuple(_grads_for(v, found) for v in value)
    if isinstance(value, dict):  # one gradient per value, in key order (MindSpore 2.x)
        return tuple(_grads_for(v, found) for v in value.values())
    return None


def _split_aux(out: Any, has_aux: bool) -> tuple[Any, Any]:
    if not has_aux:
        return out, None
    if not isinstance(out, (tuple, list)) or len(out) < 2:
        raise ValueError("grad: has_aux=True needs a function that returns (output, aux, ...)")
    return out[0], tuple(out[1:])


def _differentiate(
    fn: Callable[..., Any],
    grad_position: Any,
    weights: Any,
    has_aux: bool,
    sens: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> tuple[Any, Any, Any]:
    pos = _positions(grad_position, len(args))
    ws = _as_weights(weights)
    if pos is None and not ws:
        raise ValueError(
            "grad: grad_position is None and no weights were given: nothing to differentiate"
        )
    new_args = list(args)
    for p in pos or ():
        new_args[p] = _prepare_input(args[p])
    _DEPTH[0] += 1
    prev = GradMode.enabled
    GradMode.enabled = True
    epoch = new_epoch()  # the nodes fn records: nobody else can reach them (see below)
    try:
        out = fn(*new_args, **kwargs)
        primal, aux = _split_aux(out, has_aux)
        outs = _flat_tensors(primal)
        if not outs:
            raise TypeError("grad: the function must return a Tensor (or tensors) to differentiate")
        if sens is None:
            cts = [_ones_like(o) for o in outs]
        else:
            cts = _flat_tensors(sens)
            if len(cts) != len(outs):
                raise ValueError(f"grad: expected {len(outs)} sensitivities, got {len(cts)}")
        targets = [t for p in (pos or ()) for t in _flat_tensors(new_args[p])] + ws
        nested = _DEPTH[0] > 1 or any(t._node is not None for t in targets)
        # Not nested, the output leaves with its graph cut (stop_gradient below), so the
        # nodes fn recorded are freed as the sweep passes them (peak memory: activations
        # or gradients, not both). Nested, an outer sweep still needs them.
        found = backward(outs, cts, targets, create_graph=nested, release=None if nested else epoch)
    finally:
        _DEPTH[0] -= 1
        GradMode.enabled = prev
    pos_grads = None
    if pos is not None:
        pg = tuple(_grads_for(new_args[p], found) for p in pos)
        pos_grads = pg[0] if isinstance(grad_position, int) else pg
    weight_grads = tuple(_grads_for(w, found) for w in ws)
    if weight_grads and _DEPTH[0] == 0:
        hooks = _hooks.parallel
        if hooks.auto_data_parallel_active():  # SEMI_AUTO/AUTO_PARALLEL: data parallel by default
            weight_grads = hooks.reduce_weight_gradients(weight_grads)
    if pos_grads is None:
        result = weight_grads
    elif ws:
        result = (pos_grads, weight_grads)
    else:
        result = pos_grads
    if not nested:
        out = stop_gradient(out)
    return out, result, aux


def grad(
    fn: Callable[..., Any], grad_position: Any = 0, weights: Any = None, has_aux: bool = False
) -> Callable[..., Any]:
    """A function computing the gradient of ``fn`` (MindSpore's ``ops.grad``).

    Returns the gradients (and, with ``has_aux``, ``(gradients, aux)``).

    >>> from sporeling.core import Tensor
    >>> grad(lambda x: (x * x).sum())(Tensor([1.0, 2.0])).tolist()
    [2.0, 4.0]
    """

    @functools.wraps(fn)
    def grad_fn(*args: Any, **kwargs: Any) -> Any:
        _, g, aux = _differentiate(fn, grad_position, weights, has_aux, None, args, kwargs)
        return (g, aux) if has_aux else g

    return grad_fn


def value_and_grad(
    fn: Callable[..., Any], grad_position: Any = 0, weights: Any = None, has_aux: bool = False
) -> Callable[..., Any]:
    """Like :func:`grad` but returns ``(value, gradients)``; ``value`` is fn's full output."""

    @functools.wraps(fn)
    def vg_fn(*args: Any, **kwargs: Any) -> Any:
        out, g, _ = _differentiate(fn, grad_position, weights, has_aux, None, args, kwargs)
        return out, g

    return vg_fn


def vjp(fn: Callable[..., Any], *inputs: Any, has_aux: bool = False) -> Any:
    """``(outputs, vjp_fn)`` where ``vjp_fn(cotangent)`` returns one gradient per input."""
    prepared = tuple(_prepare_input(x) for x in inputs)
    _DEPTH[0] += 1
    prev = GradMode.enabled
    GradMode.enabled = True
    try:
        out = fn(*prepared)
    finally:
        _DEPTH[0] -= 1
        GradMode.enabled = prev
    primal, aux = _split_aux(out, has_aux)

    def vjp_fn(*cotangents: Any) -> tuple[Any, ...]:
        outs = _flat_tensors(primal)
        cts = _flat_tensors(cotangents)
        if len(cts) != len(outs):
            raise ValueError(f"vjp: expected {len(outs)} cotangents, got {len(cts)}")
        targets = [t for x in prepared for t in _flat_tensors(x)]
        _DEPTH[0] += 1
        try:
            nested = (
                _DEPTH[0] > 1
                or any(t._node is not None for t in targets)
                or any(c._node is not None or c._requires_grad for c in cts)
            )
            found = backward(outs, cts, targets, create_graph=nested)
        finally:
            _DEPTH[0] -= 1
        return tuple(_grads_for(x, found) for x in prepared)

    result = stop_gradient(primal) if _DEPTH[0] == 0 else primal
    return (result, vjp_fn, aux) if has_aux else (result, vjp_fn)


def jvp(fn: Callable[..., Any], inputs: Any, v: Any) -> tuple[Any, Any]:
    """``(fn(*inputs), J @ v)``: forward-mode product, computed as the transpose of a vjp.

    ``vjp`` is linear in its cotangent ``u``; differentiating ``u -> vjp(u) . v`` with
    respect to ``u`` gives ``J v``. This needs only the vjp rules (each op's one derivative).
    """
    single = isinstance(inputs, Tensor)
    ins = (inputs,) if single else tuple(inputs)
    vs = (v,) if isinstance(v, Tensor) else tuple(v)
    if len(vs) != len(ins):
        raise ValueError(f"jvp: expected {len(ins)} tangents in 'v', got {len(vs)}")
    for x, t in zip(ins, vs, strict=True):
        if x.shape != t.shape:
            raise ValueError(f"jvp: tangent shape {t.shape} does not match input shape {x.shape}")
    _DEPTH[0] += 1
    try:
        out, pullback = vjp(fn, *ins)
        outs = _flat_tensors(out)
        us = []
        for o in outs:
            u = _zeros_like(o)
            u._requires_grad = True
            us.append(u)
        gs = pullback(*us)
        pairs = [(g, t) for g, t in zip(gs, vs, strict=True) if g._node is not None]
        found = backward(
            [g for g, _ in pairs], [t for _, t in pairs], us, create_graph=_DEPTH[0] > 1
        )
    finally:
        _DEPTH[0] -= 1
    tangents = tuple(found[id(u)][1] if id(u) in found else _zeros_like(u) for u in us)
    if _DEPTH[0] == 0:
        out = stop_gradient(out)
    if isinstance(out, Tensor):
        return out, tangents[0]
    return out, tangents


def vmap(fn: Callable[..., Any], in_axes: Any = 0, out_axes: Any = 0) -> Callable[..., Any]:
    """Map ``fn`` over a batch axis of its inputs (MindSpore's ``ops.vmap``).

    ``in_axes``: an int, None (not mapped) or one entry per positional argument;
    ``out_axes``: an int or one entry per output. Each primitive runs once over the batch
    through its batching rule (``ops/batching.py``), or once per example where it has none;
    a function that reads a mapped tensor's value or differentiates inside runs once per
    batch element, the results stacked.
    """
    hooks = _hooks.ops  # the op library's batching rules and stack (a higher layer)

    @functools.wraps(fn)
    def mapped(*args: Any) -> Any:
        axes = in_axes if isinstance(in_axes, (tuple, list)) else (in_axes,) * len(args)
        if len(axes) != len(args):
            raise ValueError(f"vmap: in_axes has {len(axes)} entries for {len(args)} arguments")
        sizes = {
            a.shape[ax]
            for a, ax in zip(args, axes, strict=True)
            if ax is not None and isinstance(a, Tensor)
        }
        if len(sizes) != 1:
            raise ValueError(
                f"vmap: mapped inputs must share one batch size, got sizes {sorted(sizes)}"
            )
        n = sizes.pop()
        try:  # one call per primitive over the batch (ops/batching.py)
            out, _ = hooks.run_batched(fn, args, tuple(axes), n)
        except hooks.unbatchable:
            pass  # the mapped function reads values or differentiates: once per example
        else:
            if isinstance(out, Tensor):
                oa = out_axes[0] if isinstance(out_axes, (tuple, list)) else out_axes
                return hooks.move_axis(out, 0, oa)
            oas = out_axes if isinstance(out_axes, (tuple, list)) else (out_axes,) * len(out)
            return tuple(hooks.move_axis(o, 0, a) for o, a in zip(out, oas, strict=True))

        def take(a: Any, ax: Any, i: int) -> Any:
            if ax is None or not isinstance(a, Tensor):
                return a
            idx = (slice(None),) * (ax % a.ndim) + (i,)
            return a[idx]

        results = [
            fn(*(take(a, ax, i) for a, ax in zip(args, axes, strict=True))) for i in range(n)
        ]
        first = results[0]
        if isinstance(first, Tensor):
            oa = out_axes[0] if isinstance(out_axes, (tuple, list)) else out_axes
            return hooks.stack(results, axis=oa)
        oas = out_axes if isinstance(out_axes, (tuple, list)) else (out_axes,) * len(first)
        return tuple(hooks.stack([r[k] for r in results], axis=oas[k]) for k in range(len(first)))

    return mapped


_ = Sequence
