"""``Custom``: a user-defined operator registered as a first-class core ``Primitive``.

Each ``Custom`` instance registers one primitive in ``sporeling.core``'s registry with the
standard rules, so eager execution, ``grad`` and graph tracing treat it like any op:

* abstract rule — from ``out_shape``/``out_dtype`` (values, or functions of the input
  shapes/dtypes); for hybrid kernels without them, by running the kernel's declarations
  on zero-filled inputs (no loops run);
* impls — pure: ``"any"`` runs on host arrays (compiled Numba for hybrid kernels, the
  function for pyfunc, ctypes for aot, juliacall for julia), ``"gpu"`` runs hybrid kernels
  as Numba CUDA kernels and ``.cu`` aot kernels on device arrays; in-place outputs work on a
  copy of the input;
* vjp — the user ``bprop(inputs..., out, dout) -> tuple`` (written with ops), or for hybrid
  kernels the automatically derived backward kernel (itself a Custom op).
"""

from __future__ import annotations

import itertools
import logging
from typing import Any

import numpy as np

from sporeling.core import dtype as _dt
from sporeling.core.extend import Primitive, ShapedArray, as_tensor
from sporeling.core.tensor import Tensor

from ._dsl import HybridKernel, kernel
from ._reginfo import normalize_reg_info

__all__ = ["Custom", "FUNC_TYPES"]

log = logging.getLogger("sporeling.customop")

FUNC_TYPES = ("hybrid", "akg", "tbe", "aicpu", "aot", "pyfunc", "julia")
_ASCEND_ONLY = ("tbe", "aicpu")
_COUNTER = itertools.count()


def _is_shape(x: Any) -> bool:
    return isinstance(x, (tuple, list)) and all(
        isinstance(d, (int, np.integer)) and not isinstance(d, bool) for d in x
    )


class Custom:
    """A custom operator (MindSpore's ``ops.Custom``).

    >>> import numpy as np
    >>> from sporeling.core import Tensor
    >>> double = Custom(lambda x: x * 2, out_shape=lambda s: s, out_dtype=lambda d: d,
    ...                 func_type="pyfunc")
    >>> double(Tensor(np.array([1.0, 2.0], np.float32))).tolist()
    [2.0, 4.0]
    """

    def __init__(
        self,
        func: Any,
        out_shape: Any = None,
        out_dtype: Any = None,
        func_type: str = "hybrid",
        bprop: Any = None,
        reg_info: Any = None,
    ) -> None:
        if func_type not in FUNC_TYPES:
            raise ValueError(
                f"Custom: argument 'func_type' expected one of {FUNC_TYPES}, got {func_type!r}"
            )
        if func_type in _ASCEND_ONLY:
            raise ValueError(
                f"Custom: func_type {func_type!r} targets Ascend only, which Sporeling does not "
                "run on; use 'hybrid', 'aot', 'pyfunc' or 'julia'"
            )
        if bprop is not None and not callable(bprop):
            raise TypeError(f"Custom: argument 'bprop' expected a function, got {bprop!r}")
        self.func_type = "hybrid" if func_type == "akg" else func_type
        self.func = func
        self.out_shape = out_shape
        self.out_dtype = out_dtype
        self.bprop = bprop
        self._backward: Any = {}
        self.kernel: HybridKernel | None = None
        self._aot: Any = None
        self._julia: Any = None
        gpu = None
        if self.func_type == "hybrid":
            if not isinstance(func, HybridKernel):
                if not callable(func):
                    raise TypeError(
                        f"Custom: argument 'func' expected an @kernel function for func_type "
                        f"'hybrid', got {func!r}"
                    )
                func = kernel(func)  # a plain function: validate it as DSL
            self.kernel = func
            name = func.name
            impl = self._hybrid_cpu
            gpu = self._hybrid_gpu
        elif self.func_type == "pyfunc":
            if not callable(func):
                raise TypeError(f"Custom: argument 'func' expected a function, got {func!r}")
            if isinstance(func, HybridKernel):
                log.warning("Custom '%s': pyfunc runs the DSL interpreted (slow)", func.name)
                self.kernel = func
            elif out_shape is None or out_dtype is None:
                raise ValueError(
                    f"Custom: func_type 'pyfunc' needs out_shape and out_dtype for "
                    f"{getattr(func, '__name__', func)!r} (values or functions of the inputs')"
                )
            name = getattr(func, "__name__", "pyfunc")
            impl = self._pyfunc
        elif self.func_type == "aot":
            from ._aot import AotKernel

            self._aot = AotKernel(func)
            name = self._aot.name
            if self._aot.gpu:
                impl, gpu = self._gpu_only, self._aot_gpu
            else:
                impl = self._aot_cpu
        else:  # julia
            from ._julia import JuliaKernel

            self._julia = JuliaKernel(func)
            name = self._julia.function
            impl = self._julia_cpu
        if self.kernel is None and (out_shape is None or out_dtype is None):
            raise ValueError(
                f"Custom: func_type {self.func_type!r} needs out_shape and out_dtype "
                f"(only hybrid kernels infer them), got out_shape={out_shape!r}, "
                f"out_dtype={out_dtype!r}"
            )
        self.name = name
        info = reg_info if reg_info is not None else getattr(func, "reg_info", None)
        self.reg_info = normalize_reg_info(info)
        self.prim = Primitive(
            f"Custom[{name}]#{next(_COUNTER)}", "opaque", self._abstract, impl, gpu=gpu,
            vjp=self._vjp, multiple_results=self._n_outputs_hint() > 1,
        )  # fmt: skip
        self.prim.custom = self  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        return f"Custom({self.name!r}, func_type={self.func_type!r})"

    def __call__(self, *inputs: Any) -> Any:
        first = next((x for x in inputs if isinstance(x, Tensor)), None)
        tensors = [as_tensor(x, f"Custom[{self.name}]", f"input {i}", like=first)
                   for i, x in enumerate(inputs)]  # fmt: skip
        return self.prim.bind(*tensors)

    # ---- abstract rule ---------------------------------------------------------------
    def _n_outputs_hint(self) -> int:
        if self.kernel is not None and self.out_shape is None:
            return self.kernel.n_outputs
        if isinstance(self.out_dtype, (list, tuple)):
            return len(self.out_dtype)
        if (
            isinstance(self.out_shape, (list, tuple))
            and self.out_shape
            and not _is_shape(self.out_shape)
        ):
            return len(self.out_shape)
        return 1

    def _abstract(self, *avals: ShapedArray) -> Any:
        shapes = [a.shape for a in avals]
        dtypes = [a.dtype for a in avals]
        self._check_reg_info(dtypes)
        if self.kernel is not None and (self.out_shape is None or self.out_dtype is None):
            if self.func_type == "hybrid" and self.out_shape is None and self.out_dtype is None:
                log.info("Custom '%s': inferring output shapes/dtypes from the kernel", self.name)
            k_shapes, k_dtypes = self.kernel.infer(shapes, [d.np for d in dtypes])
        else:
            k_shapes, k_dtypes = None, None
        out_shape = self.out_shape
        if callable(out_shape):
            out_shape = out_shape(*[list(s) for s in shapes])
        out_dtype = self.out_dtype
        if callable(out_dtype):
            out_dtype = out_dtype(*dtypes)
        if out_shape is None:
            out_shape = k_shapes if k_shapes is None or len(k_shapes) > 1 else k_shapes[0]
        if out_dtype is None:
            out_dtype = k_dtypes if k_dtypes is None or len(k_dtypes) > 1 else k_dtypes[0]
        multi = not _is_shape(out_shape)
        shape_list = list(out_shape) if multi else [out_shape]
        dtype_list = list(out_dtype) if isinstance(out_dtype, (list, tuple)) else [out_dtype]
        if self.func_type == "pyfunc":
            for i, s in enumerate(shape_list):
                if s is not None and len(s) == 0 and not multi:
                    log.warning("Custom '%s': empty output shape -> (1,) int32", self.name)
                    shape_list[i], dtype_list = (1,), [_dt.int32]
        if len(shape_list) != len(dtype_list) or not all(_is_shape(s) for s in shape_list):
            raise ValueError(
                f"Custom '{self.name}': out_shape and out_dtype expected one shape (tuple of "
                f"ints) and one dtype per output, got out_shape={out_shape!r} and "
                f"out_dtype={out_dtype!r}"
            )
        avs = [ShapedArray(tuple(s), _dt.to_dtype(d, "out_dtype"))
               for s, d in zip(shape_list, dtype_list)]  # fmt: skip
        if len(avs) > 1:
            self.prim.multiple_results = True
            return tuple(avs)
        return avs[0]

    def _check_reg_info(self, dtypes: list[Any]) -> None:
        rows = [r for info in self.reg_info for r in info.get("dtype_format", [])
                if info.get("target") in (None, "CPU", "GPU")]  # fmt: skip
        if not rows:
            return
        names = [d.name for d in dtypes]
        n = len(names)
        if not any([p[0] for p in r[:n]] == names for r in rows):
            allowed = [[p[0] for p in r[:n]] for r in rows]
            raise TypeError(
                f"Custom '{self.name}': input dtypes {names} are not registered in reg_info; "
                f"registered: {allowed}"
            )

    def _avals(self, arrays: tuple[Any, ...]) -> list[ShapedArray]:
        out = self.prim.abstract_eval(tuple((a.shape, a.dtype) for a in arrays), {})
        return list(out) if isinstance(out, tuple) else [out]

    # ---- impls -------------------------------------------------------------------------
    def _inplace_copies(self, arrays: tuple[Any, ...]) -> list[Any]:
        inplace = set(self.kernel.info.inplace) if self.kernel is not None else set()
        return [a.copy() if i in inplace else a for i, a in enumerate(arrays)]

    def _hybrid_cpu(self, xp: Any, *arrays: Any) -> Any:
        assert self.kernel is not None
        host = [_to_host(xp, a) for a in arrays]
        out = self.kernel.call("cpu", *self._inplace_copies(tuple(host)))
        return _from_host(xp, out)

    def _hybrid_gpu(self, xp: Any, *arrays: Any) -> Any:
        assert self.kernel is not None
        outs = self.kernel.call("cuda", *self._inplace_copies(arrays))
        res = [xp.asarray(o) for o in outs]
        return res[0] if len(res) == 1 else tuple(res)

    def _pyfunc(self, xp: Any, *arrays: Any) -> Any:
        host = [_to_host(xp, a) for a in arrays]
        if self.kernel is not None:
            out = self.kernel.call("pyfunc", *self._inplace_copies(tuple(host)))
        else:
            out = self.func(*host)
        if isinstance(out, list):
            out = tuple(out)
        return _from_host(xp, out)

    def _aot_cpu(self, xp: Any, *arrays: Any) -> Any:
        host = [np.ascontiguousarray(_to_host(xp, a)) for a in arrays]
        outs = [np.empty(av.shape, av.dtype.np) for av in self._avals(arrays)]
        self._aot(host + outs)
        return _from_host(xp, outs[0] if len(outs) == 1 else tuple(outs))

    def _aot_gpu(self, xp: Any, *arrays: Any) -> Any:
        ins = [xp.ascontiguousarray(a) for a in arrays]
        outs = [xp.empty(av.shape, av.dtype.np) for av in self._avals(arrays)]
        self._aot(ins + outs, stream=xp.cuda.get_current_stream().ptr)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _gpu_only(self, xp: Any, *arrays: Any) -> Any:
        raise RuntimeError(
            f"Custom '{self.name}': a .cu aot kernel runs on GPU only; move the inputs to the "
            "GPU (tensor.to('GPU')) or give a .cc/.cpp/.so kernel for the CPU"
        )

    def _julia_cpu(self, xp: Any, *arrays: Any) -> Any:
        host = [np.ascontiguousarray(_to_host(xp, a)) for a in arrays]
        outs = [np.zeros(av.shape, av.dtype.np) for av in self._avals(arrays)]
        self._julia(host, outs)
        return _from_host(xp, outs[0] if len(outs) == 1 else tuple(outs))

    # ---- vjp ---------------------------------------------------------------------------
    def _vjp(self, ct: Any, *inputs: Tensor, out: Any) -> Any:
        if self.bprop is not None:
            grads = self.bprop(*inputs, out, ct)
            if not isinstance(grads, (tuple, list)):
                raise TypeError(
                    f"Custom '{self.name}': bprop must return a tuple of gradients (one per "
                    f"input), got {type(grads).__name__}"
                )
            if len(grads) != len(inputs):
                raise ValueError(
                    f"Custom '{self.name}': bprop returned {len(grads)} gradients for "
                    f"{len(inputs)} inputs; return one per input (None for none)"
                )
            return tuple(
                g if g is None or isinstance(g, Tensor) else as_tensor(g, self.name, "bprop",
                                                                       like=inputs[i])
                for i, g in enumerate(grads)
            )  # fmt: skip
        if self.func_type == "hybrid":
            ndims = tuple(x.ndim for x in inputs)
            bwd = self._backward.get(ndims)
            if bwd is None:
                from ._autodiff import derive_backward

                k, positions = derive_backward(self.kernel, ndims)
                bwd = self._backward[ndims] = (Custom(k), positions)
            op, positions = bwd
            douts = list(ct) if isinstance(ct, tuple) else [ct]
            res = op(*inputs, *douts)
            res = res if isinstance(res, tuple) else (res,)
            derived: list[Any] = [None] * len(inputs)
            for p, g in zip(positions, res):
                if inputs[p].dtype.category == 2:
                    derived[p] = g
            return tuple(derived)
        raise ValueError(
            f"Custom '{self.name}' (func_type {self.func_type!r}) has no bprop, so it cannot "
            "be differentiated; pass bprop=lambda *inputs_out_dout: (grad, ...) written with ops"
        )


def _to_host(xp: Any, a: Any) -> Any:
    return a if xp is np else xp.asnumpy(a)


def _from_host(xp: Any, out: Any) -> Any:
    if xp is np:
        return out
    if isinstance(out, tuple):
        return tuple(xp.asarray(o) for o in out)
    return xp.asarray(out)
