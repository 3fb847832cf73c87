"""``@kernel`` (alias ``ms_kernel``; ``ms_hybrid`` deprecated): the Hybrid DSL front end.

>>> import numpy as np
>>> from sporeling.customop import kernel
>>> @kernel
... def add(a, b):
...     c = output_tensor(a.shape, a.dtype)
...     for i in parallel(a.shape[0]):
...         c[i] = a[i] + b[i]
...     return c
"""

from __future__ import annotations

import functools
import json
import linecache
import warnings
from typing import Any

import numpy as np

from . import _codegen
from ._cache import load_module
from ._speccheck import check_signature
from ._validate import KernelInfo, parse_kernel

__all__ = ["HybridKernel", "kernel", "ms_kernel", "ms_hybrid", "TARGETS"]

TARGETS = ("pyfunc", "cpu", "cuda")


class HybridKernel:
    """A validated Hybrid DSL function with its three executions.

    Calling it runs the NumPy-interpreted version (as MindSpore does); :meth:`run` picks
    a target, :meth:`source` shows generated code, :meth:`infer` gives output shapes and
    dtypes without running the loops.
    """

    ms_kernel_flag = True

    def __init__(
        self, fn: Any, reg_info: Any = None, compile_attrs: dict[str, Any] | None = None
    ) -> None:
        functools.update_wrapper(self, fn)
        self.func = fn
        self.info: KernelInfo = parse_kernel(fn)
        attrs = dict(compile_attrs or {})
        unknown = set(attrs) - _codegen.HINT_KEYS
        if unknown:
            raise ValueError(
                f"kernel '{self.info.name}': argument 'compile_attrs' has unknown keys "
                f"{sorted(unknown)}; expected some of {sorted(_codegen.HINT_KEYS)}"
            )
        self.compile_attrs = attrs
        self.compile_attrs_json = json.dumps(attrs, sort_keys=True)
        self.reg_info = reg_info
        self._interp: Any = None
        self._skeleton: Any = None
        self._compiled: dict[str, Any] = {}
        self._checked: set[tuple[tuple[int, str], ...]] = set()
        self._parallel = False

    def __repr__(self) -> str:
        return f"<hybrid kernel {self.info.name} ({len(self.info.args)} in, {self.n_outputs} out)>"

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def n_outputs(self) -> int:
        return self.info.n_outputs

    def __call__(self, *arrays: Any) -> Any:
        return self.run(*arrays, target="pyfunc")

    # ---- executions ------------------------------------------------------------------
    def interpreted(self) -> Any:
        """The kernel as a plain Python function over NumPy arrays (debuggable)."""
        if self._interp is None:
            self._interp = _codegen.interpreted(self.info)
        return self._interp

    def source(self, target: str = "cpu") -> str:
        """The generated Numba source for ``"cpu"`` or ``"cuda"``."""
        if target == "cpu":
            src, self._parallel = _codegen.cpu_source(self.info, self.compile_attrs)
            return src
        if target == "cuda":
            return _codegen.cuda_source(self.info, self.compile_attrs)
        raise ValueError(
            f"kernel '{self.name}': argument 'target' expected 'cpu' or 'cuda', got {target!r}"
        )

    def compiled(self, target: str = "cpu") -> Any:
        """The compiled kernel (Numba dispatcher on CPU, host launcher on CUDA)."""
        fn = self._compiled.get(target)
        if fn is None:
            mod = load_module(self.source(target), f"{self.name}_{target}")
            fn = getattr(mod, self.name if target == "cpu" else "launch")
            self._compiled[target] = fn
        return fn

    def run(self, *arrays: Any, target: str = "pyfunc") -> Any:
        """Run on NumPy arrays (or device arrays for ``"cuda"``); returns the output(s)."""
        if len(arrays) != len(self.info.args):
            raise TypeError(
                f"kernel '{self.name}' takes {len(self.info.args)} inputs "
                f"({', '.join(self.info.args)}), got {len(arrays)}"
            )
        if target in ("pyfunc", "numpy"):
            return self.call("pyfunc", *[_host_array(a) for a in arrays])
        if target == "cpu":
            return self.call("cpu", *[_host_array(a) for a in arrays])
        if target == "cuda":
            outs = self.call("cuda", *arrays)
            return outs[0] if len(outs) == 1 else tuple(outs)
        raise ValueError(
            f"kernel '{self.name}': argument 'target' expected one of {TARGETS}, got {target!r}"
        )

    def check(self, *arrays: Any) -> None:
        """The checks that need the inputs' ranks and dtypes (once per signature): a tensor
        indexed with the wrong number of indices, a float stored into an int tensor."""
        sig = tuple((int(getattr(a, "ndim", 0)), str(getattr(a, "dtype", ""))) for a in arrays)
        if sig not in self._checked:
            check_signature(
                self.info, [n for n, _ in sig], [getattr(a, "dtype", None) for a in arrays]
            )
            self._checked.add(sig)

    def call(self, target: str, *arrays: Any) -> Any:
        """Run the ``"pyfunc"``, ``"cpu"`` or ``"cuda"`` execution on ready arrays, after
        :meth:`check`; an out-of-bounds index of the (bounds-checked) CPU kernel is
        reported with the kernel line, found by rerunning the interpreted kernel."""
        self.check(*arrays)
        if target == "pyfunc":
            try:
                return self.interpreted()(*arrays)
            except IndexError as exc:
                raise self._with_line(exc) from None
        if target != "cpu":
            return self.compiled(target)(*arrays)
        try:
            return self.compiled("cpu")(*arrays)
        except IndexError as exc:
            raise self._locate_index_error(arrays, exc) from None

    def _with_line(self, exc: IndexError) -> IndexError:
        """``exc`` of the interpreted kernel, with the kernel line it came from."""
        tb, lineno = exc.__traceback__, None
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == self.info.filename:
                lineno = tb.tb_lineno
            tb = tb.tb_next
        if lineno is None:
            return IndexError(f"hybrid kernel '{self.name}': {exc}")
        line = linecache.getline(self.info.filename, lineno).strip()
        return IndexError(
            f"hybrid kernel '{self.name}': {exc}\n  File \"{self.info.filename}\", "
            f"line {lineno}\n    {line}"
        )

    def _locate_index_error(self, arrays: tuple[Any, ...], exc: IndexError) -> Exception:
        try:
            self.interpreted()(*[a.copy() for a in arrays])
        except IndexError as inner:
            return self._with_line(inner)
        return IndexError(f"hybrid kernel '{self.name}': an index is out of bounds ({exc})")

    def infer(
        self, shapes: list[tuple[int, ...]], dtypes: list[Any]
    ) -> tuple[list[tuple[int, ...]], list[np.dtype]]:
        """Output shapes and dtypes for inputs of ``shapes``/``dtypes``.

        Runs the kernel's declarations (not its loops) on zero-filled inputs.
        """
        if self._skeleton is None:
            self._skeleton = _codegen.skeleton(self.info)
        fakes = [
            np.broadcast_to(np.zeros((), _codegen._np_dtype(d)), tuple(s))
            for s, d in zip(shapes, dtypes)
        ]
        try:
            outs = self._skeleton(*fakes)
        except IndexError as exc:  # e.g. x.shape[1] of a 1-d input
            raise ValueError(
                f"hybrid kernel '{self.name}': its declarations do not fit inputs of shapes "
                f"{[tuple(s) for s in shapes]} ({exc})"
            ) from None
        if self.n_outputs == 1:
            outs = (outs,)
        return [tuple(int(x) for x in o.shape) for o in outs], [o.dtype for o in outs]


def _host_array(a: Any) -> Any:
    if isinstance(a, np.ndarray):
        return a
    if hasattr(a, "asnumpy"):  # a sporeling Tensor
        return a.asnumpy()
    return np.asarray(a)


def kernel(
    fn: Any = None, reg_info: Any = None, compile_attrs: dict[str, Any] | None = None
) -> Any:
    """Mark ``fn`` as a Hybrid DSL kernel (validated now; compiled on first use).

    ``compile_attrs`` holds scheduling hints: ``unroll={var: n}``, ``tile={var: n}``,
    ``order=[vars]``, ``parallel=False``, ``fastmath=True``, ``threads=n``, ``cache=False``,
    ``boundscheck=False`` (the compiled CPU kernel checks every index by default, raising
    IndexError with the kernel line instead of reading or writing past an array).
    """
    if fn is None:
        return lambda f: HybridKernel(f, reg_info, compile_attrs)
    return HybridKernel(fn, reg_info, compile_attrs)


ms_kernel = kernel


def ms_hybrid(
    fn: Any = None, reg_info: Any = None, compile_attrs: dict[str, Any] | None = None
) -> Any:
    """Deprecated alias of :func:`kernel` (``ms_hybrid`` was renamed ``ms_kernel`` in 1.8)."""
    warnings.warn(
        "ms_hybrid is deprecated (as in MindSpore 1.8); use kernel or ms_kernel",
        DeprecationWarning,
        stacklevel=2,
    )
    return kernel(fn, reg_info, compile_attrs)
