"""Data types and the type-promotion rules.

Promotion (written down here and tested in ``tests/test_dtype.py``):

* Categories are ordered ``bool < integer < floating < complex``.
* Two tensors of the same category promote to the wider type; signed and unsigned
  integers promote to a signed type wide enough for both (``uint8 + int8 -> int16``,
  ``uint8 + int64 -> int64``).
* Across categories the higher category's type wins, whatever its width
  (``int64 + float16 -> float16``, ``bool + int8 -> int8``).
* Python scalars are *weak*: they never widen a tensor of their own category or a
  higher one (``float16 tensor + 1.5 -> float16``, ``int8 tensor + 300`` stays ``int8``);
  a float scalar with a bool/integer tensor gives ``float32``, an int scalar with a bool
  tensor gives ``int64``. Two Python scalars give ``int64``/``float32``/``bool``.
* Complex (``complex64``, ``complex128``) with floating follows NumPy: the complex type wide
  enough for both parts (``complex64 + float64 -> complex128``, ``float32 + complex64 ->
  complex64``). A Python ``complex`` scalar is weak too: ``complex64`` with a bool, integer or
  float16/float32 tensor, ``complex128`` with a float64 tensor; it keeps a complex tensor's type.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

__all__ = [
    "DType",
    "bool_",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "bfloat16",
    "complex64",
    "complex128",
    "to_dtype",
    "promote_types",
    "result_type",
    "is_floating",
    "is_integer",
    "is_complex",
    "is_inexact",
    "FLOATING",
    "COMPLEX",
    "INTEGER",
    "ALL",
]


class DType:
    """A tensor element type; compares equal to itself, its NumPy dtype and its name."""

    __slots__ = ("name", "np", "category", "bits")

    def __init__(self, name: str, np_dtype: Any, category: int) -> None:
        self.name = name
        self.np = np.dtype(np_dtype)
        self.category = category  # 0 bool, 1 integer, 2 floating, 3 complex
        self.bits = self.np.itemsize * 8

    def __repr__(self) -> str:
        return "Bool" if self.name == "bool" else self.name.capitalize()

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DType):
            return self.np == other.np
        if other is None:  # np.dtype(None) is float64: float64 == None must stay False
            return False
        try:
            return self.np == np.dtype(cast("DTypeLike", other))
        except TypeError:
            return False

    def __hash__(self) -> int:
        return hash(self.np)

    @property
    def is_signed(self) -> bool:
        return self.category >= 2 or self.np.kind == "i"


bool_ = DType("bool", np.bool_, 0)
int8 = DType("int8", np.int8, 1)
int16 = DType("int16", np.int16, 1)
int32 = DType("int32", np.int32, 1)
int64 = DType("int64", np.int64, 1)
uint8 = DType("uint8", np.uint8, 1)
uint16 = DType("uint16", np.uint16, 1)
uint32 = DType("uint32", np.uint32, 1)
uint64 = DType("uint64", np.uint64, 1)
float16 = DType("float16", np.float16, 2)
float32 = DType("float32", np.float32, 2)
float64 = DType("float64", np.float64, 2)
complex64 = DType("complex64", np.complex64, 3)
complex128 = DType("complex128", np.complex128, 3)

try:  # bfloat16 comes from the well-kept ml_dtypes package when it is installed ([bf16] extra)
    import ml_dtypes

    bfloat16: DType | None = DType("bfloat16", ml_dtypes.bfloat16, 2)
except ImportError:  # pragma: no cover - optional
    bfloat16 = None

_ALL = [bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, float32, float64]
if bfloat16 is not None:
    _ALL.append(bfloat16)
_ALL += [complex64, complex128]
ALL = tuple(_ALL)
FLOATING = tuple(d for d in ALL if d.category == 2)
INTEGER = tuple(d for d in ALL if d.category == 1)
COMPLEX = (complex64, complex128)

_BY_NP: dict[np.dtype, DType] = {d.np: d for d in ALL}
_BY_NAME: dict[str, DType] = {d.name: d for d in ALL}
_BY_NAME.update(
    {"bool_": bool_, "float": float32, "int": int64, "half": float16, "double": float64}
)


def from_numpy(np_dtype: np.dtype) -> DType:
    """The :class:`DType` for a NumPy dtype, with a clear error for unsupported ones."""
    try:
        return _BY_NP[np_dtype]
    except KeyError:
        raise TypeError(
            f"unsupported element type {np_dtype}; supported types are "
            f"{', '.join(d.name for d in ALL)}"
        ) from None


def to_dtype(value: Any, argname: str = "dtype") -> DType:
    """Accept a DType, a NumPy dtype, a name ('float32') or a Python type (float, int, bool)."""
    if isinstance(value, DType):
        return value
    if value is None:  # np.dtype(None) is float64: a silent default nobody asked for
        raise TypeError(
            f"{argname} must be a sporeling dtype such as sporeling.core.float32, got None"
        )
    if value is bool:
        return bool_
    if value is int:
        return int64
    if value is float:
        return float32
    if isinstance(value, str) and value in _BY_NAME:
        return _BY_NAME[value]
    try:
        return from_numpy(np.dtype(value))
    except (TypeError, ValueError):
        raise TypeError(
            f"{argname} must be a sporeling dtype such as sporeling.core.float32, got {value!r}"
        ) from None


def is_floating(dtype: DType) -> bool:
    return dtype.category == 2


def is_integer(dtype: DType) -> bool:
    return dtype.category == 1


def is_complex(dtype: DType) -> bool:
    return dtype.category == 3


def is_inexact(dtype: DType) -> bool:
    """Floating or complex: the dtypes gradients flow through."""
    return dtype.category >= 2


def real_dtype(dtype: DType) -> DType:
    """The type of a complex dtype's parts (``complex64 -> float32``); others unchanged."""
    if dtype.category != 3:
        return dtype
    return float32 if dtype is complex64 else float64


def complex_dtype(dtype: DType) -> DType:
    """The complex type holding ``dtype`` exactly enough (float64 -> complex128, else
    complex64)."""
    if dtype.category == 3:
        return dtype
    return complex128 if dtype.category == 2 and dtype.bits == 64 else complex64


def _promote_ints(a: DType, b: DType) -> DType:
    if a.is_signed == b.is_signed:
        return a if a.bits >= b.bits else b
    signed, unsigned = (a, b) if a.is_signed else (b, a)
    if signed.bits > unsigned.bits:
        return signed
    bits = min(unsigned.bits * 2, 64)
    return _BY_NAME[f"int{bits}"]


def promote_types(a: DType, b: DType) -> DType:
    """The common type of two tensor dtypes (see the module docstring)."""
    if a is b or a == b:
        return a
    if a.category != b.category:
        if max(a.category, b.category) == 3 and min(a.category, b.category) == 2:
            c, f = (a, b) if a.category == 3 else (b, a)
            return complex128 if f.bits == 64 else c  # NumPy: wide enough for both parts
        return a if a.category > b.category else b
    if a.category == 1:
        return _promote_ints(a, b)
    if a.category == 2 and bfloat16 is not None and {a, b} == {bfloat16, float16}:
        return float32
    return a if a.bits >= b.bits else b


_SCALAR_DEFAULT = {0: bool_, 1: int64, 2: float32, 3: complex64}


def scalar_category(value: Any) -> int | None:
    """0/1/2/3 for Python (and NumPy) bool/int/float/complex scalars, None for anything
    else."""
    if isinstance(value, (bool, np.bool_)):
        return 0
    if isinstance(value, (int, np.integer)):
        return 1
    if isinstance(value, (float, np.floating)):
        return 2
    if isinstance(value, (complex, np.complexfloating)):
        return 3
    return None


def result_type(*operands: Any) -> DType:
    """Promote tensors (anything with a ``.dtype`` DType) and weak Python scalars."""
    strong: DType | None = None
    weak_cat = -1
    for op in operands:
        dt = getattr(op, "dtype", None)
        if isinstance(dt, DType):
            strong = dt if strong is None else promote_types(strong, dt)
        else:
            cat = scalar_category(op)
            if cat is None:
                raise TypeError(f"cannot promote a value of type {type(op).__name__}")
            weak_cat = max(weak_cat, cat)
    if strong is None:
        return _SCALAR_DEFAULT[max(weak_cat, 0)]
    if weak_cat > strong.category:
        return complex_dtype(strong) if weak_cat == 3 else _SCALAR_DEFAULT[weak_cat]
    return strong
