"""Common transforms of `mindspore.dataset.transforms` (1.8, unified).

Example:
    >>> import numpy as np
    >>> from sporeling.data.transforms import Compose, TypeCast, OneHot
    >>> Compose([OneHot(3), TypeCast(np.float32)])(np.array(1))
    array([0., 1., 0.], dtype=float32)
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from enum import Enum
from typing import Any

import numpy as np

from sporeling.data.transforms._base import (
    PyTensorOperation,
    TensorOperation,
    Transform,
    _as_tuple,
    _Resolved,
    check_no_legacy_mix,
)

__all__ = [
    "Compose",
    "Concatenate",
    "Duplicate",
    "Fill",
    "Mask",
    "OneHot",
    "PadEnd",
    "Plugin",
    "RandomApply",
    "RandomChoice",
    "RandomOrder",
    "Relational",
    "Slice",
    "TypeCast",
    "Unique",
]


def _to_np_dtype(name: str, data_type: Any) -> np.dtype:
    np_attr = getattr(data_type, "np", None)
    if isinstance(np_attr, np.dtype):  # sporeling.core dtype (mstype)
        return np_attr
    try:
        return np.dtype(data_type)
    except TypeError:
        raise TypeError(
            f"{name}: data_type must be a numpy dtype, a dtype name or a sporeling.core dtype, "
            f"got {data_type!r}."
        ) from None


def _check_transforms(name: str, transforms: Any) -> list[Any]:
    if not isinstance(transforms, list | tuple):
        raise TypeError(
            f"{name}: transforms must be a list of transforms, got {type(transforms).__name__}."
        )
    if not transforms:
        raise ValueError(f"{name}: transforms must not be empty.")
    for t in transforms:
        if not callable(t):
            raise TypeError(f"{name}: every transform must be callable, got {t!r}.")
    check_no_legacy_mix(transforms)
    return list(transforms)


def _check_prob(name: str, prob: Any) -> float:
    if isinstance(prob, bool) or not isinstance(prob, int | float):
        raise TypeError(f"{name}: prob must be a number in [0, 1], got {prob!r}.")
    if not 0.0 <= prob <= 1.0:
        raise ValueError(f"{name}: prob must be in [0, 1], got {prob}.")
    return float(prob)


class Compose(Transform):
    """Apply `transforms` in order. In `map` it is unrolled into the surrounding list.

    Eagerly, each op follows its own eager rule (PIL in -> PIL path); outputs that are
    tuples are spread over the next op's arguments.
    """

    def __init__(self, transforms: Sequence[Any]) -> None:
        self.transforms = _check_transforms("Compose", transforms)
        self._resolved: list[_Resolved] | None = None

    @classmethod
    def _from_resolved(cls, resolved: list[_Resolved]) -> Compose:
        self = cls.__new__(cls)
        self.transforms = [r.op for r in resolved]
        self._resolved = resolved
        self.implementation = "PY"
        return self

    def _apply(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        if self._resolved is not None:
            for r in self._resolved:
                args = r(*args)
        else:
            for t in self.transforms:
                args = _as_tuple(t(*args))
        return args

    def __call__(self, *args: Any) -> Any:
        out = self._apply(args)
        return out if self._resolved is not None or len(out) != 1 else out[0]

    def _run(self, impl: str | None, args: tuple[Any, ...]) -> Any:
        return self(*args)

    @staticmethod
    def reduce(operations: Sequence[Any]) -> list[Any]:
        """Group consecutive Python ops into one Compose (MindSpore's `Compose.reduce`)."""
        from sporeling.data.transforms._base import resolve_operations

        return resolve_operations(list(operations))


class _RandomOps(Transform):
    _py_input = "any"

    def _execute_pil(self, *args: Any) -> Any:  # Compose-like: each op follows its eager rule
        return self._pick(args)

    def _execute_numpy(self, *args: Any) -> Any:
        return self._pick(args)

    def _run(self, impl: str | None, args: tuple[Any, ...]) -> Any:
        return self._pick(args)

    def _pick(self, args: tuple[Any, ...]) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define _pick(args)")


class RandomApply(_RandomOps):
    """Apply the list of `transforms` (in order) with probability `prob`."""

    def __init__(self, transforms: Sequence[Any], prob: float = 0.5) -> None:
        self.transforms = _check_transforms("RandomApply", transforms)
        self.prob = _check_prob("RandomApply", prob)

    def _pick(self, args: tuple[Any, ...]) -> Any:
        if self._rng().random() >= self.prob:
            return args if len(args) > 1 else args[0]
        return Compose(self.transforms)(*args)


class RandomChoice(_RandomOps):
    """Apply one transform chosen uniformly from `transforms`."""

    def __init__(self, transforms: Sequence[Any]) -> None:
        self.transforms = _check_transforms("RandomChoice", transforms)

    def _pick(self, args: tuple[Any, ...]) -> Any:
        t = self.transforms[int(self._rng().integers(len(self.transforms)))]
        return t(*args)


class RandomOrder(_RandomOps):
    """Apply every transform of `transforms`, in a random order."""

    def __init__(self, transforms: Sequence[Any]) -> None:
        self.transforms = _check_transforms("RandomOrder", transforms)

    def _pick(self, args: tuple[Any, ...]) -> Any:
        order = self._rng().permutation(len(self.transforms))
        return Compose([self.transforms[i] for i in order])(*args)


class TypeCast(TensorOperation):
    """Cast the input array to `data_type` (numpy dtype, name or sporeling.core dtype)."""

    def __init__(self, data_type: Any) -> None:
        self.data_type = _to_np_dtype(type(self).__name__, data_type)

    def _execute_numpy(self, x: Any) -> np.ndarray:
        return np.asarray(x).astype(self.data_type)


class OneHot(TensorOperation):
    """One-hot encode integer labels into `num_classes` classes, with optional smoothing."""

    def __init__(self, num_classes: int, smoothing_rate: float = 0.0) -> None:
        if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes <= 0:
            raise ValueError(f"OneHot: num_classes must be a positive int, got {num_classes!r}.")
        if not isinstance(smoothing_rate, int | float) or not 0.0 <= smoothing_rate <= 1.0:
            raise ValueError(f"OneHot: smoothing_rate must be in [0, 1], got {smoothing_rate!r}.")
        self.num_classes = num_classes
        self.smoothing_rate = float(smoothing_rate)

    def _execute_numpy(self, x: Any) -> np.ndarray:
        labels = np.asarray(x)
        if not np.issubdtype(labels.dtype, np.integer):
            raise TypeError(f"OneHot: input must hold integers, got dtype {labels.dtype}.")
        if labels.size and (labels.min() < 0 or labels.max() >= self.num_classes):
            raise ValueError(
                f"OneHot: labels must be in [0, {self.num_classes}), got values in "
                f"[{labels.min()}, {labels.max()}]."
            )
        dtype = np.float32 if self.smoothing_rate else labels.dtype
        out = np.eye(self.num_classes, dtype=dtype)
        out = out[labels]
        if self.smoothing_rate:
            out = out * (1.0 - self.smoothing_rate) + self.smoothing_rate / self.num_classes
            out = out.astype(np.float32)
        return out


class Duplicate(TensorOperation):
    """Return the input and a copy of it (two columns)."""

    def _execute_numpy(self, x: Any) -> tuple[Any, Any]:
        return x, np.array(x, copy=True)


class Fill(TensorOperation):
    """Fill every element of the input with `fill_value` (cast to the input's dtype)."""

    def __init__(self, fill_value: Any) -> None:
        if not isinstance(fill_value, int | float | str | bytes | bool | np.generic):
            raise TypeError(f"Fill: fill_value must be a scalar, got {fill_value!r}.")
        self.fill_value = fill_value

    def _execute_numpy(self, x: Any) -> np.ndarray:
        x = np.asarray(x)
        return np.full_like(x, self.fill_value)


class Relational(Enum):
    EQ = "EQ"
    NE = "NE"
    GT = "GT"
    GE = "GE"
    LT = "LT"
    LE = "LE"


_RELATIONS: dict[Relational, Callable[[Any, Any], Any]] = {
    Relational.EQ: operator.eq,
    Relational.NE: operator.ne,
    Relational.GT: operator.gt,
    Relational.GE: operator.ge,
    Relational.LT: operator.lt,
    Relational.LE: operator.le,
}


class Mask(TensorOperation):
    """Elementwise `input <operator> constant`, cast to `dtype` (bool by default)."""

    def __init__(self, operator: Relational, constant: Any, dtype: Any = np.bool_) -> None:
        if not isinstance(operator, Relational):
            raise TypeError(f"Mask: operator must be a Relational, got {operator!r}.")
        self.operator = operator
        self.constant = constant
        self.dtype = _to_np_dtype("Mask", dtype)

    def _execute_numpy(self, x: Any) -> np.ndarray:
        out = _RELATIONS[self.operator](np.asarray(x), self.constant)
        return np.asarray(out).astype(self.dtype)


class PadEnd(TensorOperation):
    """Pad the end of each dimension up to `pad_shape` (None keeps a dimension) with `pad_value`."""

    def __init__(self, pad_shape: Sequence[int | None], pad_value: Any = None) -> None:
        if not isinstance(pad_shape, list | tuple):
            raise TypeError(f"PadEnd: pad_shape must be a list, got {pad_shape!r}.")
        self.pad_shape = list(pad_shape)
        self.pad_value = pad_value

    def _execute_numpy(self, x: Any) -> np.ndarray:
        x = np.asarray(x)
        if len(self.pad_shape) != x.ndim:
            raise ValueError(
                f"PadEnd: pad_shape {self.pad_shape} has {len(self.pad_shape)} dims, the input has "
                f"shape {x.shape}."
            )
        target = [x.shape[i] if s is None else int(s) for i, s in enumerate(self.pad_shape)]
        x = x[tuple(slice(0, t) for t in target)]
        widths = [(0, t - n) for t, n in zip(target, x.shape)]
        value = self.pad_value
        if value is None:
            value = b"" if x.dtype.kind == "S" else ("" if x.dtype.kind == "U" else 0)
        return np.pad(x, widths, constant_values=value)


class Slice(TensorOperation):
    """Index the input with one slice object, int, list of ints, None or Ellipsis per dim."""

    def __init__(self, *slices: Any) -> None:
        for s in slices:
            if not isinstance(s, int | slice | list | tuple | type(None) | type(Ellipsis)):
                raise TypeError(f"Slice: unsupported slice {s!r}.")
        self.slices = tuple(list(s) if isinstance(s, tuple) else s for s in slices)

    def _execute_numpy(self, x: Any) -> np.ndarray:
        x = np.asarray(x)
        out = x
        for dim, s in enumerate(self.slices):
            if s is Ellipsis:
                break
            index: list[Any] = [slice(None)] * out.ndim
            index[dim] = slice(None) if s is None else ([s] if isinstance(s, int) else s)
            out = out[tuple(index)]
        return out


class Concatenate(TensorOperation):
    """Concatenate `prepend`, the input and `append` along `axis` (1-D in MindSpore)."""

    def __init__(self, axis: int = 0, prepend: Any = None, append: Any = None) -> None:
        if isinstance(axis, bool) or not isinstance(axis, int):
            raise TypeError(f"Concatenate: axis must be an int, got {axis!r}.")
        self.axis = axis
        self.prepend = None if prepend is None else np.asarray(prepend)
        self.append = None if append is None else np.asarray(append)

    def _execute_numpy(self, x: Any) -> np.ndarray:
        parts = [p for p in (self.prepend, np.asarray(x), self.append) if p is not None]
        return np.concatenate(parts, axis=self.axis)


class Unique(TensorOperation):
    """Unique elements of a 1-D input in order of appearance, the index of each input
    element in them, and their counts (three columns)."""

    def _execute_numpy(self, x: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        x = np.asarray(x)
        if x.ndim != 1:
            raise ValueError(f"Unique: input must be 1-D, got shape {x.shape}.")
        values, first, inverse, counts = np.unique(
            x, return_index=True, return_inverse=True, return_counts=True
        )
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        return values[order], rank[inverse].astype(np.int32), counts[order].astype(np.int32)


class Plugin(PyTensorOperation):
    """Load a function `func_name` from the Python module at `lib_path` and apply it.

    MindSpore's Plugin loads a C++ shared library; here the plugin is a Python file.
    """

    _py_input = "any"

    def __init__(self, lib_path: str, func_name: str, user_args: str | None = None) -> None:
        import importlib.util

        spec = importlib.util.spec_from_file_location("_sporeling_plugin", lib_path)
        if spec is None or spec.loader is None:
            raise ValueError(f"Plugin: cannot load a Python module from lib_path={lib_path!r}.")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        fn = getattr(module, func_name, None)
        if not callable(fn):
            raise ValueError(f"Plugin: {lib_path!r} has no callable {func_name!r}.")
        self.lib_path, self.func_name, self.user_args = lib_path, func_name, user_args
        self._fn = fn

    def _execute_pil(self, *args: Any) -> Any:
        if self.user_args is None:
            return self._fn(*args)
        return self._fn(*args, self.user_args)
