"""``ModelCheckpoint`` and ``CheckpointConfig``: save checkpoints during training (MindSpore 1.8).

Files are named ``{prefix}-{epoch}_{step_in_epoch}.ckpt`` in ``directory`` and hold the
safetensors checkpoint of the train network (the parameters, the optimizer's state and step
when the network is a ``TrainOneStepCell``, the RNG state, the epoch and global step), so a
run can resume exactly. When files of the same prefix are already there, the prefix gets a
``_1``, ``_2``... suffix as in MindSpore. Unlike MindSpore no ``{prefix}-graph.meta`` file is
written (there is no compiled graph to describe).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from typing import Any

import numpy as np

from ...nn.cell import Cell
from ...tensor import Tensor
from ..serialization import ASYNC_THREAD_NAME, _save
from ._callback import Callback, RunContext

__all__ = ["CheckpointConfig", "ModelCheckpoint"]

_INFO_KEYS = ("epoch_num", "step_num")


def _non_negative_int(arg: str, value: Any) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"CheckpointConfig: argument '{arg}' expected an int, got {value!r}")
    if value < 0:
        raise ValueError(f"CheckpointConfig: argument '{arg}' expected an int >= 0, got {value}")
    return int(value)


class CheckpointConfig:
    """When ``ModelCheckpoint`` saves and how many files it keeps.

    Save every ``save_checkpoint_steps`` steps, or (when that is 0/None) every
    ``save_checkpoint_seconds`` seconds; keep the newest ``keep_checkpoint_max`` files, or
    (when that is 0/None) one file per ``keep_checkpoint_per_n_minutes`` minutes.
    ``saved_network`` saves that Cell instead of the train network; ``append_info`` is a list
    of ``"epoch_num"``, ``"step_num"`` and at most one dict of extra values to store.
    ``integrated_save`` has no effect (no model parallelism), and ``exception_save`` asks
    ``Model`` to save a ``_breakpoint.ckpt`` file when training raises (see
    :meth:`ModelCheckpoint.save_on_exception`). ``format='ckpt'`` (MindSpore 2.x's keyword)
    writes MindSpore's protobuf files instead of safetensors, optionally with ``crc_check``
    or ``enc_key``/``enc_mode`` encryption.

    >>> CheckpointConfig(save_checkpoint_steps=10, keep_checkpoint_max=3).keep_checkpoint_max
    3
    """

    def __init__(
        self,
        save_checkpoint_steps: int | None = 1,
        save_checkpoint_seconds: int | None = 0,
        keep_checkpoint_max: int | None = 5,
        keep_checkpoint_per_n_minutes: int | None = 0,
        integrated_save: bool = True,
        async_save: bool = False,
        saved_network: Cell | None = None,
        append_info: list[Any] | None = None,
        enc_key: bytes | None = None,
        enc_mode: str = "AES-GCM",
        exception_save: bool = False,
        *,
        format: str = "safetensors",
        crc_check: bool = False,
    ) -> None:
        values = {
            "save_checkpoint_steps": save_checkpoint_steps,
            "save_checkpoint_seconds": save_checkpoint_seconds,
            "keep_checkpoint_max": keep_checkpoint_max,
            "keep_checkpoint_per_n_minutes": keep_checkpoint_per_n_minutes,
        }
        for arg, value in values.items():
            if value is not None:
                values[arg] = _non_negative_int(arg, value)
        if saved_network is not None and not isinstance(saved_network, Cell):
            raise TypeError(
                "CheckpointConfig: argument 'saved_network' expected a Cell or None, "
                f"got {type(saved_network).__name__}"
            )
        if not any(values.values()):
            raise ValueError(
                "CheckpointConfig: 'save_checkpoint_steps', 'save_checkpoint_seconds', "
                "'keep_checkpoint_max' and 'keep_checkpoint_per_n_minutes' can't all be None or 0"
            )
        self._save_checkpoint_steps = values["save_checkpoint_steps"]
        self._save_checkpoint_seconds = values["save_checkpoint_seconds"]
        if self._save_checkpoint_steps:
            self._save_checkpoint_seconds = None  # steps win, as in MindSpore
        self._keep_checkpoint_max = values["keep_checkpoint_max"]
        self._keep_checkpoint_per_n_minutes = values["keep_checkpoint_per_n_minutes"]
        if self._keep_checkpoint_max:
            self._keep_checkpoint_per_n_minutes = None
        elif not self._keep_checkpoint_per_n_minutes:
            self._keep_checkpoint_max = 1
        for arg, flag in (
            ("integrated_save", integrated_save),
            ("async_save", async_save),
            ("exception_save", exception_save),
        ):
            if not isinstance(flag, (bool, np.bool_)):
                raise TypeError(f"CheckpointConfig: argument '{arg}' expected a bool, got {flag!r}")
        if enc_key is not None and not isinstance(enc_key, bytes):
            raise TypeError(
                f"CheckpointConfig: argument 'enc_key' expected bytes or None, got {enc_key!r}"
            )
        if format not in ("safetensors", "ckpt"):
            raise ValueError(
                f"CheckpointConfig: argument 'format' expected 'safetensors' or 'ckpt', "
                f"got {format!r}"
            )
        if not isinstance(crc_check, bool) or (crc_check and format != "ckpt"):
            raise ValueError(
                f"CheckpointConfig: argument 'crc_check' expected a bool, True only with "
                f"format='ckpt', got {crc_check!r}"
            )
        if enc_key is not None and format != "ckpt":
            raise ValueError(
                "CheckpointConfig: argument 'enc_key' is not supported for safetensors "
                "checkpoints; MindSpore's encryption applies to format='ckpt'"
            )
        if enc_key is not None:
            from ..mindspore_crypto import check_key

            check_key("CheckpointConfig", "enc_key", enc_key, enc_mode)
        if not isinstance(enc_mode, str):
            raise TypeError(
                f"CheckpointConfig: argument 'enc_mode' expected a str, got {enc_mode!r}"
            )
        self._integrated_save = bool(integrated_save)
        self._async_save = bool(async_save)
        self._saved_network = saved_network
        self._append_dict = self._handle_append_info(append_info)
        self._enc_key = enc_key
        self._enc_mode = enc_mode
        self._exception_save = bool(exception_save)
        self._format = format
        self._crc_check = crc_check

    @property
    def format(self) -> str:
        """The file format: 'safetensors' (Sporeling's default) or MindSpore's 'ckpt'."""
        return self._format

    @property
    def crc_check(self) -> bool:
        """Whether .ckpt files get MindSpore 2.x's CRC trailer."""
        return self._crc_check

    @staticmethod
    def _handle_append_info(append_info: Any) -> dict[str, Any] | None:
        if append_info is None or append_info == []:
            return None
        if not isinstance(append_info, list):
            raise TypeError(
                "CheckpointConfig: argument 'append_info' expected a list, "
                f"got {type(append_info).__name__}"
            )
        out: dict[str, Any] = {key: 0 for key in _INFO_KEYS if key in append_info}
        dicts = 0
        for element in append_info:
            if isinstance(element, str):
                if element not in _INFO_KEYS:
                    raise ValueError(
                        "CheckpointConfig: the strings in 'append_info' must be in "
                        f"{list(_INFO_KEYS)}, got {element!r}"
                    )
            elif isinstance(element, dict):
                dicts += 1
                if dicts > 1:
                    raise TypeError("CheckpointConfig: 'append_info' may hold only one dict")
                for key, value in element.items():
                    if not isinstance(key, str) or not isinstance(
                        value, (int, float, bool, str, Tensor)
                    ):
                        raise TypeError(
                            "CheckpointConfig: the dict in 'append_info' expected str keys and "
                            "int, float, bool, str, Parameter or Tensor values, got "
                            f"{key!r}: {type(value).__name__}"
                        )
                    out[key] = value
            else:
                raise TypeError(
                    "CheckpointConfig: the elements of 'append_info' must be str or dict, "
                    f"got {type(element).__name__}"
                )
        return out

    @property
    def save_checkpoint_steps(self) -> int | None:
        return self._save_checkpoint_steps

    @property
    def save_checkpoint_seconds(self) -> int | None:
        return self._save_checkpoint_seconds

    @property
    def keep_checkpoint_max(self) -> int | None:
        return self._keep_checkpoint_max

    @property
    def keep_checkpoint_per_n_minutes(self) -> int | None:
        return self._keep_checkpoint_per_n_minutes

    @property
    def integrated_save(self) -> bool:
        return self._integrated_save

    @property
    def async_save(self) -> bool:
        return self._async_save

    @property
    def saved_network(self) -> Cell | None:
        return self._saved_network

    @property
    def enc_key(self) -> bytes | None:
        return self._enc_key

    @property
    def enc_mode(self) -> str:
        return self._enc_mode

    @property
    def append_dict(self) -> dict[str, Any] | None:
        return self._append_dict

    @property
    def exception_save(self) -> bool:
        return self._exception_save

    def get_checkpoint_policy(self) -> dict[str, Any]:
        """The saving and keeping policy as a dict (MindSpore's keys)."""
        return {
            "save_checkpoint_steps": self.save_checkpoint_steps,
            "save_checkpoint_seconds": self.save_checkpoint_seconds,
            "keep_checkpoint_max": self.keep_checkpoint_max,
            "keep_checkpoint_per_n_minutes": self.keep_checkpoint_per_n_minutes,
            "saved_network": self.saved_network,
        }

    def __repr__(self) -> str:
        policy = ", ".join(f"{k}={v!r}" for k, v in self.get_checkpoint_policy().items())
        return f"CheckpointConfig({policy})"


def _unique_prefix(directory: str, prefix: str, exception: bool = False) -> str:
    """``prefix``, or ``prefix_N`` when checkpoint files of that prefix already exist."""
    suffix = 0
    n = len(prefix)
    for filename in os.listdir(directory):
        breakpoint_file = filename.endswith("_breakpoint.ckpt")
        if not filename.endswith(".ckpt") or breakpoint_file != exception:
            continue
        if not filename.startswith(prefix) or len(filename) <= n or filename[n].isalpha():
            continue
        index = filename[n:].find("-")
        if index == 0:
            suffix = max(suffix, 1)
        elif index != -1:
            num = filename[n + 1 : n + index]
            if num.isdigit():
                suffix = max(suffix, int(num) + 1)
    return f"{prefix}_{suffix}" if suffix else prefix


def _epoch_step_of(path: str) -> tuple[int, int]:
    """(epoch, step) from ``...-{epoch}_{step}.ckpt`` for ordering files of equal mtime."""
    stem = os.path.basename(path)[: -len(".ckpt")].rsplit("-", 1)[-1]
    epoch, _, step = stem.partition("_")
    return (int(epoch) if epoch.isdigit() else 0, int(step) if step.isdigit() else 0)


class CheckpointManager:
    """The checkpoint files of one prefix in one directory (MindSpore's helper)."""

    def __init__(self) -> None:
        self._ckpoint_filelist: list[str] = []

    @property
    def ckpoint_filelist(self) -> list[str]:
        return self._ckpoint_filelist

    @property
    def ckpoint_num(self) -> int:
        return len(self._ckpoint_filelist)

    def update_ckpoint_filelist(self, directory: str, prefix: str) -> None:
        """Re-read ``directory``: the ``{prefix}-{epoch}_{step}.ckpt`` files."""
        self._ckpoint_filelist = []
        for filename in os.listdir(directory):
            if filename.endswith(".ckpt") and filename.startswith(prefix + "-"):
                middle = filename[len(prefix) : -len(".ckpt")]
                if not any(ch.isalpha() for ch in middle):
                    self._ckpoint_filelist.append(os.path.join(directory, filename))

    def _age_key(self, path: str) -> tuple[int, tuple[int, int], str]:
        return (os.stat(path).st_mtime_ns, _epoch_step_of(path), path)

    def remove_ckpoint_file(self, file_name: str) -> None:
        with contextlib.suppress(OSError):  # already gone, or not ours: keep training
            os.remove(file_name)
        if file_name in self._ckpoint_filelist:
            self._ckpoint_filelist.remove(file_name)

    def remove_oldest_ckpoint_file(self) -> None:
        """Delete the oldest file (by modification time, then epoch and step)."""
        if self._ckpoint_filelist:
            self.remove_ckpoint_file(min(self._ckpoint_filelist, key=self._age_key))

    def keep_one_ckpoint_per_minutes(self, minutes: int, cur_time: float) -> None:
        """Of the files written in the last ``minutes``, keep only the oldest."""
        recent = [
            f for f in self._ckpoint_filelist if cur_time - os.path.getmtime(f) < 60 * minutes
        ]
        if not recent:
            return
        oldest = min(recent, key=self._age_key)
        for f in recent:
            if f != oldest:
                self.remove_ckpoint_file(f)


class ModelCheckpoint(Callback):
    """Save the train network to ``{directory}/{prefix}-{epoch}_{step}.ckpt`` during training.

    ``directory`` defaults to the current directory (created when missing); ``config`` is a
    :class:`CheckpointConfig` (default: every step, keep 5). The last step is always saved
    at the end of training. :attr:`latest_ckpt_file_name` is the newest file.
    """

    def __init__(
        self,
        prefix: str = "CKP",
        directory: str | None = None,
        config: CheckpointConfig | None = None,
    ) -> None:
        super().__init__()
        if not isinstance(prefix, str) or "/" in prefix or os.sep in prefix or not prefix:
            raise ValueError(
                "ModelCheckpoint: argument 'prefix' expected a non-empty str without '/', "
                f"got {prefix!r}"
            )
        if directory is not None and not isinstance(directory, (str, os.PathLike)):
            raise TypeError(
                "ModelCheckpoint: argument 'directory' expected a str path or None, "
                f"got {type(directory).__name__}"
            )
        if config is None:
            config = CheckpointConfig()
        elif not isinstance(config, CheckpointConfig):
            raise TypeError(
                "ModelCheckpoint: argument 'config' expected a CheckpointConfig, "
                f"got {type(config).__name__}"
            )
        self._config = config
        if directory is None:
            self._directory = os.getcwd()
        else:
            self._directory = os.path.realpath(os.fspath(directory))
            os.makedirs(self._directory, exist_ok=True)
        self._exception_prefix = prefix
        self._prefix = _unique_prefix(self._directory, prefix)
        self._manager = CheckpointManager()
        self._latest_ckpt_file_name = ""
        self._last_triggered_step = 0
        now = time.time()
        self._last_time = now
        self._last_time_for_keep = now
        self._append_dict = dict(config.append_dict or {})
        self._append_epoch_num = int(self._append_dict.get("epoch_num", 0))
        self._append_step_num = int(self._append_dict.get("step_num", 0))

    @property
    def latest_ckpt_file_name(self) -> str:
        """The path of the newest checkpoint this callback wrote ("" before the first)."""
        return self._latest_ckpt_file_name

    @property
    def directory(self) -> str:
        return self._directory

    @property
    def prefix(self) -> str:
        """The file-name prefix in use (with a ``_N`` suffix when the original was taken)."""
        return self._prefix

    # ---- hooks ------------------------------------------------------------------------------
    def on_train_step_end(self, run_context: RunContext) -> None:
        _wait_for_async_saves()
        self._save_ckpt(run_context.original_args())

    def on_train_end(self, run_context: RunContext) -> None:
        self._save_ckpt(run_context.original_args(), force_to_save=True)
        _wait_for_async_saves()

    # ---- saving -----------------------------------------------------------------------------
    def _check_save_ckpt(self, cb_params: Any, force_to_save: bool) -> bool:
        config = self._config
        if config.save_checkpoint_steps:
            return force_to_save or (
                cb_params.cur_step_num >= self._last_triggered_step + config.save_checkpoint_steps
            )
        if config.save_checkpoint_seconds:
            now = time.time()
            if now - self._last_time > config.save_checkpoint_seconds or force_to_save:
                self._last_time = now
                return True
        return False

    def _update_append(self, epoch: int, step: int) -> None:
        if "epoch_num" in self._append_dict:
            self._append_dict["epoch_num"] = self._append_epoch_num + epoch
        if "step_num" in self._append_dict:
            self._append_dict["step_num"] = self._append_step_num + step

    def _network(self, cb_params: Any) -> Cell:
        saved = self._config.saved_network
        return saved if saved is not None else cb_params.train_network

    def _write(self, cb_params: Any, path: str, epoch: int, step: int) -> str:
        self._update_append(epoch, step)
        config = self._config
        return _save(
            "ModelCheckpoint",
            self._network(cb_params),
            path,
            config.integrated_save,
            config.async_save,
            self._append_dict or None,
            config.enc_key,
            config.enc_mode,
            epoch=epoch,
            step=step,
            fmt=config.format,
            crc_check=config.crc_check,
        )

    def _save_ckpt(self, cb_params: Any, force_to_save: bool = False) -> None:
        cur_step = int(cb_params.cur_step_num)
        if cur_step == self._last_triggered_step:
            return
        if not self._check_save_ckpt(cb_params, force_to_save):
            return
        step_in_epoch = (cur_step - 1) % int(cb_params.batch_num) + 1
        epoch = int(cb_params.cur_epoch_num)
        file_name = f"{self._prefix}-{epoch}_{step_in_epoch}.ckpt"
        config = self._config
        self._manager.update_ckpoint_filelist(self._directory, self._prefix)
        if (
            config.keep_checkpoint_max
            and 0 < config.keep_checkpoint_max <= self._manager.ckpoint_num
        ):
            while config.keep_checkpoint_max <= self._manager.ckpoint_num:
                self._manager.remove_oldest_ckpoint_file()
        elif config.keep_checkpoint_per_n_minutes:
            now = time.time()
            if now - self._last_time_for_keep < config.keep_checkpoint_per_n_minutes * 60:
                self._manager.keep_one_ckpoint_per_minutes(
                    config.keep_checkpoint_per_n_minutes, now
                )
        self._last_time_for_keep = time.time()
        self._last_triggered_step = cur_step
        path = os.path.join(self._directory, file_name)
        self._latest_ckpt_file_name = self._write(cb_params, path, epoch, cur_step)

    def save_on_exception(self, cb_params: Any) -> str | None:
        """With ``exception_save``: write ``{prefix}-{epoch}_{step}_breakpoint.ckpt`` now.

        ``Model`` calls this when training raises, before re-raising (MindSpore saves the
        train network the same way). Returns the path, or None without ``exception_save``.
        """
        if not self._config.exception_save:
            return None
        _wait_for_async_saves()
        prefix = _unique_prefix(self._directory, self._exception_prefix, exception=True)
        epoch = int(cb_params.cur_epoch_num)
        step = int(cb_params.cur_step_num)
        path = os.path.join(self._directory, f"{prefix}-{epoch}_{step}_breakpoint.ckpt")
        config = self._config
        self._update_append(epoch, step)
        _save(
            "ModelCheckpoint",
            cb_params.train_network,
            path,
            config.integrated_save,
            False,
            self._append_dict or None,
            config.enc_key,
            config.enc_mode,
            epoch=epoch,
            step=step,
            fmt=config.format,
            crc_check=config.crc_check,
        )
        return path


def _wait_for_async_saves() -> None:
    """Join MindSpore-named asynchronous writers so files are complete before the next one."""
    current = threading.current_thread()
    for thread in threading.enumerate():
        if thread.name == ASYNC_THREAD_NAME and thread is not current:
            thread.join()
