"""``DiscountedReturn``: returns over a rollout, cut at episode ends (a Numba kernel)."""

from __future__ import annotations

from typing import Any

import numba as nb
import numpy as np

from sporeling.core import Tensor, nn


@nb.njit(cache=True)
def _discounted_return_kernel(reward, done, last_value, gamma, out):  # pragma: no cover - jit
    # reward/done: (T, N); last_value: (N,); out[t] = r[t] + gamma * out[t+1] * (1 - done[t])
    running = last_value.copy()
    for t in range(reward.shape[0] - 1, -1, -1):
        for n in range(reward.shape[1]):
            if done[t, n]:
                running[n] = 0.0
            running[n] = reward[t, n] + gamma * running[n]
            out[t, n] = running[n]


class DiscountedReturn(nn.Cell):
    """``construct(reward, done, last_state_value)``: ``reward``/``done`` of shape ``(T, ...)``,
    ``last_state_value`` of shape ``(...)``; returns ``(T, ...)`` float32 with
    ``R[t] = r[t] + gamma * R[t+1] * (1 - done[t])`` and ``R[T] = last_state_value``."""

    def __init__(self, gamma: float, need_bprop: bool = False) -> None:
        super().__init__()
        if not 0.0 <= float(gamma) <= 1.0:
            raise ValueError(f"DiscountedReturn: gamma expected a float in [0, 1], got {gamma!r}")
        self.gamma = float(gamma)
        self.need_bprop = need_bprop  # returns are targets: never differentiated here

    def construct(self, reward: Any, done: Any, last_state_value: Any) -> Tensor:
        r = np.asarray(reward.asnumpy() if isinstance(reward, Tensor) else reward, np.float32)
        d = np.asarray(done.asnumpy() if isinstance(done, Tensor) else done).astype(np.bool_)
        v = last_state_value
        v = np.asarray(v.asnumpy() if isinstance(v, Tensor) else v, np.float32)
        if r.shape != d.shape or r.shape[1:] != v.reshape(r.shape[1:]).shape:
            raise ValueError(
                f"DiscountedReturn: expected reward and done of one shape (T, ...) and "
                f"last_state_value of shape (...), got {r.shape}, {d.shape}, {v.shape}"
            )
        t = r.shape[0]
        r2, d2 = r.reshape(t, -1), d.reshape(t, -1)
        out = np.empty_like(r2)
        _discounted_return_kernel(r2, d2, v.reshape(-1).astype(np.float32), self.gamma, out)
        return Tensor(out.reshape(r.shape))
