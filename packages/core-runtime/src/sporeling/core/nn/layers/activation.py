"""Activation cells (MindSpore 1.8 names and defaults) and :func:`get_activation`.

Each cell applies one :mod:`sporeling.core.ops` activation; ``get_activation("relu")``
builds a cell by its MindSpore name (as ``Dense(..., activation="relu")`` does).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import ops
from ...tensor import Parameter, Tensor
from ..cell import Cell
from ._utils import arg_error, check_bool, check_float, check_input, check_int

__all__ = [
    "ReLU",
    "ReLU6",
    "LeakyReLU",
    "ELU",
    "CELU",
    "SeLU",
    "GELU",
    "FastGelu",
    "Sigmoid",
    "LogSigmoid",
    "Tanh",
    "Softmax",
    "LogSoftmax",
    "SiLU",
    "HSwish",
    "HSigmoid",
    "Mish",
    "SoftShrink",
    "HShrink",
    "Softsign",
    "Softplus",
    "PReLU",
    "get_activation",
]

_ANY = tuple(range(0, 33))


class _Unary(Cell):
    """An activation without parameters: ``construct(x) = _fn(x)``."""

    _fn: Any = None

    def construct(self, x: Tensor) -> Tensor:
        return type(self)._fn(check_input(self.cls_name, x, _ANY, "any shape"))


class ReLU(_Unary):
    """``max(x, 0)``."""

    _fn = staticmethod(ops.relu)


class ReLU6(_Unary):
    """``min(max(x, 0), 6)``."""

    _fn = staticmethod(ops.relu6)


class Sigmoid(_Unary):
    """``1 / (1 + exp(-x))``."""

    _fn = staticmethod(ops.sigmoid)


class LogSigmoid(_Unary):
    """``log(sigmoid(x))``."""

    _fn = staticmethod(ops.logsigmoid)


class Tanh(_Unary):
    """``tanh(x)``."""

    _fn = staticmethod(ops.tanh)


class SiLU(_Unary):
    """``x * sigmoid(x)``."""

    _fn = staticmethod(ops.silu)


class HSwish(_Unary):
    """Hard swish: ``x * relu6(x + 3) / 6``."""

    _fn = staticmethod(ops.hardswish)


class HSigmoid(_Unary):
    """Hard sigmoid: ``relu6(x + 3) / 6``."""

    _fn = staticmethod(ops.hardsigmoid)


class Mish(_Unary):
    """``x * tanh(softplus(x))``."""

    _fn = staticmethod(ops.mish)


class Softsign(_Unary):
    """``x / (1 + |x|)``."""

    _fn = staticmethod(ops.softsign)


class FastGelu(_Unary):
    """``x * sigmoid(1.702 x)`` (MindSpore's fast GELU)."""

    _fn = staticmethod(ops.fast_gelu)


class SeLU(_Unary):
    """Scaled ELU with the self-normalising constants."""

    _fn = staticmethod(ops.selu)


class LeakyReLU(Cell):
    """``x`` where ``x >= 0``, ``alpha * x`` elsewhere (``alpha`` defaults to 0.2)."""

    def __init__(self, alpha: float = 0.2) -> None:
        super().__init__()
        self.alpha = check_float("LeakyReLU", "alpha", alpha)

    def construct(self, x: Tensor) -> Tensor:
        return ops.leaky_relu(check_input("LeakyReLU", x, _ANY, "any shape"), self.alpha)

    def extend_repr(self) -> str:
        return f"alpha={self.alpha}"


class ELU(Cell):
    """``x`` where ``x > 0``, ``alpha * (exp(x) - 1)`` elsewhere (MindSpore 1.8 allows only
    ``alpha=1.0``; other values are accepted here)."""

    def __init__(self, alpha: float = 1.0) -> None:
        super().__init__()
        self.alpha = check_float("ELU", "alpha", alpha)

    def construct(self, x: Tensor) -> Tensor:
        return ops.elu(check_input("ELU", x, _ANY, "any shape"), self.alpha)

    def extend_repr(self) -> str:
        return f"alpha={self.alpha}"


class CELU(Cell):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``; ``alpha != 0``."""

    def __init__(self, alpha: float = 1.0) -> None:
        super().__init__()
        self.alpha = check_float("CELU", "alpha", alpha)
        if self.alpha == 0:
            raise arg_error("CELU", "alpha", alpha, "a non-zero float")

    def construct(self, x: Tensor) -> Tensor:
        return ops.celu(check_input("CELU", x, _ANY, "any shape"), self.alpha)

    def extend_repr(self) -> str:
        return f"alpha={self.alpha}"


class GELU(Cell):
    """Gaussian error linear unit. ``approximate=True`` (MindSpore 1.8's default) uses
    ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``; ``False`` the exact ``x Phi(x)``."""

    def __init__(self, approximate: bool = True) -> None:
        super().__init__()
        self.approximate = check_bool("GELU", "approximate", approximate)

    def construct(self, x: Tensor) -> Tensor:
        mode = "tanh" if self.approximate else "none"
        return ops.gelu(check_input("GELU", x, _ANY, "any shape"), mode)

    def extend_repr(self) -> str:
        return f"approximate={self.approximate}"


class Softmax(Cell):
    """``exp(x) / sum(exp(x))`` along ``axis`` (an int or a tuple of ints, default -1)."""

    def __init__(self, axis: Any = -1) -> None:
        super().__init__()
        self.axis: int | tuple[int, ...]
        if isinstance(axis, (tuple, list)):
            self.axis = tuple(check_int("Softmax", "axis", a) for a in axis)
        else:
            self.axis = check_int("Softmax", "axis", axis)

    def construct(self, x: Tensor) -> Tensor:
        return ops.softmax(check_input("Softmax", x, _ANY, "any shape"), self.axis)

    def extend_repr(self) -> str:
        return f"axis={self.axis}"


class LogSoftmax(Cell):
    """``x - log(sum(exp(x)))`` along ``axis`` (default -1)."""

    def __init__(self, axis: int = -1) -> None:
        super().__init__()
        self.axis = check_int("LogSoftmax", "axis", axis)

    def construct(self, x: Tensor) -> Tensor:
        return ops.log_softmax(check_input("LogSoftmax", x, _ANY, "any shape"), self.axis)

    def extend_repr(self) -> str:
        return f"axis={self.axis}"


class SoftShrink(Cell):
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, 0 between."""

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = check_float("SoftShrink", "lambd", lambd, 0.0)

    def construct(self, x: Tensor) -> Tensor:
        return ops.soft_shrink(check_input("SoftShrink", x, _ANY, "any shape"), self.lambd)

    def extend_repr(self) -> str:
        return f"lambd={self.lambd}"


class HShrink(Cell):
    """``x`` where ``|x| > lambd``, 0 elsewhere."""

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = check_float("HShrink", "lambd", lambd)

    def construct(self, x: Tensor) -> Tensor:
        return ops.hardshrink(check_input("HShrink", x, _ANY, "any shape"), self.lambd)

    def extend_repr(self) -> str:
        return f"lambd={self.lambd}"


class Softplus(Cell):
    """``log(1 + exp(beta x)) / beta`` (linear above ``threshold``)."""

    def __init__(self, beta: float = 1, threshold: float = 20) -> None:
        super().__init__()
        self.beta = check_float("Softplus", "beta", beta, 0.0, low_open=True)
        self.threshold = check_float("Softplus", "threshold", threshold)

    def construct(self, x: Tensor) -> Tensor:
        return ops.softplus(
            check_input("Softplus", x, _ANY, "any shape"), self.beta, self.threshold
        )

    def extend_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class PReLU(Cell):
    """``x`` where positive, ``w * x`` elsewhere, with a learned slope per channel (axis 1)
    or one shared slope (``channel=1``). ``w`` is a float (initial value, default 0.25) or a
    Tensor of shape ``(channel,)``; the parameter is named ``"a"`` as in MindSpore."""

    def __init__(self, channel: int = 1, w: Any = 0.25) -> None:
        super().__init__()
        self.channel = check_int("PReLU", "channel", channel, 1)
        if isinstance(w, (float, int, np.floating, np.integer)) and not isinstance(w, bool):
            data = Tensor(np.full((self.channel,), float(w), np.float32))
        elif isinstance(w, Tensor):
            if w.shape not in ((self.channel,), (1,)) or w.dtype.category != 2:
                raise arg_error(
                    "PReLU", "w", w, f"a float or a floating Tensor of shape ({self.channel},)"
                )
            data = w
        elif isinstance(w, (list, tuple, np.ndarray)):
            arr = np.asarray(w, np.float32)
            if arr.shape != (self.channel,):
                raise arg_error("PReLU", "w", w, f"a float or {self.channel} values")
            data = Tensor(arr)
        else:
            raise arg_error("PReLU", "w", w, "a float or a Tensor", TypeError)
        self.w = Parameter(data, name="a")

    def construct(self, x: Tensor) -> Tensor:
        x = check_input("PReLU", x, tuple(range(1, 33)), "N, C, ...")
        if self.channel != 1 and (x.ndim < 2 or x.shape[1] != self.channel):
            raise ValueError(
                f"PReLU: the input has shape {x.shape}, but the layer has {self.channel} "
                "slopes (channel), one per channel on axis 1"
            )
        return ops.prelu(x, self.w)

    def extend_repr(self) -> str:
        return f"channel={self.channel}"


_ACTIVATIONS: dict[str, type[Cell]] = {
    "softmax": Softmax,
    "logsoftmax": LogSoftmax,
    "relu": ReLU,
    "relu6": ReLU6,
    "tanh": Tanh,
    "gelu": GELU,
    "fast_gelu": FastGelu,
    "elu": ELU,
    "celu": CELU,
    "selu": SeLU,
    "sigmoid": Sigmoid,
    "prelu": PReLU,
    "leakyrelu": LeakyReLU,
    "hswish": HSwish,
    "hsigmoid": HSigmoid,
    "logsigmoid": LogSigmoid,
    "softshrink": SoftShrink,
    "hshrink": HShrink,
    "silu": SiLU,
    "mish": Mish,
    "softsign": Softsign,
    "softplus": Softplus,
}


class UnknownActivationError(KeyError, ValueError):
    """An activation name that :func:`get_activation` does not know (a KeyError, as in
    MindSpore, and a ValueError)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def get_activation(name: str | None, prim_name: str | None = None) -> Cell | None:
    """A new activation cell from its MindSpore name (``"relu"``, ``"gelu"``...); None for
    None.

    >>> get_activation("relu")
    ReLU<>
    """
    if name is None:
        return None
    where = prim_name or "get_activation"
    if not isinstance(name, str):
        raise arg_error(where, "name", name, "an activation name (str)", TypeError)
    cls = _ACTIVATIONS.get(name.lower())
    if cls is None:
        raise UnknownActivationError(
            f"{where}: unknown activation name {name!r}; known: {sorted(_ACTIVATIONS)}"
        )
    return cls()
