"""``Agent``: actors and a learner behind one object (MindSpore RL's multi-agent path)."""

from __future__ import annotations

from typing import Any

from sporeling.core import nn

from .actor import Actor
from .learner import Learner


class Agent(nn.Cell):
    """``Agent(actors, learner)``; ``act``/``get_action`` go to the first actor (or every actor
    with ``actor_id=None`` where several act), ``learn`` to the learner."""

    def __init__(self, actors: Actor | list[Actor], learner: Learner) -> None:
        super().__init__()
        self.actors = list(actors) if isinstance(actors, (list, tuple)) else [actors]
        self.learner = learner

    def act(self, phase: int, params: Any, actor_id: int | None = 0) -> Any:
        if actor_id is None:
            return [a.act(phase, params) for a in self.actors]
        return self.actors[actor_id].act(phase, params)

    def get_action(self, phase: int, params: Any, actor_id: int = 0) -> Any:
        return self.actors[actor_id].get_action(phase, params)

    def learn(self, experience: Any) -> Any:
        return self.learner.learn(experience)
