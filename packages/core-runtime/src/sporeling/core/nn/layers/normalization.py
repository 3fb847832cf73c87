"""Normalization layers (MindSpore 1.8): ``BatchNorm1d/2d/3d``, ``LayerNorm``, ``GroupNorm``.

Batch norm follows MindSpore's conventions: parameters ``gamma``, ``beta`` (trainable when
``affine``) and ``moving_mean``, ``moving_variance`` (never trainable), and
``momentum=0.9`` meaning ``moving = momentum * moving + (1 - momentum) * batch`` (the
unbiased batch variance for ``moving_variance``) — PyTorch's momentum is ``1 - momentum``.
``use_batch_statistics=None`` uses the batch statistics (and updates the moving ones) in
training mode (``set_train()``) and the moving statistics in evaluation; ``True`` always
uses (and updates) batch statistics, ``False`` always the moving ones.
"""

from __future__ import annotations

from typing import Any

from ... import ops
from ...tensor import Tensor
from ..cell import Cell
from ._utils import (
    arg_error,
    check_bool,
    check_channels,
    check_float,
    check_input,
    check_int,
    check_str,
    make_param,
)

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LayerNorm", "GroupNorm"]


class _BatchNorm(Cell):
    _ndims: tuple[int, ...] = (4,)
    _layout = "N, C, H, W"

    def __init__(
        self,
        num_features: int,
        eps: float,
        momentum: float,
        affine: bool,
        gamma_init: Any,
        beta_init: Any,
        moving_mean_init: Any,
        moving_var_init: Any,
        use_batch_statistics: bool | None,
        data_format: str,
        formats: tuple[str, ...],
    ) -> None:
        super().__init__()
        cls = self.cls_name
        self.num_features = check_int(cls, "num_features", num_features, 1)
        self.eps = check_float(cls, "eps", eps, 0.0, low_open=True)
        self.momentum = check_float(cls, "momentum", momentum, 0.0, 1.0)
        self.affine = check_bool(cls, "affine", affine)
        if use_batch_statistics is not None:
            check_bool(cls, "use_batch_statistics", use_batch_statistics)
        self.use_batch_statistics = use_batch_statistics
        self.format = check_str(cls, "data_format", data_format, formats, lower=False)
        c = (self.num_features,)
        self.moving_mean = make_param(
            cls, "moving_mean_init", moving_mean_init, c, "moving_mean", requires_grad=False
        )
        self.moving_variance = make_param(
            cls, "moving_var_init", moving_var_init, c, "moving_variance", requires_grad=False
        )
        self.gamma = make_param(cls, "gamma_init", gamma_init, c, "gamma", requires_grad=affine)
        self.beta = make_param(cls, "beta_init", beta_init, c, "beta", requires_grad=affine)

    def construct(self, x: Tensor) -> Tensor:
        x = check_input(self.cls_name, x, self._ndims, self._layout)
        nhwc = self.format == "NHWC"
        if nhwc:
            x = ops.transpose(x, (0, 3, 1, 2))
        check_channels(self.cls_name, x, 1, self.num_features, "num_features")
        use_batch = (
            self.training if self.use_batch_statistics is None else self.use_batch_statistics
        )
        y = ops.batch_norm(
            x,
            self.moving_mean,
            self.moving_variance,
            self.gamma,
            self.beta,
            training=bool(use_batch),
            momentum=1.0 - self.momentum,  # ops.batch_norm weighs the batch by its momentum
            eps=self.eps,
        )
        return ops.transpose(y, (0, 2, 3, 1)) if nhwc else y

    def extend_repr(self) -> str:
        return (
            f"num_features={self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"gamma={self.gamma}, beta={self.beta}, moving_mean={self.moving_mean}, "
            f"moving_variance={self.moving_variance}"
        )


class BatchNorm1d(_BatchNorm):
    """Batch normalization of ``(N, C)`` (or ``(N, C, L)``) over the batch (and length).

    >>> import numpy as np
    >>> bn = BatchNorm1d(3).set_train()
    >>> bn(Tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3))).shape
    (2, 3)
    """

    _ndims = (2, 3)
    _layout = "N, C or N, C, L"

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float = 0.9,
        affine: bool = True,
        gamma_init: Any = "ones",
        beta_init: Any = "zeros",
        moving_mean_init: Any = "zeros",
        moving_var_init: Any = "ones",
        use_batch_statistics: bool | None = None,
    ) -> None:
        super().__init__(
            num_features,
            eps,
            momentum,
            affine,
            gamma_init,
            beta_init,
            moving_mean_init,
            moving_var_init,
            use_batch_statistics,
            "NCHW",
            ("NCHW",),
        )


class BatchNorm2d(_BatchNorm):
    """Batch normalization of ``(N, C, H, W)`` (or NHWC) per channel."""

    _ndims = (4,)
    _layout = "N, C, H, W"

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float = 0.9,
        affine: bool = True,
        gamma_init: Any = "ones",
        beta_init: Any = "zeros",
        moving_mean_init: Any = "zeros",
        moving_var_init: Any = "ones",
        use_batch_statistics: bool | None = None,
        data_format: str = "NCHW",
    ) -> None:
        super().__init__(
            num_features,
            eps,
            momentum,
            affine,
            gamma_init,
            beta_init,
            moving_mean_init,
            moving_var_init,
            use_batch_statistics,
            data_format,
            ("NCHW", "NHWC"),
        )


class BatchNorm3d(_BatchNorm):
    """Batch normalization of ``(N, C, D, H, W)`` per channel."""

    _ndims = (5,)
    _layout = "N, C, D, H, W"

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float = 0.9,
        affine: bool = True,
        gamma_init: Any = "ones",
        beta_init: Any = "zeros",
        moving_mean_init: Any = "zeros",
        moving_var_init: Any = "ones",
        use_batch_statistics: bool | None = None,
        data_format: str = "NCDHW",
    ) -> None:
        super().__init__(
            num_features,
            eps,
            momentum,
            affine,
            gamma_init,
            beta_init,
            moving_mean_init,
            moving_var_init,
            use_batch_statistics,
            data_format,
            ("NCDHW",),
        )


class LayerNorm(Cell):
    """Layer normalization over the axes from ``begin_norm_axis``:
    ``y = (x - mean) / sqrt(var + epsilon) * gamma + beta``.

    ``gamma``/``beta`` have shape ``normalized_shape`` (a tuple or list), which must equal
    ``x.shape[begin_params_axis:]``.
    """

    def __init__(
        self,
        normalized_shape: Any,
        begin_norm_axis: int = -1,
        begin_params_axis: int = -1,
        gamma_init: Any = "ones",
        beta_init: Any = "zeros",
        epsilon: float = 1e-7,
    ) -> None:
        super().__init__()
        if not isinstance(normalized_shape, (tuple, list)):
            raise arg_error(
                "LayerNorm",
                "normalized_shape",
                normalized_shape,
                "a tuple or list of ints",
                TypeError,
            )
        shape = tuple(check_int("LayerNorm", "normalized_shape", s, 1) for s in normalized_shape)
        self.normalized_shape = shape
        self.begin_norm_axis = check_int("LayerNorm", "begin_norm_axis", begin_norm_axis)
        self.begin_params_axis = check_int("LayerNorm", "begin_params_axis", begin_params_axis)
        self.epsilon = check_float("LayerNorm", "epsilon", epsilon, 0.0)
        self.gamma = make_param("LayerNorm", "gamma_init", gamma_init, shape, "gamma")
        self.beta = make_param("LayerNorm", "beta_init", beta_init, shape, "beta")

    def construct(self, x: Tensor) -> Tensor:
        x = check_input("LayerNorm", x, tuple(range(1, 33)), "any shape")
        bpa = self.begin_params_axis
        if not -x.ndim <= bpa < x.ndim or x.shape[bpa % x.ndim :] != self.normalized_shape:
            raise ValueError(
                f"LayerNorm: the input of shape {x.shape} does not end in normalized_shape "
                f"{self.normalized_shape} from begin_params_axis={bpa}"
            )
        y, _, _ = ops.layer_norm(x, self.gamma, self.beta, self.begin_norm_axis, bpa, self.epsilon)
        return y

    def extend_repr(self) -> str:
        return (
            f"normalized_shape={self.normalized_shape}, begin_norm_axis={self.begin_norm_axis}, "
            f"begin_params_axis={self.begin_params_axis}, gamma={self.gamma}, beta={self.beta}"
        )


class GroupNorm(Cell):
    """Group normalization: each sample's channels split into ``num_groups`` groups,
    normalized over each group, then scaled/shifted per channel by ``gamma``/``beta``."""

    def __init__(
        self,
        num_groups: int,
        num_channels: int,
        eps: float = 1e-5,
        affine: bool = True,
        gamma_init: Any = "ones",
        beta_init: Any = "zeros",
    ) -> None:
        super().__init__()
        self.num_groups = check_int("GroupNorm", "num_groups", num_groups, 1)
        self.num_channels = check_int("GroupNorm", "num_channels", num_channels, 1)
        if self.num_channels % self.num_groups:
            raise arg_error(
                "GroupNorm", "num_groups", num_groups, f"a divisor of num_channels ({num_channels})"
            )
        self.eps = check_float("GroupNorm", "eps", eps, 0.0, low_open=True)
        self.affine = check_bool("GroupNorm", "affine", affine)
        c = (self.num_channels,)
        self.gamma = make_param(
            "GroupNorm", "gamma_init", gamma_init, c, "gamma", requires_grad=affine
        )
        self.beta = make_param("GroupNorm", "beta_init", beta_init, c, "beta", requires_grad=affine)

    def construct(self, x: Tensor) -> Tensor:
        x = check_input("GroupNorm", x, tuple(range(2, 33)), "N, C, ...")
        check_channels("GroupNorm", x, 1, self.num_channels, "num_channels")
        return ops.group_norm(x, self.num_groups, self.gamma, self.beta, self.eps)

    def extend_repr(self) -> str:
        return f"num_groups={self.num_groups}, num_channels={self.num_channels}"
