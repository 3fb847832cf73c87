"""Eager execution: check shapes/dtypes abstractly, run the device kernel, record autograd.

Two paths (benchmarks/bench_dispatch.py measures them). The first call of a primitive with
a given signature (device, input shapes and dtypes, parameters) takes the generic path: it
checks every input, runs the abstract rule, picks the device's impl and conforms the result.
When that signature gave one output, it leaves a *plan* on the primitive: the impl (or, when
the primitive has an ``eager_specialize`` rule, a kernel over the arrays alone, with the
array module and parameters bound: a ufunc, a bound method) and the output's dtype and
shape. Later calls with that signature take the fast path: one key
built from the inputs, one dict lookup, the impl, the output wrapped, and at most one tape
node; no per-argument lists, no abstract rule, no helper calls. A signature whose abstract
rule raised never gets a plan, so bad input always reaches the generic path and its error.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._backend import get_device
from ._primitive import _STATE, StaticParams
from .autograd.tape import GradMode, Node
from .errors import describe
from .tensor import Tensor

__all__ = ["EagerInterpreter"]

_ndarray = np.ndarray
_asarray = np.asarray
_new = object.__new__
#: plans kept per primitive before the memo is cleared (shapes seen by a long run)
_MAX_PLANS = 4096


def conform_dtype(out: Any, dtype: Any, xp: Any) -> Any:
    """A kernel's result as a proper array of exactly ``dtype`` (NumPy may return scalars)."""
    if xp is np and type(out) is not np.ndarray:
        out = np.asarray(out)
    if out.dtype != dtype:
        out = out.astype(dtype)
    return out


def _conform(out: Any, aval: Any, xp: Any) -> Any:
    """Make a kernel's result a proper array of exactly the abstract dtype and shape."""
    return _conform_to(out, aval.dtype.np, aval.shape, xp)


def _conform_to(out: Any, dtype: Any, shape: tuple[int, ...], xp: Any) -> Any:
    out = conform_dtype(out, dtype, xp)
    if out.shape != shape:
        raise RuntimeError(
            f"internal error: a kernel returned shape {out.shape} where the abstract rule "
            f"promised {shape}"
        )
    return out


def _plan_key(args: tuple[Any, ...], params: dict[str, Any]) -> Any:
    """The fast path's memo key for ``args`` (Tensors) and ``params``: device, then shape and
    dtype per input, then the parameters (unhashable parameters raise TypeError on lookup)."""
    if not args:
        return None
    key: list[Any] = [args[0]._device]
    for a in args:
        d = a._data
        key.append(d.shape)
        key.append(d.dtype)
    if params:
        key.append(params.token if type(params) is StaticParams else tuple(params.items()))
    return tuple(key)


class EagerInterpreter:
    """Runs each primitive immediately on its inputs' device."""

    def process(self, prim: Any, args: tuple[Any, ...], params: dict[str, Any]) -> Any:
        # The fast path, for one to three inputs with a plan (see the module docstring); the
        # key is built inline, as _plan_key builds it (a call costs ~10% of a tiny op).
        n = len(args)
        try:
            if n == 1:
                x = args[0]
                dx = x._data
                device = x._device
                if params:  # (a StaticParams' int token hashes at once; never a tuple)
                    pk = params.token if type(params) is StaticParams else tuple(params.items())
                    key: Any = (device, dx.shape, dx.dtype, pk)
                else:
                    key = (device, dx.shape, dx.dtype)
                plan = prim._eager_plans.get(key)
            elif n == 2:
                x, y = args
                dx = x._data
                dy = y._data
                device = x._device
                if params:
                    pk = params.token if type(params) is StaticParams else tuple(params.items())
                    key = (device, dx.shape, dx.dtype, dy.shape, dy.dtype, pk)
                else:
                    key = (device, dx.shape, dx.dtype, dy.shape, dy.dtype)
                plan = prim._eager_plans.get(key)
                if y._device is not device:
                    plan = None
            elif n == 3:  # (dense with bias, selects)
                x, y, z = args
                dx = x._data
                dy = y._data
                dz = z._data
                device = x._device
                key = (device, dx.shape, dx.dtype, dy.shape, dy.dtype, dz.shape, dz.dtype)
                if params:
                    pk = params.token if type(params) is StaticParams else tuple(params.items())
                    key = (*key, pk)
                plan = prim._eager_plans.get(key)
                if y._device is not device or z._device is not device:
                    plan = None
            else:
                plan = None
        except (AttributeError, TypeError):  # not Tensors, or unhashable parameters
            plan = None
        if plan is None:
            return self._generic(prim, args, params)
        impl, dtype, shape, floating, bound = plan
        try:
            if n == 1:
                out = impl(dx) if bound else impl(device.xp, dx, **params)
                track = x._node is not None or x._requires_grad
            elif n == 2:
                out = impl(dx, dy) if bound else impl(device.xp, dx, dy, **params)
                track = (
                    x._node is not None
                    or x._requires_grad
                    or y._node is not None
                    or y._requires_grad
                )
            else:
                out = impl(dx, dy, dz) if bound else impl(device.xp, dx, dy, dz, **params)
                track = (
                    x._node is not None
                    or x._requires_grad
                    or y._node is not None
                    or y._requires_grad
                    or z._node is not None
                    or z._requires_grad
                )
        except MemoryError as exc:  # a huge shape: say which op, and what it asked for
            raise MemoryError(f"{prim.name}: not enough memory for its result ({exc})") from None
        if type(out) is not _ndarray or out.dtype is not dtype:  # the shape was checked
            xp = device.xp  # when the plan was made
            if xp is np and type(out) is not _ndarray:
                out = _asarray(out)  # a NumPy scalar (full reductions)
            if out.dtype is not dtype:
                out = _conform_to(out, dtype, shape, xp)
        node = None
        if track and floating and GradMode.enabled and prim.vjp is not None:
            if n == 1:
                needs: tuple[bool, ...] = (True,)
            elif n == 2:
                needs = (
                    x._node is not None or x._requires_grad,
                    y._node is not None or y._requires_grad,
                )
            else:
                needs = tuple([a._node is not None or a._requires_grad for a in args])
            node = Node(prim, args, params, [out], needs, device)
        t = _new(Tensor)
        t._data = out
        t._device = device
        t._node = node
        t._index = 0
        t._requires_grad = False
        t.grad = None
        return t

    def _generic(self, prim: Any, args: tuple[Any, ...], params: dict[str, Any]) -> Any:
        """Every case: checks each input, runs the abstract rule, leaves a plan when it can."""
        device = None
        track = False
        datas = []
        sig = []
        for i, a in enumerate(args):
            if type(a) is not Tensor and not isinstance(a, Tensor):
                # (by position: args.index(a) compared a with the Tensors before it by ==)
                raise TypeError(f"{prim.name}: input {i} expected a Tensor, got {describe(a)}")
            d = a._data
            datas.append(d)
            sig.append((d.shape, d.dtype))
            if device is None:
                device = a._device
            elif a._device is not device:
                self._device_error(prim, args)
            if a._node is not None or a._requires_grad:
                track = True
        if device is None:
            device = get_device(params.get("device"))
        try:
            key = (tuple(sig), tuple(params.items()))
            aval = prim._abstract_cache[key]
        except KeyError:
            aval = prim.abstract_eval(key[0], params)
        except TypeError:  # unhashable params
            aval = prim.abstract_eval(tuple(sig), params)
        impl = prim._impl_by_device.get(device)
        if impl is None:
            impl = prim._impl_by_device[device] = prim.impl_for(device)
        xp = device.xp
        try:
            out = impl(xp, *datas, **params)
        except MemoryError as exc:  # a huge shape: say which op, and what it asked for
            raise MemoryError(f"{prim.name}: not enough memory for its result ({exc})") from None
        if prim.multiple_results:
            out_data = [_conform(o, av, xp) for o, av in zip(out, aval, strict=True)]
            floating = any(av.dtype.category >= 2 for av in aval)
        else:
            if type(out) is not np.ndarray or out.dtype != aval.dtype.np or out.shape != aval.shape:
                out = _conform(out, aval, xp)
            out_data = [out]
            floating = aval.dtype.category >= 2
            self._leave_plan(prim, args, params, impl, aval)
        node = None
        if track and floating and GradMode.enabled and prim.vjp is not None:
            needs = tuple([a._node is not None or a._requires_grad for a in args])
            node = Node(prim, args, params, out_data, needs, device)
        if not prim.multiple_results:
            return Tensor._wrap(out, device, node, 0)
        return tuple([Tensor._wrap(d, device, node, i) for i, d in enumerate(out_data)])

    @staticmethod
    def _leave_plan(
        prim: Any, args: tuple[Any, ...], params: dict[str, Any], impl: Any, aval: Any
    ) -> None:
        """Memoize a single-output signature of one to three Tensor inputs for the fast path.

        Only hashable parameters that are not Tensors (a key must not keep a tensor alive)."""
        if not 0 < len(args) <= 3:
            return
        if any(isinstance(v, Tensor) for v in params.values()):
            return
        key = _plan_key(args, params)
        plans = prim._eager_plans
        try:
            hash(key)
        except TypeError:  # unhashable parameters: no plan
            return
        bound = None
        if prim.eager_specialize is not None:
            bound = prim.eager_specialize(impl, [a._data for a in args], params)
        if len(plans) >= _MAX_PLANS:
            plans.clear()
        plans[key] = (
            impl if bound is None else bound,
            aval.dtype.np,
            aval.shape,
            aval.dtype.category >= 2,
            bound is not None,
        )

    @staticmethod
    def _device_error(prim: Any, args: tuple[Any, ...]) -> None:
        first = args[0]
        for i, a in enumerate(args):
            if a._device is not first._device:
                raise ValueError(
                    f"{prim.name}: all inputs must be on one device, but input 0 is on "
                    f"{first.device} and input {i} is on {a.device}; move one with .to(...)"
                )


_STATE.append(EagerInterpreter())
