"""Eager execution: check shapes/dtypes abstractly, run the device kernel, record autograd."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._backend import get_device
from ._primitive import _STATE
from .autograd.tape import GradMode, Node
from .errors import describe
from .tensor import Tensor

__all__ = ["EagerInterpreter"]


def conform_dtype(out: Any, dtype: Any, xp: Any) -> Any:
    """A kernel's result as a proper array of exactly ``dtype`` (NumPy may return scalars)."""
    if xp is np and type(out) is not np.ndarray:
        out = np.asarray(out)
    if out.dtype != dtype:
        out = out.astype(dtype)
    return out


def _conform(out: Any, aval: Any, xp: Any) -> Any:
    """Make a kernel's result a proper array of exactly the abstract dtype and shape."""
    out = conform_dtype(out, aval.dtype.np, xp)
    if out.shape != aval.shape:
        raise RuntimeError(
            f"internal error: a kernel returned shape {out.shape} where the abstract rule "
            f"promised {aval.shape}"
        )
    return out


class EagerInterpreter:
    """Runs each primitive immediately on its inputs' device."""

    def process(self, prim: Any, args: tuple[Any, ...], params: dict[str, Any]) -> Any:
        # Hot path (benchmarks/bench_dispatch.py): one scan over the inputs, memoized
        # abstract rule and impl, no helper calls for the common single-output case.
        device = None
        track = False
        datas = []
        sig = []
        for a in args:
            if type(a) is not Tensor and not isinstance(a, Tensor):
                i = args.index(a)
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
            floating = any(av.dtype.category == 2 for av in aval)
        else:
            if type(out) is not np.ndarray or out.dtype != aval.dtype.np or out.shape != aval.shape:
                out = _conform(out, aval, xp)
            out_data = [out]
            floating = aval.dtype.category == 2
        node = None
        if track and floating and GradMode.enabled and prim.vjp is not None:
            needs = tuple([a._node is not None or a._requires_grad for a in args])
            node = Node(prim, args, params, out_data, needs, device)
        if not prim.multiple_results:
            t = object.__new__(Tensor)
            t._data = out
            t._device = device
            t._node = node
            t._index = 0
            t._requires_grad = False
            t.grad = None
            return t
        return tuple([Tensor._wrap(d, device, node, i) for i, d in enumerate(out_data)])

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
