"""Define-by-run autograd: the tape (``tape``) and the functional API (``functional``)."""

from .functional import (
    enable_grad,
    grad,
    is_grad_enabled,
    jvp,
    no_grad,
    stop_gradient,
    value_and_grad,
    vjp,
    vmap,
)

__all__ = [
    "grad",
    "value_and_grad",
    "vjp",
    "jvp",
    "vmap",
    "stop_gradient",
    "no_grad",
    "enable_grad",
    "is_grad_enabled",
]
