"""Activation functions, softmax family, normalization functionals and dropout.

Elementwise activations are primitives with an xp impl, a scalar expression for the fuser
(parameters such as ``alpha`` appear in it by name) and a vjp written with ops, so second
derivatives work. ``softmax``/``log_softmax`` and the normalizations have Numba kernels on
the CPU; their "any" impls are the GPU path and the reference the kernels are tested
against. ``layer_norm``/``batch_norm`` backward passes are primitives too (one fused kernel
each); their own derivatives come from differentiating an op-composite of the same formula.
"""

from .elementwise import (
    celu,
    elu,
    fast_gelu,
    gelu,
    glu,
    hard_sigmoid,
    hardshrink,
    hardsigmoid,
    hardswish,
    leaky_relu,
    logsigmoid,
    mish,
    prelu,
    relu,
    relu6,
    selu,
    sigmoid,
    silu,
    soft_shrink,
    softplus,
    softsign,
)
from .elementwise import celu_p as celu_p
from .elementwise import elu_p as elu_p
from .elementwise import fast_gelu_p as fast_gelu_p
from .elementwise import gelu_p as gelu_p
from .elementwise import hardshrink_p as hardshrink_p
from .elementwise import hardsigmoid_p as hardsigmoid_p
from .elementwise import hardswish_p as hardswish_p
from .elementwise import leaky_relu_p as leaky_relu_p
from .elementwise import logsigmoid_p as logsigmoid_p
from .elementwise import mish_p as mish_p
from .elementwise import ndtr_p as ndtr_p
from .elementwise import relu6_p as relu6_p
from .elementwise import relu_p as relu_p
from .elementwise import selu_p as selu_p
from .elementwise import sigmoid_p as sigmoid_p
from .elementwise import silu_p as silu_p
from .elementwise import soft_shrink_p as soft_shrink_p
from .elementwise import softplus_p as softplus_p
from .elementwise import softsign_p as softsign_p
from .normalization import batch_norm, group_norm, layer_norm
from .normalization import batch_norm_grad_p as batch_norm_grad_p
from .normalization import batch_norm_train_p as batch_norm_train_p
from .normalization import layer_norm_grad_p as layer_norm_grad_p
from .normalization import layer_norm_p as layer_norm_p
from .softmax_family import log_softmax, softmax
from .softmax_family import log_softmax_p as log_softmax_p
from .softmax_family import softmax_p as softmax_p
from .stochastic import bernoulli_mask_p as bernoulli_mask_p
from .stochastic import dropout, gumbel_softmax
from .stochastic import gumbel_noise_p as gumbel_noise_p
from .stochastic import onehot_argmax_p as onehot_argmax_p

__all__ = [
    "relu",
    "relu6",
    "leaky_relu",
    "elu",
    "celu",
    "selu",
    "gelu",
    "fast_gelu",
    "sigmoid",
    "hardsigmoid",
    "hard_sigmoid",
    "hardswish",
    "hardshrink",
    "soft_shrink",
    "softsign",
    "softplus",
    "mish",
    "silu",
    "logsigmoid",
    "softmax",
    "log_softmax",
    "gumbel_softmax",
    "prelu",
    "glu",
    "layer_norm",
    "batch_norm",
    "group_norm",
    "dropout",
]
