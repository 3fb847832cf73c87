"""The per-image convolution kernels of :mod:`.conv_images` as jobs for :mod:`._jobs`
(workers that never take the GIL): one wrapper per kernel, unpacking the arguments that
:func:`.conv_images._run` packs in the same order. Only the float32 kernels on the
micro-kernel have one (the others call OpenBLAS through ctypes and stay on :mod:`._rows`).
"""

from __future__ import annotations

import numpy as np

from . import conv_images as ci
from ._jobs import block, integer, view1, view2, view3, view4, view5

_F, _I = np.float32, np.int64


def forward_implicit(args, k, lo, hi):  # pragma: no cover - compiled
    """(x, wp, out, xp, rest, offs, geo, groups):
    :func:`.conv_images._forward_kernel_implicit`."""
    p = block(args)
    ci._forward_kernel_implicit(
        view4(p, 0, _F), view4(p, 1, _F), view4(p, 2, _F), view4(p, 3, _F)[k],
        view3(p, 4, _F)[k], view1(p, 5, _I), view1(p, 6, _I), integer(p, 7), lo, hi,
    )  # fmt: skip


def forward_pixels(args, k, lo, hi):  # pragma: no cover - compiled
    """(x, wk, out, xq, ct, koffs, geo, kc): :func:`.conv_images._forward_kernel_pixels`."""
    p = block(args)
    ci._forward_kernel_pixels(
        view4(p, 0, _F), view2(p, 1, _F), view4(p, 2, _F), view4(p, 3, _F)[k],
        view3(p, 4, _F)[k], view1(p, 5, _I), view1(p, 6, _I), integer(p, 7), lo, hi,
    )  # fmt: skip


def weight_grad_nhwc(args, k, lo, hi):  # pragma: no cover - compiled
    """(x, gy, dwq, xq, gp, toffs, geo, groups, chunk):
    :func:`.conv_images._weight_grad_kernel_nhwc`."""
    p = block(args)
    ci._weight_grad_kernel_nhwc(
        view4(p, 0, _F), view4(p, 1, _F), view5(p, 2, _F)[k], view4(p, 3, _F)[k],
        view4(p, 4, _F)[k], view2(p, 5, _I), view1(p, 6, _I), integer(p, 7), integer(p, 8),
        lo, hi,
    )  # fmt: skip


def weight_grad_implicit(args, k, lo, hi):  # pragma: no cover - compiled
    """(x, gy, sums, xp, gyt, taps, pix, geo, groups, chunk):
    :func:`.conv_images._weight_grad_kernel_implicit`."""
    p = block(args)
    ci._weight_grad_kernel_implicit(
        view4(p, 0, _F), view4(p, 1, _F), view4(p, 2, _F)[k], view4(p, 3, _F)[k],
        view3(p, 4, _F)[k], view1(p, 5, _I), view1(p, 6, _I), view1(p, 7, _I),
        integer(p, 8), integer(p, 9), lo, hi,
    )  # fmt: skip
