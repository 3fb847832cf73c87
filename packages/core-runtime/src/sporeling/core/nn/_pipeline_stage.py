"""``Cell.pipeline_stage``: which pipeline stage (rank) runs a cell under ``nn.PipelineCell``."""

from __future__ import annotations

from typing import Any

__all__ = ["PipelineStageMixin"]


class PipelineStageMixin:
    """Mixed into :class:`~sporeling.core.nn.Cell`; unset (``None``) by default."""

    @property
    def pipeline_stage(self) -> int | None:
        return self.__dict__.get("_pipeline_stage")

    @pipeline_stage.setter
    def pipeline_stage(self, value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(
                f"{type(self).__name__}: argument 'pipeline_stage' expected an int, got {value!r}"
            )
        if value < 0:
            raise ValueError(
                f"{type(self).__name__}: argument 'pipeline_stage' expected an int >= 0, "
                f"got {value}"
            )
        object.__setattr__(self, "_pipeline_stage", value)
