"""``Session``: build an algorithm from its config and run a trainer on it."""

from __future__ import annotations

from typing import Any

from .msrl import MSRL


class Session:
    """``Session(alg_config, deploy_config=None, params=None, callbacks=None)``;
    :meth:`run` builds :class:`MSRL`, then trains (``is_train``) or loads and evaluates.

    With ``deploy_config={'distributed': True, 'worker_num': N, ...}`` the run goes through
    :mod:`sporeling.rl.distribution` (see :func:`~sporeling.rl.distribution.launch`).
    """

    def __init__(
        self,
        alg_config: dict[str, Any],
        deploy_config: dict[str, Any] | None = None,
        params: dict[str, Any] | None = None,
        callbacks: Any = None,
    ) -> None:
        self.alg_config = alg_config
        self.deploy_config = deploy_config
        self.params = params
        self.callbacks = callbacks
        self.msrl: MSRL | None = None

    def run(
        self,
        class_type: type | None = None,
        is_train: bool = True,
        episode: int = 0,
        duration: int = 0,
        params: dict[str, Any] | None = None,
        callbacks: Any = None,
    ) -> Any:
        if class_type is None:
            raise ValueError("Session.run: class_type (a Trainer subclass) is required")
        params = params if params is not None else self.params
        callbacks = callbacks if callbacks is not None else self.callbacks
        if self.deploy_config and self.deploy_config.get("distributed"):
            from ..distribution.launcher import run_distributed

            return run_distributed(self, class_type, episode, duration, params, callbacks)
        self.msrl = MSRL(self.alg_config, self.deploy_config)
        trainer = class_type(self.msrl, params) if params else class_type(self.msrl)
        if is_train:
            return trainer.train(episode, callbacks)
        ckpt = (params or {}).get("ckpt_path")
        return trainer.load_and_eval(ckpt)
