"""Base classes of the unified transforms and the implementation-resolution rule.

Contract (shared by `vision`, `transforms`, the pipeline and the batch ops):

* `Transform` is the base of every unified op. Its `implementation` is "C" (run the
  NumPy/Numba code, `_execute_numpy`), "PY" (run the Pillow code, `_execute_pil`) or
  None (undecided: a dual op that has both).
* `TensorOperation` ops only have `_execute_numpy` ("C"-only in MindSpore terms);
  `PyTensorOperation` ops only have `_execute_pil` ("PY"-only). An op without a PIL
  path always runs `_execute_numpy`, whatever it resolved to.
* Eager call `op(*args)`: the PIL path runs when `implementation == "PY"` or the single
  input is a PIL image; otherwise the NumPy path runs. Inputs are converted to the
  format the chosen path wants (PIL <-> HWC uint8 arrays) automatically.
* `resolve_operations(ops)` applies MindSpore 1.8's left-to-right rule and returns
  callables `f(*columns) -> tuple` (consecutive PY ops grouped into one `Compose`).
* Random ops draw from `self._rng()`, a NumPy Generator: the op's own stream seeded by
  `config.set_seed` (`(seed, op_index)`), or the one installed for the current thread by
  `use_rng(generator)` (the pipeline installs one per row so results do not depend on
  which worker ran the row).
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Self

import numpy as np
from PIL import Image

from sporeling.data import config

__all__ = [
    "InputIndexError",
    "InputTypeError",
    "InputValueError",
    "LEGACY_MIX_ERROR",
    "PyTensorOperation",
    "TensorOperation",
    "Transform",
    "is_pil",
    "resolve_operations",
    "to_numpy",
    "to_pil",
    "use_rng",
]

LEGACY_MIX_ERROR = "Mixing old legacy c/py_transforms and new unified transforms is not allowed."

_local = threading.local()


@contextlib.contextmanager
def use_rng(generator: np.random.Generator) -> Iterator[np.random.Generator]:
    """Make every random op called in this thread draw from `generator` inside the block."""
    if not isinstance(generator, np.random.Generator):
        raise TypeError(
            f"use_rng: expected numpy.random.Generator, got {type(generator).__name__}."
        )
    previous = getattr(_local, "rng", None)
    _local.rng = generator
    try:
        yield generator
    finally:
        _local.rng = previous


def is_pil(x: object) -> bool:
    return isinstance(x, Image.Image)


_ARRAY_MODES = {1: "L", 3: "RGB", 4: "RGBA"}


def pil_compatible(x: object) -> bool:
    """True when `x` is an array that converts to a PIL image without loss (uint8 HW/HWC)."""
    if not isinstance(x, np.ndarray) or x.dtype != np.uint8:
        return False
    return x.ndim == 2 or (x.ndim == 3 and x.shape[2] in _ARRAY_MODES)


def to_pil(x: Any) -> Image.Image:
    """HW / HWC(1, 3, 4 channels) uint8 array -> PIL image; PIL images pass through."""
    if is_pil(x):
        return x
    if not isinstance(x, np.ndarray):
        raise TypeError(f"ToPIL: expected a numpy.ndarray or PIL image, got {type(x).__name__}.")
    if x.dtype != np.uint8:
        if np.issubdtype(x.dtype, np.floating):
            # As torchvision's ToPILImage: float images are taken to be in [0, 1].
            x = np.clip(np.rint(x * 255.0), 0, 255).astype(np.uint8)
        else:
            x = np.clip(x, 0, 255).astype(np.uint8)
    if x.ndim == 3 and x.shape[2] not in _ARRAY_MODES and x.shape[0] in _ARRAY_MODES:
        x = np.transpose(x, (1, 2, 0))  # CHW -> HWC
    if x.ndim == 3 and x.shape[2] == 1:
        x = x[:, :, 0]
    if x.ndim == 2:
        return Image.fromarray(np.ascontiguousarray(x), "L")
    if x.ndim == 3 and x.shape[2] in _ARRAY_MODES:
        return Image.fromarray(np.ascontiguousarray(x), _ARRAY_MODES[x.shape[2]])
    raise ValueError(
        f"ToPIL: expected an image array of shape (H, W) or (H, W, C) with C in 1, 3, 4, "
        f"got shape {x.shape}."
    )


def to_numpy(x: Any) -> Any:
    """PIL image -> writable HW/HWC array (uint8 for 8-bit modes); anything else unchanged."""
    if is_pil(x):
        if x.mode in ("P", "CMYK", "YCbCr", "LAB", "HSV", "1", "LA", "PA"):
            x = x.convert("RGBA" if "transparency" in x.info or x.mode in ("LA", "PA") else "RGB")
        return np.array(x)
    return x


def _is_image_array(x: object) -> bool:
    return isinstance(x, np.ndarray) and (
        x.ndim == 2 or (x.ndim == 3 and (x.shape[2] in _ARRAY_MODES or x.shape[0] in _ARRAY_MODES))
    )


def _to_pil_if_possible(x: Any) -> Any:
    return to_pil(x) if pil_compatible(x) else x


_NAMED = re.compile(r"^[A-Z][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*(\(\))?: ")


class InputTypeError(RuntimeError, TypeError):
    """A transform given input of a kind it cannot take. MindSpore raises RuntimeError when
    an op called on data fails (its C++ ops) and TypeError from its Python ops; this is
    both, so code and tests written for either catch it."""


class InputValueError(RuntimeError, ValueError):
    """A transform given input it cannot process (see InputTypeError)."""


class InputIndexError(RuntimeError, IndexError):
    """A transform whose input is too small for it (see InputTypeError)."""


def _as_input_error(exc: BaseException) -> type[Exception]:
    if isinstance(exc, IndexError):
        return InputIndexError
    return InputTypeError if isinstance(exc, (TypeError, AttributeError)) else InputValueError


def _describe(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape} and dtype {value.dtype}"
    if is_pil(value):
        return f"a PIL image of mode {value.mode} and size {value.size}"
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 40 else text[:37] + '...'}"


class Transform:
    """Base of every unified transform. Subclasses set the class attributes below."""

    #: "C", "PY" or None (dual op, decided by the input or by `resolve_operations`).
    implementation: str | None = None
    #: True on ops of the legacy `c_transforms` / `py_transforms` modules.
    _legacy: bool = False
    #: Inputs of the PIL path: "pil" converts uint8 HWC arrays to PIL; "any" passes as is.
    _py_input: str = "pil"
    #: After this op, the resolution state is this (ToNumpy sets "C"); None: its own.
    _next_state: str | None = None

    # Per instance, set in __new__ (so subclasses need not call super().__init__()).
    _op_index: int
    _rng_state: tuple[int, np.random.Generator] | None

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        self = super().__new__(cls)
        self.implementation = cls.implementation
        self._op_index = config._next_op_index()
        self._rng_state = None
        return self

    # -- implementations, overridden by subclasses ---------------------------------
    def _execute_numpy(self, *args: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} has no NumPy implementation.")

    def _execute_pil(self, *args: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} has no PIL implementation.")

    @classmethod
    def _has_numpy(cls) -> bool:
        return cls._execute_numpy is not Transform._execute_numpy

    @classmethod
    def _has_pil(cls) -> bool:
        return cls._execute_pil is not Transform._execute_pil

    # -- randomness -------------------------------------------------------------------
    def _rng(self) -> np.random.Generator:
        """The generator this op draws from (thread override, else its own stream)."""
        override = getattr(_local, "rng", None)
        if override is not None:
            return override
        epoch = config._seed_epoch()
        if self._rng_state is None or self._rng_state[0] != epoch:
            self._rng_state = (epoch, config._make_generator(self._op_index))
        return self._rng_state[1]

    def __getstate__(self) -> dict[str, Any]:
        return dict(self.__dict__)

    # -- running ------------------------------------------------------------------------
    def _run(self, impl: str | None, args: tuple[Any, ...]) -> Any:
        """Run with the path `impl` ("C"/"PY"). A failure on the input is re-raised as
        InputTypeError / InputValueError / InputIndexError (each also a RuntimeError, as
        MindSpore raises); one that does not name an op (from NumPy, Numba or Pillow, or a
        bare ZeroDivisionError) is re-worded to name this op and its input."""
        try:
            return self._run_path(impl, args)
        except (InputTypeError, InputValueError, InputIndexError):
            raise
        except (TypeError, ValueError, IndexError, ZeroDivisionError, AttributeError) as exc:
            kind = _as_input_error(exc)
            if _NAMED.match(str(exc)):
                raise kind(str(exc)) from exc
            name = type(self).__name__
            got = ", ".join(_describe(a) for a in args)
            raise kind(f"{name}: cannot process {got} ({type(exc).__name__}: {exc})") from exc

    def _run_path(self, impl: str | None, args: tuple[Any, ...]) -> Any:
        """Run with the path `impl` ("C"/"PY"), converting inputs to what that path takes."""
        use_pil = impl == "PY" and self._has_pil()
        if use_pil and self._py_input == "pil":
            if not self._has_numpy():  # Python-only op: every image array goes to PIL
                args = tuple(to_pil(a) if _is_image_array(a) else a for a in args)
                return self._execute_pil(*args)
            converted = tuple(_to_pil_if_possible(a) for a in args)
            # A PY-resolved dual op given an array with no PIL form (float, CHW) runs its
            # NumPy path instead of failing.
            images = [a for a, b in zip(converted, args) if isinstance(b, np.ndarray | Image.Image)]
            if self._has_numpy() and not all(is_pil(a) for a in images):
                use_pil = False
            else:
                args = converted
        if use_pil:
            return self._execute_pil(*args)
        if not self._has_numpy():
            return self._execute_pil(*args)
        return self._execute_numpy(*(to_numpy(a) for a in args))

    def __call__(self, *args: Any) -> Any:
        if not args:
            raise TypeError(f"{type(self).__name__}: expected at least one input, got none.")
        impl = self.implementation
        if impl is None:
            impl = "PY" if len(args) == 1 and is_pil(args[0]) else "C"
        return self._run(impl, args)

    def __repr__(self) -> str:
        fields = ", ".join(
            f"{k}={v!r}"
            for k, v in self.__dict__.items()
            if not k.startswith("_") and k != "implementation"
        )
        return f"{type(self).__name__}({fields})"


class TensorOperation(Transform):
    """An op with only a NumPy implementation ("C" in MindSpore 1.8)."""

    implementation = "C"


class PyTensorOperation(Transform):
    """An op with only a Python/Pillow implementation ("PY" in MindSpore 1.8)."""

    implementation = "PY"


def _as_tuple(out: Any) -> tuple[Any, ...]:
    return out if isinstance(out, tuple) else (out,)


class _Resolved:
    """One op with its resolved path; `(*columns) -> tuple`."""

    __slots__ = ("op", "implementation")

    def __init__(self, op: Any, implementation: str) -> None:
        self.op = op
        self.implementation = implementation

    def __call__(self, *args: Any) -> tuple[Any, ...]:
        if isinstance(self.op, Transform):
            return _as_tuple(self.op._run(self.implementation, args))
        return _as_tuple(self.op(*args))

    def __repr__(self) -> str:
        return f"<{self.implementation}: {self.op!r}>"


def _flatten(operations: Sequence[Any]) -> list[Any]:
    from sporeling.data.transforms.transforms import Compose

    out: list[Any] = []
    for op in operations:
        if isinstance(op, Compose):
            out.extend(_flatten(op.transforms))
        else:
            out.append(op)
    return out


def check_no_legacy_mix(operations: Sequence[Any]) -> None:
    ops = [op for op in operations if isinstance(op, Transform)]
    legacy = [op._legacy for op in ops]
    if any(legacy) and not all(legacy):
        raise RuntimeError(LEGACY_MIX_ERROR)


def resolve_operations(
    operations: Any, previous: str | None = None
) -> list[Callable[..., tuple[Any, ...]]]:
    """MindSpore 1.8's left-to-right rule; returns callables `(*columns) -> tuple`.

    An undecided (dual) op becomes "PY" when the previous op is "PY", else "C" (so the
    first op defaults to "C"); `ToPIL`/`Decode(to_pil=True)` and Python-only ops are
    "PY", `ToNumpy` makes the next op "C", C-only ops are "C", and plain Python callables
    count as "PY". Consecutive "PY" ops are grouped into one Python `Compose`.
    """
    from sporeling.data.transforms.transforms import Compose

    if not isinstance(operations, list | tuple):
        operations = [operations]
    if not operations:
        raise ValueError("map: operations must not be empty.")
    ops = _flatten(list(operations))
    check_no_legacy_mix(ops)
    resolved: list[_Resolved] = []
    state = previous
    for op in ops:
        if isinstance(op, Transform):
            impl = op.implementation or ("PY" if state == "PY" else "C")
            state = op._next_state or impl
        elif callable(op):
            impl = "PY"
            state = "PY"
        else:
            raise TypeError(
                f"map: every operation must be a transform or a callable, got "
                f"{type(op).__name__} {op!r}."
            )
        resolved.append(_Resolved(op, impl))
    out: list[Callable[..., tuple[Any, ...]]] = []
    group: list[_Resolved] = []
    for r in resolved:
        if r.implementation == "PY":
            group.append(r)
            continue
        if group:
            out.append(Compose._from_resolved(group))
            group = []
        out.append(r)
    if group:
        out.append(Compose._from_resolved(group))
    return out


def run_chain(
    chain: Sequence[Callable[..., tuple[Any, ...]]], args: tuple[Any, ...]
) -> tuple[Any, ...]:
    """Apply resolved callables in order (what `map` does per row)."""
    for f in chain:
        args = f(*args)
    return args
