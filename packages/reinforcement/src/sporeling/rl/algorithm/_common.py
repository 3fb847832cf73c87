"""Small pieces every algorithm uses: a gradient step, numpy views, environment stepping."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from sporeling.core import Parameter, Tensor, nn, no_grad, ops, value_and_grad


def to_np(x: Any) -> np.ndarray:
    return x.asnumpy() if isinstance(x, Tensor) else np.asarray(x)


def predict(net: nn.Cell, x: np.ndarray) -> np.ndarray:
    """``net(x)`` as a NumPy array, without recording gradients."""
    with no_grad():
        return net(Tensor(np.asarray(x, np.float32))).asnumpy()


class GradStep:
    """One optimizer step on ``loss_fn(*inputs)``: ``value_and_grad`` over ``params``,
    optional global-norm clipping, then the optimizer. Returns the loss as a float."""

    def __init__(
        self,
        loss_fn: Callable[..., Any],
        params: Sequence[Parameter],
        optimizer: nn.Optimizer,
        max_grad_norm: float | None = None,
        has_aux: bool = False,
    ) -> None:
        self.grad_fn = value_and_grad(loss_fn, None, list(params), has_aux=has_aux)
        self.optimizer = optimizer
        self.max_grad_norm = max_grad_norm
        self.has_aux = has_aux

    def __call__(self, *inputs: Any) -> Any:
        args = [Tensor(x) if isinstance(x, np.ndarray) else x for x in inputs]
        value, grads = self.grad_fn(*args)
        if self.max_grad_norm is not None:
            grads = ops.clip_by_global_norm(tuple(grads), self.max_grad_norm)
        self.optimizer(tuple(grads))
        if self.has_aux:
            return float(value[0].asnumpy()), [to_np(v) for v in value[1:]]
        return float(value.asnumpy())


def env_reset(env: Any) -> np.ndarray:
    return env.reset_np() if hasattr(env, "reset_np") else to_np(env.reset())


def env_step(env: Any, action: Any) -> tuple[np.ndarray, Any, Any]:
    if hasattr(env, "step_np"):
        return env.step_np(action)
    s, r, d = env.step(Tensor(np.asarray(action)))
    return to_np(s), to_np(r), to_np(d)


def evaluate_episodes(env: Any, act: Callable[[np.ndarray], Any], episodes: int) -> float:
    """Mean undiscounted return of ``episodes`` full episodes of a single environment."""
    total = 0.0
    for _ in range(episodes):
        s, done = env_reset(env), False
        while not done:
            s, r, done = env_step(env, act(s))
            total += float(np.asarray(r).sum())
            done = bool(np.asarray(done).all())
    return total / episodes
