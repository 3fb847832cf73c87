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


def _conform(out: Any, aval: Any, xp: Any) -> Any:
    """Make a kernel's result a proper array of exactly the abstract dtype."""
    if xp is np and type(out) is not np.ndarray:
        out = np.asarray(out)
    if out.dtype != aval.dtype.np:
        out = out.astype(aval.dtype.np)
    return out


class EagerInterpreter:
    """Runs each primitive immediately on its inputs' device."""

    def process(self, prim: Any, args: tuple[Any, ...], params: dict[str, Any]) -> Any:
        device = None
        key = []
        datas = []
        track = False
        for i, a in enumerate(args):
            if not isinstance(a, Tensor):
                raise TypeError(f"{prim.name}: input {i} expected a Tensor, got {describe(a)}")
            d = a._data
            datas.append(d)
            key.append((d.shape, d.dtype))
            if device is None:
                device = a._device
            elif a._device is not device:
                raise ValueError(
                    f"{prim.name}: all inputs must be on one device, but input 0 is on "
                    f"{args[0].device} and input {i} is on {a.device}; move one with .to(...)"
                )
            if a._node is not None or a._requires_grad:
                track = True
        if device is None:
            device = get_device(params.get("device"))
        aval = prim.abstract_eval(tuple(key), params)
        xp = device.xp
        out = prim.impl_for(device)(xp, *datas, **params)
        if prim.multiple_results:
            out_data = [_conform(o, av, xp) for o, av in zip(out, aval, strict=True)]
            floating = any(av.dtype.category == 2 for av in aval)
        else:
            out_data = [_conform(out, aval, xp)]
            floating = aval.dtype.category == 2
        node = None
        if track and GradMode.enabled and prim.vjp is not None and floating:
            needs = tuple(a._node is not None or a._requires_grad for a in args)
            node = Node(prim, args, params, out_data, needs, device)
        outs = [Tensor._wrap(d, device, node, i) for i, d in enumerate(out_data)]
        return tuple(outs) if prim.multiple_results else outs[0]


_STATE.append(EagerInterpreter())
