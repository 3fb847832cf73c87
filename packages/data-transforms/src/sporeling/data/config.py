"""Global settings of the data pipeline, as `mindspore.dataset.config` (1.8).

`set_seed` makes every random transform reproducible: each random op owns a
NumPy `Generator` seeded from `(seed, op_index)`, where `op_index` counts the
random ops created since the last `set_seed` (see `transforms._base`). Without
`set_seed` the streams come from OS entropy and `get_seed()` returns 5489, the
default MindSpore reports (std::mt19937's default seed).

Example:
    >>> from sporeling.data import config
    >>> config.set_seed(7)
    >>> config.get_seed()
    7
"""

from __future__ import annotations

import itertools
import os
import random
import threading

import numpy as np

__all__ = [
    "get_auto_num_workers",
    "get_callback_timeout",
    "get_enable_shared_mem",
    "get_jpeg_draft",
    "get_map_fusion",
    "get_monitor_sampling_interval",
    "get_multiprocessing_timeout_interval",
    "get_num_parallel_workers",
    "get_numa_enable",
    "get_prefetch_size",
    "get_seed",
    "load",
    "set_auto_num_workers",
    "set_callback_timeout",
    "set_enable_shared_mem",
    "set_jpeg_draft",
    "set_map_fusion",
    "set_monitor_sampling_interval",
    "set_multiprocessing_timeout_interval",
    "set_num_parallel_workers",
    "set_numa_enable",
    "set_prefetch_size",
    "set_seed",
]

_DEFAULT_SEED = 5489
_UINT32_MAX = 2**32 - 1

_lock = threading.Lock()
_settings: dict[str, object] = {
    "seed": None,
    "num_parallel_workers": 8,
    "prefetch_size": 16,
    "monitor_sampling_interval": 1000,
    "callback_timeout": 60,
    "numa_enable": False,
    "auto_num_workers": False,
    "enable_shared_mem": True,
    "multiprocessing_timeout_interval": 300,
    # SPORELING_DATA_MAP_FUSION=0 starts with the fusion pass off (for A/B comparisons).
    "map_fusion": os.environ.get("SPORELING_DATA_MAP_FUSION", "1") != "0",
    # SPORELING_DATA_JPEG_DRAFT=0 starts with DCT-domain downscaling off.
    "jpeg_draft": os.environ.get("SPORELING_DATA_JPEG_DRAFT", "1") != "0",
}
# Bumped by set_seed so random ops re-seed their streams lazily.
_epoch = 0
_op_counter = itertools.count()


def _check_int(name: str, value: object, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(
            f"config.{name}: expected an int in [{lo}, {hi}], got {type(value).__name__} {value!r}."
        )
    if not lo <= int(value) <= hi:
        raise ValueError(f"config.{name}: expected an int in [{lo}, {hi}], got {value}.")
    return int(value)


def _check_bool(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"config.{name}: expected a bool, got {type(value).__name__} {value!r}.")
    return value


def set_seed(seed: int) -> None:
    """Seed every random transform (and Python's `random` and `numpy.random`, as MindSpore does)."""
    global _epoch, _op_counter
    seed = _check_int("set_seed", seed, 0, _UINT32_MAX)
    with _lock:
        _settings["seed"] = seed
        _epoch += 1
        _op_counter = itertools.count()
    random.seed(seed)
    np.random.seed(seed)


def get_seed() -> int:
    """The seed set by `set_seed`, or 5489 when none was set."""
    seed = _settings["seed"]
    return _DEFAULT_SEED if seed is None else int(seed)  # type: ignore[call-overload]


def _seed_is_set() -> bool:
    return _settings["seed"] is not None


def _next_op_index() -> int:
    with _lock:
        return next(_op_counter)


def _seed_epoch() -> int:
    return _epoch


def _make_generator(op_index: int) -> np.random.Generator:
    """The stream of the random op numbered `op_index` under the current seed."""
    if not _seed_is_set():
        return np.random.default_rng()
    return np.random.default_rng(np.random.SeedSequence([get_seed(), op_index]))


def set_num_parallel_workers(num: int) -> None:
    """Default number of workers of `map`/`batch` and the readers."""
    _settings["num_parallel_workers"] = _check_int(
        "set_num_parallel_workers", num, 1, max(os.cpu_count() or 1, 1) * 4
    )


def get_num_parallel_workers() -> int:
    return int(_settings["num_parallel_workers"])  # type: ignore[call-overload]


def set_prefetch_size(size: int) -> None:
    """Queue capacity between pipeline stages, in rows."""
    _settings["prefetch_size"] = _check_int("set_prefetch_size", size, 1, 2**31 - 1)


def get_prefetch_size() -> int:
    return int(_settings["prefetch_size"])  # type: ignore[call-overload]


def set_monitor_sampling_interval(interval: int) -> None:
    _settings["monitor_sampling_interval"] = _check_int(
        "set_monitor_sampling_interval", interval, 0, 2**31 - 1
    )


def get_monitor_sampling_interval() -> int:
    return int(_settings["monitor_sampling_interval"])  # type: ignore[call-overload]


def set_callback_timeout(timeout: int) -> None:
    _settings["callback_timeout"] = _check_int("set_callback_timeout", timeout, 1, 2**31 - 1)


def get_callback_timeout() -> int:
    return int(_settings["callback_timeout"])  # type: ignore[call-overload]


def set_numa_enable(numa_enable: bool) -> None:
    _settings["numa_enable"] = _check_bool("set_numa_enable", numa_enable)


def get_numa_enable() -> bool:
    return bool(_settings["numa_enable"])


def set_auto_num_workers(enable: bool) -> None:
    _settings["auto_num_workers"] = _check_bool("set_auto_num_workers", enable)


def get_auto_num_workers() -> bool:
    return bool(_settings["auto_num_workers"])


def set_enable_shared_mem(enable: bool) -> None:
    _settings["enable_shared_mem"] = _check_bool("set_enable_shared_mem", enable)


def get_enable_shared_mem() -> bool:
    return bool(_settings["enable_shared_mem"])


def set_map_fusion(enable: bool) -> None:
    """Fuse adjacent ops of a `map` (Decode + RandomResizedCrop, [RandomHorizontalFlip +]
    Normalize + HWC2CHW; see `vision._fused`) in iterators created afterwards. On by
    default; the fused Decode + RandomResizedCrop may differ from the pair by a few levels
    where it decodes a JPEG at reduced scale."""
    _settings["map_fusion"] = _check_bool("set_map_fusion", enable)


def get_map_fusion() -> bool:
    return bool(_settings["map_fusion"])


def set_jpeg_draft(enable: bool) -> None:
    """Let `RandomCropDecodeResize` and the fused Decode + RandomResizedCrop of a `map`
    (ops and iterators created afterwards) decode a JPEG at 1/2, 1/4 or 1/8 scale in the
    DCT domain when the crop is at least twice the output size (Pillow's draft mode, as
    DALI's and nvJPEG's scaled decoding). On by default: faster on large photos, a
    different low-pass filter than the resize's antialiasing (per image a mean difference
    under 5 levels). Off, the crop is decoded at full scale as MindSpore's
    RandomCropDecodeResize does. Not a MindSpore 1.8 setting."""
    _settings["jpeg_draft"] = _check_bool("set_jpeg_draft", enable)


def get_jpeg_draft() -> bool:
    return bool(_settings["jpeg_draft"])


def set_multiprocessing_timeout_interval(interval: int) -> None:
    _settings["multiprocessing_timeout_interval"] = _check_int(
        "set_multiprocessing_timeout_interval", interval, 1, 2**31 - 1
    )


def get_multiprocessing_timeout_interval() -> int:
    return int(_settings["multiprocessing_timeout_interval"])  # type: ignore[call-overload]


def load(file: str | os.PathLike[str]) -> None:
    """Load settings from a JSON file with MindSpore's keys (`seed`, `numParallelWorkers`, ...)."""
    import json

    keys = {
        "seed": set_seed,
        "numParallelWorkers": set_num_parallel_workers,
        "opConnectorSize": set_prefetch_size,
        "monitorSamplingInterval": set_monitor_sampling_interval,
        "callbackTimeout": set_callback_timeout,
    }
    try:
        with open(file, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as exc:
        raise RuntimeError(f"config.load: cannot read {os.fspath(file)!r}: {exc}") from exc
    if not isinstance(data, dict):
        raise RuntimeError(f"config.load: {os.fspath(file)!r} must hold a JSON object.")
    for key, value in data.items():
        if key in keys:
            keys[key](value)
