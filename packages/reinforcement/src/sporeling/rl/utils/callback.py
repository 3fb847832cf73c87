"""Trainer callbacks of MindSpore RL 0.5: loss printing, checkpoints, periodic evaluation."""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from sporeling.core import Tensor, save_checkpoint


def _scalar(value: Any) -> float:
    if isinstance(value, Tensor):
        value = value.asnumpy()
    return float(np.asarray(value, np.float64).mean())


class CallbackParam(dict):
    """The state callbacks see: ``cur_episode``, ``loss``, ``total_rewards``, ``steps``, ..."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value: Any) -> None:
        self[name] = value


class Callback:
    """Override any of ``begin``, ``episode_begin``, ``episode_end``, ``end``."""

    def begin(self, params: CallbackParam) -> None:
        pass

    def episode_begin(self, params: CallbackParam) -> None:
        pass

    def episode_end(self, params: CallbackParam) -> None:
        pass

    def end(self, params: CallbackParam) -> None:
        pass


class CallbackManager(Callback):
    def __init__(self, callbacks: Callback | list[Callback] | None) -> None:
        if callbacks is None:
            callbacks = []
        elif isinstance(callbacks, Callback):
            callbacks = [callbacks]
        for cb in callbacks:
            if not isinstance(cb, Callback):
                raise TypeError(f"callbacks: expected Callback instances, got {cb!r}")
        self.callbacks = list(callbacks)

    def begin(self, params: CallbackParam) -> None:
        for cb in self.callbacks:
            cb.begin(params)

    def episode_begin(self, params: CallbackParam) -> None:
        for cb in self.callbacks:
            cb.episode_begin(params)

    def episode_end(self, params: CallbackParam) -> None:
        for cb in self.callbacks:
            cb.episode_end(params)

    def end(self, params: CallbackParam) -> None:
        for cb in self.callbacks:
            cb.end(params)


class LossCallback(Callback):
    """Print the loss and the episode's rewards every ``print_rate`` episodes; keep them in
    :attr:`history` as ``(episode, loss, rewards)``."""

    def __init__(self, print_rate: int = 1) -> None:
        if not isinstance(print_rate, int) or print_rate < 0:
            raise ValueError(f"LossCallback: print_rate expected an int >= 0, got {print_rate!r}")
        self.print_rate = print_rate
        self.history: list[tuple[int, float, float]] = []

    def episode_end(self, params: CallbackParam) -> None:
        loss, rewards = _scalar(params.loss), _scalar(params.total_rewards)
        self.history.append((params.cur_episode, loss, rewards))
        if self.print_rate and params.cur_episode % self.print_rate == 0:
            print(f"Episode {params.cur_episode}: loss is {loss:.4g}, rewards is {rewards:.4g}")


class TimeCallback(Callback):
    """Print the wall time of every ``print_rate``-th episode."""

    def __init__(self, print_rate: int = 1) -> None:
        self.print_rate = print_rate
        self._t0 = 0.0

    def episode_begin(self, params: CallbackParam) -> None:
        self._t0 = time.perf_counter()

    def episode_end(self, params: CallbackParam) -> None:
        if self.print_rate and params.cur_episode % self.print_rate == 0:
            ms = (time.perf_counter() - self._t0) * 1e3
            print(f"Episode {params.cur_episode} has {params.steps} steps, cost time: {ms:.1f} ms")


class CheckpointCallback(Callback):
    """Save every trainable variable (``Trainer.trainable_variables()``) every
    ``save_per_episode`` episodes to ``directory/<name>_<episode>.ckpt`` (safetensors, atomic),
    keeping the newest ``max_ckpt_nums`` per name."""

    def __init__(
        self, save_per_episode: int = 0, directory: str | None = None, max_ckpt_nums: int = 5
    ) -> None:
        if not isinstance(save_per_episode, int) or save_per_episode < 0:
            raise ValueError(
                f"CheckpointCallback: save_per_episode expected an int >= 0, got "
                f"{save_per_episode!r}"
            )
        self.save_per_episode = save_per_episode
        self.directory = directory or os.path.join(os.getcwd(), "checkpoints")
        self.max_ckpt_nums = max_ckpt_nums
        self.saved: dict[str, list[str]] = {}

    def episode_end(self, params: CallbackParam) -> None:
        if not self.save_per_episode or (params.cur_episode + 1) % self.save_per_episode:
            return
        os.makedirs(self.directory, exist_ok=True)
        for name, net in params.trainable_variables.items():
            path = os.path.join(self.directory, f"{name}_{params.cur_episode}.ckpt")
            save_checkpoint(net, path, append_dict={"epoch_num": int(params.cur_episode)})
            kept = self.saved.setdefault(name, [])
            kept.append(path)
            while len(kept) > self.max_ckpt_nums:
                os.remove(kept.pop(0))


class EvaluateCallback(Callback):
    """Call ``Trainer.evaluate()`` every ``eval_rate`` episodes; print and keep the result."""

    def __init__(self, eval_rate: int = 0) -> None:
        if not isinstance(eval_rate, int) or eval_rate < 0:
            raise ValueError(f"EvaluateCallback: eval_rate expected an int >= 0, got {eval_rate!r}")
        self.eval_rate = eval_rate
        self.history: list[tuple[int, float]] = []

    def episode_end(self, params: CallbackParam) -> None:
        if not self.eval_rate or (params.cur_episode + 1) % self.eval_rate:
            return
        reward = _scalar(params.evaluate())
        self.history.append((params.cur_episode, reward))
        print(
            f"-----------------------------------------\nEvaluate for episode "
            f"{params.cur_episode} total rewards is {reward:.3f}"
        )
