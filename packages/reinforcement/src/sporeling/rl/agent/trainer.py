"""``Trainer``: the training loop over episodes, with callbacks and checkpoints."""

from __future__ import annotations

import glob
import os
import re
from typing import Any

from sporeling.core import load_checkpoint, nn

from ..utils.callback import Callback, CallbackManager, CallbackParam


class Trainer(nn.Cell):
    """``Trainer(msrl)``; subclasses implement :meth:`train_one_episode` (returning
    ``(loss, rewards, steps, others)``), :meth:`evaluate` and :meth:`trainable_variables`."""

    def __init__(self, msrl: Any) -> None:
        super().__init__()
        self.msrl = msrl

    def train(
        self,
        episodes: int,
        callbacks: Callback | list[Callback] | None = None,
        ckpt_path: str | None = None,
    ) -> CallbackParam:
        if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 0:
            raise ValueError(f"Trainer.train: episodes expected an int >= 0, got {episodes!r}")
        if ckpt_path:
            self._load(ckpt_path)
        manager = CallbackManager(callbacks)
        params = CallbackParam(
            episodes_num=episodes,
            trainable_variables=self.trainable_variables(),
            evaluate=self.evaluate,
            cur_episode=0,
        )
        manager.begin(params)
        for i in range(episodes):
            params.cur_episode = i
            manager.episode_begin(params)
            out = self.train_one_episode()
            loss, rewards, steps, *others = out if isinstance(out, tuple) else (out, 0.0, 0)
            params.loss, params.total_rewards, params.steps = loss, rewards, steps
            params.others = others[0] if others else None
            manager.episode_end(params)
        manager.end(params)
        return params

    def train_one_episode(self) -> tuple[Any, Any, Any, Any]:
        raise NotImplementedError(f"{type(self).__name__}.train_one_episode is not implemented")

    def evaluate(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__}.evaluate is not implemented")

    def trainable_variables(self) -> dict[str, nn.Cell]:
        """The networks to checkpoint, by name (``{'policy_net': net}``)."""
        return {}

    def _load(self, ckpt_path: str) -> None:
        variables = self.trainable_variables()
        if os.path.isdir(ckpt_path):
            for name, net in variables.items():
                files = glob.glob(os.path.join(ckpt_path, f"{name}_*.ckpt"))
                if not files:
                    raise FileNotFoundError(f"{ckpt_path}: no checkpoint {name}_<episode>.ckpt")
                newest = max(files, key=lambda f: int(re.findall(r"_(\d+)\.ckpt$", f)[0]))
                load_checkpoint(newest, net=net, strict_load=True)
        else:
            if len(variables) != 1:
                raise ValueError(
                    f"load_and_eval: {ckpt_path!r} is one file but the trainer has "
                    f"{len(variables)} variables ({', '.join(variables)}); give the directory"
                )
            load_checkpoint(ckpt_path, net=next(iter(variables.values())), strict_load=True)

    def load_and_eval(self, ckpt_path: str | None = None) -> Any:
        """Load the checkpoint (a file, or a CheckpointCallback directory) and evaluate."""
        if ckpt_path:
            self._load(ckpt_path)
        return self.evaluate()
