"""``SoftUpdate``: move target parameters towards behaviour parameters every few steps."""

from __future__ import annotations

from collections.abc import Sequence

from sporeling.core import Parameter, nn


class SoftUpdate(nn.Cell):
    """Every ``update_interval``-th call: ``target <- (1 - factor) * target + factor * behavior``
    (``factor`` 1 copies: a hard target-network update)."""

    def __init__(
        self,
        factor: float,
        update_interval: int,
        behavior_params: Sequence[Parameter],
        target_params: Sequence[Parameter],
    ) -> None:
        super().__init__()
        if not 0.0 <= float(factor) <= 1.0:
            raise ValueError(f"SoftUpdate: factor expected a float in [0, 1], got {factor!r}")
        if isinstance(update_interval, bool) or int(update_interval) < 1:
            raise ValueError(
                f"SoftUpdate: update_interval expected an int >= 1, got {update_interval!r}"
            )
        self.factor, self.update_interval = float(factor), int(update_interval)
        self.behavior_params = list(behavior_params)
        self.target_params = list(target_params)
        if len(self.behavior_params) != len(self.target_params):
            raise ValueError(
                f"SoftUpdate: {len(self.behavior_params)} behavior params but "
                f"{len(self.target_params)} target params"
            )
        for b, t in zip(self.behavior_params, self.target_params):
            if b.shape != t.shape:
                raise ValueError(
                    f"SoftUpdate: behavior {b.name} {b.shape} and target {t.name} {t.shape} differ"
                )
        self.steps = 0

    def construct(self) -> bool:
        """Count a step; update (and return True) when the interval is reached."""
        self.steps += 1
        if self.steps % self.update_interval:
            return False
        f = self.factor
        for b, t in zip(self.behavior_params, self.target_params):
            t.set_data((1.0 - f) * t.asnumpy() + f * b.asnumpy())
        return True
