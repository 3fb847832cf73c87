"""Neural-network layer functions (MindSpore 1.8 ``mindspore.ops`` names, NCHW layout):
convolutions, pooling, resizing, padding, sampling, CTC decoding and channel dropout.

Convolutions of every rank rest on three primitives that are each other's gradients, so
gradients of any order stay exact:

* ``conv``              y = conv(x, w)
* ``conv_transpose``    dx = conv_transpose(dy, w)   (the data gradient; ``conv2d_transpose``)
* ``conv_weight_grad``  dw = conv_weight_grad(x, dy)

All three lower to one im2col (or col2im) plus one large GEMM per group; on the CPU the
2-d (and 1-d) im2col/col2im are parallel Numba kernels (:mod:`..kernels.cpu.conv`), and the
generic ``xp`` path (NumPy or CuPy) builds the same columns from strided slices.
"""

from ._common import _same_pads as _same_pads
from .conv import conv1d, conv1d_transpose, conv2d, conv2d_transpose, conv3d, conv3d_transpose
from .conv import conv_p as conv_p
from .conv import conv_transpose_p as conv_transpose_p
from .conv import conv_weight_grad_p as conv_weight_grad_p
from .conv_bias import conv_bias_p as conv_bias_p
from .im2col import col2im, unfold
from .im2col import col2im_p as col2im_p
from .im2col import im2col_p as im2col_p
from .misc import ctc_greedy_decoder, dropout2d, dropout3d, uniform_candidate_sampler
from .pooling import (
    adaptive_avg_pool2d,
    adaptive_max_pool2d,
    avg_pool1d,
    avg_pool2d,
    max_pool1d,
    max_pool2d,
    max_pool3d,
)
from .pooling import adaptive_max_pool2d_p as adaptive_max_pool2d_p
from .pooling import avg_pool_grad_p as avg_pool_grad_p
from .pooling import avg_pool_p as avg_pool_p
from .pooling import max_pool_p as max_pool_p
from .pooling import pool_gather_p as pool_gather_p
from .pooling import pool_scatter_p as pool_scatter_p
from .resize import interpolate, lrn, pad, padding
from .resize import pad_p as pad_p
from .sampling import deformable_conv2d, grid_sample
from .sampling import sample_coord_grad_p as sample_coord_grad_p
from .sampling import sample_p as sample_p
from .sampling import sample_scatter_p as sample_scatter_p

__all__ = [
    "conv1d",
    "conv2d",
    "conv3d",
    "conv1d_transpose",
    "conv2d_transpose",
    "conv3d_transpose",
    "max_pool1d",
    "max_pool2d",
    "max_pool3d",
    "avg_pool1d",
    "avg_pool2d",
    "adaptive_avg_pool2d",
    "adaptive_max_pool2d",
    "interpolate",
    "pad",
    "padding",
    "lrn",
    "grid_sample",
    "deformable_conv2d",
    "col2im",
    "unfold",
    "ctc_greedy_decoder",
    "uniform_candidate_sampler",
    "dropout2d",
    "dropout3d",
]
