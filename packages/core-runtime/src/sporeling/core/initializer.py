"""Parameter initializers with MindSpore's names and defaults.

``initializer(init, shape, dtype)`` returns a Tensor; ``init`` is an :class:`Initializer`,
its name (``"normal"``, ``"he_uniform"``, ``"zeros"``...), a number or a Tensor. Random
initializers draw from the global generator, so ``set_seed`` makes them reproducible.
Fans follow MindSpore's layouts: a Dense weight is ``(out, in)``, a conv weight
``(out, in/groups, *kernel)``.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from . import dtype as _dt
from ._backend import CPU
from .random_state import generator
from .tensor import Tensor

__all__ = [
    "Initializer",
    "initializer",
    "Normal",
    "TruncatedNormal",
    "Uniform",
    "XavierUniform",
    "XavierNormal",
    "HeNormal",
    "HeUniform",
    "Zero",
    "One",
    "Constant",
    "Identity",
    "Orthogonal",
    "calculate_gain",
]


def _fans(shape: tuple[int, ...]) -> tuple[int, int]:
    if len(shape) < 2:
        raise ValueError(f"initializer: fan in/out need a shape of at least 2 dims, got {shape}")
    receptive = int(np.prod(shape[2:])) if len(shape) > 2 else 1
    return shape[1] * receptive, shape[0] * receptive


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity (as in MindSpore/PyTorch)."""
    linear = {
        "linear",
        "conv1d",
        "conv2d",
        "conv3d",
        "conv_transpose1d",
        "conv_transpose2d",
        "conv_transpose3d",
        "sigmoid",
    }
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else float(param)
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


class Initializer:
    """Base class: subclasses fill a float64 NumPy array of the requested shape."""

    def _fill(self, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
        raise TypeError(f"{type(self).__name__} must implement _fill(shape, rng)")

    def __call__(self, shape: Any, dtype: Any = _dt.float32) -> np.ndarray:
        shape = (
            (int(shape),) if isinstance(shape, numbers.Integral) else tuple(int(s) for s in shape)
        )
        return self._fill(shape, generator(CPU)).astype(_dt.to_dtype(dtype).np)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({args})"


class Normal(Initializer):
    """N(mean, sigma²)."""

    def __init__(self, sigma: float = 0.01, mean: float = 0.0) -> None:
        self.sigma, self.mean = sigma, mean

    def _fill(self, shape, rng):
        return rng.normal(self.mean, self.sigma, shape)


class TruncatedNormal(Initializer):
    """N(0, sigma²) redrawn outside [-2 sigma, 2 sigma]."""

    def __init__(self, sigma: float = 0.01) -> None:
        self.sigma = sigma

    def _fill(self, shape, rng):
        out = rng.standard_normal(shape)
        bad = np.abs(out) > 2
        while bad.any():
            out[bad] = rng.standard_normal(int(bad.sum()))
            bad = np.abs(out) > 2
        return out * self.sigma


class Uniform(Initializer):
    """U(-scale, scale)."""

    def __init__(self, scale: float = 0.07) -> None:
        self.scale = scale

    def _fill(self, shape, rng):
        return rng.uniform(-self.scale, self.scale, shape)


class XavierUniform(Initializer):
    """U(-b, b) with b = gain * sqrt(6 / (fan_in + fan_out))."""

    def __init__(self, gain: float = 1) -> None:
        self.gain = gain

    def _fill(self, shape, rng):
        fan_in, fan_out = _fans(shape)
        bound = self.gain * math.sqrt(6.0 / (fan_in + fan_out))
        return rng.uniform(-bound, bound, shape)


class XavierNormal(Initializer):
    """N(0, s²) with s = gain * sqrt(2 / (fan_in + fan_out))."""

    def __init__(self, gain: float = 1) -> None:
        self.gain = gain

    def _fill(self, shape, rng):
        fan_in, fan_out = _fans(shape)
        return rng.normal(0, self.gain * math.sqrt(2.0 / (fan_in + fan_out)), shape)


class _He(Initializer):
    def __init__(
        self, negative_slope: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu"
    ) -> None:
        if mode not in ("fan_in", "fan_out"):
            raise ValueError(
                f"{type(self).__name__}: argument 'mode' expected 'fan_in' or 'fan_out', "
                f"got {mode!r}"
            )
        self.negative_slope, self.mode, self.nonlinearity = negative_slope, mode, nonlinearity

    def _std(self, shape: tuple[int, ...]) -> float:
        fan_in, fan_out = _fans(shape)
        fan = fan_in if self.mode == "fan_in" else fan_out
        return calculate_gain(self.nonlinearity, self.negative_slope) / math.sqrt(fan)


class HeNormal(_He):
    """N(0, std²) with std = gain / sqrt(fan)."""

    def _fill(self, shape, rng):
        return rng.normal(0, self._std(shape), shape)


class HeUniform(_He):
    """U(-b, b) with b = sqrt(3) * gain / sqrt(fan)."""

    def _fill(self, shape, rng):
        bound = math.sqrt(3.0) * self._std(shape)
        return rng.uniform(-bound, bound, shape)


class Constant(Initializer):
    """Every element equal to ``value``."""

    def __init__(self, value: float) -> None:
        self.value = value

    def _fill(self, shape, rng):
        return np.full(shape, self.value, np.float64)


class Zero(Constant):
    """Zeros."""

    def __init__(self) -> None:
        super().__init__(0.0)


class One(Constant):
    """Ones."""

    def __init__(self) -> None:
        super().__init__(1.0)


class Identity(Initializer):
    """The identity matrix (2-d shapes only)."""

    def _fill(self, shape, rng):
        if len(shape) != 2:
            raise ValueError(f"Identity: needs a 2-d shape, got {shape}")
        return np.eye(*shape)


class Orthogonal(Initializer):
    """A (semi-)orthogonal matrix scaled by ``gain``, via QR of a Gaussian matrix."""

    def __init__(self, gain: float = 1.0) -> None:
        self.gain = gain

    def _fill(self, shape, rng):
        if len(shape) < 2:
            raise ValueError(f"Orthogonal: needs at least 2 dims, got {shape}")
        rows, cols = shape[0], int(np.prod(shape[1:]))
        a = rng.standard_normal((max(rows, cols), min(rows, cols)))
        q, r = np.linalg.qr(a)
        q *= np.sign(np.diag(r))
        q = q if rows >= cols else q.T
        return self.gain * q[:rows, :cols].reshape(shape)


_BY_NAME: dict[str, type[Initializer]] = {
    "normal": Normal,
    "truncatednormal": TruncatedNormal,
    "truncated_normal": TruncatedNormal,
    "uniform": Uniform,
    "xavier_uniform": XavierUniform,
    "xavieruniform": XavierUniform,
    "xavier_normal": XavierNormal,
    "he_normal": HeNormal,
    "henormal": HeNormal,
    "he_uniform": HeUniform,
    "heuniform": HeUniform,
    "zeros": Zero,
    "zero": Zero,
    "ones": One,
    "one": One,
    "identity": Identity,
    "eye": Identity,
    "orthogonal": Orthogonal,
}


def initializer(init: Any, shape: Any = None, dtype: Any = _dt.float32) -> Tensor:
    """A Tensor of ``shape`` initialised by ``init`` (MindSpore's ``initializer``).

    >>> initializer("ones", (2, 2)).tolist()
    [[1.0, 1.0], [1.0, 1.0]]
    """
    dt = _dt.to_dtype(dtype)
    if isinstance(init, Tensor):
        if shape is not None and tuple(shape) != init.shape:
            raise ValueError(
                f"initializer: the Tensor 'init' has shape {init.shape}, but shape={tuple(shape)}"
            )
        return Tensor(init, dtype=dt)
    if shape is None:
        raise ValueError("initializer: argument 'shape' is required unless 'init' is a Tensor")
    if isinstance(init, str):
        cls = _BY_NAME.get(init.lower())
        if cls is None:
            raise ValueError(
                f"initializer: unknown initializer name {init!r}; known: {sorted(_BY_NAME)}"
            )
        init = cls()
    elif isinstance(init, numbers.Number) and not isinstance(init, bool):
        init = Constant(float(init))  # type: ignore[arg-type]
    if not isinstance(init, Initializer):
        raise TypeError(
            f"initializer: argument 'init' expected an Initializer, a name, a number or a Tensor, "
            f"got {type(init).__name__}"
        )
    return Tensor(init(shape, dt), dtype=dt)
